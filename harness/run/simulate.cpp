#include "harness/run/simulate.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/input_error.h"
#include "common/text_file.h"
#include "harness/trace/chrome.h"
#include "workloads/schedule/csv.h"

namespace xdc::run {
namespace fs = std::filesystem;
std::vector<ScheduleResult> simulate_plan(const Plan& plan, const std::string& out_dir,
                                          const SimulateOptions& o) {
  // Measured costs are read before anything is written.
  std::vector<sim::CostModel> costs;
  std::vector<std::string> labels;
  for (const SchedulePlan& sp : plan.schedules) {
    costs.push_back(sp.costs);
    labels.push_back(simulated_costs_label(plan));
    if (o.measured_run.empty()) continue;
    const fs::path file = fs::path(o.measured_run) / sp.choice.name / "trace.csv";
    const auto text = read_text_file(file.string());
    if (!text)
      throw InputError(SourcePos{file.string(), 0, 0},
                       "no measured trace of schedule " + sp.choice.name + " (--measured)");
    costs.back() = measured_costs(trace::from_csv(*text), sp.costs);
    labels.back() = "measured compute durations (" + file.string() + ")";
  }
  const fs::path root = out_dir;
  write_experiment(root.string(), plan.experiment);
  std::vector<ScheduleResult> out;
  for (size_t i = 0; i < plan.schedules.size(); ++i) {
    const SchedulePlan& sp = plan.schedules[i];
    ScheduleResult r;
    r.schedule = sp.choice.name;
    r.measured = false;
    r.ok = true;
    r.simulated_costs = labels[i];
    try {
      PredictOptions po;
      po.band_runs = kBandRuns;
      const Prediction p = predict(plan, sp, costs[i], po);
      set_simulated(r, p, plan, sp);
      if (o.traces) {
        const fs::path dir = root / sp.choice.name;
        fs::create_directories(dir);
        sched::write_csv_file((dir / "schedule.csv").string(), sp.schedule);
        write_text_file((dir / "simulated.trace.json").string(), trace::to_chrome_json(p.trace));
        write_text_file((dir / "simulated.trace.csv").string(), trace::to_csv(p.trace));
        write_text_file((dir / "summary.json").string(), summary_json(r).dump(2) + "\n");
      }
    } catch (const std::invalid_argument& ex) {  // a schedule that deadlocks
      r.ok = false;
      r.error = std::string("simulation failed: ") + ex.what();
    }
    out.push_back(std::move(r));
  }
  write_text_file((root / "summary.json").string(),
                  run_summary_json(plan, out, "", "", false).dump(2) + "\n");
  return out;
}

}  // namespace xdc::run
