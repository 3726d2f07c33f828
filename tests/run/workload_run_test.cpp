// `xdc run` of the user's own program (experiment/workload.h) on real namespaces: the
// shipped DDP example trains across two DCs (loss falls, exit 0), with its steps and the
// WAN's bytes per sample in one trace and its step predicted; a rank that crashes ends
// the run with exit 1 naming host, rank and exit code, every output kept, no process and
// no network left; the MPI ping-pong's round trip is never below the configured two
// one-way delays. Needs Debian's python3-torch and python3-mpi4py (skipped without).
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/text_file.h"
#include "harness/process/process.h"
#include "tests/network/leftovers.h"

namespace fs = std::filesystem;
using xdc::testing::leftovers;
using xdc::testing::run_xdc;

namespace {

bool python_has(const std::string& module) {
  return xdc::proc::run({"/usr/bin/python3", "-c", "import " + module}).exit_code == 0;
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("xdc-workload-test-" + name);
  fs::remove_all(d);
  return d;
}

nlohmann::json json_of(const fs::path& f) {
  return nlohmann::json::parse(xdc::read_text_file_or_empty(f.string()));
}

// Processes whose environment names this results directory's events file.
int processes_of(const fs::path& dir) {
  const std::string mark = "XDC_EVENTS=" + (dir / "events.jsonl").string();
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string env = xdc::read_text_file_or_empty((e.path() / "environ").string());
    if (env.find(mark) != std::string::npos) ++n;
  }
  return n;
}

TEST(WorkloadRun, DdpTrainsAcrossTwoDcsWithItsStepsAndTheWanInOneTrace) {
  if (!python_has("torch")) GTEST_SKIP() << "no python3-torch (apt-get install python3-torch)";
  const fs::path dir = fresh_dir("ddp");
  const auto r = run_xdc(
      {"run", "experiments/byo/ddp-two-dc.yaml", "-o", dir.string(), "--name", "byotddp"}, 400);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto s = json_of(dir / "summary.json");
  EXPECT_EQ(s["kind"], "workload");
  const auto& entry = s["schedules"][0];
  EXPECT_TRUE(entry["ok"].get<bool>());
  const auto loss = entry["loss"];
  ASSERT_GE(loss.size(), 10u);
  EXPECT_LT(loss.back().get<double>(), loss.front().get<double>()) << loss.dump();
  EXPECT_EQ(entry["iterations"], 18);  // 20 steps, 2 of warm-up
  EXPECT_GT(entry["simulated_iteration_s"].get<double>(), 0);
  EXPECT_EQ(entry["steps"]["allreduce_bytes"].get<int64_t>() % 4, 0);  // fp32 gradients
  for (int rank : {0, 1}) {
    EXPECT_TRUE(fs::exists(dir / ("rank" + std::to_string(rank) + ".stdout")));
    EXPECT_TRUE(fs::exists(dir / ("rank" + std::to_string(rank) + ".stderr")));
    EXPECT_EQ(s["processes"][rank]["exit_code"], 0);
  }
  // One trace: every rank's steps, and the WAN's bytes per sample in both directions.
  const auto t = json_of(dir / "trace.json");
  std::map<int, int> steps;
  std::map<std::string, uint64_t> wan_bytes;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "step") ++steps[e["pid"].get<int>()];
    if (e["ph"] == "C" && e["name"].get<std::string>().ends_with(" bytes"))
      wan_bytes[e["name"]] += e["args"]["bytes"].get<uint64_t>();
  }
  EXPECT_EQ(steps[0], 20);
  EXPECT_EQ(steps[1], 20);
  // Each direction carried at least every step's gradients (20 all-reduces).
  const uint64_t grads = 20 * entry["steps"]["allreduce_bytes"].get<uint64_t>();
  EXPECT_GE(wan_bytes["east->west bytes"], grads / 2) << t.dump().substr(0, 300);
  EXPECT_GE(wan_bytes["west->east bytes"], grads / 2);
  EXPECT_TRUE(fs::exists(dir / "predicted.yaml"));
  EXPECT_EQ(processes_of(dir), 0);
  EXPECT_EQ(leftovers("byotddp"), std::vector<std::string>{});
}

TEST(WorkloadRun, CrashOnOneHostEndsTheRunNamingHostRankAndCode) {
  if (!python_has("torch")) GTEST_SKIP() << "no python3-torch (apt-get install python3-torch)";
  const fs::path dir = fresh_dir("crash");
  const auto r =
      run_xdc({"run", "tests/run/byo-crash.yaml", "-o", dir.string(), "--name", "byotcrash"}, 300);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("rank 1 on host w1 exited with code 3"), std::string::npos) << r.out;
  const auto s = json_of(dir / "summary.json");
  EXPECT_FALSE(s["schedules"][0]["ok"].get<bool>());
  EXPECT_EQ(s["processes"][1]["exit_code"], 3);
  EXPECT_TRUE(s["processes"][0]["stopped_by_xdc"].get<bool>());
  // Every output kept: the failing rank's own words, and rank 0's steps before it.
  EXPECT_NE(xdc::read_text_file_or_empty((dir / "rank1.stderr").string()).find("on purpose"),
            std::string::npos);
  EXPECT_NE(xdc::read_text_file_or_empty((dir / "rank0.stdout").string()).find("step 0 loss"),
            std::string::npos);
  EXPECT_EQ(processes_of(dir), 0);
  EXPECT_EQ(leftovers("byotcrash"), std::vector<std::string>{});
}

TEST(WorkloadRun, MpiPingPongRoundTripIsTwiceTheOneWayDelayAtLeast) {
  if (!python_has("mpi4py")) GTEST_SKIP() << "no python3-mpi4py (apt-get install python3-mpi4py)";
  const fs::path dir = fresh_dir("pingpong");
  const auto r = run_xdc(
      {"run", "experiments/byo/mpi-pingpong.yaml", "-o", dir.string(), "--name", "byotpp"}, 300);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto s = json_of(dir / "summary.json");
  EXPECT_EQ(s["launcher"], "mpi");
  EXPECT_EQ(s["schedules"][0]["steps"]["per_rank"], nlohmann::json({50, 50}));
  // The log names the round trips; none can beat the two 20 ms one-way delays.
  const std::string log = xdc::read_text_file_or_empty((dir / "mpirun.log").string());
  const auto at = log.find("min ");
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_GE(std::stod(log.substr(at + 4)), 40.0) << log;
  EXPECT_EQ(leftovers("byotpp"), std::vector<std::string>{});
}

}  // namespace
