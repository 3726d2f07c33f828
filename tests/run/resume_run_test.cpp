// `xdc run` killed and resumed, end to end (integration: real namespaces, real OpenMPI,
// the real xdc-worker, modeled compute): two schedules x 2 repeats; kill -9 of xdc while
// its second job runs leaves a summary.json naming the finished run's figures and the
// missing runs; `xdc down` removes what the kill left; `xdc run --resume DIR` runs only the
// missing runs and writes the summary a run without a break writes (its keys, pooled
// repeats, seeds); a directory of another experiment, or of a simulation, is refused.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/text_file.h"
#include "harness/process/process.h"
#include "tests/network/leftovers.h"

namespace {
namespace fs = std::filesystem;
using xdc::testing::leftovers;
using xdc::testing::run_xdc;

const char* const kExperiment = "tests/run/repeat-pair.yaml";  // 1f1b, gpipe; seed 5

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("xdc-resume-run-test-" + name);
  fs::remove_all(d);
  return d;
}

nlohmann::json summary_of(const fs::path& dir) {
  return nlohmann::json::parse(xdc::read_text_file_or_empty(dir / "summary.json"));
}

// Every key path of `j` ("schedules[].series.waits_s"), through every element of arrays.
void key_paths(const nlohmann::json& j, const std::string& at, std::set<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      out.insert(at + "." + k);
      key_paths(v, at + "." + k, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) key_paths(v, at + "[]", out);
  }
}
std::set<std::string> key_paths(const nlohmann::json& j) {
  std::set<std::string> out;
  key_paths(j, "", out);
  return out;
}

// "[1f1b] run 2 of 2 (seed 6)": how `xdc run` names run k (0-based) of a schedule.
std::string run_name(const std::string& schedule, int k) {
  return "[" + schedule + "] run " + std::to_string(k + 1) + " of 2 (seed " +
         std::to_string(5 + k) + ")";
}

TEST(ResumeRun, KilledRunLeavesItsSummaryAndResumesOnlyTheMissingRuns) {
  const std::string net = "trres";
  const fs::path dir = fresh_dir("killed");
  const fs::path log = fs::temp_directory_path() / "xdc-resume-run-test.log";
  {
    xdc::proc::Background run(
        {XDC_EXE_PATH, "run", kExperiment, "-o", dir.string(), "--name", net, "--repeat", "2"},
        log.string());
    // The second job is running once the log says "launching" a second time.
    bool second = false;
    for (int i = 0; i < 1200 && !second && run.running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const std::string text = xdc::read_text_file_or_empty(log);
      const size_t first = text.find("launching");
      second = first != std::string::npos && text.find("launching", first + 1) != std::string::npos;
    }
    ASSERT_TRUE(second) << xdc::read_text_file_or_empty(log);
    ::kill(run.pid(), SIGKILL);
    run.wait_for(std::chrono::seconds(10));
  }
  // What the killed run left: its summary so far.
  const auto killed = summary_of(dir);
  SCOPED_TRACE(killed.dump(1).substr(0, 4000));
  EXPECT_EQ(killed["complete"], false);
  EXPECT_EQ(killed["interrupted"], false);
  ASSERT_EQ(killed["schedules"].size(), 2u);
  const auto& first = killed["schedules"][0];  // 1f1b's first run finished before the kill
  EXPECT_EQ(first["schedule"], "1f1b");
  EXPECT_EQ(first["ok"], true);
  EXPECT_GE(first["repeats"].get<int>(), 1);
  EXPECT_EQ(first["run_seeds"][0], 5);
  EXPECT_GT(first["iteration_s_mean"].get<double>(), 0);
  EXPECT_GT(first["simulated_iteration_s"].get<double>(), 0);
  // Every run is either pooled in its schedule's entry or named missing, with its seed.
  std::set<std::string> finished, missing;
  for (const auto& e : killed["schedules"]) {
    const std::string name = e["schedule"];
    const auto none = nlohmann::json::array();
    const auto& m = e.contains("missing_runs") ? e["missing_runs"] : none;
    EXPECT_EQ(e["repeats"].get<size_t>() + m.size(), 2u) << name;
    for (const auto& r : m) {
      EXPECT_EQ(r["seed"].get<int>(), 5 + r["repeat"].get<int>());
      EXPECT_TRUE(r["state"] == "running" || r["state"] == "not run") << r;
      missing.insert(run_name(name, r["repeat"]));
    }
    for (int k = 0; k < 2; ++k)
      if (!missing.count(run_name(name, k))) finished.insert(run_name(name, k));
  }
  EXPECT_FALSE(missing.empty());
  EXPECT_TRUE(fs::exists(dir / "iterations.csv"));
  auto report = run_xdc({"report", dir.string()}, 60);  // the directory stays readable
  EXPECT_EQ(report.rc, 0) << report.out;

  // The network the kill left behind goes with `xdc down` (`xdc clean` would take every
  // network of the machine with it, other runs' too).
  auto down = run_xdc({"down", net}, 60);
  EXPECT_EQ(down.rc, 0) << down.out;
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});

  const auto kept_mtime = fs::last_write_time(dir / "1f1b" / "repeat-0" / "summary.json");
  // No --repeat: the run's own count (2, where the experiment says 3) is taken from DIR.
  auto r = run_xdc({"run", kExperiment, "--resume", dir.string(), "--name", net}, 240);
  ASSERT_EQ(r.rc, 0) << r.out;
  std::printf("%s\n", r.out.c_str());
  EXPECT_NE(r.out.find("resuming " + dir.string() + ": " + std::to_string(finished.size()) +
                       " of 4 run(s) finished ok there"),
            std::string::npos)
      << r.out;
  for (const auto& f : finished) {
    EXPECT_NE(r.out.find(f + " reused: "), std::string::npos) << f << "\n" << r.out;
    EXPECT_EQ(r.out.find(f + ": launching"), std::string::npos) << f << "\n" << r.out;
  }
  for (const auto& m : missing) EXPECT_NE(r.out.find(m + ": launching"), std::string::npos) << m;
  size_t launches = 0;
  for (size_t at = r.out.find("launching"); at != std::string::npos;
       at = r.out.find("launching", at + 1))
    ++launches;
  EXPECT_EQ(launches, missing.size()) << r.out;
  EXPECT_EQ(fs::last_write_time(dir / "1f1b" / "repeat-0" / "summary.json"), kept_mtime);
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});

  // The resumed summary is the one a run without a break writes.
  const auto resumed = summary_of(dir);
  EXPECT_EQ(resumed["complete"], true);
  for (const auto& e : resumed["schedules"]) {
    SCOPED_TRACE(e["schedule"].get<std::string>());
    EXPECT_EQ(e["ok"], true);
    EXPECT_EQ(e["repeats"], 2);
    EXPECT_EQ(e["run_seeds"], nlohmann::json::array({5, 6}));
    EXPECT_EQ(e["iteration_s"].size(), 6u);  // 3 measured iterations x 2 repeats, pooled
    EXPECT_TRUE(e["iteration_s_ci95"].is_array());
    EXPECT_FALSE(e.contains("missing_runs"));
  }
  const fs::path clean_dir = fresh_dir("clean");
  auto c =
      run_xdc({"run", kExperiment, "-o", clean_dir.string(), "--name", net, "--repeat", "2"}, 240);
  ASSERT_EQ(c.rc, 0) << c.out;
  const auto clean = summary_of(clean_dir);
  EXPECT_EQ(key_paths(resumed), key_paths(clean));
  for (size_t i = 0; i < clean["schedules"].size(); ++i)
    EXPECT_EQ(resumed["schedules"][i]["run_seeds"], clean["schedules"][i]["run_seeds"]);
  const std::string csv = xdc::read_text_file_or_empty(dir / "iterations.csv");
  const std::string clean_csv = xdc::read_text_file_or_empty(clean_dir / "iterations.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'),
            std::count(clean_csv.begin(), clean_csv.end(), '\n'));

  // Resuming it as another experiment, or with another repeat count, is bad input.
  auto other = run_xdc({"run", "tests/run/bubble-0ms.yaml", "--resume", dir.string()}, 60);
  EXPECT_EQ(other.rc, 2) << other.out;
  EXPECT_NE(other.out.find("another experiment"), std::string::npos) << other.out;
  auto three = run_xdc({"run", kExperiment, "--resume", dir.string(), "--repeat", "3"}, 60);
  EXPECT_EQ(three.rc, 2) << three.out;
  EXPECT_NE(three.out.find("--repeat 2 resumes it"), std::string::npos) << three.out;
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
}

TEST(ResumeRun, ResumeRefusesAnotherExperimentOrASimulation) {
  const fs::path dir = fresh_dir("simulated");
  auto sim = run_xdc({"simulate", kExperiment, "-o", dir.string()}, 60);
  ASSERT_EQ(sim.rc, 0) << sim.out;
  auto other = run_xdc({"run", "tests/run/bubble-0ms.yaml", "--resume", dir.string()}, 60);
  EXPECT_EQ(other.rc, 2) << other.out;
  EXPECT_NE(other.out.find("experiment.yaml:1: --resume: the run here is of another experiment"),
            std::string::npos)
      << other.out;
  auto same = run_xdc({"run", kExperiment, "--resume", dir.string()}, 60);
  EXPECT_EQ(same.rc, 2) << same.out;
  EXPECT_NE(same.out.find("a simulation"), std::string::npos) << same.out;
}

}  // namespace
