#pragma once
// Repeated runs (experiment.h `repeat: N`, `xdc run --repeat N`): the order the runs go in,
// where each keeps its files, one schedule's repeats pooled into one result, and the
// spread summary.json states of every measurement (summary_schema.h): the 95% confidence
// interval of the mean iteration time and the standard deviation it rests on.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "harness/run/results.h"

namespace xdc::run {

// The t distribution's 0.975 quantile with `df` >= 1 degrees of freedom (the half-width
// factor of a two-sided 95% interval): tabulated to 4 decimals for df 1..30 (t(1) =
// 12.7062, t(4) = 2.7764), a Cornish-Fisher expansion beyond (within 1e-4 of the exact
// value, 1.96 as df grows). Throws std::invalid_argument for df < 1.
double t975(int df);

struct MeanCi {
  double mean = 0;
  double sd = 0;  // sample standard deviation (n - 1)
  double low = 0, high = 0;
  double half() const { return (high - low) / 2; }
};
// mean +- t975(n - 1) x sd / sqrt(n) over the finite values of `xs`; nullopt with fewer
// than 2 of them.
std::optional<MeanCi> mean_ci95(const std::vector<double>& xs);

// A schedule's spread, as summary.json states it: with m >= 2 repeats that measured an
// iteration (ScheduleResult::run_means_s finite), over their means (m - 1 degrees of
// freedom); with m = 1, over that one run's iterations (n - 1); nullopt where that leaves
// fewer than 2 values. `over_runs` says which.
struct Spread {
  std::optional<MeanCi> ci;
  bool over_runs = false;
};
Spread spread(const ScheduleResult& r);

// One job of a run: repeat `repeat` (0-based) of plan schedule `schedule`.
struct RunSlot {
  int repeat = 0;
  size_t schedule = 0;
  bool operator==(const RunSlot&) const = default;
};
// Every job of `schedules` x `repeats`, interleaved: round k runs every schedule once, in
// the experiment's order, before round k + 1 starts; so a drift of the machine over the
// run falls on every schedule alike.
std::vector<RunSlot> run_order(size_t schedules, int repeats);

// Where repeat k of n keeps schedule `name`'s run files, relative to the results
// directory: "NAME" when n == 1 (the layout of a run without repeats), else
// "NAME/repeat-K".
std::string run_subdir(const std::string& name, int k, int n);

// One schedule's runs (in repeat order, each one repeat's result; not empty) as one
// result: ok when every repeat was; error the failed repeats' errors ("repeat K: ...");
// iteration_s, bubbles and loss pooled in repeat order (iteration_repeat: whose each is);
// series and changes laid end to end (each repeat's start_s after the previous repeat's
// last iteration); run_means_s and run_seeds per repeat; the bubble ratios and waits the
// means over the pooled iterations; the hosts' TCP counters (tcp) their sums; tokens/s and
// MFU at the pooled mean; the prediction
// (simulated_iteration_s, steady, bubbles, MFU) the mean of the repeats' predictions (one
// per repeat: real compute predicts each with its own measured durations). Transfers,
// utilisation, prefill, the simulated series and transfers are the first repeat's that
// measured an iteration (each repeat's own are in its directory's summary.json).
// `repeat`: the repeat each run is, where they are not 0..n-1 (a run with some repeats
// missing, run/resume.h); empty: runs[k] is repeat k.
ScheduleResult pool_repeats(const std::vector<ScheduleResult>& runs,
                            const std::vector<int>& repeat = {});

// summary.json's spread keys of a measured entry (summary_schema.h): repeats, run_means_s,
// run_seeds, iteration_s_ci95, iteration_s_sd.
void add_spread_json(nlohmann::json& entry, const ScheduleResult& r);

// After `xdc run`'s table: one line per pair of schedules that both have a confidence
// interval over runs (>= 2 repeats measured), "A faster than B: CIs separate" or "A vs B:
// not distinguishable at 95%". "" when fewer than two schedules have one: the interval of
// one run's iterations says nothing of how the next run would differ.
std::string ci_comparison(const std::vector<ScheduleResult>& rs);

}  // namespace xdc::run
