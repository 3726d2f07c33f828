// Running a sweep point by point, resumably (see runner.h).
#include "harness/sweep/runner.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "harness/report/report.h"
#include "harness/run/progress.h"
#include "harness/run/runner.h"
#include "harness/run/simulate.h"

namespace xdc::sweep {
namespace fs = std::filesystem;

size_t SweepOutcome::failed() const {
  size_t n = 0;
  for (auto& p : points) n += p.state == PointState::kFailed;
  return n;
}

std::string default_sweep_dir(const Sweep& s) {
  return "results/sweep-" + s.name;
}

std::vector<PointStatus> survey(const Sweep& s, const std::string& dir) {
  std::vector<PointStatus> out;
  for (auto& p : expand(s)) {
    out.push_back({p, point_state((fs::path(dir) / p.id).string(), point_experiment(s, p))});
  }
  return out;
}

namespace {

bool needs_run(PointState st, bool retry_failed) {
  return st == PointState::kMissing || st == PointState::kInterrupted || st == PointState::kStale ||
         (st == PointState::kFailed && retry_failed);
}

// The sweep file as given, beside its results.
void copy_sweep_file(const Sweep& s, const std::string& dir) {
  std::ifstream in(s.file, std::ios::binary);
  std::ofstream copy(fs::path(dir) / "sweep.yaml", std::ios::binary | std::ios::trunc);
  copy << in.rdbuf();
}

// A stale point's results (another base or grid wrote them) are moved aside, not mixed in.
void move_aside(const fs::path& dir) {
  for (int n = 1;; ++n) {
    const fs::path to = dir.string() + ".stale-" + std::to_string(n);
    if (!fs::exists(to)) {
      fs::rename(dir, to);
      return;
    }
  }
}

}  // namespace

SweepOutcome run_sweep(const Sweep& s, const SweepOptions& opts) {
  SweepOutcome out;
  out.out_dir = fs::absolute(opts.out_dir.empty() ? default_sweep_dir(s) : opts.out_dir).string();
  fs::create_directories(out.out_dir);
  copy_sweep_file(s, out.out_dir);
  out.points = survey(s, out.out_dir);
  auto cancelled = [&] { return opts.cancel && opts.cancel->load(); };

  Progress pr;
  pr.total = out.points.size();
  for (auto& ps : out.points) {
    if (needs_run(ps.state, opts.retry_failed))
      ++pr.to_run;
    else
      ++pr.finished;
  }
  auto report = [&](const std::string& line, bool step = false) {
    if (!opts.progress) return;
    pr.line = line;
    pr.step = step;
    opts.progress(pr);
  };
  report(fmt::format("sweep {}: {} points, {} to run, {} already finished; results in {}", s.name,
                     pr.total, pr.to_run, pr.finished, out.out_dir));

  // The point's report.html (linked from index.html); a point without one is still a result.
  auto write_point_report = [&](const fs::path& dir) {
    if (!fs::exists(dir / "summary.json") || fs::exists(dir / "report.html")) return;
    try {
      report::write_report(dir.string());
    } catch (const std::exception& e) {
      report(fmt::format("{}: no report.html: {}", dir.filename().string(), e.what()), true);
    }
  };
  double spent_s = 0;
  for (auto& ps : out.points) {
    if (cancelled()) break;
    if (!needs_run(ps.state, opts.retry_failed)) continue;
    const fs::path dir = fs::path(out.out_dir) / ps.point.id;
    if (ps.state == PointState::kStale) move_aside(dir);
    pr.point = ps.point.id;
    report(fmt::format("point {}/{} {}: starting", ps.point.index + 1, pr.total, ps.point.id));
    const auto t0 = std::chrono::steady_clock::now();
    run::RunOptions ro;
    ro.out_dir = dir.string();
    ro.network_name = opts.network_name;
    ro.cancel = opts.cancel;
    ro.progress = [&](const std::string& m) { report(m, true); };
    ro.on_iteration = [&](const run::IterationProgress& it) {
      pr.live = run::iteration_line(it, 10);
      report("", true);
    };
    std::string error;
    const run::Experiment e = point_experiment(s, ps.point);
    try {
      run::run_experiment(e, ro);
    } catch (const std::exception& x) {
      // One point's failure (a network that would not come up...) is that point's result.
      error = x.what();
    }
    spent_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ps.state = point_state(dir.string(), e);
    if (!error.empty() && ps.state == PointState::kMissing && !cancelled())
      ps.state = PointState::kFailed;
    write_point_report(dir);  // `xdc run` writes it; older runs did not
    ++pr.ran;
    if (ps.state == PointState::kDone || ps.state == PointState::kFailed) ++pr.finished;
    const size_t left = pr.to_run - pr.ran;
    pr.eta_s = spent_s / static_cast<double>(pr.ran) * static_cast<double>(left);
    pr.point.clear();
    pr.live.clear();
    write_sweep_outputs(s, out.points, out.out_dir);
    report(fmt::format("point {}/{} {}: {}{}", ps.point.index + 1, pr.total, ps.point.id,
                       state_name(ps.state), error.empty() ? "" : " (" + error + ")"));
  }
  out.interrupted = cancelled();
  for (auto& ps : out.points)  // points run before reports existed, or by an older xdc
    if (!out.interrupted) write_point_report(fs::path(out.out_dir) / ps.point.id);
  out.rows = write_sweep_outputs(s, out.points, out.out_dir);
  return out;
}

SweepOutcome simulate_sweep(const Sweep& s, const std::string& out_dir) {
  SweepOutcome out;
  out.out_dir =
      fs::absolute(out_dir.empty() ? "results/simulate-sweep-" + s.name : out_dir).string();
  std::vector<run::Plan> plans;  // every point planned (and checked) before anything is written
  const std::vector<Point> points = expand(s);
  for (const Point& p : points) {
    try {
      plans.push_back(run::make_plan(point_experiment(s, p)));
    } catch (const InputError& e) {
      throw point_error(s, p, e);
    }
  }
  fs::create_directories(out.out_dir);
  copy_sweep_file(s, out.out_dir);
  for (size_t i = 0; i < points.size(); ++i) {
    const fs::path dir = fs::path(out.out_dir) / points[i].id;
    run::simulate_plan(plans[i], dir.string(), run::SimulateOptions{false, "", true});
    out.points.push_back({points[i], point_state(dir.string(), plans[i].experiment)});
  }
  out.rows = write_sweep_outputs(s, out.points, out.out_dir);
  return out;
}

}  // namespace xdc::sweep
