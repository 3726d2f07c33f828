#pragma once
// What a report shows, read from a results directory of `xdc run` or `xdc simulate` (one
// layout, harness/run/results.h): summary.json {"experiment", "backend", "compute_mode",
// ..., "schedules": [{"schedule", "iteration_s_mean", ...}]} ("simulated": true, no
// measured figures, from `xdc simulate`), environment.json, link_check.json, and per
// schedule <schedule>/trace.csv (measured, every measured iteration), rank<r>.json (each
// rank's iteration bounds) and simulated.trace.csv; a schedule run `repeats` > 1 times
// keeps those per repeat in <schedule>/repeat-<k>/ (run/repeat.h).
// The experiment as run is experiment.yaml and topology.yaml (experiment.h record()),
// loaded with the experiment's own parser: the topology with its `wan:` override applied,
// the placement, the model and the compute.
// Everything is optional but summary.json: a section of the report appears when its file
// does. Files that exist but cannot be read become `notes` (shown on the page), not errors.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/experiment/experiment.h"
#include "harness/run/summary_schema.h"
#include "harness/trace/analysis.h"
#include "workloads/trace/trace.h"

namespace xdc::report {

struct ScheduleData {
  std::string name;
  bool ok = true;
  std::string error;
  // Measured (absent in a simulation-only directory).
  std::optional<double> iteration_s_mean, iteration_s_p50, iteration_s_p95;
  std::optional<trace::BubbleRatios> bubble;
  int iterations = 0;
  // Repeats (summary.json "repeats", "run_means_s", "iteration_s_ci95"; 1, empty, none
  // when absent): the runs pooled (0: none finished), each one's mean (NaN: none measured), the 95%
  // confidence interval of the mean iteration.
  int repeats = 1;
  std::vector<double> run_means_s;
  std::optional<std::pair<double, double>> iteration_s_ci95;
  // Predicted by the simulator: the mean iteration, the 90% band of that mean over runs
  // whose random losses fall differently (low == high: deterministic, no random loss), and
  // whether the measured mean fell inside it (summary.json within_band; measured runs).
  std::optional<double> simulated_iteration_s;
  std::optional<std::pair<double, double>> simulated_band_s;
  std::optional<bool> within_band;
  std::optional<double> measured_over_simulated;  // iteration_s_mean / simulated_iteration_s
  std::optional<trace::BubbleRatios> simulated_bubble;
  std::string simulated_costs;  // how the simulator's costs were chosen, when said
  std::optional<double> tokens_per_s;
  // The WAN's point-to-point messages (summary.json transfers / simulated_transfers,
  // results.h transfers_json): median goodput per message, measured and simulated, and
  // the connections each message went over (0: not recorded).
  std::optional<double> wan_goodput_mbit_p50, simulated_wan_goodput_mbit_p50;
  int wan_connections = 0;
  // The hosts' TCP over the job (summary.json `tcp`, network/tcp.h TcpCounters): its
  // retransmission timeouts and the share of segments sent again; absent: not recorded.
  std::optional<int64_t> tcp_timeouts;
  std::optional<double> tcp_retransmitted_share;
  // summary.json tp_stalls (run/results.h tp_stalls_json): stalled records of how many, and
  // their time beyond the median (s).
  std::optional<int64_t> tp_stalled, tp_records;
  std::optional<double> tp_stall_excess_s;
  nlohmann::json prefill;  // summary.json's `prefill` of a run with prefill (run/prefill_results.h)
  nlohmann::json dp_sync;  // summary.json's `dp_sync` of a DiLoCo run (run/results.h)
  std::optional<double> eval_loss;  // summary.json's `eval_loss`, where evaluated
  std::optional<double> mfu, peak_flops_per_rank;
  // The simulated iteration's MFU: modeled, at the assumed device peak (summary.json).
  std::optional<double> simulated_mfu;
  bool modeled = false;      // tokens/s and MFU rest on modeled compute (summary.json "basis")
  std::vector<double> loss;  // per measured iteration; NaN where a value was missing
  // Seconds per iteration the ranks spent waiting, summed over ranks, by cause
  // ("RECV_F", "ALLREDUCE", "ITERATION_BARRIER", ...), in the file's order.
  std::vector<std::pair<std::string, double>> waits_s;
  // One iteration of each trace, times from 0 at the iteration's first event.
  std::optional<trace::Trace> measured;
  // which iteration: "iteration 7 of 20 (median time)"; with repeats, of the repeat whose
  // mean is the median of run_means_s ("repeat 2: iteration 7 ...")
  std::string measured_label;
  std::optional<trace::Trace> simulated;
  // Over the run (summary.json "series", "changes", "simulated_series"; empty when absent):
  // per measured iteration its time, start (s from iteration 0's), WAN bytes and waits by
  // cause; the WAN changes applied (t_s on the same axis); the same predicted.
  struct Applied {
    double t_s = 0;
    std::string what, source;
  };
  std::vector<double> iteration_s, start_s, wan_bytes;
  std::vector<std::pair<std::string, std::vector<double>>> waits_series;
  std::vector<Applied> changes;
  std::vector<double> simulated_series, simulated_start_s;
  std::vector<Applied> simulated_changes;
  // The rest of the entry, what pooling a finished run with others needs (run/resume.h reads
  // a run back through this reader): per measured iteration its bubble ratios (series
  // bubble_ratio), run_seeds, transfers and simulated_transfers as written (null: none),
  // utilisation per rank (measured and simulated), the clock offsets (lab runs), the simulated
  // steady state, whether a simulated_series is there and why it ended.
  std::vector<trace::BubbleRatios> bubbles;
  std::vector<uint64_t> run_seeds;
  nlohmann::json transfers, simulated_transfers;
  std::vector<double> utilisation, simulated_utilisation;
  std::optional<double> clock_offset_max_us, clock_residual_us;
  std::optional<double> simulated_steady_iteration_s;
  std::optional<double> simulated_launch_s;  // summary_schema.h simulated_launch_to_measured_s
  bool has_simulated_series = false;
  std::string simulated_ended;
  // The schedule's runs with no result in this summary (summary_schema.h missing_runs).
  std::vector<run::MissingRun> missing_runs;
  // None of its runs finished (an entry of a run killed or stopped before it).
  bool not_run() const { return repeats == 0; }

  // Repeats whose mean was measured (finite run_means_s); the interval of the mean is
  // shown with two or more (has_ci).
  int measured_runs() const;
  bool has_ci() const { return iteration_s_ci95 && measured_runs() > 1; }
  // The prediction against the measurement: with a band (random loss) whether the measured
  // mean fell in it; with a deterministic prediction whether it lies in the measured mean's
  // 95% CI; kNone when neither can be said.
  enum class Agreement { kNone, kInBand, kOutsideBand, kInCi, kOutsideCi };
  Agreement agreement() const;
};

struct RunData {
  std::string dir;
  std::string experiment;     // summary "experiment", else the directory's name
  std::string backend;        // shaping backend, or "none (simulated)"
  std::string compute_mode;   // "" when not said
  std::string compute_costs;  // where the costs came from (Compute::costs_source); ""
  bool simulated_only = false;
  // The run was stopped (SIGINT) or killed before every run finished (summary.json
  // interrupted, or complete false).
  bool interrupted = false;
  std::vector<std::pair<std::string, std::string>> setup;  // scalar facts of the run
  std::vector<ScheduleData> schedules;
  std::optional<nlohmann::json> link_check;  // `xdc check --json` form
  // experiment.yaml (+ topology.yaml) loaded; none in read_summary, when absent, or when it
  // does not load (a note says why).
  std::optional<run::Experiment> recorded;
  // What differs from stock OpenMPI and Linux TCP (environment.json non_default_settings,
  // else the recorded experiment's); none when neither says.
  std::optional<std::vector<std::string>> non_default_settings;
  std::vector<std::string> notes;          // files that were there but unreadable
  double time_dilation = 1;                // summary "time_dilation" (experiment.h)
  std::vector<std::string> not_stretched;  // what dilation does not stretch (environment)
  // The Chrome traces the directory holds ("<schedule>/trace.json", a simulation's
  // "<schedule>/simulated.trace.json", with repeats "<schedule>/repeat-<k>/trace.json"),
  // relative to dir.
  std::vector<std::string> trace_files;
  // A run of the user's program (run/workload_run.h): its wan.csv and steps.csv ("" when
  // absent), for the WAN's utilisation over time.
  std::string wan_csv, steps_csv;
};

// Throws InputError when DIR has no readable summary.json, or one of a newer schema.
RunData read_results_dir(const std::string& dir);
// The same without the traces (no measured or simulated iteration drawn): the figures of
// summary.json, environment.json and link_check.json, as a sweep's table takes them.
RunData read_summary(const std::string& dir);

// One schedule's entry of summary.json (or a run's own SCHEDULE/summary.json) as above,
// without its traces.
ScheduleData read_schedule_entry(const nlohmann::json& entry);

// Settings as the page states them: "a=1, b=2", or "none (stock OpenMPI and TCP)".
std::string settings_text(const std::vector<std::string>& settings);

// The trace moved so that its first event starts at 0.
trace::Trace from_zero(trace::Trace t);

}  // namespace xdc::report
