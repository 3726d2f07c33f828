#pragma once
// One pipeline stage of the mini Llama: the layers [begin, end) of a ModelConfig, plus the
// embedding on the first stage and final norm + LM head + cross-entropy on the last. This
// is the contract between the model and the pipeline executor (stage_api.h puts it behind
// one interface with the CUDA stage); the model knows tensors and layers only (no MPI, no
// schedule). Threads: parallel.h; calls on one stage come from one thread at a time.
//
// Per microbatch id, any number in flight at once:
//   forward(mb, in)          F: tokens (first stage) or activations in, activations out
//                               (last stage: targets in, loss out). Keeps what B needs.
//   backward_input(mb, dout) B: every input-gradient path (zero-bubble B); returns the
//                               gradient of the stage input. Keeps each linear's X and dY.
//   backward_weight(mb)      W: every weight gradient, accumulated into grads().
//   backward(mb, dout)       B then W.
//   discard(mb)              drop a forward-only microbatch (evaluation).
// Gradients accumulate across microbatches. With set_microbatches(m), m microbatches of
// size b give exactly the gradient of one batch of m*b (the loss is the mean over tokens).
// Parameters and gradients are each one flat buffer (one allreduce per stage).
//
// Tensor parallelism (config.h's TensorParallel, Megatron-LM without sequence
// parallelism): a stage built with tp = {size t, rank r} holds r's share of every block's
// heads (wqkv rows, wo columns) and SwiGLU units (w13 rows, w2 columns); the norms, the
// embedding and the final norm + LM head are replicated (every TP rank computes them in
// full, on the same data, and gets the same gradients). Activations and the gradients
// crossing the stage boundary are whole on every TP rank. Per block the stage calls the
// all-reduce hook (set_tp_allreduce: a sum over the TP group, in place, on the calling
// thread; the caller owns the communication) on a (B,T,C) buffer four times:
//   F: after the attention's wo (x_mid), after the MLP's w2 (block output);
//   B: on the input gradient of w13 (dln2) and of wqkv (dln1), the column-parallel layers.
// TP rank 0 adds the residual before the sums, so the sum is the block's output. W needs
// no communication. With t ranks the loss and every gradient equal the uncut stage's
// (shard_indices maps a sharded tensor back), up to the order of float sums.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "workloads/model/activations.h"
#include "workloads/model/config.h"
#include "workloads/model/optimizer.h"
#include "workloads/model/parallel.h"

namespace xdc::model {

// One named tensor inside a stage's flat parameter buffer.
struct ParamTensor {
  std::string name;    // "layers.3.wqkv", "embedding", "lm_head", ...
  int global_id = 0;   // position in the uncut model: its init stream and its identity
  int64_t offset = 0;  // in elements, into params() / grads()
  int64_t size = 0;
  bool decay = false;    // matrices are weight-decayed, norm weights are not
  bool sharded = false;  // split across the TP ranks (wqkv, wo, w13, w2 when TP > 1)
};

// The tensors of a stage, in flat-buffer order (shared by the CPU and CUDA stages).
std::vector<ParamTensor> stage_tensors(const ModelConfig& cfg, StageRange range,
                                       TensorParallel tp = {});
// For a sharded tensor of TP rank tp.rank: each local element's index in the uncut tensor
// (row-major, as stage_tensors with TP 1 lays it out); empty for a tensor not sharded.
std::vector<int64_t> shard_indices(const ModelConfig& cfg, const ParamTensor& t, TensorParallel tp);
// Deterministic init of those tensors from cfg.seed: each tensor draws from its own stream
// keyed by its global id, so the weights are the same however the model is cut (into
// stages, or across TP ranks: a shard takes its elements of the uncut tensor's draw).
void init_params(const ModelConfig& cfg, const std::vector<ParamTensor>& tensors, double* params,
                 TensorParallel tp = {});
// Activation bytes one microbatch of B sequences holds from F until B, and from B until W.
size_t activation_bytes_after_forward(const ModelConfig& cfg, StageRange range, int B,
                                      size_t scalar_bytes, TensorParallel tp = {});
size_t activation_bytes_after_backward_input(const ModelConfig& cfg, StageRange range, int B,
                                             size_t scalar_bytes, TensorParallel tp = {});

// A stage's checkpoint: config, range and TP shard (checked on load), parameters, AdamW
// state. Written to PATH.tmp and renamed, so a crash never leaves a torn file.
template <typename T>
void save_checkpoint(const std::string& path, const ModelConfig& cfg, StageRange range,
                     std::span<const T> params, const AdamW<T>& adam, TensorParallel tp = {});
template <typename T>
void load_checkpoint(const std::string& path, const ModelConfig& cfg, StageRange range,
                     std::span<T> params, AdamW<T>& adam, TensorParallel tp = {});

template <typename T>
struct StageInput {
  std::span<const int32_t> tokens;   // first stage: (B,T) token ids
  std::span<const T> acts;           // other stages: (B,T,C) from the previous stage
  std::span<const int32_t> targets;  // last stage: (B,T) next-token ids
};

template <typename T>
struct StageOutput {
  std::span<const T> acts;  // (B,T,C) for the next stage; empty on the last stage. Valid
                            // until backward_input(mb) or discard(mb).
  double loss = 0;          // last stage: mean cross-entropy of this microbatch; else 0
};

template <typename T>
class StageT {
 public:
  StageT(const ModelConfig& cfg, StageRange range, int microbatch_size, TensorParallel tp = {});
  ~StageT();
  StageT(const StageT&) = delete;
  StageT& operator=(const StageT&) = delete;

  const ModelConfig& config() const { return cfg_; }
  StageRange range() const { return range_; }
  bool is_first() const { return range_.first(); }
  bool is_last() const { return range_.last(cfg_); }
  int microbatch_size() const { return B_; }
  TensorParallel tensor_parallel() const { return tp_; }
  // TP > 1: the sum over the TP group (see the header comment); required before F/B run.
  void set_tp_allreduce(std::function<void(std::span<T>)> allreduce) {
    tp_allreduce_ = std::move(allreduce);
  }

  // ---- sizes the executor and the simulator need
  int64_t param_count() const { return int64_t(params_.size()); }
  // Bytes of the activation tensor sent to the next stage (and of the gradient sent back).
  size_t boundary_bytes() const { return size_t(B_) * cfg_.seq * cfg_.dim * sizeof(T); }
  // Training FLOPs of this stage per token (its share of 6N + 12 L d T).
  double flops_per_token() const;
  // Activation bytes one microbatch holds from F until its B, and from B until its W.
  size_t activation_bytes_after_forward() const;
  size_t activation_bytes_after_backward_input() const;
  // Exact live / peak activation bytes now (all microbatches in flight), from the pool.
  size_t live_activation_bytes() const { return pool_.live_bytes(); }
  size_t peak_activation_bytes() const { return pool_.peak_bytes(); }
  void reset_peak_activation_bytes() { pool_.reset_peak(); }
  int in_flight() const { return int(active_.size()); }

  // ---- compute (see the header comment)
  void set_microbatches(int m);
  StageOutput<T> forward(int mb, const StageInput<T>& in);
  std::span<const T> backward_input(int mb, std::span<const T> grad_out = {});
  void backward_weight(int mb);
  // The returned input gradient is valid until backward_weight(mb) (backward(): until the
  // next backward call).
  std::span<const T> backward(int mb, std::span<const T> grad_out = {});
  void discard(int mb);

  // ---- parameters, gradients, optimizer
  std::span<T> params() { return params_; }
  std::span<const T> params() const { return params_; }
  std::span<T> grads() {  // writable (allreduce): zero_grad() can no longer assume zeros
    grads_zero_ = false;
    return grads_;
  }
  std::span<const T> grads() const { return grads_; }
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  void zero_grad();  // free right after optimizer_step(), which leaves the gradients zero
  // Local; the executor sums it over stages. With TP, this rank's share: sharded tensors in
  // full, replicated ones / TP size, so the sum over the TP group is the uncut norm.
  double grad_sq_norm() const;
  // AdamW with every gradient multiplied by grad_scale (clip_scale() of the global norm,
  // times 1/replicas if the allreduce summed rather than averaged). Zeroes the gradients.
  void optimizer_step(const AdamWConfig& opt, double lr, double grad_scale = 1.0);
  int64_t optimizer_steps() const { return adam_.steps(); }

  // Parameters and optimizer state of this stage. load() checks config and range match.
  void save(const std::string& path) const;
  void load(const std::string& path);

 private:
  struct Weights;
  struct Layer;
  struct Micro;
  Micro* lookup(int mb);
  Micro& start(int mb);
  Micro& find(int mb, int phase, const char* what);
  void finish(int mb);
  int work_units() const;
  // Sequences [b0, b1) of the microbatch (F and B are independent per sequence). A block's
  // F is two parts (attention, MLP) and its B three (MLP to dln2, to dln1, to dres), each
  // followed by a TP all-reduce when TP > 1 (part -1: all of them, TP 1).
  void layer_forward(int l, Micro& m, T* out, int b0, int b1, int part = -1);
  void layer_backward_input(int l, Micro& m, int b0, int b1, T* scratch, int part = -1);
  void tp_sum(T* data, size_t n);
  double sq_norm(int64_t begin, int64_t end) const;  // of grads_[begin, end)
  // Part t of n of every weight gradient of layer l (W splits gradient rows or columns).
  void layer_backward_weight(int l, Micro& m, int t, int n);

  ModelConfig cfg_;
  StageRange range_;
  TensorParallel tp_;
  std::function<void(std::span<T>)> tp_allreduce_;
  int B_, BT_, nL_;
  int Hl_, KVHl_, Cl_, Cql_, Fl_;  // this TP rank's heads, KV heads, head columns, qkv, ffn
  T loss_scale_;
  std::vector<T> params_, grads_;
  bool grads_zero_ = true;  // nothing accumulated since the last zeroing
  std::vector<ParamTensor> tensors_;
  std::unique_ptr<Weights> w_, dw_;
  AdamW<T> adam_;
  std::vector<T> rope_cos_, rope_sin_;
  std::vector<T> ws_dg_, ws_datt_, ws_dp_;  // B-pass scratch
  std::vector<T> ws_bw_out_;                // backward(): input gradient outliving W
  std::vector<double> ws_part_;             // per-task partial sums (loss)
  mutable std::vector<double> ws_norm_;     // per-thread partial sums (gradient norm)
  ActivationPool<T> pool_;
  std::vector<std::pair<int, std::unique_ptr<Micro>>> active_;  // in flight, by id
  std::vector<std::unique_ptr<Micro>> spare_;
};

using Stage = StageT<float>;

}  // namespace xdc::model
