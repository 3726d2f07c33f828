#pragma once
// `xdc simulate EXP.yaml`: an experiment's plan (plan/plan.h) predicted, nothing built or run:
// no root, no namespaces, no workers. Writes into `out_dir`:
//   experiment.yaml and topology.yaml (run::write_experiment), summary.json (the schema of `xdc
//   run`'s, run_summary_json: "simulated": true, no backend or network, per schedule only the
//   simulated fields), and with `traces` per schedule <schedule>/: schedule.csv,
//   simulated.trace.csv, simulated.trace.json (the names `xdc run` gives its prediction,
//   so readers find a prediction in one place), summary.json.
// The prediction is `xdc run`'s own (plan/plan.h's predict with the planned costs): for modeled
// compute exactly what a run prints beside its measurement; for real compute the costs
// are planned from FLOPs (compute.real.gflops), where a run uses the durations it measured;
// `measured_run` (a results directory of `xdc run`) predicts that run again as the run
// predicted itself, with this simulator: each run of a schedule (<schedule>/ or each
// <schedule>/repeat-K/) with the costs its prediction took (run_prediction_costs: real
// compute as its trace.csv measured it, modeled as planned) and its launch offset
// (summary.json simulated_launch_to_measured_s), repeats pooled as the run pools them
// (repeat.h); or a what-if with another network and the same compute.
#include <string>
#include <vector>

#include "harness/plan/plan.h"
#include "harness/run/results.h"

namespace xdc::run {

struct SimulateOptions {
  bool traces = true;        // per-schedule directories with the simulated traces
  std::string measured_run;  // "" = planned costs
  // libnbc's memory work in data-parallel all-reduces (sim::HostMemory) at `rates` when
  // given, else host_memory_for(measured_run): a measured run's or this host's; false: free.
  bool host_memory = true;
  const sim::HostMemory* rates = nullptr;
};

// InputError when a run of `measured_run` lacks its trace.csv.
std::vector<ScheduleResult> simulate_plan(const Plan& plan, const std::string& out_dir,
                                          const SimulateOptions& o = {});

}  // namespace xdc::run
