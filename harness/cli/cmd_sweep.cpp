// xdc sweep SWEEP.yaml [-o DIR]: every grid point of a sweep as one `xdc run`, resumable
// (harness/sweep/runner.h). On a terminal a progress bar with an ETA stays on the last
// line and the runs' steps scroll above it; otherwise plain lines. Ctrl-C cancels the
// current point (its network is torn down) and stops; the same command resumes.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>

#include "commands.h"
#include "common/input_error.h"
#include "harness/run/progress.h"
#include "harness/sweep/runner.h"

namespace xdc::cli {
namespace {

std::atomic<bool> g_sweep_cancel{false};
extern "C" void on_sweep_signal(int) {
  g_sweep_cancel = true;
}

class CancelSweepOnSignal {
 public:
  CancelSweepOnSignal() {
    struct sigaction sa {};
    sa.sa_handler = on_sweep_signal;
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~CancelSweepOnSignal() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

// "[########..........] 4/12 points  ETA 3m10s  delay-20ms_schedules-1f1b  [1f1b] [###...]
// 6/22 iterations ..."; the ETA counts down from the runner's estimate at the last point
// boundary.
std::string bar(const sweep::Progress& p) {
  using Clock = std::chrono::steady_clock;
  static double last_eta_s = -1;
  static Clock::time_point since = Clock::now();
  if (!p.step && p.eta_s != last_eta_s) {
    last_eta_s = p.eta_s;
    since = Clock::now();
  }
  const double eta_s =
      last_eta_s < 0
          ? -1
          : std::max(0.0, last_eta_s - std::chrono::duration<double>(Clock::now() - since).count());
  const int width = 24;
  const int filled = p.total ? static_cast<int>(width * p.finished / p.total) : 0;
  return fmt::format("[{}{}] {}/{} points  ETA {}  {}{}", std::string(filled, '#'),
                     std::string(width - filled, '.'), p.finished, p.total, run::hms(eta_s),
                     p.point, p.live.empty() ? "" : "  " + p.live);
}

}  // namespace

void add_sweep_command(CLI::App& app, Commands& out) {
  auto* c = app.add_subcommand(
      "sweep", "run an experiment over a grid of settings (resumable: rerun to continue)");
  static std::string file;
  static sweep::SweepOptions opts;
  static bool verbose_steps = false, list_only = false;
  c->add_option("sweep", file, "sweep YAML")->required();
  c->add_option("-o,--output", opts.out_dir, "sweep directory (default results/sweep-<name>)")
      ->check(kOutputDir);
  auto* name = c->add_option("--name", opts.network_name, "name of the network each point builds");
  auto* retry = c->add_flag("--retry-failed", opts.retry_failed, "run failed points again");
  auto* steps =
      c->add_flag("--steps", verbose_steps, "print every run step (always, when not a terminal)");
  // --list runs nothing, so the options that shape a run are refused beside it.
  c->add_flag("--list", list_only, "list the points and their state; run nothing")
      ->excludes(name)
      ->excludes(retry)
      ->excludes(steps);
  out.push_back({c, [] {
                   const sweep::Sweep s = sweep::load_sweep(file);
                   if (list_only) {
                     const std::string dir =
                         opts.out_dir.empty() ? sweep::default_sweep_dir(s) : opts.out_dir;
                     for (auto& p : sweep::survey(s, dir))
                       std::cout << fmt::format("{:4} {:12} {}\n", p.point.index + 1,
                                                sweep::state_name(p.state), p.point.id);
                     return static_cast<int>(kExitOk);
                   }
                   require_root("sweep");
                   const bool tty = isatty(STDOUT_FILENO);
                   CancelSweepOnSignal guard;
                   opts.cancel = &g_sweep_cancel;
                   opts.progress = [tty](const sweep::Progress& p) {
                     if (!tty) {
                       if (p.line.empty()) return;  // only the live iteration line moved
                       if (p.step)
                         std::cout << "  " << p.line << "\n";
                       else
                         std::cout << p.line
                                   << (p.eta_s >= 0 && !p.line.empty()
                                           ? fmt::format("  [{}/{}, ETA {}]", p.finished, p.total,
                                                         run::hms(p.eta_s))
                                           : "")
                                   << "\n";
                       std::cout.flush();
                       return;
                     }
                     std::cout << "\r\033[K";
                     if (!p.line.empty() && (!p.step || verbose_steps)) std::cout << p.line << "\n";
                     std::cout << bar(p) << std::flush;
                   };
                   const sweep::SweepOutcome r = sweep::run_sweep(s, opts);
                   if (tty) std::cout << "\n";
                   size_t done = 0;
                   for (auto& p : r.points) done += p.state == sweep::PointState::kDone;
                   std::cout << fmt::format("sweep {}: {} of {} points done, {} failed\n", s.name,
                                            done, r.points.size(), r.failed());
                   std::cout << "results: " << r.out_dir << "/sweep.csv, " << r.out_dir
                             << "/index.html\n";
                   if (r.interrupted) {
                     std::cerr << "xdc: sweep interrupted; rerun the same command to resume\n";
                     return static_cast<int>(kExitRunFailed);
                   }
                   return static_cast<int>(r.failed() ? kExitRunFailed : kExitOk);
                 }});
}

}  // namespace xdc::cli
