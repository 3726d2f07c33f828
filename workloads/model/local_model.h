#pragma once
// All stages of a cut model in one process, run one after the other: the single-process
// reference that a pipelined run must reproduce, and what tests and the benchmark train.
// It drives the Stage API exactly as the executor does (F per microbatch through every
// stage, then B and W in reverse, global-norm clipping across stages, AdamW).
#include <cmath>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "workloads/model/stage.h"

namespace xdc::model {

// S: the stage type, StageT<T> or (T = float) the device-neutral StageApi, whose stages
// the caller makes (e.g. make_stage(..., Device::kCuda) for every range of split_layers).
template <typename T, typename S = StageT<T>>
class LocalModelT {
 public:
  LocalModelT(const ModelConfig& cfg, int stages, int microbatch_size) {
    for (const StageRange& r : split_layers(cfg, stages))
      stages_.push_back(std::make_unique<S>(cfg, r, microbatch_size));
  }
  explicit LocalModelT(std::vector<std::unique_ptr<S>> stages) : stages_(std::move(stages)) {
    if (stages_.empty()) throw std::invalid_argument("local model: no stages");
  }

  int num_stages() const { return int(stages_.size()); }
  S& stage(int i) { return *stages_[i]; }
  int microbatch_size() const { return stages_[0]->microbatch_size(); }
  int tokens_per_microbatch() const { return microbatch_size() * stages_[0]->config().seq; }

  // Zero the gradients, then forward and backward m microbatches taken in order from
  // tokens/targets (each m*B*T). Split B/W if split_bw. Returns the mean loss.
  double forward_backward(std::span<const int32_t> tokens, std::span<const int32_t> targets, int m,
                          bool split_bw = false) {
    for (auto& s : stages_) {
      s->zero_grad();
      s->set_microbatches(m);
    }
    const size_t n = tokens_per_microbatch();
    double loss = 0;
    for (int mb = 0; mb < m; ++mb) {
      loss += forward(mb, tokens.subspan(mb * n, n), targets.subspan(mb * n, n));
      std::span<const T> g;
      for (int s = num_stages() - 1; s >= 0; --s) {
        if (split_bw) {
          // Copy: a stage's input gradient lives only until its own W.
          g = stages_[s]->backward_input(mb, g);
          grad_.assign(g.begin(), g.end());
          g = grad_;
          stages_[s]->backward_weight(mb);
        } else {
          g = stages_[s]->backward(mb, g);
        }
      }
    }
    return loss / m;
  }

  // Forward only (evaluation): mean loss of m microbatches, nothing kept.
  double eval_loss(std::span<const int32_t> tokens, std::span<const int32_t> targets, int m) {
    check_sizes(tokens, targets, m);
    const size_t n = tokens_per_microbatch();
    double loss = 0;
    for (int mb = 0; mb < m; ++mb) {
      loss += forward(mb, tokens.subspan(mb * n, n), targets.subspan(mb * n, n));
      for (auto& s : stages_) s->discard(mb);
    }
    return loss / m;
  }

  // Global gradient norm over stages, clipping factor, AdamW on every stage.
  double grad_norm() const {
    double sq = 0;
    for (const auto& s : stages_) sq += s->grad_sq_norm();
    return std::sqrt(sq);
  }
  void optimizer_step(const AdamWConfig& opt, double lr) {
    const double norm = grad_norm();
    const double scale = clip_scale(norm * norm, opt.grad_clip);
    for (auto& s : stages_) s->optimizer_step(opt, lr, scale);
  }

  double train_step(std::span<const int32_t> tokens, std::span<const int32_t> targets, int m,
                    const AdamWConfig& opt, double lr) {
    const double loss = forward_backward(tokens, targets, m);
    optimizer_step(opt, lr);
    return loss;
  }

 private:
  void check_sizes(std::span<const int32_t> tokens, std::span<const int32_t> targets, int m) {
    const size_t n = size_t(m) * tokens_per_microbatch();
    if (m < 1 || tokens.size() != n || targets.size() != n) {
      throw std::invalid_argument("local model: expected " + std::to_string(m) +
                                  " microbatches of B*T tokens and targets");
    }
  }
  double forward(int mb, std::span<const int32_t> tokens, std::span<const int32_t> targets) {
    StageInput<T> in;
    in.tokens = tokens;
    double loss = 0;
    for (int s = 0; s < num_stages(); ++s) {
      if (stages_[s]->is_last()) in.targets = targets;
      StageOutput<T> out = stages_[s]->forward(mb, in);
      in = StageInput<T>{};
      in.acts = out.acts;
      loss = out.loss;
    }
    return loss;
  }

  std::vector<std::unique_ptr<S>> stages_;
  std::vector<T> grad_;
};

using LocalModel = LocalModelT<float>;

}  // namespace xdc::model
