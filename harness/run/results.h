#pragma once
// What one schedule's run measured, read back from the files every rank wrote
// (rank<r>.trace.csv, rank<r>.json; run_spec.h), split into iterations by the ranks'
// own iteration bounds and analysed with the simulator's analysis (harness/trace):
// iteration time, the three bubble ratios, loss, waits by cause; beside it the
// simulator's prediction of the same schedule. summary_json() is the contract of
// issue 5's summary.json entry.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/trace/analysis.h"
#include "workloads/trace/trace.h"
#include "workloads/worker/run_spec.h"

namespace xdc::run {

struct RankFiles {
  trace::Trace trace;                       // every rank's events, all measured iterations
  std::vector<worker::RankReport> reports;  // those present, by world rank
  std::vector<int> missing;                 // ranks with no report
};
// Under time dilation k (experiment.h) the ranks ran k times slower than the run they
// emulate: every time read here (events, iteration bounds, waits) is divided by k, the
// one place where dilation is undone, so everything derived (analysis, Chrome trace,
// summary.json, report) is in undilated time.
RankFiles read_rank_files(const std::string& run_dir, int world_size, const std::string& name,
                          double time_dilation = 1);
// Divides every time in `f` by `k` (what read_rank_files does with its time_dilation).
void undilate(RankFiles& f, double k);

struct ScheduleResult {
  std::string schedule;
  bool ok = false;
  std::string error;                         // why the run failed ("" when ok)
  std::vector<double> iteration_s;           // per measured iteration completed by all ranks
  std::vector<trace::BubbleRatios> bubbles;  // per iteration
  trace::BubbleRatios bubble;                // mean over iterations
  std::vector<double> loss;                  // replica 0's last stage, per iteration
  double simulated_iteration_s = 0;
  trace::BubbleRatios simulated_bubble;
  std::string simulated_costs;  // "modeled" | "measured compute" | ...
  double tokens_per_s = 0;
  double mfu = 0, peak_flops_per_rank = 0;  // 0 when not known
  // Modeled compute: the ranks slept the cost model's durations, which assume the peak, so
  // MFU (and the compute in tokens/s) is arithmetic on that assumption, not a measurement.
  bool modeled_compute = false;
  nlohmann::json waits_s;  // per cause, seconds per iteration, all ranks summed
  double mean() const;
  double percentile(double p) const;  // nearest rank
};

// Per-iteration traces from the merged trace and the reports.
std::vector<trace::Trace> split_iterations(const RankFiles& f);

nlohmann::json summary_json(const ScheduleResult& r);
// One CSV row per measured iteration: schedule,iteration,iteration_s,loss,megatron,...
std::string iterations_csv_header();
std::string iterations_csv_rows(const ScheduleResult& r);
// The comparison table printed at the end of `xdc run`.
std::string comparison_table(const std::vector<ScheduleResult>& rs);

}  // namespace xdc::run
