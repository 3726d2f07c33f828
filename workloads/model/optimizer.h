#pragma once
// AdamW over a stage's flat parameter buffer, with decoupled weight decay applied to
// matrices only (norm weights are not decayed), and the helpers of global-norm gradient
// clipping. Clipping needs the norm over every stage: each stage reports its local
// squared norm, the executor sums them (allreduce), and passes clip_scale() back.
#include <cmath>
#include <cstdint>
#include <iosfwd>
#include <vector>

namespace xdc::model {

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
  double grad_clip = 1.0;  // max global L2 norm; <= 0 disables clipping
};

// Factor to multiply every gradient by so that the global norm is at most max_norm.
inline double clip_scale(double global_sq_norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  const double norm = std::sqrt(global_sq_norm);
  return norm > max_norm ? max_norm / (norm + 1e-6) : 1.0;
}

template <typename T>
class AdamW {
 public:
  AdamW() = default;
  // decay[i] = 1 where parameter i is decayed.
  explicit AdamW(std::vector<uint8_t> decay)
      : decay_(std::move(decay)), m_(decay_.size(), T(0)), v_(decay_.size(), T(0)) {}

  // One step: begin_step() once, then update() over [begin, end) ranges covering every
  // parameter (threads take disjoint ranges). params -= lr * (mhat / (sqrt(vhat) + eps)
  // + wd * params), with g = grads * grad_scale; wd only where decay[i].
  void begin_step() { ++t_; }
  // grads are zeroed as they are consumed (saves the next iteration a pass over them).
  void update(T* params, T* grads, const AdamWConfig& c, double lr, double grad_scale,
              int64_t begin, int64_t end) {
    const T b1 = T(c.beta1), b2 = T(c.beta2), gs = T(grad_scale);
    const T bc1 = T(1.0 / (1.0 - std::pow(c.beta1, double(t_))));
    const T bc2 = T(1.0 / (1.0 - std::pow(c.beta2, double(t_))));
    const T lr_t = T(lr), eps = T(c.eps), wd = T(lr * c.weight_decay);
    T* m = m_.data();
    T* v = v_.data();
    const uint8_t* dec = decay_.data();
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) {
      const T g = grads[i] * gs;
      m[i] = b1 * m[i] + (T(1) - b1) * g;
      v[i] = b2 * v[i] + (T(1) - b2) * g * g;
      const T upd = (m[i] * bc1) / (std::sqrt(v[i] * bc2) + eps);
      params[i] -= lr_t * upd + (dec[i] ? wd * params[i] : T(0));
      grads[i] = T(0);
    }
  }
  void step(T* params, T* grads, const AdamWConfig& c, double lr, double grad_scale) {
    begin_step();
    update(params, grads, c, lr, grad_scale, 0, int64_t(m_.size()));
  }

  int64_t steps() const {
    return t_;
  }
  // State access for a device copy of the optimizer (the CUDA stage) and checkpoints.
  std::vector<T>& first_moment() {
    return m_;
  }
  std::vector<T>& second_moment() {
    return v_;
  }
  void set_steps(int64_t t) {
    t_ = t;
  }
  void save(std::ostream& out) const;
  void load(std::istream& in);

 private:
  std::vector<uint8_t> decay_;
  std::vector<T> m_, v_;
  int64_t t_ = 0;
};

}  // namespace xdc::model
