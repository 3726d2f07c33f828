// The run's ledger, its summary rewritten as it goes, and --resume (see resume.h).
#include "harness/run/resume.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "common/input_error.h"
#include "common/text_file.h"
#include "harness/run/prefill_results.h"

namespace xdc::run {
namespace fs = std::filesystem;

namespace {

// The first line (1-based) where `a` and `b` differ, and that line of each; 0 when equal.
int first_difference(const std::string& a, const std::string& b, std::string& la, std::string& lb) {
  if (a == b) return 0;
  size_t pa = 0, pb = 0;
  for (int line = 1;; ++line) {
    const size_t ea = std::min(a.find('\n', pa), a.size()),
                 eb = std::min(b.find('\n', pb), b.size());
    la = a.substr(pa, ea - pa);
    lb = b.substr(pb, eb - pb);
    if (la != lb || ea == a.size() || eb == b.size()) return line;
    pa = ea + 1;
    pb = eb + 1;
  }
}

// InputError unless `dir`/`file` holds `want` (what this run would write there).
void check_same(const fs::path& dir, const std::string& file, const std::string& want,
                const std::string& source) {
  const fs::path kept = dir / file;
  std::string here, ours;
  const int line = first_difference(read_text_file_or_empty(kept.string()), want, here, ours);
  if (line == 0) return;
  throw InputError(SourcePos{kept.string(), line, 0},
                   fmt::format("--resume: the run here is of another experiment: this line "
                               "reads \"{}\", {} as run would read \"{}\"; run it into a new "
                               "directory (-o) instead",
                               here, source, ours));
}

const char* state_name(int state) {
  static constexpr const char* kNames[] = {"not run", "running", "done", "interrupted"};
  return kNames[state];
}

}  // namespace

std::optional<int> runs_per_schedule(const std::string& dir) {
  if (!fs::exists(fs::path(dir) / "summary.json")) return std::nullopt;
  int n = 0;
  for (const report::ScheduleData& s : report::read_summary(dir).schedules)
    n = std::max(n, s.repeats + static_cast<int>(s.missing_runs.size()));
  return n > 0 ? std::optional<int>(n) : std::nullopt;
}

void check_resumable(const std::string& dir, const Experiment& e) {
  const fs::path d = dir;
  if (!fs::is_regular_file(d / "experiment.yaml"))
    throw InputError(SourcePos{dir, 0, 0},
                     "--resume: no experiment.yaml here: not a results directory of xdc run");
  const Record want = record(e);
  check_same(d, "experiment.yaml", want.experiment, e.source_file);
  if (!want.topology.empty() || fs::exists(d / "topology.yaml"))
    check_same(d, "topology.yaml", want.topology, e.topology_file);
  if (!fs::exists(d / "summary.json")) return;  // stopped before its first job: nothing ran
  if (report::read_summary(dir).simulated_only)
    throw InputError(SourcePos{(d / "summary.json").string(), 0, 0},
                     "--resume: a simulation (xdc simulate): no run to resume");
  if (const auto n = runs_per_schedule(dir); n && *n != e.repeat)
    throw InputError(SourcePos{(d / "summary.json").string(), 0, 0},
                     fmt::format("--resume: the run here asked for {} run(s) of each "
                                 "schedule, this one for {} (--repeat {} resumes it)",
                                 *n, e.repeat, *n));
}

ScheduleResult result_of(const report::ScheduleData& d) {
  ScheduleResult r;
  r.schedule = d.name;
  r.ok = d.ok;
  r.error = d.error;
  r.iteration_s = d.iteration_s;
  r.bubbles = d.bubbles;
  r.bubble = d.bubble.value_or(trace::BubbleRatios{});
  r.loss = d.loss;
  r.simulated_iteration_s = d.simulated_iteration_s.value_or(0);
  r.simulated_steady_iteration_s = d.simulated_steady_iteration_s.value_or(0);
  r.simulated_launch_s = d.simulated_launch_s.value_or(-1);
  if (d.simulated_band_s)
    r.simulated_band_s = {d.simulated_band_s->first, d.simulated_band_s->second};
  r.simulated_bubble = d.simulated_bubble.value_or(trace::BubbleRatios{});
  r.simulated_costs = d.simulated_costs;
  r.tokens_per_s = d.tokens_per_s.value_or(0);
  r.mfu = d.mfu.value_or(0);
  r.peak_flops_per_rank = d.peak_flops_per_rank.value_or(0);
  r.simulated_mfu = d.simulated_mfu.value_or(0);
  r.modeled_compute = d.modeled;
  r.waits_s = nlohmann::json::object();
  for (const auto& [cause, s] : d.waits_s) r.waits_s[cause] = s;
  r.transfers = d.transfers;
  r.simulated_transfers = d.simulated_transfers;
  for (size_t i = 0; i < d.start_s.size(); ++i) {
    ScheduleResult::Point p;
    p.start_s = d.start_s[i];
    p.wan_bytes = i < d.wan_bytes.size() ? static_cast<int64_t>(d.wan_bytes[i]) : 0;
    for (const auto& [cause, v] : d.waits_series)
      if (i < v.size()) p.waits_s[cause] = v[i];
    r.series.push_back(std::move(p));
  }
  for (const auto& c : d.changes) r.changes.push_back({c.t_s, c.what, c.source});
  if (d.has_simulated_series) {
    RunSeries s;
    s.iteration_s = d.simulated_series;
    s.start_s = d.simulated_start_s;
    for (const auto& c : d.simulated_changes) s.changes.push_back({c.t_s, c.what, c.source});
    s.ended = d.simulated_ended;
    r.simulated_series = std::move(s);
  }
  r.utilisation = d.utilisation;
  r.simulated_utilisation = d.simulated_utilisation;
  r.prefill = d.prefill;
  r.dp_sync = d.dp_sync;
  if (d.eval_loss) r.eval_loss = *d.eval_loss;
  r.clock_offset_max_us = d.clock_offset_max_us.value_or(-1);
  r.clock_residual_us = d.clock_residual_us.value_or(-1);
  r.repeats = d.repeats;
  r.run_means_s = d.run_means_s;
  r.run_seeds = d.run_seeds;
  r.missing_runs = d.missing_runs;
  return r;
}

std::optional<ScheduleResult> read_finished_run(const std::string& file, uint64_t seed) {
  const auto text = read_text_file(file);
  if (!text) return std::nullopt;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const std::exception&) {
    return std::nullopt;  // torn or foreign: that run goes again
  }
  if (!j.is_object()) return std::nullopt;
  const report::ScheduleData d = report::read_schedule_entry(j);
  if (!d.ok || d.iteration_s.empty() || d.bubbles.size() != d.iteration_s.size() ||
      d.run_seeds != std::vector<uint64_t>{seed})
    return std::nullopt;
  return result_of(d);
}

RunLedger::RunLedger(const Plan& plan, std::string root) : plan_(plan), root_(std::move(root)) {
  slots_.assign(plan.schedules.size(), std::vector<Slot>(std::max(1, plan.experiment.repeat)));
}

int RunLedger::keep_finished() {
  int n = 0;
  for (size_t i = 0; i < slots_.size(); ++i)
    for (int k = 0; k < static_cast<int>(slots_[i].size()); ++k) {
      const RunSlot s{k, i};
      if (auto r = read_finished_run((fs::path(dir(s)) / "summary.json").string(), seed(k))) {
        at(s) = {State::kDone, std::move(*r), true};
        ++n;
      }
    }
  return n;
}

bool RunLedger::finished(const RunSlot& s) const {
  return at(s).result.has_value();
}

bool RunLedger::kept(const RunSlot& s) const {
  return at(s).kept;
}

const ScheduleResult& RunLedger::result(const RunSlot& s) const {
  return at(s).result.value();
}

std::string RunLedger::dir(const RunSlot& s) const {
  return (fs::path(root_) /
          run_subdir(plan_.schedules.at(s.schedule).choice.name, s.repeat, plan_.experiment.repeat))
      .string();
}

std::string RunLedger::kept_line(const RunSlot& s) const {
  const int n = plan_.experiment.repeat;
  return fmt::format(
      "[{}]{} reused: {} (iteration {:.3f} s)", plan_.schedules.at(s.schedule).choice.name,
      n > 1 ? fmt::format(" run {} of {} (seed {})", s.repeat + 1, n, seed(s.repeat)) : "", dir(s),
      result(s).mean());
}

int RunLedger::slots() const {
  return static_cast<int>(slots_.size() * (slots_.empty() ? 0 : slots_[0].size()));
}

void RunLedger::start(const RunSlot& s) {
  at(s).state = State::kRunning;
}

void RunLedger::finish(const RunSlot& s, ScheduleResult r) {
  at(s) = {State::kDone, std::move(r), false};
}

void RunLedger::stopped(const RunSlot& s) {
  at(s) = {State::kInterrupted, std::nullopt, false};
}

void RunLedger::cancel_rest() {
  for (auto& row : slots_)
    for (Slot& s : row)
      if (!s.result) s.state = State::kInterrupted;
}

std::vector<ScheduleResult> RunLedger::pooled() const {
  std::vector<ScheduleResult> out;
  for (size_t i = 0; i < slots_.size(); ++i) {
    std::vector<ScheduleResult> runs;
    std::vector<int> repeat;
    std::vector<MissingRun> missing;
    for (int k = 0; k < static_cast<int>(slots_[i].size()); ++k) {
      const Slot& s = slots_[i][k];
      if (s.result) {
        runs.push_back(*s.result);
        repeat.push_back(k);
      } else {
        missing.push_back({k, seed(k), state_name(static_cast<int>(s.state))});
      }
    }
    ScheduleResult r;
    if (runs.empty()) {
      r.schedule = plan_.schedules[i].choice.name;
      r.error = "no run finished";
      r.repeats = 0;
    } else {
      r = plan_.experiment.repeat == 1 ? runs[0] : pool_repeats(runs, repeat);
    }
    r.missing_runs = std::move(missing);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<ScheduleResult> RunLedger::results() const {
  std::vector<ScheduleResult> out = pooled();
  compare_with_baselines(out);
  return out;
}

void RunLedger::write(const std::vector<ScheduleResult>& rs, const std::string& backend,
                      const std::string& network, bool interrupted) const {
  const nlohmann::json summary = run_summary_json(plan_, rs, backend, network, interrupted);
  std::string rows;
  for (const auto& r : rs) rows += iterations_csv_rows(r);
  write_text_file((fs::path(root_) / "summary.json").string(), summary.dump(2) + "\n");
  write_text_file((fs::path(root_) / "iterations.csv").string(), iterations_csv_header() + rows);
}

void RunLedger::write_pooled() const {
  if (plan_.experiment.repeat == 1) return;  // SCHEDULE/ is the one run's own
  for (const ScheduleResult& r : pooled()) {
    if (r.repeats == 0) continue;
    const fs::path dir = fs::path(root_) / r.schedule;
    fs::create_directories(dir);
    write_text_file((dir / "summary.json").string(), summary_json(r).dump(2) + "\n");
    write_text_file((dir / "iterations.csv").string(),
                    iterations_csv_header() + iterations_csv_rows(r));
  }
}

}  // namespace xdc::run
