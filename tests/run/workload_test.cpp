// The `workload:` block (experiment/workload.h) and what a run of the user's program is
// read into (run/workload_results.h): the block parses into the processes and their
// environment's inputs, bad blocks are refused at FILE:LINE:COL, the events protocol
// pairs into spans and steps, and the WAN's samples and the program's spans land in one
// Chrome/Perfetto trace.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "common/input_error.h"
#include "harness/experiment/experiment.h"
#include "harness/plan/plan.h"
#include "harness/run/workload_results.h"

namespace {

using xdc::run::parse_experiment;

const std::string kLabel = "experiments/byo/bad.yaml";

const std::string kGood = R"(name: t
topology: two-dc.yaml
wan: {delay: 40ms}
workload:
  command: [/usr/bin/env, "true"]
  hosts: [e1, w1]
  per_host: 2
  port: 29611
  time_limit: 20m
  env: {FOO: bar}
)";

std::string with(const std::string& from, const std::string& to) {
  std::string s = kGood;
  s.replace(s.find(from), from.size(), to);
  return s;
}

TEST(Workload, BlockGivesRanksHostsAndEnvironment) {
  const auto e = parse_experiment(kGood, kLabel);
  ASSERT_TRUE(e.workload);
  const auto& w = *e.workload;
  EXPECT_EQ(w.command, (std::vector<std::string>{"/usr/bin/env", "true"}));
  EXPECT_EQ(w.world_size(), 4);
  EXPECT_EQ(w.rank_hosts(), (std::vector<std::string>{"e1", "e1", "w1", "w1"}));
  EXPECT_EQ(e.rank_hosts(), w.rank_hosts());
  EXPECT_EQ(w.port, 29611);
  EXPECT_EQ(w.time_limit_us, 20ull * 60 * 1000000);
  EXPECT_EQ(w.env, (std::vector<std::pair<std::string, std::string>>{{"FOO", "bar"}}));
  EXPECT_EQ(w.launcher, xdc::run::Workload::Launcher::kTorch);
  // The experiment's network keys still apply.
  EXPECT_EQ(e.topology.wan.at(0).a_to_b.delay_us, 40000u);
}

// `xdc simulate` and `xdc plan` of the program itself: refused at the block, pointing at
// the modeled experiment a run writes.
TEST(Workload, IsNotPlannedBeforeItRan) {
  try {
    xdc::run::make_plan(parse_experiment(kGood, kLabel));
    FAIL() << "planned";
  } catch (const xdc::InputError& err) {
    EXPECT_EQ(err.pos().line, 5);  // the block (its map starts at `command:`)
    EXPECT_NE(std::string(err.what()).find("predicted.yaml"), std::string::npos) << err.what();
  }
}

TEST(Workload, ShippedExamplesLoad) {
  for (const char* f : {"experiments/byo/ddp-two-dc.yaml", "experiments/byo/mpi-pingpong.yaml",
                        "experiments/byo/pipeline-two-dc.yaml"}) {
    const auto e = xdc::run::load_experiment(f);
    ASSERT_TRUE(e.workload) << f;
    EXPECT_EQ(e.workload->world_size(), 2) << f;
  }
}

struct Bad {
  std::string name, text;
  int line;
  std::string fragment;
};
void PrintTo(const Bad& b, std::ostream* os) {
  *os << b.name;
}
class BadWorkload : public ::testing::TestWithParam<Bad> {};

TEST_P(BadWorkload, IsRefusedWithFileLineColumn) {
  const Bad& b = GetParam();
  try {
    parse_experiment(b.text, kLabel);
    FAIL() << "accepted:\n" << b.text;
  } catch (const xdc::InputError& err) {
    const std::string what = err.what();
    const std::regex pos("^" + kLabel + ":" + std::to_string(b.line) + ":[1-9][0-9]*: ");
    EXPECT_TRUE(std::regex_search(what, pos)) << what;
    EXPECT_NE(what.find(b.fragment), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadWorkload,
    ::testing::Values(
        Bad{"shell_string", with("[/usr/bin/env, \"true\"]", "\"python3 train.py\""), 5,
            "no shell strings"},
        Bad{"empty_command", with("[/usr/bin/env, \"true\"]", "[]"), 5, "non-empty argv"},
        Bad{"missing_program", with("/usr/bin/env", "./no-such-program"), 5,
            "a program that exists"},
        Bad{"unknown_host", with("[e1, w1]", "[e1, nowhere]"), 6, "a host of the topology"},
        Bad{"host_twice", with("[e1, w1]", "[e1, e1]"), 6, "each host once"},
        Bad{"no_hosts", with("[e1, w1]", "[]"), 6, "at least one host"},
        Bad{"zero_per_host", with("per_host: 2", "per_host: 0"), 7, "1..64"},
        Bad{"bad_launcher", kGood + "  launcher: slurm\n", 11, "torch"},
        Bad{"bad_time_limit", with("20m", "soon"), 9, "a time limit"},
        Bad{"reserved_env", with("FOO: bar", "RANK: 3"), 10, "set per process"},
        Bad{"bad_env_name", with("FOO: bar", "\"A-B\": 1"), 10, "a variable name"},
        Bad{"unknown_key", kGood + "  nproc: 2\n", 11, "unknown key"},
        Bad{"worker_key", kGood + "pipeline: {stages: 2}\n", 11, "built-in xdc-worker"},
        Bad{"predict_one_process",
            with("hosts: [e1, w1]\n  per_host: 2", "hosts: [e1]\n  per_host: 1") +
                "  predict: {allreduce: 1mib}\n",
            11, "at least two processes"}),
    [](const auto& info) { return info.param.name; });

const std::string kEvents = R"({"t": 10.0, "rank": 0, "name": "step", "phase": "begin", "step": 0}
{"t": 10.1, "rank": 1, "name": "step", "phase": "begin", "step": 0}
{"t": 10.1, "rank": 0, "name": "compute", "phase": "begin"}
{"t": 10.3, "rank": 0, "name": "compute", "phase": "end"}
{"t": 10.3, "rank": 0, "name": "allreduce", "phase": "begin"}
{"t": 10.5, "rank": 0, "name": "allreduce", "phase": "end", "bytes": 1000}
{"t": 10.6, "rank": 0, "name": "step", "phase": "end", "step": 0, "loss": 5.5}
{"t": 10.7, "rank": 1, "name": "step", "phase": "end", "step": 0}
not json
{"t": 11.0, "rank": 0, "name": "step", "phase": "begin", "step": 1}
{"t": 11.0, "rank": 1, "name": "step", "phase": "begin", "step": 1}
{"t": 11.4, "rank": 0, "name": "step", "phase": "end", "step": 1, "loss": 4.5}
{"t": 11.5, "rank": 1, "name": "step", "phase": "end", "step": 1, "loss": 9.5}
{"t": 12.0, "rank": 0, "name": "step", "phase": "begin", "step": 2}
{"t": 12.1, "rank": 1, "name": "marker"}
{"t": 12.2, "rank": 1, "name": "send", "phase": "end"}
)";

TEST(WorkloadEvents, PairIntoSpansAndStepsAcrossRanks) {
  const auto ev = xdc::run::read_program_events(kEvents);
  EXPECT_EQ(ev.spans.size(), 6u);  // 4 steps, compute, allreduce; step 2 never ended
  EXPECT_EQ(ev.instants.size(), 1u);
  EXPECT_EQ(ev.bad_lines, 2);  // "not json" and an end with no begin
  const auto steps = xdc::run::program_steps(ev, 2, 1);
  // Step 2 never ended: two steps. Step 0 is each rank's own (rank 1 began it 0.1 s after
  // rank 0: that skew is not part of the step); step 1 runs from each rank's end of step
  // 0 to its end of step 1, the 0.4 s rank 0 spent between its steps included.
  ASSERT_EQ(steps.step_s.size(), 2u);
  EXPECT_NEAR(steps.step_s[0], 0.6, 1e-9);
  EXPECT_NEAR(steps.step_s[1], 0.8, 1e-9);
  EXPECT_EQ(steps.per_rank, (std::vector<int>{2, 2}));
  EXPECT_DOUBLE_EQ(steps.loss[0], 5.5);
  EXPECT_DOUBLE_EQ(steps.loss[1], 4.5);  // rank 0's, not rank 1's 9.5
  // The slowest rank's own time: rank 0's step outside its all-reduce (0.6 - 0.2), more
  // than its compute span (0.2); rank 1 reports no spans.
  EXPECT_NEAR(steps.compute_s[0], 0.4, 1e-9);
  EXPECT_EQ(steps.allreduce_bytes[0], 1000);
  // Warm-up 1: only step 1 counts.
  EXPECT_NEAR(steps.mean_s(), 0.8, 1e-9);
  EXPECT_EQ(xdc::run::program_steps(ev, 2, 0).bytes_per_step(), 1000);
}

// Two ranks in lock-step (an all-reduce ends each step at once on both) that take turns
// to compute longer: the steps add up to the time the run took, and the slower rank's
// compute is what each step's prediction gets.
TEST(WorkloadEvents, StepsAddUpToTheRunsTimeWhenRanksTakeTurnsToBeSlow) {
  std::string text;
  auto line = [&](double t, int rank, const char* name, const char* phase) {
    text += fmt::format(R"({{"t": {}, "rank": {}, "name": "{}", "phase": "{}"}})", t, rank, name,
                        phase) +
            "\n";
  };
  double t = 100;
  for (int i = 0; i < 6; ++i) {
    for (int r = 0; r < 2; ++r) {
      const double compute = (i + r) % 2 ? 0.3 : 0.1;  // the slow rank alternates
      line(t, r, "step", "begin");
      line(t + compute, r, "allreduce", "begin");
      line(t + 0.3 + 0.2, r, "allreduce", "end");  // both leave once the slower arrives
      line(t + 0.3 + 0.2 + 0.05, r, "step", "end");
    }
    t += 0.3 + 0.2 + 0.05 + 0.1;  // 0.1 s between steps (loading the next batch)
  }
  const auto steps = xdc::run::program_steps(xdc::run::read_program_events(text), 2, 1);
  ASSERT_EQ(steps.step_s.size(), 6u);
  // Five steps after warm-up: from the end of step 0 to the end of step 5.
  EXPECT_NEAR(steps.mean_s() * 5, 5 * 0.65, 1e-9);
  // The slowest rank's own time: 0.3 s compute, 0.05 s after the all-reduce, 0.1 s between.
  EXPECT_NEAR(steps.mean_compute_s(), 0.45, 1e-9);
}

TEST(WorkloadTrace, HoldsStepsPerRankAndWanBytesPerSample) {
  const auto ev = xdc::run::read_program_events(kEvents);
  std::vector<xdc::run::WanSample> samples;
  for (int i = 0; i <= 10; ++i)
    samples.push_back({10.0 + 0.01 * i, "east->west", static_cast<uint64_t>(i) * 12500,
                       static_cast<uint64_t>(i) * 10, 0, static_cast<uint64_t>(i % 3)});
  const auto t = xdc::run::workload_trace(ev, samples, {"e1", "w1"}, {}, 10.0);
  int steps = 0, bytes = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "step") {
      ++steps;
      EXPECT_EQ(e["tid"], 0);
    }
    if (e["ph"] == "C" && e["name"] == "east->west bytes") {
      ++bytes;
      EXPECT_EQ(e["args"]["bytes"], 12500);
    }
    if (e["ph"] == "C" && e["name"] == "east->west Mbit/s") {
      EXPECT_NEAR(e["args"]["mbit_s"].get<double>(), 10.0, 1e-6);  // 12500 B per 10 ms
    }
  }
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(bytes, 10);
  const auto w = xdc::run::wan_json(samples)["east->west"];
  EXPECT_EQ(w["bytes"], 125000);
  EXPECT_NEAR(w["interval_max_s"].get<double>(), 0.01, 1e-9);
  EXPECT_NEAR(w["peak_mbit_s"].get<double>(), 10.0, 1e-6);
  const std::string csv = xdc::run::wan_csv(samples, 10.0);
  EXPECT_NE(csv.find("0.010000,east->west,12500,10,0,1,12500,10.000"), std::string::npos) << csv;
}

// A profiler trace with Kineto's base time (ns since the epoch) lands where it ran.
TEST(WorkloadTrace, ProfilerTraceJoinsOnTheProgramsClock) {
  const auto ev = xdc::run::read_program_events(kEvents);
  nlohmann::json profile = {
      {"baseTimeNanoseconds", 10e9},
      {"traceEvents",
       {{{"ph", "X"}, {"name", "aten::mm"}, {"pid", 77}, {"tid", 1}, {"ts", 0.2e6}, {"dur", 5}}}}};
  const auto t = xdc::run::workload_trace(ev, {}, {"e1", "w1"}, {nlohmann::json(), profile}, 10.0);
  bool found = false;
  for (const auto& e : t["traceEvents"])
    if (e.value("name", "") == "aten::mm") {
      found = true;
      EXPECT_NEAR(e["ts"].get<double>(), 0.2e6, 1e-3);
      EXPECT_GT(e["pid"].get<int>(), 2);  // its own process, past the ranks and the WAN
    }
  EXPECT_TRUE(found);
}

}  // namespace
