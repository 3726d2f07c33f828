#pragma once
// What a rank computes for F / B / W of the stages it holds, behind one interface so the
// executor is the same in both modes:
//  - real: the mini Llama stages (workloads/model StageApi). Stage 0 and the last stage
//    read token batches: every iteration draws data_parallel * microbatches batches of
//    microbatch_size from one BatchLoader(corpus, b, seq, seed) stream and replica k uses
//    draws [k*m, (k+1)*m), so replicas see disjoint shards, a single replica sees exactly
//    what LocalModel fed batch by batch from the same loader sees, and a DP run equals a
//    single pipeline with data_parallel*m microbatches.
//  - modeled: each action sleeps (clock_nanosleep, no CPU) for ModeledCosts' ns; outputs
//    are a shared zero buffer of activation_bytes.
// Tensor parallelism (RunSpec::tensor_parallel > 1): real compute holds this TP rank's
// share of each stage (workloads/model/stage.h), modeled compute sleeps its F and B in
// tp_allreduces equal slices; both call the TP all-reduce (set_tp_allreduce, the
// executor's: MPI on the TP group) inside F and B, 2 per layer each.
// Activations and gradients cross the interface as bytes (what MPI sends). Spans returned
// are valid until the next call on this object.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "workloads/worker/run_spec.h"

namespace xdc::worker {

class StageCompute {
 public:
  virtual ~StageCompute() = default;
  virtual std::string description() const = 0;  // "real: cpu (1 threads)", "modeled"
  virtual bool real() const = 0;
  // Bytes of stage s's output activation (= of the gradient sent back into it).
  virtual int64_t boundary_bytes(int stage) const = 0;

  virtual void begin_iteration(int iteration) = 0;
  virtual std::span<const std::byte> forward(int stage, int mb, std::span<const std::byte> in) = 0;
  virtual std::span<const std::byte> backward_input(int stage, int mb,
                                                    std::span<const std::byte> dout) = 0;
  virtual void backward_weight(int stage, int mb) = 0;
  virtual std::span<const std::byte> backward(int stage, int mb,
                                              std::span<const std::byte> dout) = 0;

  // Modeled compute: a co-executed pair (schedule.h) of the F of stage sf and the
  // backward of stage sb (BW when `full`, else B): sleeps the co-execution plan's time
  // (coexec.h: the halves' operators, the node's folded TP all-reduces of each running
  // beside the other's computation). Returns the F's output and the backward's (the
  // shared zero buffer, as forward() / backward() return). Real compute has none: the
  // executor runs the backward, then the F (the CPU stage's threads are busy either way,
  // and the backward frees what the F then fills).
  using Outputs = std::pair<std::span<const std::byte>, std::span<const std::byte>>;
  virtual Outputs coexecute(int sf, int sb, bool full);

  // The stage's gradient buffer, summed in place across replicas (modeled: scratch of
  // grad_bytes, shared by the stages of the rank).
  virtual std::span<float> grads(int stage) = 0;
  virtual double grad_sq_norm(int stage) = 0;  // modeled: 0
  // The stage's live parameters, written in place by an outer step (outer_sync.h); empty
  // where they cannot be (modeled compute, a CUDA stage: its params() is a host copy).
  virtual std::span<float> params(int stage) = 0;
  virtual void optimizer_step(int stage, double grad_scale) = 0;

  // The TP group's in-place sum (TP > 1; required before the first F).
  virtual void set_tp_allreduce(std::function<void(std::span<float>)> allreduce) = 0;
  // TP all-reduces inside one F (and inside one B) of `stage`: 0 without TP.
  virtual int tp_allreduces(int stage) const = 0;

  // Inference prefill of a prompt of `tokens` tokens (prefill.h) on this rank's share of
  // the model: real compute runs every held stage's forward (in stage order, consecutive
  // stages chained; the first stage reads this iteration's training text, the others a
  // zero hidden state) over ceil(tokens / (B x seq)) microbatches, in a microbatch slot of
  // its own that is discarded after each pass: parameters, gradients, the training's
  // activations and its loss are untouched. Modeled compute has none (the executor
  // sleeps the job).
  virtual void prefill(int tokens) = 0;

  virtual double iteration_loss() const = 0;  // mean over microbatches; NaN without loss
  // Validation, forward only and nothing kept: held stage `stage` on fixed validation
  // batch `batch` of `batches` (the corpus's validation split, BatchLoader::fixed), `in`
  // the previous stage's output (the first stage reads the batch's tokens). Returns the
  // stage's output; the last stage returns none and sets *loss to the batch's loss. Real
  // compute only (evaluates()); worker.cpp runs it over the replica's pipeline.
  virtual bool evaluates() const = 0;
  virtual std::vector<float> eval_stage(int stage, int batch, int batches,
                                        std::span<const float> in, double* loss) = 0;
  virtual std::string param_checksum() = 0;  // hex hash of the held parameters; "" modeled
  virtual int64_t peak_activation_bytes() const = 0;
};

// Sleeps `ns` on CLOCK_MONOTONIC (absolute deadline, no CPU): what modeled compute does.
void sleep_ns(int64_t ns);

// `stages`: the schedule stages this rank holds; `stage_count` of the whole pipeline;
// `world_rank` picks the rank's GPU (RunSpec::rank_gpus); `tp_index`: this rank's place in
// its TP group. Real compute asked on a GPU that cannot be used throws (no silent fall
// back to the CPU).
std::unique_ptr<StageCompute> make_compute(const RunSpec& spec, int stage_count,
                                           const std::vector<int>& stages, int replica,
                                           int world_rank, int tp_index = 0);

}  // namespace xdc::worker
