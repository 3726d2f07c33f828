#include "harness/run/simulate.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/input_error.h"
#include "common/text_file.h"
#include "harness/run/host_memory.h"
#include "harness/run/repeat.h"
#include "harness/trace/chrome.h"
#include "workloads/schedule/csv.h"

namespace xdc::run {
namespace fs = std::filesystem;
namespace {

// One run to predict: the costs and the launch offset (ns, -1: unknown) its prediction takes,
// and the schedule it ran (none: the plan's).
struct RunToPredict {
  sim::CostModel costs;
  std::string label;
  int64_t launch_ns = -1;
  std::optional<sched::Schedule> schedule;
};

// Schedule `sp`'s runs in `xdc run` results directory `dir` (--measured): each repeat's
// (SCHEDULE/repeat-K/) or the schedule's directory, with the costs the run's own prediction
// took (run_prediction_costs), its launch offset (summary.json
// simulated_launch_to_measured_s) and the schedule its workers ran (its schedule.csv: a
// latency-aware generator plans from the links, and a later simulator's links can order a
// rank's actions otherwise). InputError where a run has no trace.csv.
std::vector<RunToPredict> measured_runs(const Plan& plan, const SchedulePlan& sp,
                                        const fs::path& dir) {
  std::vector<fs::path> runs;
  for (int k = 0; fs::is_directory(dir / sp.choice.name / ("repeat-" + std::to_string(k))); ++k)
    runs.push_back(dir / sp.choice.name / ("repeat-" + std::to_string(k)));
  if (runs.empty()) runs.push_back(dir / sp.choice.name);
  std::vector<RunToPredict> out;
  for (const fs::path& run : runs) {
    const fs::path file = run / "trace.csv";
    const auto text = read_text_file(file.string());
    if (!text)
      throw InputError(SourcePos{file.string(), 0, 0},
                       "no measured trace of schedule " + sp.choice.name + " (--measured)");
    RunToPredict r;
    r.costs = run_prediction_costs(plan, sp, trace::from_csv(*text), file.string(), r.label);
    const auto summary = read_text_file((run / "summary.json").string());
    const auto j = nlohmann::json::parse(summary.value_or(""), nullptr, false);
    if (j.is_object() && j.contains("simulated_launch_to_measured_s") &&
        j["simulated_launch_to_measured_s"].is_number())
      r.launch_ns = std::llround(j["simulated_launch_to_measured_s"].get<double>() * 1e9);
    if (const fs::path ran = run / "schedule.csv"; fs::exists(ran)) {
      r.schedule = sched::read_csv_file(ran.string());
      r.schedule->name = sp.schedule.name;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::vector<ScheduleResult> simulate_plan(const Plan& planned, const std::string& out_dir,
                                          const SimulateOptions& o) {
  Plan plan = planned;
  if (o.host_memory && plan.experiment.data_parallel > 1)
    plan.worker.host_memory = o.rates ? *o.rates : host_memory_for(o.measured_run);
  // Measured costs are read before anything is written.
  std::vector<std::vector<RunToPredict>> runs;
  for (const SchedulePlan& sp : plan.schedules)
    runs.push_back(
        o.measured_run.empty()
            ? std::vector<RunToPredict>{{sp.costs, simulated_costs_label(plan), -1, std::nullopt}}
            : measured_runs(plan, sp, o.measured_run));
  const fs::path root = out_dir;
  write_experiment(root.string(), plan.experiment);
  std::vector<ScheduleResult> out;
  for (size_t i = 0; i < plan.schedules.size(); ++i) {
    const SchedulePlan& sp = plan.schedules[i];
    std::vector<ScheduleResult> each;
    try {
      for (const RunToPredict& run : runs[i]) {
        ScheduleResult r;
        r.schedule = sp.choice.name;
        r.measured = false;
        r.ok = true;
        r.simulated_costs = run.label;
        PredictOptions po;
        po.launch_to_measured_ns = run.launch_ns;
        SchedulePlan ran = sp;
        if (run.schedule) ran.schedule = *run.schedule;
        const Prediction p = predict(plan, ran, run.costs, po);
        set_simulated(r, p, plan, ran);
        if (run.launch_ns >= 0) r.simulated_launch_s = static_cast<double>(run.launch_ns) / 1e9;
        if (o.traces && each.empty()) {
          const fs::path dir = root / sp.choice.name;
          fs::create_directories(dir);
          sched::write_csv_file((dir / "schedule.csv").string(), ran.schedule);
          write_text_file((dir / "simulated.trace.json").string(), trace::to_chrome_json(p.trace));
          write_text_file((dir / "simulated.trace.csv").string(), trace::to_csv(p.trace));
        }
        each.push_back(std::move(r));
      }
    } catch (const std::invalid_argument& ex) {  // a schedule that deadlocks
      ScheduleResult r;
      r.schedule = sp.choice.name;
      r.measured = false;
      r.error = std::string("simulation failed: ") + ex.what();
      each = {std::move(r)};
    }
    // Repeats: the mean of their predictions, as the run pools them (repeat.h).
    ScheduleResult r = each.size() == 1 ? each[0] : pool_repeats(each);
    r.measured = false;
    if (o.traces && r.ok)
      write_text_file((root / sp.choice.name / "summary.json").string(),
                      summary_json(r).dump(2) + "\n");
    out.push_back(std::move(r));
  }
  write_text_file((root / "summary.json").string(),
                  run_summary_json(plan, out, "", "", false).dump(2) + "\n");
  return out;
}

}  // namespace xdc::run
