// Repeated runs without running anything (run/repeat.h): the t quantiles and confidence
// intervals summary.json states, the interleaved run order, where each repeat's files go,
// the repeats pooled into one schedule's result, and what `xdc run` prints of them; the
// `repeat` key of an experiment.
#include "harness/run/repeat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "common/input_error.h"
#include "harness/experiment/experiment.h"
#include "harness/run/results.h"

namespace {

using xdc::run::RunSlot;
using xdc::run::ScheduleResult;

TEST(Repeat, TQuantilesAreTheTabulatedOnes) {
  using xdc::run::t975;
  EXPECT_NEAR(t975(1), 12.706, 1e-3);
  EXPECT_NEAR(t975(4), 2.776, 1e-3);
  EXPECT_NEAR(t975(10), 2.228, 1e-3);
  EXPECT_NEAR(t975(30), 2.042, 1e-3);
  // Beyond the table: the expansion, continuous with it and falling to the normal's 1.96.
  EXPECT_NEAR(t975(31), 2.0395, 2e-4);
  EXPECT_NEAR(t975(60), 2.0003, 2e-4);
  EXPECT_NEAR(t975(120), 1.9799, 2e-4);
  EXPECT_NEAR(t975(1000000), 1.95996, 1e-4);
  for (int df = 1; df < 200; ++df) EXPECT_GT(t975(df), t975(df + 1)) << df;
  EXPECT_THROW(t975(0), std::invalid_argument);
}

TEST(Repeat, ConfidenceIntervalOfTheMean) {
  using xdc::run::mean_ci95;
  // Two values: 10 +- 12.706 x 0.7071 / sqrt(2) = 10 +- 6.353.
  auto two = mean_ci95({9.5, 10.5});
  ASSERT_TRUE(two);
  EXPECT_DOUBLE_EQ(two->mean, 10.0);
  EXPECT_NEAR(two->sd, std::sqrt(0.5), 1e-12);
  EXPECT_NEAR(two->low, 10 - 6.3531, 1e-3);
  EXPECT_NEAR(two->high, 10 + 6.3531, 1e-3);
  // Five values, t(4) = 2.776: mean 3, sd sqrt(2.5).
  auto five = mean_ci95({1, 2, 3, 4, 5});
  ASSERT_TRUE(five);
  EXPECT_NEAR(five->half(), 2.7764 * std::sqrt(2.5) / std::sqrt(5.0), 1e-4);
  // NaN (a repeat that measured nothing) is left out; fewer than 2 values: none.
  auto skip = mean_ci95({9.5, NAN, 10.5});
  ASSERT_TRUE(skip);
  EXPECT_NEAR(skip->half(), two->half(), 1e-12);
  EXPECT_FALSE(mean_ci95({1.0}));
  EXPECT_FALSE(mean_ci95({1.0, NAN}));
  EXPECT_FALSE(mean_ci95({}));
}

TEST(Repeat, RunOrderInterleavesRoundsInTheExperimentsOrder) {
  using xdc::run::run_order;
  EXPECT_EQ(run_order(3, 2),
            (std::vector<RunSlot>{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}));
  EXPECT_EQ(run_order(2, 1), (std::vector<RunSlot>{{0, 0}, {0, 1}}));
  EXPECT_EQ(run_order(1, 3), (std::vector<RunSlot>{{0, 0}, {1, 0}, {2, 0}}));
  EXPECT_TRUE(run_order(0, 3).empty());
}

TEST(Repeat, EachRepeatHasItsOwnDirectory) {
  using xdc::run::run_subdir;
  EXPECT_EQ(run_subdir("1f1b", 0, 1), "1f1b");  // no repeats: the layout as ever
  EXPECT_EQ(run_subdir("1f1b", 0, 3), "1f1b/repeat-0");
  EXPECT_EQ(run_subdir("zbv+prefill", 2, 3), "zbv+prefill/repeat-2");
}

// One repeat's result as run_schedule leaves it.
ScheduleResult one_run(const std::string& name, std::vector<double> its, uint64_t seed,
                       bool ok = true) {
  ScheduleResult r;
  r.schedule = name;
  r.ok = ok;
  if (!ok) r.error = "rank 1 exited";
  r.iteration_s = its;
  double start = 0;
  for (double x : its) {
    r.series.push_back({start, 100, {}});
    r.bubbles.push_back({0.2, 0.1, 0.3});
    r.loss.push_back(5.0);
    start += x;
  }
  r.bubble = {0.2, 0.1, 0.3};
  r.run_seeds = {seed};
  r.run_means_s = {its.empty() ? NAN : r.mean()};
  r.simulated_iteration_s = 1.0;
  r.tokens_per_s = its.empty() ? 0 : 1000 / r.mean();
  r.waits_s = {{"RECV_F", its.empty() ? 0.0 : 0.5}};
  return r;
}

TEST(Repeat, RepeatsArePooledInRepeatOrder) {
  const std::vector<ScheduleResult> runs = {one_run("1f1b", {1.0, 1.2}, 7),
                                            one_run("1f1b", {2.0}, 8, false),
                                            one_run("1f1b", {}, 9, false)};
  const ScheduleResult p = xdc::run::pool_repeats(runs);
  EXPECT_EQ(p.repeats, 3);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "repeat 1: rank 1 exited; repeat 2: rank 1 exited");
  EXPECT_EQ(p.iteration_s, (std::vector<double>{1.0, 1.2, 2.0}));
  EXPECT_EQ(p.iteration_repeat, (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(p.loss.size(), 3u);
  EXPECT_EQ(p.run_seeds, (std::vector<uint64_t>{7, 8, 9}));
  ASSERT_EQ(p.run_means_s.size(), 3u);
  EXPECT_DOUBLE_EQ(p.run_means_s[0], 1.1);
  EXPECT_DOUBLE_EQ(p.run_means_s[1], 2.0);
  EXPECT_TRUE(std::isnan(p.run_means_s[2]));
  // Repeat 1's series follows repeat 0's last iteration (0 + 1.0 + 1.2).
  ASSERT_EQ(p.series.size(), 3u);
  EXPECT_DOUBLE_EQ(p.series[2].start_s, 2.2);
  EXPECT_NEAR(p.mean(), 4.2 / 3, 1e-12);
  EXPECT_NEAR(p.tokens_per_s, 1000 / p.mean(), 1e-9);
  EXPECT_NEAR(p.waits_s["RECV_F"].get<double>(), 0.5, 1e-12);  // per iteration, weighted
  EXPECT_DOUBLE_EQ(p.bubble.crosspipe, 0.3);
  EXPECT_DOUBLE_EQ(p.simulated_iteration_s, 1.0);
  // Two repeats measured: the interval is over their means, 1 degree of freedom.
  const auto s = xdc::run::spread(p);
  EXPECT_TRUE(s.over_runs);
  ASSERT_TRUE(s.ci);
  EXPECT_NEAR(s.ci->mean, 1.55, 1e-12);
  EXPECT_NEAR(s.ci->half(), 12.7062 * 0.9 / std::sqrt(2.0) / std::sqrt(2.0), 1e-3);
}

// The hosts' TCP counters (summary_schema.h `tcp`) of the repeats add up, host by host; a
// repeat without them (not read) leaves the pooled entry without them.
TEST(Repeat, TcpCountersOfTheRepeatsAddUp) {
  std::vector<ScheduleResult> runs = {one_run("1f1b", {1.0}, 7), one_run("1f1b", {2.0}, 8)};
  runs[0].tcp = {{"timeouts", 2}, {"sent_segments", 100}, {"hosts", {{"e1", {{"timeouts", 2}}}}}};
  runs[1].tcp = {{"timeouts", 1},
                 {"sent_segments", 50},
                 {"hosts", {{"e1", {{"timeouts", 0}}}, {"w1", {{"timeouts", 1}}}}}};
  const ScheduleResult p = xdc::run::pool_repeats(runs);
  EXPECT_EQ(p.tcp["timeouts"], 3);
  EXPECT_EQ(p.tcp["sent_segments"], 150);
  EXPECT_EQ(p.tcp["hosts"]["e1"]["timeouts"], 2);
  EXPECT_EQ(p.tcp["hosts"]["w1"]["timeouts"], 1);
  runs[1].tcp = nullptr;
  EXPECT_TRUE(xdc::run::pool_repeats(runs).tcp.is_null());
}

TEST(Repeat, TpStallsAreTheAllReducesATimerLongerThanTheirMedianAndAddUp) {
  auto record = [](int64_t ms) {
    xdc::trace::Event ev;
    ev.kind = xdc::sched::Kind::TP_ALLREDUCE;
    ev.start_ns = 1'000'000'000;
    ev.end_ns = ev.start_ns + ms * 1'000'000;
    return ev;
  };
  std::vector<xdc::trace::Trace> its(2);
  for (int k = 0; k < 9; ++k) its[k % 2].events.push_back(record(24 + k % 3));
  its[0].events.push_back(record(230));  // 204 ms beyond the median (26 ms): stalled
  its[1].events.push_back(record(220));  // 194 ms beyond: not
  its[1].events.push_back(record(460));
  xdc::trace::Event send = record(900);  // not a TP all-reduce
  send.kind = xdc::sched::Kind::SEND_F;
  its[1].events.push_back(send);
  const nlohmann::json j = xdc::run::tp_stalls_json(its);
  EXPECT_EQ(j["records"], 12);
  EXPECT_EQ(j["stalled"], 2);
  EXPECT_EQ(j["excess_ms"], 204 + 434);
  EXPECT_TRUE(xdc::run::tp_stalls_json({}).is_null());

  std::vector<ScheduleResult> runs = {one_run("1f1b", {1.0}, 7), one_run("1f1b", {2.0}, 8)};
  runs[0].tp_stalls = j;
  runs[1].tp_stalls = {{"records", 10}, {"stalled", 1}, {"excess_ms", 210}};
  const ScheduleResult p = xdc::run::pool_repeats(runs);
  EXPECT_EQ(p.tp_stalls["records"], 22);
  EXPECT_EQ(p.tp_stalls["stalled"], 3);
  EXPECT_EQ(p.tp_stalls["excess_ms"], 848);
}

TEST(Repeat, RepeatsWithSomeMissingArePooledUnderTheirOwnIndex) {
  // Repeats 0 and 2 of three (repeat 1 not run yet, run/resume.h).
  const ScheduleResult p = xdc::run::pool_repeats(
      {one_run("1f1b", {1.0}, 7, false), one_run("1f1b", {2.0, 2.2}, 9)}, {0, 2});
  EXPECT_EQ(p.repeats, 2);
  EXPECT_EQ(p.iteration_repeat, (std::vector<int>{0, 2, 2}));
  EXPECT_EQ(p.run_seeds, (std::vector<uint64_t>{7, 9}));
  EXPECT_EQ(p.error, "repeat 0: rank 1 exited");
  EXPECT_THROW(xdc::run::pool_repeats({one_run("1f1b", {1.0}, 7)}, {0, 1}), std::invalid_argument);
}

TEST(Repeat, SummaryStatesTheSpreadOfEveryRun) {
  // One run: over its iterations (t(2) = 4.303).
  ScheduleResult one = one_run("1f1b", {1.0, 2.0, 3.0}, 1);
  nlohmann::json j;
  xdc::run::add_spread_json(j, one);
  EXPECT_EQ(j["repeats"], 1);
  EXPECT_EQ(j["run_means_s"], nlohmann::json::array({2.0}));
  EXPECT_EQ(j["run_seeds"], nlohmann::json::array({1}));
  ASSERT_TRUE(j["iteration_s_ci95"].is_array());
  EXPECT_NEAR(j["iteration_s_ci95"][0].get<double>(), 2 - 4.3027 / std::sqrt(3.0), 1e-4);
  EXPECT_NEAR(j["iteration_s_ci95"][1].get<double>(), 2 + 4.3027 / std::sqrt(3.0), 1e-4);
  EXPECT_DOUBLE_EQ(j["iteration_s_sd"].get<double>(), 1.0);
  // One iteration: no interval, written as null.
  nlohmann::json k;
  xdc::run::add_spread_json(k, one_run("1f1b", {1.0}, 1));
  EXPECT_TRUE(k["iteration_s_ci95"].is_null());
  EXPECT_TRUE(k["iteration_s_sd"].is_null());
  // summary_json writes them for a measured entry, with a failed repeat's mean as null.
  const ScheduleResult p =
      xdc::run::pool_repeats({one_run("a", {1.0, 1.1}, 1), one_run("a", {}, 2, false)});
  const nlohmann::json e = xdc::run::summary_json(p);
  EXPECT_EQ(e["repeats"], 2);
  EXPECT_TRUE(e["run_means_s"][1].is_null());
  EXPECT_TRUE(e["iteration_s_ci95"].is_array());  // m = 1: over the iterations
  EXPECT_EQ(e["iterations"], 2);
}

TEST(Repeat, IterationsCsvNumbersEachRepeatFromZero) {
  const ScheduleResult p =
      xdc::run::pool_repeats({one_run("a", {1.0, 1.1}, 1), one_run("a", {1.2}, 2)});
  const std::string rows = xdc::run::iterations_csv_rows(p);
  EXPECT_EQ(xdc::run::iterations_csv_header().substr(0, 24), "schedule,iteration,itera");
  EXPECT_NE(xdc::run::iterations_csv_header().find(",simulated_s,repeat\n"), std::string::npos);
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = rows.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(rows.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].substr(0, 13), "a,0,1.000000,");
  EXPECT_EQ(lines[1].substr(0, 13), "a,1,1.100000,");
  EXPECT_EQ(lines[2].substr(0, 13), "a,0,1.200000,");
  EXPECT_EQ(lines[0].back(), '0');
  EXPECT_EQ(lines[2].back(), '1');
}

TEST(Repeat, TableShowsIntervalsAndComparesPairs) {
  using xdc::run::pool_repeats;
  // Means 1.0 and 1.02: 1.01 +- 12.706 x 0.01414 / sqrt(2) = 1.01 +- 0.127.
  const auto fast = pool_repeats({one_run("fast", {1.0, 1.0}, 1), one_run("fast", {1.02}, 2)});
  const auto slow = pool_repeats({one_run("slow", {2.0}, 1), one_run("slow", {2.02}, 2)});
  const auto wide = pool_repeats({one_run("wide", {1.0}, 1), one_run("wide", {3.0}, 2)});
  const std::string cmp = xdc::run::ci_comparison({slow, fast, wide});
  EXPECT_EQ(cmp,
            "fast faster than slow: CIs separate\n"
            "slow vs wide: not distinguishable at 95%\n"
            "fast vs wide: not distinguishable at 95%\n");
  const std::string table = xdc::run::comparison_table({fast, slow});
  EXPECT_NE(table.find("1.010 \u00b1 0.127 s"), std::string::npos) << table;
  EXPECT_NE(table.find("fast faster than slow: CIs separate"), std::string::npos) << table;
  // Without repeats: the mean alone, and no pair is judged on one run's iterations.
  const auto a = one_run("a", {1.0, 1.1}, 1), b = one_run("b", {2.0, 2.1}, 1);
  EXPECT_EQ(xdc::run::ci_comparison({a, b}), "");
  const std::string plain = xdc::run::comparison_table({a, b});
  EXPECT_EQ(plain.find("\u00b1"), std::string::npos) << plain;
  EXPECT_NE(plain.find("   1.050 s"), std::string::npos) << plain;
}

const std::string kExperiment = R"(name: t
topology: ../../topologies/two-dc.yaml
compute: {modeled: {f: 10ms, b: 20ms, activation: 1mib}}
pipeline: {stages: 2, placement: [east-h1, w1]}
microbatches: 2
iterations: 2
schedules: [1f1b]
)";

TEST(Repeat, ExperimentKey) {
  using xdc::run::parse_experiment;
  EXPECT_EQ(parse_experiment(kExperiment, "tests/run/t.yaml").repeat, 1);
  EXPECT_EQ(parse_experiment(kExperiment + "repeat: 5\n", "tests/run/t.yaml").repeat, 5);
  try {
    parse_experiment(kExperiment + "repeat: 0\n", "tests/run/t.yaml");
    FAIL() << "repeat: 0 accepted";
  } catch (const xdc::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("repeat"), std::string::npos) << e.what();
  }
  try {
    parse_experiment(kExperiment + "repeats: 3\n", "tests/run/t.yaml");
    FAIL() << "repeats: accepted";
  } catch (const xdc::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'repeat'"), std::string::npos) << e.what();
  }
}

}  // namespace
