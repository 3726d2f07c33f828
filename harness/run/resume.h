#pragma once
// A run that loses nothing. `xdc run` keeps a ledger of its jobs (repeat.h's slots: one
// repeat of one schedule) and rewrites the results directory's summary.json and
// iterations.csv from it as each job starts and as it ends, so a run killed at any point
// (kill -9 included) leaves a directory that reads as what it is: "complete": false, each
// schedule's entry pooling the runs that finished and listing the others with why
// (summary_schema.h missing_runs).
// `xdc run EXP --resume DIR` keeps DIR's runs whose own summary.json says ok, read back
// through the one reader of summary.json (report/results_dir.h), runs only the others with
// the seeds a run without a break would have used (seed + repeat), and writes the
// summary.json and iterations.csv that run would have written.
#include <optional>
#include <string>
#include <vector>

#include "harness/plan/plan.h"
#include "harness/report/results_dir.h"
#include "harness/run/repeat.h"
#include "harness/run/results.h"

namespace xdc::run {

// InputError (the CLI exits 2) unless `dir` holds a run of `e` to resume: its
// experiment.yaml and topology.yaml as record(e) writes them (the first line that differs
// is quoted), a run rather than a simulation, of as many runs per schedule as `e.repeat`.
void check_resumable(const std::string& dir, const Experiment& e);

// The runs of each schedule that the run in `dir` asked for, from its summary.json (an
// entry's repeats + missing runs); nullopt where `dir` has no summary.json.
std::optional<int> runs_per_schedule(const std::string& dir);

// The result a summary.json entry of a measured run states, as report/results_dir.h reads
// it: summary_json(result_of(read_schedule_entry(summary_json(r)))) == summary_json(r).
ScheduleResult result_of(const report::ScheduleData& d);

// The run whose own summary.json is `file`, when it finished ok with iterations measured
// (each with its bubble ratios) and ran with `seed`; nullopt otherwise (it runs again).
std::optional<ScheduleResult> read_finished_run(const std::string& file, uint64_t seed);

// Every slot of one `xdc run` and what became of it.
class RunLedger {
 public:
  RunLedger(const Plan& plan, std::string root);
  // --resume: each slot whose run finished ok in the results directory (read_finished_run)
  // is kept and not run again; returns how many.
  int keep_finished();
  bool finished(const RunSlot& s) const;                 // has a result, kept or run here
  bool kept(const RunSlot& s) const;                     // kept from an earlier invocation
  const ScheduleResult& result(const RunSlot& s) const;  // of a finished slot
  std::string dir(const RunSlot& s) const;               // where its files are
  // "[1f1b] run 1 of 2 (seed 5) reused: DIR/1f1b/repeat-0 (iteration 0.123 s)"
  std::string kept_line(const RunSlot& s) const;
  int slots() const;
  void start(const RunSlot& s);
  void finish(const RunSlot& s, ScheduleResult r);
  void stopped(const RunSlot& s);  // its job was stopped by the run's cancel: no result
  void cancel_rest();              // the slots not run will not be: "interrupted"
  // Per schedule of the plan, in its order: its finished runs (repeat.h pool_repeats with
  // repeats) and its missing runs; one with none finished has repeats 0, ok false, error
  // "no run finished". Runs with prefill compared with their baselines (prefill_results.h).
  std::vector<ScheduleResult> results() const;
  // The results directory's summary.json and iterations.csv of `rs` (results()).
  void write(const std::vector<ScheduleResult>& rs, const std::string& backend,
             const std::string& network, bool interrupted) const;
  // With repeats: each schedule's pooled runs in SCHEDULE/summary.json and iterations.csv.
  void write_pooled() const;

 private:
  enum class State { kNotRun, kRunning, kDone, kInterrupted };
  struct Slot {
    State state = State::kNotRun;
    std::optional<ScheduleResult> result;
    bool kept = false;
  };
  std::vector<ScheduleResult> pooled() const;
  uint64_t seed(int k) const { return plan_.experiment.seed + static_cast<uint64_t>(k); }
  Slot& at(const RunSlot& s) { return slots_.at(s.schedule).at(s.repeat); }
  const Slot& at(const RunSlot& s) const { return slots_.at(s.schedule).at(s.repeat); }

  const Plan& plan_;
  std::string root_;
  std::vector<std::vector<Slot>> slots_;  // [schedule][repeat]
};

}  // namespace xdc::run
