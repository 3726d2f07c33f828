// xdc run EXPERIMENT.yaml [--repeat N]: up, launch the workers per schedule (N times each,
// interleaved: run/repeat.h), collect, analyse, down. On a terminal each schedule's
// iterations redraw one progress line (run/progress.h); -v prints each one's line.
// --resume DIR: the runs DIR lacks, the ones it has kept (run/resume.h).
// xdc mpi-agent --name NET HOST ARGS...: MPI's rsh agent (harness/launch/agent.h); the
// launcher passes it to mpirun, users never call it.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <iostream>

#include "commands.h"
#include "common/input_error.h"
#include "harness/experiment/experiment.h"
#include "harness/launch/agent.h"
#include "harness/report/report.h"
#include "harness/run/progress.h"
#include "harness/run/resume.h"
#include "harness/run/runner.h"

namespace xdc::cli {
namespace {

std::atomic<bool> g_cancel{false};
extern "C" void on_run_signal(int) {
  g_cancel = true;
}

// SIGINT/SIGTERM become a flag for the run's lifetime: the current job is stopped and
// the network torn down on the way out instead of the process dying with it up.
class CancelOnSignal {
 public:
  CancelOnSignal() {
    struct sigaction sa {};
    sa.sa_handler = on_run_signal;
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~CancelOnSignal() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

}  // namespace

void add_run_command(CLI::App& app, Commands& out) {
  {
    auto* c =
        app.add_subcommand("run", "run an experiment: up, launch workers, collect, down, analyse");
    static std::string file;
    static run::RunOptions opts;
    c->add_option("experiment", file, "experiment YAML")->required();
    auto* output = c->add_option("-o,--output", opts.out_dir,
                                 "results directory (default results/<date>-<name>)")
                       ->check(kOutputDir);
    static std::string resume_dir;
    c->add_option("--resume", resume_dir,
                  "complete the run in DIR (one of this experiment, killed or stopped): keep "
                  "its runs that finished ok, run only the others (same seeds), write the "
                  "summary a run without a break writes; exit 2 if DIR ran another experiment")
        ->excludes(output)
        ->check(CLI::ExistingDirectory);
    auto* network = c->add_option("--network", opts.network,
                                  "reuse this network (xdc up) instead of building one");
    // --name names a network the run builds; with --network it builds none.
    c->add_option("--name", opts.network_name, "name of the network to build (default r<pid>)")
        ->excludes(network);
    static bool rank_lines = false;
    c->add_flag("-v,--verbose", rank_lines,
                "print every rank's lines (each iteration of each rank), not a progress line");
    static int repeat = 0;
    c->add_option("--repeat", repeat,
                  "run each schedule N times, interleaved, seeds seed..seed+N-1 (overrides "
                  "the experiment's `repeat`)")
        ->check(CLI::Range(1, 1000));
    c->add_option("--lab", opts.lab_file,
                  "lab.yaml: build the network across the lab's machines and run the workers "
                  "there (-o and the topology file at the same paths on every machine)");
    out.push_back({c, [] {
                     require_root("run");
                     run::Experiment e = run::load_experiment(file);
                     if (repeat > 0) e.repeat = repeat;
                     if (!resume_dir.empty()) {
                       opts.out_dir = resume_dir;
                       opts.resume = true;
                       if (repeat == 0)  // as many runs as DIR's run asked for
                         if (auto n = run::runs_per_schedule(resume_dir)) e.repeat = *n;
                     }
                     CancelOnSignal guard;
                     opts.cancel = &g_cancel;
                     // Iterations: on a terminal one line per schedule, redrawn as they end;
                     // not on a terminal, none (the steps only); -v: every rank's lines
                     // (each iteration of each rank), as steps.
                     const bool tty = isatty(STDOUT_FILENO);
                     const bool verbose = rank_lines || spdlog::get_level() <= spdlog::level::debug;
                     opts.rank_lines = verbose;
                     static bool live = false;  // a progress line is drawn and not ended
                     opts.progress = [](const std::string& m) {
                       if (live) std::cout << "\r\033[K" << std::flush;
                       live = false;
                       spdlog::info("{}", m);
                     };
                     if (!verbose)
                       opts.on_iteration = [tty](const run::IterationProgress& p) {
                         if (!tty) return;
                         std::cout << "\r\033[K" << run::iteration_line(p) << std::flush;
                         live = true;
                       };
                     const run::RunOutcome r = run::run_experiment(e, opts);
                     if (live) std::cout << "\r\033[K";
                     std::cout << "\n"
                               << (e.workload && r.schedules.size() == 1
                                       ? run::workload_table(r.schedules[0])
                                       : run::comparison_table(r.schedules));
                     std::cout << "results: " << r.out_dir << "\n";
                     try {
                       std::cout << "report:  " << report::write_report(r.out_dir) << "\n";
                     } catch (const std::exception& ex) {  // the run's results stand anyway
                       std::cerr << "xdc: no report: " << ex.what() << "\n";
                     }
                     if (g_cancel) {
                       std::cerr << "xdc: run interrupted; what was measured is kept (xdc run "
                                 << file << " --resume " << r.out_dir << " runs the rest)\n";
                       return static_cast<int>(kExitRunFailed);
                     }
                     return static_cast<int>(r.ok() ? kExitOk : kExitRunFailed);
                   }});
  }
  {
    auto* c = app.add_subcommand("mpi-agent", "MPI's rsh agent (used by the launcher)");
    c->group("");  // hidden from --help
    static std::string name;
    c->add_option("--name", name, "network")->required();
    c->prefix_command();  // HOST and orted's words, dashes and all, stay unparsed
    out.push_back({c, [c]() -> int {
                     require_root("mpi-agent");
                     std::vector<std::string> rest = c->remaining();
                     if (rest.empty()) throw InputError("mpi-agent: expected HOST COMMAND...");
                     const std::string host = rest.front();
                     rest.erase(rest.begin());
                     launch::run_agent(name, host, rest);
                   }});
  }
}

}  // namespace xdc::cli
