#pragma once
// What the MPI workers do every iteration that the schedule IR does not carry
// (workloads/worker/executor.cpp), and one measured iteration simulated with it:
//  - the gradient-norm all-reduce (real compute with grad_clip > 0, more than one pipeline
//    rank): before its first OPT a rank joins an MPI_Iallreduce of one double over its
//    replica's pipeline ranks; OPT starts when it has completed there;
//  - the iteration barrier (RunSpec::iteration_barrier): every iteration starts with an
//    MPI_Ibarrier over the world, outside the measured window; a rank's iteration starts
//    when the barrier completes on it, so ranks start at different times;
//  - the DP gradient all-reduce and the optimizer step are the IR's ALLREDUCE and OPT
//    (CostModel::allreduce_ns, opt_ns; with WorkerModel::dp_links, every iteration's
//    all-reduces are timed together on the links: dp_allreduce_ns below).
//  - the outer loop (outer_every = H > 0; workloads/worker/outer_sync.h): in simulate_run,
//    after every iteration (warmup ones counted, as the workers count) each fragment due
//    (model/fragments.h; CostModel::outer_bytes[stage] has one entry per fragment) starts
//    on every stage holding it: its replicas all-reduce the fragment's encoded payload as
//    libnbc's binomial iallreduce (binomial_allreduce) over dp_links' TCP connections, each
//    rank entering when its iteration's last action ends (or its previous collective
//    does: a rank's collectives go one after another on the connections). The collective
//    is applied outer_overlap iterations later (0: at once): a rank waits from that
//    iteration's end for the collective's end (every member's, as the DP all-reduce's: the
//    root still sends the result after its sum). An OUTER_SYNC record per rank, stage and
//    fragment spans entry (or the applying iteration's start, if later) to application,
//    inside the applying iteration (its barrier follows). The iteration barrier's messages between
//    two ranks arrive no earlier than the outer syncs' data sent before them between the same two
//    (OpenMPI's one TCP connection per pair of processes carries both, in order), and each is
//    a send on that connection: the idle that halves its window (tcp_cwnd_restart) counts
//    from it, for the pipeline's messages and the all-reduces' between replicas alike. The
//    steady state (simulate_iteration) is an inner iteration: no outer sync.
// Both collectives carry a few bytes and are latency-bound; OpenMPI (4.x) runs nonblocking
// collectives with libnbc, whose algorithms for these sizes the functions below follow
// (a message takes the link's latency + bytes / rate, no queueing). The comm thread's
// polling is modelled for the pipeline's messages (poll_ns), not in the collectives:
// <= 100 us per step while a rank waits or sends.
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "harness/sim/cost_model.h"
#include "harness/sim/link_model.h"
#include "harness/sim/link_timeline.h"
#include "workloads/schedule/schedule.h"
#include "workloads/trace/trace.h"

namespace xdc::sim {

// The host memory work libnbc does inside the workers' in-place binomial all-reduce
// (nbc_iallreduce.c, allred_sched_diss), at rates of the host the workers run on
// (run/host_memory.h measures them; 0: free):
// - with an odd number of rounds (ceil(log2 members) odd: 2 or 5-8 members) each member
//   first copies its buffer into the temporary it has just allocated, behind a schedule
//   barrier: at fresh_copy_bps from glibc's largest mmap threshold (kFreshBufferBytes: such
//   a buffer is mapped anew at every call and each of its pages faults), at warm_copy_bps
//   below it (the heap's pages are reused); tests/sim/libnbc_copy_test.cpp checks with
//   OpenMPI which members copy (their page faults);
// - each receive of the reduce is summed into the member's buffer (ompi_op_sum) before its
//   next round, at sum_bps.
// Not modelled: the page faults of a receive into a fresh temporary (the root's with an
// even number of rounds), which the wire's slower pace hides.
struct HostMemory {
  double fresh_copy_bps = 0, warm_copy_bps = 0, sum_bps = 0;
  static constexpr int64_t kFreshBufferBytes = 32LL << 20;  // DEFAULT_MMAP_THRESHOLD_MAX
  int64_t copy_ns(int64_t bytes, int members) const;        // 0 with an even round count
  int64_t sum_ns(int64_t bytes) const;
};

// Completion time on each rank of a communicator (ranks 0..n-1, `links` between them)
// given each rank's entry time:
// libnbc's iallreduce as OpenMPI 4.1's coll/libnbc runs the worker's in-place calls
// (nbc_iallreduce.c: `inplace` selects NBC_ARED_BINOMIAL whatever the size): the whole
// buffer goes up a binomial tree to rank 0 (in round r, rank v at a multiple of 2^r
// receives from v + 2^(r-1), ceil(log2 n) rounds) and back down a binomial broadcast from
// it (rank v receives from v minus its highest bit, which sends to all its children at
// once), one full-size message per tree edge. libnbc puts a schedule barrier between a
// rank's rounds, so a rank posts round r's receive only once round r-1's has arrived (and
// been summed); a rendezvous message (above the eager limit: `rendezvous`) moves its data
// only once that receive is posted, so it starts when both ends are ready, while an eager
// one leaves when its sender is ready (measured: 6 ranks over 3 DCs at 80 ms one way, 128
// MiB: 27.0 s per all-reduce, three WAN transfers in sequence; docs/sweeps.md, Atlas).
std::vector<int64_t> binomial_allreduce(const std::vector<int64_t>& enter, const LinkModel& links,
                                        int64_t bytes);
// The same algorithm with each message's arrival from `message(from, to, bytes,
// sent_at)` (links that change under the run: link_timeline.h's TimedLinks::arrival).
using MessageArrival = std::function<int64_t(int from, int to, int64_t bytes, int64_t at)>;
std::vector<int64_t> binomial_allreduce(const std::vector<int64_t>& enter, int64_t bytes,
                                        bool rendezvous, const MessageArrival& message,
                                        const HostMemory& memory = {});
// The data-parallel gradient all-reduce (CostModel::allreduce_ns): binomial_allreduce of
// `bytes` among the ranks of `m`, all entering at 0, every message over LinkState::send
// (TCP windows, rendezvous per the paths' eager limit) from connections idle for
// `idle_before_ns` (they carry one all-reduce per iteration). Returns when the last rank
// has the sum.
int64_t allreduce_ns(const LinkModel& m, int64_t bytes, int64_t idle_before_ns,
                     const HostMemory& memory = {});
std::vector<int64_t> dissemination_barrier(const std::vector<int64_t>& enter,
                                           const MessageArrival& message);
// libnbc's ibarrier (dissemination: in round k rank r sends to r + 2^k and receives from
// r - 2^k, modulo n; ceil(log2 n) rounds of empty messages).
std::vector<int64_t> dissemination_barrier(const std::vector<int64_t>& enter,
                                           const LinkModel& links);

// The pairs of world ranks (of `world`, replica q's pipeline rank r being q x `local` + r)
// whose connections the data-parallel collectives and the iteration barrier use, for
// WorkerModel::dp_links (LinkModel::set_pairs): in each pipeline rank's group, both
// directions of every message of libnbc's binomial all-reduce (the gradients' and the
// outer syncs') and, with `ring`, of gloo's ring; with `barrier`, the dissemination
// barrier's messages among all world ranks (each a send on its connection: note_send).
std::vector<std::pair<int, int>> dp_pairs(int world, int local, bool ring, bool barrier);

struct WorkerModel {
  bool grad_norm = false;         // the gradient-norm all-reduce runs (above)
  bool iteration_barrier = true;  // RunSpec::iteration_barrier
  int replicas = 1;               // data-parallel replicas (identical: one is simulated)
  LinkModel world;                // between world ranks (replica * ranks + pipeline rank),
                                  // for the barrier; empty: the schedule's links, one replica
  // A schedule of every replica (sched::replicated, its Schedule::replicas; `replicas`
  // then 1): each replica's pipeline ranks run their own gradient-norm all-reduce.
  // send_priority: IterationSetup's, for exclusive channels.
  std::function<int64_t(int rank, const sched::Action& send)> send_priority;
  // The data-parallel gradient all-reduces as the workers run them: each stage's ALLREDUCE
  // is an MPI_Iallreduce of CostModel::grad_bytes[stage] among the world ranks that hold its
  // pipeline rank (replica q's is q x pipeline ranks + rank; comm rank q), and an
  // iteration's all-reduces run at once over OpenMPI's own connections between world
  // ranks (dp_links: TCP paths): dp_allreduce_ns. Empty (dp_links.ranks 0): ALLREDUCE lasts
  // CostModel::allreduce_ns.
  LinkModel dp_links;
  HostMemory host_memory;  // libnbc's copies and sums (above); the host's, set by the caller
  // The library that all-reduces on dp_links: OpenMPI's libnbc (binomial, above; the
  // workers') or gloo's ring (gloo_ring.h; a torch program's step, simulated only).
  enum class Collective { kLibnbc, kGlooRing };
  Collective dp_collective = Collective::kLibnbc;
  int outer_every = 0;    // the outer loop's inner steps H (above); 0: no outer sync
  int outer_overlap = 0;  // iterations between a fragment sync's start and its application
  // The outer loop starts at this iteration (from the first, warmup included); the ones
  // before all-reduce their gradients (CostModel::sync_grad_bytes) and sync none.
  int outer_from = 0;
  // simulate_run: != 0, the connections draw where their random losses fall and their
  // jitter lags from streams of this seed (LinkState::launch), and compute durations are
  // drawn from the costs' measured noise (CostModel::noise_factor; IterationSetup::
  // noise_key); 0, losses evenly spaced, expected lags (the expectations) and the costs'
  // means.
  uint64_t loss_seed = 0;
  // The workers' comm thread polls OpenMPI every poll_ns while its rank waits or sends,
  // backing off while it computes (workloads/worker/poll.h): a pipeline message's
  // rendezvous request is answered, and its answer acted on, at the rank's next poll
  // (TimedLinks::set_comm_poll). 0: at once (mpi.progress none is not modelled). Each of
  // its waits lasts poll_slack_ns more (the workers' timer slack).
  int64_t poll_ns = 0, poll_slack_ns = 0;
};

// The ALLREDUCEs of one iteration (trace `t` of schedule `s`, on the iteration's clock;
// a rank's ALLREDUCE record starts when it entered the collective), timed together as
// libnbc runs them (binomial_allreduce's rounds and its rendezvous rule; gloo's ring with
// WorkerModel::dp_collective kGlooRing: gloo_ring_allreduce) with every message
// a send on `wire` (world ranks, w.dp_links), posted in time order when its rounds before
// it have completed: all-reduces that overlap share the WAN directions they cross, and a
// connection idle since its last use restarts its window (LinkState). Without replicas in
// `s` (replica 0 stands for all) every replica enters when replica 0's rank does. Per stage
// of `s`: from the collective's start (its last member's entry) until its last member has
// the sum (-1: the stage has no ALLREDUCE in `t`). `own_end`, when given, receives per rank
// of w.dp_links when its own request of libnbc's collectives completed: it has
// the sum and its sends' last bytes have left its socket (a leaf of the broadcast ends
// before the member it feeds); -1 for a rank in none.
std::vector<int64_t> dp_allreduce_ns(const trace::Trace& t, const sched::Schedule& s,
                                     const CostModel& costs, const WorkerModel& w,
                                     sched::MessageTiming& wire,
                                     std::vector<int64_t>* own_end = nullptr);

// Iterations back to back as the workers run them, each rank starting where the barrier
// after the previous one releases it (the first all at 0), until the start offsets
// repeat (at most 16 iterations): the steady-state iteration, times from its earliest
// start (when the offsets cycle through several, the one closest to the cycle's mean
// time). Without the barrier every rank starts at 0. Throws std::invalid_argument as
// simulate() does.
trace::Trace simulate_iteration(const sched::Schedule& s, const CostModel& costs,
                                const LinkModel& links, const WorkerModel& w);

// A run whose links change (link_timeline.h): the timelines of the schedule's ranks and of
// the world's (WorkerModel::world, or the schedule's links), and `on_start`, called before
// iteration i (0 = the first warmup one) starts at `start_ns` (its earliest rank, on the
// timelines' clock): it may add snapshots from then on (events anchored to iterations)
// and returns false to end the run there (a DC's ranks killed).
struct RunTimeline {
  LinkTimeline pipeline, world;
  std::function<bool(int iteration, int64_t start_ns, RunTimeline& tl)> on_start;
  // Nothing changes over the run (no snapshot, no event: on_start only observes): an
  // iteration that starts from the state the one before it started from (the ranks'
  // offsets and every connection's, relative to its start) repeats it, and so does every
  // later one, which are then copied instead of simulated.
  bool fixed = false;
};
// `iterations` iterations back to back from time 0 on the timelines' clock, as
// simulate_iteration runs them (each starting where the barrier after the previous one
// releases its ranks), every message (the barrier's and the gradient norm's too) timed on
// the links in force (TimedLinks). Each iteration's trace, times on that clock; fewer when
// on_start ends the run.
std::vector<trace::Trace> simulate_run(const sched::Schedule& s, const CostModel& costs,
                                       const LinkModel& links, const WorkerModel& w, int iterations,
                                       RunTimeline& tl);

}  // namespace xdc::sim
