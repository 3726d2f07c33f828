#pragma once
// `xdc run`: one experiment end to end. The experiment's plan (plan/plan.h: every schedule
// generated and checked, costs, links) is made before anything is built, so bad input
// costs nothing. Then: the network comes up (or an existing one is reused), optionally
// a quick link check, and per schedule: schedule.csv + spec.json into its directory, the
// workers launched (harness/launch), their files read back and analysed, the same
// schedule predicted (plan/plan.h's predict, as `xdc simulate`; real compute with the
// durations this run measured). The network this run built is torn down on every way
// out (success, failure, exception, SIGINT/SIGTERM via `cancel`).
//
// Results directory (default results/<UTC date>-<name>/):
//   experiment.yaml, topology.yaml (as run), environment.json, link_check.json (if asked),
//   summary.json, iterations.csv, and per schedule <schedule>/: schedule.csv, spec.json,
//   hostfile, rankmap, mpirun.cmd, mpirun.log, rank<r>.{trace.csv,json,log}, trace.json
//   (merged Chrome trace), trace.csv, iterations.csv, summary.json,
//   simulated.trace.{json,csv}. A lab run adds environment.json's "lab" (machine -> DCs,
//   hosts, ranks) and the clock offsets between machines (summary.json's clock_*_us).
//   With `repeat: N` > 1 (experiment.h) the schedules run N rounds on the one network
//   (repeat.h run_order), each run's files in <schedule>/repeat-<k>/, and <schedule>/ holds
//   the repeats' pooled summary.json and iterations.csv.
// summary.json and iterations.csv are rewritten as each job starts and ends, so a run killed
// at any point leaves them stating what finished and what did not (resume.h); with
// `resume` the run keeps the finished runs of `out_dir` and runs only the others.
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "harness/experiment/experiment.h"
#include "harness/run/results.h"

namespace xdc::run {

// One iteration ended on the schedule's last pipeline rank (it reports the loss): what a
// live display needs. `line` is that rank's own line ("rank R iteration I loss L ...").
struct IterationProgress {
  std::string schedule;
  int done = 0;          // iterations ended so far, warm-up included
  int total = 0;         // warm-up + measured iterations
  double loss = -1;      // < 0: none (modeled compute)
  double elapsed_s = 0;  // since the schedule's ranks were launched
  std::string line;
};

struct RunOptions {
  std::string out_dir;  // "" = results/<date>-<name>
  // out_dir holds an earlier run of this experiment (resume.h check_resumable, else
  // InputError): its runs that finished ok are kept, the others run.
  bool resume = false;
  std::string network;       // reuse this network (must be up) instead of building one
  std::string network_name;  // name of the network to build; "" = "r<pid>"
  // lab.yaml (harness/lab/lab.h): build the network across the lab's machines (each DC on
  // its machine, `xdc up --lab`) and run the workers there, mpirun here on the lab's
  // management switch (lab/controller.h). The results directory and the experiment file (with
  // its topology), from which every machine builds its part, must
  // be at the same paths on every machine (a shared checkout: /vagrant, or hostfs in the
  // User-Mode Linux lab); the run checks that every machine sees the directory. Not with
  // `network`, topology `changes:`, experiment `events:` or `link_check`.
  std::string lab_file;
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(const std::string&)> progress;  // one line per step
  // Each iteration as it ends; without it, that rank's lines go to `progress` as steps.
  std::function<void(const IterationProgress&)> on_iteration;
  bool rank_lines = false;  // every rank's lines to `progress` as well (xdc run -v)
};

struct RunOutcome {
  std::string out_dir;
  std::vector<ScheduleResult> schedules;
  bool ok() const;
};

RunOutcome run_experiment(const Experiment& e, const RunOptions& opts);

}  // namespace xdc::run
