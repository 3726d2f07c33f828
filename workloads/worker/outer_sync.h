#pragma once
// DiLoCo's outer loop in the worker (RunSpec::dp_sync with method "diloco" or "streaming";
// Douillard et al., arXiv 2311.08105 and 2501.18512). The executor skips the per-iteration
// gradient all-reduce (each replica's inner AdamW steps on its own gradients) and asks
// after every iteration which fragments (model/fragments.h; diloco: one, the whole stage)
// start their sync: per held stage and such fragment
//   delta = theta_start - theta_local over the fragment's runs of the stage's buffer
//   (DpSyncSpec::fragment_runs), encoded in the payload format (model/payload.h);
//   an in-place MPI_Iallreduce of the encoded units over the replicas' communicator
//   (Layout::replicas): fp32 with MPI_SUM, the other formats with an MPI datatype of one
//   unit and a user op that decodes both operands, adds and re-encodes, so every hop of
//   the reduction carries the format's bytes and the rounding is real;
// and overlap_steps iterations later (0: at once) waits for it and applies it: the sum
// decoded, divided by the replicas, the outer Nesterov step taken from theta_start
// (model/outer_optimizer.h), theta_start = the result, and the live parameters = merge x
// theta_local + (1 - merge) x theta_start. Every replica decodes the same reduced bytes, so
// replicas agree on theta_start (and, with merge 0, leave the sync with identical
// parameters). Eager (DpSyncSpec::eager): the outer step is taken at the start, on the
// replica's own delta (as encoded) mixed with the others' from the fragment's previous
// all-reduce (model::EagerOuterGradient), the live parameters set to theta_start, and the
// all-reduce is waited for inner_steps iterations later, as the fragment's next starts;
// its sum only updates the others' share. Modeled compute has no parameters: the same
// collective runs on the stage's gradient scratch (the fragment's runs of it as fp32
// values, encoded), so the bytes still cross the WAN, and nothing is stepped.
// The MPI datatypes and ops are made by the constructor: build this before the Comm's
// thread starts (MPI calls from one thread at a time).
#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "workloads/model/outer_optimizer.h"
#include "workloads/model/payload.h"
#include "workloads/worker/comm.h"
#include "workloads/worker/compute.h"
#include "workloads/worker/run_spec.h"

namespace xdc::worker {

class OuterSync {
 public:
  OuterSync(const DpSyncSpec& spec, int replicas);
  ~OuterSync();
  OuterSync(const OuterSync&) = delete;
  OuterSync& operator=(const OuterSync&) = delete;

  // Whether iteration `iteration` (0-based, warmup included) is one of the outer loop's
  // (DpSyncSpec::sync_steps: the ones before are synchronous data parallelism's).
  bool active(int iteration) const { return iteration >= sync_steps_; }
  int sync_steps() const { return sync_steps_; }
  // The fragments whose sync starts after iteration `iteration` (0-based, warmup included).
  std::vector<int> due(int iteration) const;
  // Iterations between a sync's start and the wait for it (eager: inner_steps).
  int apply_after_steps() const { return eager_ ? inner_steps_ : overlap_; }
  bool eager() const { return eager_; }
  int64_t outer_steps() const { return steps_; }  // fragment syncs applied, over stages

  // Keeps theta_start of every held stage (before the outer loop's first iteration; again
  // replaces what an earlier call kept); throws where a fragment's runs do not fit the
  // stage's buffer.
  void begin(StageCompute& compute, const std::vector<int>& stages);
  // Whether the stage holds any of the fragment (a stage may hold none of a fragment's
  // layers: nothing to synchronise).
  bool holds(int stage, int fragment) const;
  // The encoded pseudo-gradient of the stage's fragment, its all-reduce submitted on
  // `comm`. Returns the request (wait for it, then finish()).
  Comm::Request* start(StageCompute& compute, int stage, int fragment, Comm& comm,
                       MPI_Comm replicas);
  // After the request completed: decode, average, outer step, merge (real compute;
  // eager: the others' share kept for the next start).
  void finish(StageCompute& compute, int stage, int fragment);
  int64_t wire_bytes(int stage, int fragment) const;  // the encoded payload
  // The live parameters = the outer ones (theta_start of every fragment; real compute):
  // what the run's end evaluates (Streaming DiLoCo's Table 3: the outer parameters
  // evaluate better than a replica's own).
  void adopt_outer(StageCompute& compute);

 private:
  struct Unit;
  void merge_into(StageCompute& compute, int stage, const Unit& u, float keep) const;

  using Runs = std::vector<std::pair<int64_t, int64_t>>;
  struct Unit {
    Runs runs;
    std::vector<float> theta_start, delta;
    std::vector<std::byte> wire;
    std::unique_ptr<model::OuterNesterov> opt;
    std::unique_ptr<model::EagerOuterGradient> eager;  // eager, real compute
    std::vector<float> sent, step;                     // eager: delta as encoded; own/M + others
  };
  std::map<std::pair<int, int>, Unit> units_;  // (stage, fragment)
  std::vector<std::vector<Runs>> runs_;        // the spec's, per stage and fragment
  model::Payload payload_;
  int inner_steps_, sync_steps_, fragments_, overlap_, replicas_;
  bool eager_;
  double merge_, lr_, momentum_;
  int64_t steps_ = 0;
  MPI_Datatype unit_ = MPI_DATATYPE_NULL;
  MPI_Op op_ = MPI_OP_NULL;
};

}  // namespace xdc::worker
