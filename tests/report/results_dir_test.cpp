// Reading results directories: the `xdc run` layout (measured iterations split by the
// ranks' bounds, the median one shown; simulated trace, loss, link check), the
// `xdc simulate` layout, a run's repeats, tolerance to missing and broken files.
#include "harness/report/results_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/input_error.h"
#include "harness/report/report.h"
#include "harness/trace/iterations.h"

namespace xdc::report {
namespace {
namespace fs = std::filesystem;
using trace::Kind;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("xdc-report-test-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// Two ranks, three iterations of 10, 30 and 20 ms: F then BW then OPT per rank.
trace::Trace three_iterations() {
  trace::Trace t;
  t.ranks = 2;
  t.microbatches = 1;
  const int64_t ms = 1'000'000, start[] = {1000 * ms, 1100 * ms, 1200 * ms},
                len[] = {10 * ms, 30 * ms, 20 * ms};
  for (int i = 0; i < 3; ++i)
    for (int r = 0; r < 2; ++r) {
      const int64_t s = start[i], q = len[i] / 4;
      t.events.push_back({r, Kind::F, r, 0, s + r * q, s + (r + 1) * q, 0, -1});
      t.events.push_back({r, Kind::BW, r, 0, s + 2 * q, s + 3 * q, 0, -1});
      t.events.push_back({r, Kind::OPT, r, -1, s + 3 * q, s + 4 * q, 0, -1});
    }
  return t;
}

TEST(ReportResultsDir, RunLayoutShowsTheMedianIterationBesideTheSimulation) {
  TempDir d("run");
  put(d.path / "summary.json", R"({"experiment": "two-dc", "backend": "userspace",
    "compute_mode": "real", "stages": 2, "schedules": [{"schedule": "1f1b", "ok": true,
    "iterations": 3, "iteration_s": [0.01, 0.03, 0.02], "iteration_s_mean": 0.02,
    "iteration_s_p50": 0.02, "iteration_s_p95": 0.03,
    "bubble_ratio": {"megatron": 0.5, "zerobubble": 0.25, "crosspipe": 0.3},
    "simulated_iteration_s": 0.018, "simulated_bubble_ratio": {"megatron": 0.4,
    "zerobubble": 0.2, "crosspipe": 0.2}, "tokens_per_s": 1000, "loss": [5.5, null, 4.5],
    "waits_s_per_iteration": {"RECV_F": 0.004, "ITERATION_BARRIER": 0.001},
    "mfu": {"value": 0.05, "peak_flops_per_rank": 9.5e10},
    "simulated_mfu": {"value": 0.04, "basis": "modeled"}}]})");
  put(d.path / "environment.json", R"({"kernel": "Linux 6", "wan_links": [{"x": 1}]})");
  put(d.path / "link_check.json", R"({"backend": "userspace", "links": [{"from": "east",
    "to": "west", "configured": {"delay_ms": 20}, "measured": {"rtt_median_ms": 40},
    "ok": true}]})");
  put(d.path / "1f1b" / "trace.csv", trace::to_csv(three_iterations()));
  for (int r = 0; r < 2; ++r)
    put(d.path / "1f1b" / ("rank" + std::to_string(r) + ".json"),
        R"({"iteration_start_ns": [1000000000, 1100000000, 1200000000],
            "iteration_end_ns": [1010000000, 1130000000, 1220000000]})");
  trace::Trace sim = three_iterations();
  sim.events.resize(6);
  put(d.path / "1f1b" / "simulated.trace.csv", trace::to_csv(sim));

  const RunData run = read_results_dir(d.path.string());
  EXPECT_EQ(run.experiment, "two-dc");
  EXPECT_EQ(run.backend, "userspace");
  EXPECT_EQ(run.compute_mode, "real");
  EXPECT_FALSE(run.simulated_only);
  ASSERT_EQ(run.schedules.size(), 1u);
  const ScheduleData& s = run.schedules[0];
  EXPECT_DOUBLE_EQ(s.iteration_s_mean.value(), 0.02);
  EXPECT_DOUBLE_EQ(s.bubble->zerobubble, 0.25);
  EXPECT_DOUBLE_EQ(s.simulated_iteration_s.value(), 0.018);
  EXPECT_DOUBLE_EQ(s.mfu.value(), 0.05);
  EXPECT_DOUBLE_EQ(s.simulated_mfu.value(), 0.04);
  ASSERT_EQ(s.loss.size(), 3u);
  EXPECT_TRUE(std::isnan(s.loss[1]));
  // The median iteration (20 ms, the third), moved to 0.
  ASSERT_TRUE(s.measured.has_value());
  EXPECT_EQ(s.measured->events.size(), 6u);
  EXPECT_EQ(s.measured_label, "measured: iteration 2 (of 0-2, median time)");
  int64_t first = INT64_MAX, last = 0;
  for (auto& e : s.measured->events) {
    first = std::min(first, e.start_ns);
    last = std::max(last, e.end_ns);
  }
  EXPECT_EQ(first, 0);
  EXPECT_EQ(last, 20'000'000);
  ASSERT_TRUE(s.simulated.has_value());
  EXPECT_EQ(s.simulated->events.size(), 6u);
  ASSERT_TRUE(run.link_check.has_value());
  EXPECT_NE(std::find(run.setup.begin(), run.setup.end(),
                      std::pair<std::string, std::string>{"kernel", "Linux 6"}),
            run.setup.end());
  EXPECT_TRUE(run.notes.empty());

  const std::string path = write_report(d.path.string());
  EXPECT_EQ(path, (d.path / "report.html").string());
  std::ifstream in(path);
  const std::string html((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(html.find("<section id=\"loss\">"), std::string::npos);
  EXPECT_NE(html.find("<section id=\"links\">"), std::string::npos);
  EXPECT_NE(html.find("iteration 2 (of 0-2, median time)"), std::string::npos);
  EXPECT_NE(html.find("<th>ITERATION_BARRIER</th>"), std::string::npos);
  EXPECT_NE(html.find(">4 ms</td>"), std::string::npos);
}

TEST(ReportResultsDir, RepeatsShowTheMedianRunAndTheirInterval) {
  // Three repeats (run/repeat.h): their files in 1f1b/repeat-K/, the median mean is K = 2's.
  TempDir d("repeat");
  put(d.path / "summary.json", R"({"experiment": "rep", "schedules": [{"schedule": "1f1b",
    "ok": true, "iterations": 9, "iteration_s": [0.01, 0.03, 0.02, 0.05, 0.05, 0.05, 0.02,
    0.02, 0.02], "iteration_s_mean": 0.03, "repeats": 3, "run_means_s": [0.02, 0.05, 0.02],
    "iteration_s_ci95": [0.0, 0.0727], "iteration_s_sd": 0.0173}]})");
  for (const char* k : {"repeat-0", "repeat-2"}) {
    put(d.path / "1f1b" / k / "trace.csv", trace::to_csv(three_iterations()));
    put(d.path / "1f1b" / k / "trace.json", "{}");
  }
  const RunData run = read_results_dir(d.path.string());
  ASSERT_EQ(run.schedules.size(), 1u);
  const ScheduleData& s = run.schedules[0];
  EXPECT_EQ(s.repeats, 3);
  EXPECT_EQ(s.run_means_s, (std::vector<double>{0.02, 0.05, 0.02}));
  ASSERT_TRUE(s.iteration_s_ci95);
  EXPECT_DOUBLE_EQ(s.iteration_s_ci95->second, 0.0727);
  ASSERT_TRUE(s.measured.has_value());
  EXPECT_EQ(s.measured_label.rfind("repeat 2 (median mean): measured: iteration", 0), 0u)
      << s.measured_label;
  EXPECT_EQ(run.trace_files,
            (std::vector<std::string>{"1f1b/repeat-0/trace.json", "1f1b/repeat-2/trace.json"}));
  std::ifstream in(write_report(d.path.string()));
  const std::string page((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(page.find("95% CI"), std::string::npos);
}

// The prediction's band and whether the mean fell in it, the WAN messages' goodput, and the
// experiment as the directory keeps it: experiment.yaml naming topology.yaml beside it, its
// `wan:` override applied by the experiment's own parser.
TEST(ReportResultsDir, BandGoodputAndTheExperimentAsRun) {
  TempDir d("recorded");
  put(d.path / "summary.json", R"({"experiment": "two-dc", "schedules": [{"schedule": "1f1b",
    "ok": true, "iterations": 3, "iteration_s_mean": 1.42, "simulated_iteration_s": 1.41,
    "simulated_band_s": [1.38, 1.45], "within_band": true,
    "transfers": {"connections": 1, "goodput_mbit_p50": 17.4},
    "simulated_transfers": {"connections": 1, "goodput_mbit_p50": 17.2},
    "tcp": {"timeouts": 3, "sent_segments": 1000, "retransmitted_segments": 25},
    "tp_stalls": {"records": 2112, "stalled": 16, "excess_ms": 3532}}]})");
  put(d.path / "environment.json", R"({"non_default_settings": ["mpi.tcp_links=2"]})");
  put(d.path / "topology.yaml", R"(name: two-dc
dcs: [{name: east, hosts: 2}, {name: west, hosts: [w1, w2]}]
wan: [{between: [east, west], delay: 20ms, loss: 0.1%, rate: 1gbit}]
)");
  put(d.path / "experiment.yaml", R"(name: two-dc
topology: topology.yaml
wan: {loss: 0%, delay: 40ms}
compute: {modeled: {f: 1ms, b: 1ms}}
pipeline: {stages: 4, placement: [east-h1, east-h2, w1, w2]}
microbatches: 4
schedules: [1f1b]
)");
  RunData run = read_results_dir(d.path.string());
  ASSERT_EQ(run.schedules.size(), 1u);
  const ScheduleData& s = run.schedules[0];
  ASSERT_TRUE(s.simulated_band_s);
  EXPECT_DOUBLE_EQ(s.simulated_band_s->second, 1.45);
  EXPECT_EQ(s.within_band, true);
  EXPECT_EQ(s.agreement(), ScheduleData::Agreement::kInBand);
  EXPECT_DOUBLE_EQ(s.wan_goodput_mbit_p50.value(), 17.4);
  EXPECT_DOUBLE_EQ(s.simulated_wan_goodput_mbit_p50.value(), 17.2);
  EXPECT_EQ(s.wan_connections, 1);
  EXPECT_EQ(s.tcp_timeouts, 3);
  EXPECT_DOUBLE_EQ(s.tcp_retransmitted_share.value(), 0.025);
  EXPECT_EQ(s.tp_stalled, 16);
  EXPECT_EQ(s.tp_records, 2112);
  EXPECT_DOUBLE_EQ(s.tp_stall_excess_s.value(), 3.532);
  ASSERT_TRUE(run.recorded);
  ASSERT_EQ(run.recorded->topology.wan.size(), 1u);
  EXPECT_EQ(run.recorded->topology.wan[0].a_to_b.delay_us, 40'000u);
  EXPECT_EQ(run.recorded->topology.wan[0].b_to_a.loss.kind, netem::LossModel::Kind::kNone);
  // What the run recorded wins over what the experiment says now.
  EXPECT_EQ(run.non_default_settings, (std::vector<std::string>{"mpi.tcp_links=2"}));
  EXPECT_TRUE(run.notes.empty());
  // Without environment.json (a simulation), the experiment's own.
  fs::remove(d.path / "environment.json");
  EXPECT_EQ(read_results_dir(d.path.string()).non_default_settings, std::vector<std::string>{});
  // read_summary (sweeps' tables) leaves the experiment alone.
  EXPECT_FALSE(read_summary(d.path.string()).recorded);
  // An experiment.yaml that no longer loads is a note; the report is still written.
  put(d.path / "experiment.yaml", "name: two-dc\ntopology: gone.yaml\n");
  run = read_results_dir(d.path.string());
  EXPECT_FALSE(run.recorded);
  ASSERT_EQ(run.notes.size(), 1u);
  EXPECT_EQ(run.notes[0].rfind("experiment.yaml: does not load", 0), 0u) << run.notes[0];
  EXPECT_NO_THROW(write_report(d.path.string()));
}

TEST(ReportResultsDir, SplitByOptWithoutBounds) {
  const auto its = split_iterations(three_iterations(), {}, {});
  ASSERT_EQ(its.size(), 3u);
  for (auto& t : its) EXPECT_EQ(t.events.size(), 6u);
  trace::Trace no_opt = three_iterations();
  std::erase_if(no_opt.events, [](auto& e) { return e.kind == Kind::OPT; });
  EXPECT_EQ(split_iterations(no_opt, {}, {}).size(), 1u);
}

TEST(ReportResultsDir, SimulateLayout) {
  TempDir d("sim");
  put(d.path / "summary.json", R"({"simulated": true, "schedules": [{"schedule": "1f1b",
    "ok": true, "simulated_iteration_s": 0.04, "simulated_bubble_ratio": {"megatron": 0.2,
    "zerobubble": 0.1, "crosspipe": 0.1}}]})");
  put(d.path / "1f1b" / "simulated.trace.csv", trace::to_csv(three_iterations()));
  const RunData run = read_results_dir(d.path.string());
  EXPECT_TRUE(run.simulated_only);
  EXPECT_EQ(run.experiment, d.path.filename().string());
  EXPECT_EQ(run.backend, "none (simulated)");
  ASSERT_EQ(run.schedules.size(), 1u);
  EXPECT_FALSE(run.schedules[0].iteration_s_mean.has_value());
  EXPECT_DOUBLE_EQ(run.schedules[0].simulated_iteration_s.value(), 0.04);
  ASSERT_TRUE(run.schedules[0].simulated.has_value());
  EXPECT_FALSE(run.schedules[0].measured.has_value());
}

TEST(ReportResultsDir, ANewerSchemaIsBadInput) {
  TempDir d("newer");
  put(d.path / "summary.json", R"({"schema_version": 99, "schedules": []})");
  EXPECT_THROW(read_results_dir(d.path.string()), InputError);
  put(d.path / "summary.json", R"({"schema_version": 1, "schedules": []})");
  EXPECT_NO_THROW(read_results_dir(d.path.string()));
}

TEST(ReportResultsDir, BrokenFilesBecomeNotesAndNoSummaryIsBadInput) {
  TempDir d("broken");
  EXPECT_THROW(read_results_dir(d.path.string()), InputError);
  put(d.path / "summary.json", R"({"schedules": [{"schedule": "gpipe", "ok": false,
    "error": "rank 1 died", "iterations": 0, "iteration_s_mean": 0}]})");
  put(d.path / "link_check.json", "{not json");
  put(d.path / "gpipe" / "trace.csv", "rank,kind\n0,NOPE\n");
  const RunData run = read_results_dir(d.path.string());
  ASSERT_EQ(run.schedules.size(), 1u);
  EXPECT_FALSE(run.schedules[0].ok);
  EXPECT_FALSE(run.schedules[0].iteration_s_mean.has_value());
  EXPECT_EQ(run.notes.size(), 2u);
  EXPECT_FALSE(run.link_check.has_value());
  EXPECT_NO_THROW(write_report(d.path.string()));
}

TEST(ReportResultsDir, SweepDirectoryGetsAReportPerPoint) {
  TempDir d("sweep");
  const std::string point = R"({"simulated": true, "schedules": []})";
  put(d.path / "sweep.csv", "point\n");
  put(d.path / "lat-20ms" / "summary.json", point);
  put(d.path / "lat-0ms" / "summary.json", point);
  fs::create_directories(d.path / "not-a-point");
  const auto written = write_reports(d.path.string());
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[0], (d.path / "lat-0ms" / "report.html").string());
  EXPECT_EQ(written[1], (d.path / "lat-20ms" / "report.html").string());
  EXPECT_FALSE(fs::exists(d.path / "report.html"));
  EXPECT_THROW(write_reports((d.path / "not-a-point").string()), InputError);
  EXPECT_THROW(write_reports((d.path / "missing").string()), InputError);
}

}  // namespace
}  // namespace xdc::report
