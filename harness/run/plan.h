#pragma once
// From an experiment to what one schedule's run needs: the schedule itself, the costs
// and links the simulator predicts with (the same the latency-aware generators plan
// with), and the worker's RunSpec.
//
// Links come from the topology as run: between the DCs of two ranks, the one-way delays
// along the route add up and the slowest rate counts; inside a DC, intra_dc. Jitter and
// loss are not modelled. Costs: modeled compute uses exactly the durations the worker
// sleeps; real compute plans with FLOPs / compute.real.gflops (F = 1/3 of the training
// FLOPs of the stage's layers, B = W = F) until measured costs replace them
// (measured_costs, for the prediction beside a real run).
#include <string>
#include <vector>

#include "harness/run/experiment.h"
#include "harness/sim/cost_model.h"
#include "harness/sim/link_model.h"
#include "workloads/trace/trace.h"
#include "workloads/schedule/params.h"
#include "workloads/schedule/schedule.h"
#include "workloads/worker/run_spec.h"

namespace xdc::run {

// Ranks of one replica (the simulator's view), replica 0's placement.
sim::LinkModel link_model(const Experiment& e);
// Per-stage costs for a schedule with `stage_rank` (chunks share a rank's layers).
sim::CostModel planned_costs(const Experiment& e, const std::vector<int>& stage_rank);
// Generator parameters (ms) from the plain placement's costs and the links.
sched::Params schedule_params(const Experiment& e);
// Generates (or reads) the schedule; InputError when a CSV does not fit the experiment.
sched::Schedule make_schedule(const Experiment& e, const ScheduleChoice& c);

// Mean measured duration per stage of F, B, W (BW split in halves), OPT, ALLREDUCE;
// stages never seen keep `planned`'s values.
sim::CostModel measured_costs(const trace::Trace& t, const sim::CostModel& planned);

// The worker's spec; schedule_csv and run_dir absolute.
worker::RunSpec run_spec(const Experiment& e, const sched::Schedule& s, const sim::CostModel& costs,
                         const std::string& run_dir, const std::string& schedule_csv);

// Training FLOPs of one iteration of the whole run (all replicas), for MFU; and the
// peak FLOP/s of one rank it is stated against.
double iteration_flops(const Experiment& e, const sim::CostModel& costs);
double peak_flops_per_rank(const Experiment& e);
// Tokens of one iteration across replicas.
double iteration_tokens(const Experiment& e);

}  // namespace xdc::run
