#pragma once
// The outer optimiser of DiLoCo (Douillard et al., arXiv 2311.08105): SGD with Nesterov
// momentum on the pseudo-gradient delta = theta_start - mean over replicas of theta_local,
// as PyTorch's SGD(nesterov=True) steps it:
//   v = momentum * v + delta;   theta = theta_start - lr * (delta + momentum * v).
// One per stage; every replica holds the same v and applies the same averaged delta, so
// replicas leave each outer step with identical parameters.
#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

namespace xdc::model {

class OuterNesterov {
 public:
  OuterNesterov(double lr, double momentum) : lr_(lr), momentum_(momentum) {}
  // theta_start becomes the new outer parameters.
  void step(std::span<const float> delta, std::span<float> theta_start) {
    if (delta.size() != theta_start.size())
      throw std::invalid_argument("OuterNesterov::step: spans of different sizes");
    if (v_.empty()) v_.assign(delta.size(), 0.0f);
    const auto mu = static_cast<float>(momentum_), lr = static_cast<float>(lr_);
    for (size_t i = 0; i < delta.size(); ++i) {
      v_[i] = mu * v_[i] + delta[i];
      theta_start[i] -= lr * (delta[i] + mu * v_[i]);
    }
  }
  std::span<const float> momentum_buffer() const { return v_; }

 private:
  double lr_, momentum_;
  std::vector<float> v_;
};

}  // namespace xdc::model
