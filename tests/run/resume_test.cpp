// A run that loses nothing, without running anything (run/resume.h): a summary.json entry
// reads back, through report/results_dir.h, as the result it was written from; the
// ledger's summary states the runs that finished and those that did not, and why; a
// resume keeps only the runs that finished ok with their seed, and refuses a directory of
// another experiment.
#include "harness/run/resume.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "common/input_error.h"
#include "common/text_file.h"
#include "harness/report/results_dir.h"

namespace {
namespace fs = std::filesystem;
using xdc::run::MissingRun;
using xdc::run::RunLedger;
using xdc::run::RunSlot;
using xdc::run::ScheduleResult;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("xdc-resume-test-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A measured run with every field summary.json can state.
ScheduleResult full_run(const std::string& name, uint64_t seed) {
  ScheduleResult r;
  r.schedule = name;
  r.ok = true;
  r.iteration_s = {0.30, 0.32, 0.31};
  r.bubbles = {{1.5, 0.6, 0.61}, {1.4, 0.58, 0.59}, {1.45, 0.59, 0.6}};
  r.bubble = {1.45, 0.59, 0.6};
  r.loss = {5.1, NAN, 4.9};
  r.simulated_iteration_s = 0.305;
  r.simulated_steady_iteration_s = 0.3;
  r.simulated_band_s = {0.29, 0.32};
  r.simulated_bubble = {1.4, 0.57, 0.58};
  r.simulated_costs = "modeled (what the workers sleep)";
  r.tokens_per_s = 1234.5;
  r.mfu = 0.12;
  r.peak_flops_per_rank = 1e12;
  r.simulated_mfu = 0.11;
  r.modeled_compute = true;
  r.waits_s = {{"RECV_F", 0.06}, {"RECV_B", 0.18}};
  r.transfers = {{"wan_messages", 12}, {"connections", 1}, {"goodput_mbit_p50", 80.5}};
  r.simulated_transfers = {{"wan_messages", 12}, {"connections", 1}};
  r.series = {{0, 262144, {{"RECV_F", 0.06}, {"RECV_B", 0.18}}},
              {0.3, 262144, {{"RECV_F", 0.05}}},
              {0.62, 131072, {}}};
  r.changes = {{0.5, "link_down east->west", "flap.yaml:3"}};
  xdc::run::RunSeries ss;
  ss.iteration_s = {0.3, 0.31, 0.3};
  ss.start_s = {0, 0.3, 0.61};
  ss.changes = {{0.5, "link_down east->west", "flap.yaml:3"}};
  ss.ended = "the WAN stayed down";
  r.simulated_series = ss;
  r.utilisation = {0.4, 0.38};
  r.prefill = {{"served", 3}, {"rejected", 0}};
  r.clock_offset_max_us = 12.5;
  r.clock_residual_us = 3.25;
  r.run_means_s = {r.mean()};
  r.run_seeds = {seed};
  return r;
}

// summary_json(r), written out as text and read back as `xdc run --resume` reads it.
ScheduleResult read_back(const ScheduleResult& r) {
  const auto j = nlohmann::json::parse(xdc::run::summary_json(r).dump(2));
  return xdc::run::result_of(xdc::report::read_schedule_entry(j));
}

TEST(Resume, SummaryEntryReadsBackAsTheResultItStates) {
  const ScheduleResult one = full_run("1f1b", 5);
  EXPECT_EQ(xdc::run::summary_json(read_back(one)), xdc::run::summary_json(one));
  EXPECT_EQ(read_back(one).bubbles.size(), 3u);
  // Pooled repeats, a failed one among them, and runs still missing.
  ScheduleResult failed = full_run("1f1b", 6);
  failed.ok = false;
  failed.error = "rank 1 exited";
  ScheduleResult pooled = xdc::run::pool_repeats({one, failed});
  pooled.missing_runs = {{2, 7, "running"}, {3, 8, "not run"}};
  EXPECT_EQ(xdc::run::summary_json(read_back(pooled)), xdc::run::summary_json(pooled));
  EXPECT_EQ(read_back(pooled).missing_runs, pooled.missing_runs);
  // A bare run: no prediction, no transfers, no series (its waits an object, as ever).
  ScheduleResult bare;
  bare.schedule = "gpipe";
  bare.ok = true;
  bare.waits_s = nlohmann::json::object();
  bare.iteration_s = {1.0};
  bare.run_means_s = {1.0};
  bare.run_seeds = {5};
  EXPECT_EQ(xdc::run::summary_json(read_back(bare)), xdc::run::summary_json(bare));
}

xdc::run::Plan repeat_pair_plan(int repeat) {
  xdc::run::Experiment e = xdc::run::load_experiment("tests/run/repeat-pair.yaml");
  e.repeat = repeat;
  return xdc::run::make_plan(e);
}

TEST(Resume, LedgerSummaryStatesWhatFinishedAndWhatDidNot) {
  const xdc::run::Plan plan = repeat_pair_plan(2);  // 1f1b, gpipe; seed 5
  const fs::path dir = fresh_dir("ledger");
  RunLedger ledger(plan, dir.string());
  EXPECT_EQ(ledger.slots(), 4);
  ledger.finish({0, 0}, full_run("1f1b", 5));
  ledger.start({0, 1});  // gpipe's first run: its job is running
  ledger.write(ledger.results(), "userspace", "trx", false);
  const auto s = nlohmann::json::parse(xdc::read_text_file_or_empty(dir / "summary.json"));
  EXPECT_EQ(s["complete"], false);
  ASSERT_EQ(s["schedules"].size(), 2u);
  const auto& a = s["schedules"][0];
  EXPECT_EQ(a["schedule"], "1f1b");
  EXPECT_EQ(a["ok"], true);
  EXPECT_EQ(a["repeats"], 1);
  EXPECT_EQ(a["iteration_s"].size(), 3u);
  EXPECT_EQ(a["missing_runs"],
            nlohmann::json::parse(R"([{"repeat": 1, "seed": 6, "state": "not run"}])"));
  const auto& b = s["schedules"][1];
  EXPECT_EQ(b["schedule"], "gpipe");
  EXPECT_EQ(b["ok"], false);
  EXPECT_EQ(b["error"], "no run finished");
  EXPECT_EQ(b["repeats"], 0);
  EXPECT_EQ(b["within_band"], false);
  EXPECT_EQ(b["missing_runs"], nlohmann::json::parse(R"([{"repeat": 0, "seed": 5, "state":
            "running"}, {"repeat": 1, "seed": 6, "state": "not run"}])"));
  const std::string csv = xdc::read_text_file_or_empty(dir / "iterations.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);  // header + 1f1b's 3 iterations
  // The reports and sweeps read it as a run that did not finish, gpipe as not run.
  const auto d = xdc::report::read_summary(dir.string());
  EXPECT_TRUE(d.interrupted);
  EXPECT_FALSE(d.schedules[0].not_run());
  EXPECT_TRUE(d.schedules[1].not_run());
  EXPECT_EQ(xdc::run::runs_per_schedule(dir.string()), 2);
  // Stopped: the running job and what was left are "interrupted".
  ledger.stopped({0, 1});
  ledger.cancel_rest();
  const auto rs = ledger.results();
  EXPECT_EQ(rs[1].missing_runs,
            (std::vector<MissingRun>{{0, 5, "interrupted"}, {1, 6, "interrupted"}}));
  // Every run finished: complete, no missing_runs key, repeats pooled.
  ledger.finish({0, 1}, full_run("gpipe", 5));
  ledger.finish({1, 0}, full_run("1f1b", 6));
  ledger.finish({1, 1}, full_run("gpipe", 6));
  ledger.write(ledger.results(), "userspace", "trx", false);
  const auto done = nlohmann::json::parse(xdc::read_text_file_or_empty(dir / "summary.json"));
  EXPECT_EQ(done["complete"], true);
  for (const auto& e : done["schedules"]) {
    EXPECT_FALSE(e.contains("missing_runs")) << e.dump();
    EXPECT_EQ(e["run_seeds"], nlohmann::json::array({5, 6}));
  }
}

void write_run(const fs::path& dir, const ScheduleResult& r) {
  fs::create_directories(dir);
  xdc::write_text_file((dir / "summary.json").string(), xdc::run::summary_json(r).dump(2));
}

TEST(Resume, KeepsOnlyRunsThatFinishedOkWithTheirSeed) {
  const xdc::run::Plan plan = repeat_pair_plan(2);
  const fs::path dir = fresh_dir("keep");
  write_run(dir / "1f1b" / "repeat-0", full_run("1f1b", 5));  // kept
  ScheduleResult failed = full_run("gpipe", 5);
  failed.ok = false;
  failed.error = "rank 1 exited";
  write_run(dir / "gpipe" / "repeat-0", failed);               // runs again
  write_run(dir / "1f1b" / "repeat-1", full_run("1f1b", 99));  // not this slot's seed
  fs::create_directories(dir / "gpipe" / "repeat-1");
  xdc::write_text_file((dir / "gpipe" / "repeat-1" / "summary.json").string(), "{\"sched");
  RunLedger ledger(plan, dir.string());
  EXPECT_EQ(ledger.keep_finished(), 1);
  EXPECT_TRUE(ledger.kept({0, 0}));
  for (RunSlot s : {RunSlot{0, 1}, RunSlot{1, 0}, RunSlot{1, 1}}) EXPECT_FALSE(ledger.finished(s));
  EXPECT_EQ(ledger.kept_line({0, 0}),
            "[1f1b] run 1 of 2 (seed 5) reused: " + (dir / "1f1b" / "repeat-0").string() +
                " (iteration 0.310 s)");
  // Pooled as a run without a break pools them.
  ledger.finish({0, 1}, full_run("gpipe", 5));
  ledger.finish({1, 0}, full_run("1f1b", 6));
  ledger.finish({1, 1}, full_run("gpipe", 6));
  const auto clean = xdc::run::pool_repeats({full_run("1f1b", 5), full_run("1f1b", 6)});
  EXPECT_EQ(xdc::run::summary_json(ledger.results()[0]), xdc::run::summary_json(clean));
}

TEST(Resume, RefusesADirectoryOfAnotherExperiment) {
  const xdc::run::Experiment e = xdc::run::load_experiment("tests/run/repeat-pair.yaml");
  const fs::path dir = fresh_dir("refuse");
  EXPECT_THROW(xdc::run::check_resumable(dir.string(), e), xdc::InputError);  // nothing there
  xdc::run::write_experiment(dir.string(), e);
  EXPECT_NO_THROW(xdc::run::check_resumable(dir.string(), e));  // killed before its first job
  const xdc::run::Experiment other = xdc::run::load_experiment("tests/run/bubble-0ms.yaml");
  try {
    xdc::run::check_resumable(dir.string(), other);
    ADD_FAILURE() << "another experiment was accepted";
  } catch (const xdc::InputError& x) {
    EXPECT_EQ(x.pos().line, 1);
    EXPECT_NE(x.message().find("another experiment"), std::string::npos) << x.what();
  }
  // As many runs per schedule as the run asked for (its summary: repeats + missing runs).
  const xdc::run::Plan plan = xdc::run::make_plan(e);  // repeat: 3
  RunLedger ledger(plan, dir.string());
  ledger.finish({0, 0}, full_run("1f1b", 5));
  ledger.write(ledger.results(), "userspace", "trx", false);
  EXPECT_EQ(xdc::run::runs_per_schedule(dir.string()), 3);
  EXPECT_NO_THROW(xdc::run::check_resumable(dir.string(), e));
  xdc::run::Experiment twice = e;
  twice.repeat = 2;
  EXPECT_THROW(xdc::run::check_resumable(dir.string(), twice), xdc::InputError);
}

}  // namespace
