#pragma once
// The outer optimiser of DiLoCo (Douillard et al., arXiv 2311.08105): SGD with Nesterov
// momentum on the pseudo-gradient delta = theta_start - mean over replicas of theta_local,
// as PyTorch's SGD(nesterov=True) steps it:
//   v = momentum * v + delta;   theta = theta_start - lr * (delta + momentum * v).
// One per stage; every replica holds the same v and applies the same averaged delta, so
// replicas leave each outer step with identical parameters.
#include <algorithm>
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

// Eager updates (Kale, Douillard and Donchev, arXiv 2502.12996): a replica takes its outer
// step when its sync starts, before the all-reduce of its pseudo-gradient ends, on
//   own / M + others
// where own is its fresh pseudo-gradient and others, 1/M of the sum of the other
// replicas' pseudo-gradients from the last all-reduce that completed, stands in for
// theirs (before one completed: (M - 1)/M x own, as if they had moved as it did). The
// replicas' outer parameters then differ by their own last contributions.
class EagerOuterGradient {
 public:
  explicit EagerOuterGradient(int replicas) : m_(static_cast<float>(replicas)) {
    if (replicas < 1) throw std::invalid_argument("EagerOuterGradient: replicas < 1");
  }
  // out = own / M + others.
  void mix(std::span<const float> own, std::span<float> out) const {
    if (own.size() != out.size() || (!others_.empty() && others_.size() != own.size()))
      throw std::invalid_argument("EagerOuterGradient::mix: spans of different sizes");
    if (others_.empty()) {
      std::copy(own.begin(), own.end(), out.begin());
      return;
    }
    for (size_t i = 0; i < own.size(); ++i) out[i] = own[i] / m_ + others_[i];
  }
  // The all-reduce of `sent` (this replica's contribution as the others decode it) ended
  // with `sum`: others = (sum - sent) / M.
  void reduced(std::span<const float> sum, std::span<const float> sent) {
    if (sum.size() != sent.size())
      throw std::invalid_argument("EagerOuterGradient::reduced: spans of different sizes");
    others_.resize(sum.size());
    for (size_t i = 0; i < sum.size(); ++i) others_[i] = (sum[i] - sent[i]) / m_;
  }

 private:
  float m_;
  std::vector<float> others_;  // empty: no all-reduce completed yet
};

}  // namespace xdc::model
