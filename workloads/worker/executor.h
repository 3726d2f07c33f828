#pragma once
// Runs one rank's action list (Schedule IR) per iteration, in order: compute never moves.
// Communication is posted as early as the schedule allows and completes in the comm
// thread (comm.h) while compute runs:
//  - every RECV of an iteration is posted before its first action, or earlier: right
//    after the previous iteration's last RECV (a buffer each; in modeled mode all land
//    in one sink, the bytes being meaningless);
//  - SEND is an Isend of a copy of the producer's output, reaped when complete;
//  - a stage's gradient allreduce across replicas (MPI_Iallreduce on the communicator of
//    this pipeline rank's replicas) starts right after its last W/BW of the iteration;
//    the ALLREDUCE action is where it must be complete;
//  - OPT: with grad_clip > 0 (real mode), the first OPT of the iteration sums the
//    squared gradient norms of all stages (allreduce over the replica's pipeline ranks),
//    then each stage steps with scale clip_scale(norm of the replica mean) / replicas.
// With an OuterSync (RunSpec::dp_sync diloco or streaming, outer_sync.h) there is no
// gradient all-reduce: ALLREDUCE actions are zero-length records, OPT scales by the local
// norm's clip alone, and after an iteration's last action the fragments due start their
// sync on every held stage holding them (all submitted); the syncs due to be applied
// (overlap_steps after their start; 0: this iteration's) are then waited for and applied
// in the order they started, each traced as an OUTER_SYNC record (bytes: the encoded
// payload) from its start, or the applying iteration's start if later, to its application,
// its wait counted as OUTER_SYNC. finish_outer() applies those still pending at the end of
// the run, untraced (after the measured iterations), and leaves the outer parameters live
// for the evaluation.
// With iteration_barrier, every iteration starts with an MPI_Ibarrier over the world
// (outside the iteration window), so iteration windows line up across ranks as in the
// simulator.
// Waits are timed by cause (RECV_F, RECV_B, ALLREDUCE, GRAD_NORM, SEND_DRAIN,
// ITERATION_BARRIER; with prefill (prefill.h) the PREFILL jobs run inside the RECV and
// barrier waits, which still cover the whole time the training waited); a wait
// longer than timeout_s throws WaitTimeout naming the action, peer rank and host
// (the caller prefixes this rank and host) and every rank of this machine with no sign of
// life for over a second (liveness.h: the stalled rank, where the peer waited for is
// itself waiting on it); time this rank itself did not run (stopped, starved) does not
// count against its peer.
// Messages between consecutive stages on one rank are handed over in memory.
// Tensor parallelism (run_spec.h's layout): the compute's TP all-reduces (compute.h) are
// MPI_Iallreduce on the TP group's communicator through the comm thread, waited for on
// the compute thread (they sit inside an F or B: the layer needs the sum), each traced as
// a TP_ALLREDUCE record with that action's stage and microbatch and counted in waits.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "workloads/schedule/schedule.h"
#include "workloads/worker/comm.h"
#include "workloads/worker/compute.h"
#include "workloads/worker/liveness.h"
#include "workloads/worker/outer_sync.h"
#include "workloads/worker/prefill.h"
#include "workloads/worker/run_spec.h"
#include "workloads/worker/tracer.h"

namespace xdc::worker {

struct WaitTimeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Layout {
  int world_rank = 0, replica = 0, pipeline_rank = 0, tp_index = 0;
  int pipeline_ranks = 1, data_parallel = 1, tensor_parallel = 1;
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm replicas = MPI_COMM_NULL;  // the ranks holding this rank's stages and TP index, one
                                      // per replica
  MPI_Comm pipeline = MPI_COMM_NULL;  // this replica's ranks (every pipeline and TP rank):
                                      // the gradient norm's sum
  MPI_Comm tensor = MPI_COMM_NULL;    // this rank's TP group (TP > 1)
  std::vector<std::string> hosts;     // world rank -> host

  // The rank of this TP index on a pipeline rank of this replica (run_spec.h's layout).
  int world_of(int pipeline_rank_of_peer) const {
    return (replica * pipeline_ranks + pipeline_rank_of_peer) * tensor_parallel + tp_index;
  }
  std::string host(int world_rank_of) const;
};

class Executor {
 public:
  // `outer`: DiLoCo's outer loop (null: synchronous data parallelism); outlives this.
  Executor(const RunSpec& spec, const sched::Schedule& schedule, Layout layout,
           StageCompute& compute, Comm& comm, Tracer& tracer, OuterSync* outer = nullptr);
  ~Executor();

  struct Iteration {
    int64_t start_ns = 0, end_ns = 0;  // local clock
    double loss = 0;                   // NaN without the last stage
  };
  // `another_follows`: the next iteration's receives are posted as soon as this one's
  // last RECV is done (a rank still in its W tail can then take the next iteration's
  // first activation while computing).
  Iteration run_iteration(int iteration, bool another_follows);
  void drain_sends();   // waits for every outstanding Isend (end of run)
  void finish_outer();  // applies the outer syncs still pending (end of run)

  const nlohmann::json& waits() const { return waits_; }
  // Called when an iteration starts (after its barrier) with its number from 0 (warmup
  // included): the worker's progress for the harness (run_spec.h's rank<r>.progress).
  std::function<void(int iteration)> on_start;
  std::vector<int> stages() const;
  // With prefill on (run_spec.h PrefillSpec): the requests' outcome for the rank report,
  // after finish_prefill(end of the last measured iteration); null otherwise.
  void finish_prefill(int64_t end_ns);
  nlohmann::json prefill_report() const;

 private:
  using Key = std::tuple<int, int, int>;  // direction (0 F, 1 B), consumer stage, mb
  struct Buffer {
    std::byte* data = nullptr;
    size_t size = 0;
    std::unique_ptr<std::vector<std::byte>> owned;  // null: borrowed (modeled)
  };
  struct PendingSend {
    Comm::Request* req;
    Buffer buf;
    sched::Action action;
    int64_t bytes;
    bool measured;  // posted in a measured iteration
  };

  Buffer take_buffer(size_t bytes);
  void give_back(Buffer b);
  Buffer copy_out(std::span<const std::byte> data);
  int tag(int direction, int consumer_stage, int mb) const;
  int64_t message_bytes(const sched::Action& a) const;
  void wait_for(Comm::Request* r, const sched::Action& a, int iteration, const char* cause,
                const std::string& what);
  void add_wait(const char* cause, int64_t ns);
  std::function<bool(int64_t)> until(Comm::Request* r);  // prefill: wait on r until t_ns
  void reap_sends();
  void handle_output(const sched::Action& a, std::span<const std::byte> out);
  Buffer take_input(int direction, int stage, int mb, const sched::Action& a);
  // The buffer at `key`, taken out of `box`; throws, naming a and what is `missing`, when
  // it is not there.
  Buffer take_from(std::map<Key, Buffer>& box, const Key& key, const sched::Action& a,
                   const char* missing);
  void start_allreduce(int stage);
  void tp_allreduce(std::span<float> buf);
  void run_pair(const sched::Action& f, const sched::Action& b);  // a co-executed pair
  double grad_scale(int iteration);
  // run_iteration's steps. run_action runs action i and returns the index of the last
  // action it ran (i + 1 when i is a pair's F); receive waits for RECV i's data, send posts
  // SEND i's Isend, finish_allreduce waits for the stage's gradient allreduce.
  void wait_iteration_barrier(int iteration);
  int run_action(int i, int iteration);
  void receive(int i, int iteration);
  void forward(const sched::Action& a);
  void backward(const sched::Action& a);
  void send(int i, int iteration);
  void finish_allreduce(const sched::Action& a, int iteration);
  void outer_sync(int iteration);
  void apply_outer(int iteration);
  struct PendingOuter {
    int stage, fragment, apply_after;
    int64_t start_ns;
    Comm::Request* request;
  };
  std::vector<PendingOuter> pending_outer_;
  int64_t iteration_start_ns_ = 0;

  const RunSpec& spec_;
  const sched::Schedule& sched_;
  Layout L_;
  StageCompute& compute_;
  Comm& comm_;
  Tracer& tracer_;
  OuterSync* outer_;
  bool outer_begun_ = false;  // theta_start kept where the outer loop starts
  // Whether the current iteration is the outer loop's (no per-iteration all-reduce).
  bool outer_on() const { return outer_ && outer_->active(iteration_); }
  const std::vector<sched::Action>& actions_;
  std::vector<int> last_grad_action_;  // per stage: index of its last W/BW, -1 if not here

  std::vector<std::unique_ptr<std::vector<std::byte>>> free_;
  std::vector<std::byte> sink_;  // modeled receives
  std::map<Key, Buffer> inbox_;
  std::map<Key, Buffer> outbox_;
  struct Receives {  // one iteration's posted receives, per action index
    std::vector<Comm::Request*> req;
    std::vector<Buffer> buf;
    bool posted = false;
  };
  void post_receives(Receives& r);
  Receives cur_, next_;
  int last_recv_ = -1;  // index of the rank's last RECV action
  std::vector<PendingSend> sends_;
  std::map<int, Comm::Request*> allreduce_;  // stage -> in flight
  std::set<int> reduced_;                    // stages reduced this iteration
  bool scale_known_ = false;
  double scale_ = 1.0;
  double norm_sq_ = 0;
  nlohmann::json waits_ = nlohmann::json::object();
  sched::Action running_;  // the compute action running (for the TP all-reduces inside it)
  int iteration_ = 0;
  Liveness live_;  // this rank's sign of life; on a timeout, who else went silent
  // Prefill in bubbles (prefill.h): served while the rank waits for a RECV's data or the
  // iteration barrier, never past the predicted start of its next training action.
  std::unique_ptr<PrefillServer> prefill_;
  std::vector<int> next_compute_;  // per action index: the next compute action's index
};

}  // namespace xdc::worker
