#pragma once
// `xdc sweep`: every point of a sweep (sweep.h) is one `xdc run` (run/runner.h) into its
// own directory DIR/<point id>/, one after another, each building and tearing down its
// own network; a point without a report.html (xdc run writes one) gets it from
// report/report.h. Points already done (metrics.h, point_state) are skipped, so
// rerunning the same command resumes; failed points are kept unless `retry_failed`.
// After every point the sweep's outputs (outputs.h) are rewritten. When `cancel` becomes
// true the current point is cancelled (its run tears its network down) and no further
// point starts; that point is left interrupted and runs again on the next invocation.
#include <atomic>
#include <functional>
#include <string>

#include "harness/sweep/outputs.h"

namespace xdc::sweep {

struct Progress {
  size_t total = 0;     // points in the sweep
  size_t finished = 0;  // done or failed, before or during this invocation
  size_t to_run = 0;    // points this invocation runs (at its start)
  size_t ran = 0;       // of those, run so far
  double eta_s = -1;    // remaining, from the mean of the points run so far; -1 unknown
  std::string point;    // the point being run (empty between points)
  std::string line;     // a message (a point starting/skipped/finished, a run step);
                        // empty: only `live` changed
  bool step = false;    // `line` is a run's step, not a sweep event
  std::string live;     // the running schedule's iteration line (run/progress.h), "" none
};

struct SweepOptions {
  std::string out_dir;       // "" = results/sweep-<name>
  std::string network_name;  // passed to each run ("" = the run's default)
  bool retry_failed = false;
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(const Progress&)> progress;
};

struct SweepOutcome {
  std::string out_dir;
  std::vector<PointStatus> points;
  std::vector<Row> rows;
  bool interrupted = false;
  size_t failed() const;
};

std::string default_sweep_dir(const Sweep& s);
// Each point's state in `dir` as it is now.
std::vector<PointStatus> survey(const Sweep& s, const std::string& dir);
SweepOutcome run_sweep(const Sweep& s, const SweepOptions& opts);

// `xdc simulate SWEEP.yaml`: every point's plan predicted (run/simulate.h, without
// traces) into DIR/<point id>/ (experiment.yaml, summary.json: "simulated": true), then
// the sweep's outputs as `xdc sweep` writes them (sweep.csv with the simulated columns
// filled and the measured ones empty, plots, index.html). Nothing is built or run: no
// root, no namespaces. `out_dir` "" = results/simulate-sweep-<name>. A bad point throws
// InputError (as parse_sweep/point_experiment) before anything is written.
SweepOutcome simulate_sweep(const Sweep& s, const std::string& out_dir);

}  // namespace xdc::sweep
