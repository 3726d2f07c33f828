#pragma once
// DiLoCo's outer loop in the worker (RunSpec::dp_sync with method "diloco"; Douillard et
// al., arXiv 2311.08105). The executor skips the per-iteration gradient all-reduce (each
// replica's inner AdamW steps on its own gradients) and, after every inner_steps-th
// iteration (warmup ones counted), calls sync(): per held stage
//   delta = theta_start - theta_local, encoded in the payload format (model/payload.h);
//   an in-place MPI_Iallreduce of the encoded units over the replicas' communicator
//   (Layout::replicas): fp32 with MPI_SUM, the other formats with an MPI datatype of one
//   unit and a user op that decodes both operands, adds and re-encodes, so every hop of
//   the reduction carries the format's bytes and the rounding is real;
//   the sum decoded, divided by the replicas, and the outer Nesterov step applied
//   (model/outer_optimizer.h) from theta_start; theta_start = the new parameters.
// Every replica decodes the same reduced bytes, so replicas leave the sync with identical
// parameters. Modeled compute has no parameters: the same collective runs on the stage's
// gradient scratch (its grad_bytes as fp32 values, encoded), so the bytes still cross
// the WAN, and nothing is stepped.
// The MPI datatypes and ops are made by the constructor: build this before the Comm's
// thread starts (MPI calls from one thread at a time).
#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
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

  // Whether the outer sync follows iteration `iteration` (0-based, warmup included).
  bool due(int iteration) const { return (iteration + 1) % inner_steps_ == 0; }
  int64_t outer_steps() const { return steps_; }

  // Keeps theta_start of every held stage (before the first iteration).
  void begin(StageCompute& compute, const std::vector<int>& stages);
  // The stage's encoded pseudo-gradient, its all-reduce submitted on `comm`. Returns the
  // request (wait for it, then finish()).
  Comm::Request* start(StageCompute& compute, int stage, Comm& comm, MPI_Comm replicas);
  // After the request completed: decode, average, outer step (real compute).
  void finish(StageCompute& compute, int stage);
  int64_t wire_bytes(int stage) const;  // the encoded payload of the stage

 private:
  struct Stage {
    std::vector<float> theta_start, delta;
    std::vector<std::byte> wire;
    std::unique_ptr<model::OuterNesterov> opt;
  };
  std::map<int, Stage> stages_;
  model::Payload payload_;
  int inner_steps_, replicas_;
  double lr_, momentum_;
  int64_t steps_ = 0;
  MPI_Datatype unit_ = MPI_DATATYPE_NULL;
  MPI_Op op_ = MPI_OP_NULL;
};

}  // namespace xdc::worker
