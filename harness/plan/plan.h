#pragma once
// From an experiment to what its runs need, resolved once: make_plan() turns an
// Experiment into a Plan (every schedule generated and checked, per-rank costs, the link
// model, what the workers do besides the schedule, DP groups, the MPI/TCP settings and
// time dilation as recorded) that `xdc run`, `xdc simulate`, `xdc plan` and `xdc schedule
// show` consume; predict.h predicts a Plan's schedule, run_spec() is the worker's spec.
// The functions below the Plan are its building blocks.
//
// Links come from the topology as run: between the DCs of two ranks, the one-way delays
// along the route add up and the slowest rate counts; inside a DC, intra_dc. Each ordered
// pair of ranks has a TCP path (tcp_model.h): its window from the hosts' buffers, the
// route's bottleneck and queue, and its loss episodes (random or Gilbert-Elliott loss:
// netem/shaper/loss_model.h). Jitter is not modelled. Costs: modeled compute uses exactly
// the durations the worker sleeps (with tensor parallelism, plus its TP all-reduces as
// modeled: cost_model.h); real compute plans with FLOPs / compute.real.gflops (F = 1/3 of
// the training FLOPs of the stage's layers, B = W = F) until measured costs replace them
// (measured_costs, for the prediction beside a real run).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "harness/experiment/experiment.h"
#include "harness/sim/cost_model.h"
#include "harness/sim/link_model.h"
#include "harness/sim/worker_model.h"
#include "harness/trace/analysis.h"
#include "workloads/schedule/params.h"
#include "workloads/schedule/schedule.h"
#include "workloads/trace/trace.h"
#include "workloads/worker/run_spec.h"

namespace xdc::run {

struct SchedulePlan {
  ScheduleChoice choice;
  sched::Schedule schedule;     // generated (or read) and validated
  sim::CostModel costs;         // planned: modeled compute as the workers sleep it; real
                                // compute from FLOPs / compute.real.gflops
  bool prefill = false;         // the run with prefill in bubbles (experiment.h `prefill:`):
                                // make_plan lists each schedule without, then with it, the
                                // latter named SCHEDULE+prefill (prefill.h)
  double peak_activations = 0;  // the validator's most on a rank (microbatches)
};

struct Plan {
  Experiment experiment;  // as loaded: topology, tcp, mpi (tcp_links, mca, progress),
                          // time_dilation, model, text
  sched::Params params;   // what the latency-aware generators planned with
  sim::LinkModel links;   // between replica 0's pipeline ranks
  // mpi.wan_sharing: temporal (experiment.h): every replica is predicted, as one schedule
  // of every world rank (sched::replicated) over `world_links` (every world rank, their own
  // connections, one channel per WAN direction, each exclusive: granted to one message at
  // a time in send_order()'s order, as the workers' arbiter grants it), since the replicas
  // stop moving in lockstep. So too where a replica's pair crosses the WAN in a direction
  // replica 0's does not (a mirrored placement: its messages meet other pairs' there), over
  // shared channels. Otherwise replica 0 stands for all (links.copies).
  bool all_replicas = false;
  sim::LinkModel world_links;
  sim::WorkerModel worker;  // iteration-level behaviour of the workers (worker_model.h),
                            // with the links between every world rank
  std::vector<std::vector<int>> dp_groups;  // [pipeline rank] -> world ranks holding it (TP
                                            // rank 0's with tensor parallelism)
  std::vector<SchedulePlan> schedules;      // in the experiment's order
  // CPU sharing: every emulated host is a namespace of this machine, so all world ranks
  // (each with its comm thread) share its `cpus` (nproc). The simulator has no CPU-sharing
  // model: modeled compute sleeps; real compute is predicted with durations measured in
  // the same run, under the same sharing (measured_costs); recorded in summary.json.
  int cpus = 1;
  double ranks_per_cpu() const {
    return static_cast<double>(experiment.world_size()) / std::max(1, cpus);
  }
};

// Everything that can be wrong with the input is found here (InputError naming the
// experiment file); nothing is built or run.
Plan make_plan(const Experiment& e);

// The worker's spec; schedule_csv and run_dir absolute.
worker::RunSpec run_spec(const Plan& p, const SchedulePlan& s, const std::string& run_dir,
                         const std::string& schedule_csv);

// ---- building blocks of make_plan

// Ranks of one replica (the simulator's view), replica 0's placement.
sim::LinkModel link_model(const Experiment& e);
// Per-stage costs for a schedule with `stage_rank` (chunks share a rank's layers).
sim::CostModel planned_costs(const Experiment& e, const std::vector<int>& stage_rank);
// Generator parameters (ms) from the plain placement's costs and the links.
sched::Params schedule_params(const Experiment& e);
// Every world rank (replica * stages + pipeline rank) to every other, as link_model, with
// a row per host (LinkModel::host): a world's ranks^2 pairs would not fit.
sim::LinkModel world_link_model(const Experiment& e);
// Generates (or reads) the schedule with `params` (schedule_params); InputError when a
// CSV does not fit the experiment or the schedule is not valid. `peak`, when given, gets
// its most activations on a rank (the validator's, microbatches).
sched::Schedule make_schedule(const Experiment& e, const sched::Params& params,
                              const ScheduleChoice& c, double* peak = nullptr);

// Mean measured duration per stage of F, B, W (BW split in halves), OPT, ALLREDUCE;
// stages never seen keep `planned`'s values. Each F, B, W and BW duration over its mean is
// kept as the costs' measured noise (CostModel::f_ratio ...: the prediction's band draws
// from it), grouped by measured iteration: an action's k-th run on its rank is in the k-th.
sim::CostModel measured_costs(const trace::Trace& t, const sim::CostModel& planned);

// The outer loop (Experiment::dp_sync diloco or streaming): per stage of a `stages`-stage
// split, the values its outer syncs reduce (real compute: the stage's parameters, a TP
// rank's share; a model shape: its parameters; constants or a profile: compute.modeled.grad
// / 4); per stage and fragment (model/fragments.h; diloco: one) the [offset, size) runs
// of those values each fragment synchronises (modeled compute: one run, the fragment's
// share of the stage's layers) and their bytes in the payload format (model/payload.h),
// what each hop of the all-reduce carries (0: the stage holds none of the fragment).
// Real compute's synchronous all-reduce is planned with 4 bytes a value of the same.
using FragmentRuns = std::vector<std::pair<int64_t, int64_t>>;
std::vector<int64_t> outer_sync_values(const Experiment& e, int stages);
std::vector<std::vector<FragmentRuns>> outer_sync_runs(const Experiment& e, int stages);
std::vector<std::vector<int64_t>> outer_sync_bytes(const Experiment& e, int stages);

// Training FLOPs of one iteration of the whole run (all replicas), for MFU; and the
// peak FLOP/s of one rank it is stated against.
double iteration_flops(const Experiment& e, const sim::CostModel& costs);
double peak_flops_per_rank(const Experiment& e);
// Tokens of one iteration across replicas.
double iteration_tokens(const Experiment& e);

}  // namespace xdc::run
