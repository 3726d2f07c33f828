// `xdc run` when something goes wrong, end to end on real namespaces, OpenMPI and the
// xdc-worker: a killed rank, Ctrl-C, a scheduled WAN flap or partition, an event that
// kills a DC's ranks; each ends or survives as stated, says why, and leaves nothing.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/text_file.h"
#include "harness/network/names.h"
#include "harness/network/namespace.h"
#include "harness/process/process.h"
#include "tests/network/leftovers.h"
#include "tests/run/run_fixture.h"
#include "workloads/trace/trace.h"

namespace fs = std::filesystem;
using xdc::testing::leftovers;
using xdc::testing::run_xdc;

namespace {

using xdc::test::fresh_dir;
using xdc::test::job_processes;
using xdc::test::summary_of;
using xdc::test::xdc_run;

// `xdc run FILE` (one 1F1B schedule, rank 2 on host w1) in the background; once rank 2
// has finished two iterations, `sig` goes to its worker. Returns xdc's exit status (-1:
// not ended within `wait_s`); the output is in `log`.
int run_and_signal_rank2(const std::string& file, const std::string& net, const fs::path& dir,
                         const fs::path& log, int sig, int wait_s) {
  xdc::proc::Background run({XDC_EXE_PATH, "run", file, "-o", dir.string(), "--name", net},
                            log.string());
  bool sent = false;
  for (int i = 0; i < 600 && !sent; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    try {
      auto rep = nlohmann::json::parse(xdc::read_text_file_or_empty(dir / "1f1b" / "rank2.json"));
      if (rep.value("iterations_done", 0) < 2) continue;
    } catch (const std::exception&) {
      continue;
    }
    for (pid_t pid : xdc::net::netns_pids(xdc::net::host_ns(net, "w1")))
      if (xdc::read_text_file_or_empty("/proc/" + std::to_string(pid) + "/comm") == "xdc-worker\n")
        sent = ::kill(pid, sig) == 0;
  }
  EXPECT_TRUE(sent) << xdc::read_text_file_or_empty(log);
  return sent ? run.wait_for(std::chrono::seconds(wait_s)) : -1;
}

// The run's summary keeps its one failed schedule, whose error names rank 2 on w1, and
// nothing of the network or the job is left.
void expect_failed_naming_rank2(const std::string& net, const fs::path& dir) {
  const auto s = summary_of(dir);
  ASSERT_EQ(s["schedules"].size(), 1u);
  EXPECT_FALSE(s["schedules"][0]["ok"].get<bool>());
  EXPECT_NE(s["schedules"][0]["error"].get<std::string>().find("rank 2 (host w1)"),
            std::string::npos);
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
  EXPECT_EQ(job_processes(net, dir), std::vector<std::string>{});
}

TEST(Run, AKilledRankEndsTheRunWithExit1NamingRankAndHost) {
  const std::string net = "trkill";
  const fs::path dir = fresh_dir("kill");
  const fs::path log = fs::temp_directory_path() / "xdc-run-test-kill.log";
  const int rc = run_and_signal_rank2("tests/run/kill.yaml", net, dir, log, SIGKILL, 120);
  const std::string out = xdc::read_text_file_or_empty(log);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("rank 2 (host w1)"), std::string::npos) << out;
  for (int rank : {0, 1, 3}) {
    const auto t = xdc::trace::from_csv(xdc::read_text_file_or_empty(
        dir / "1f1b" / ("rank" + std::to_string(rank) + ".trace.csv")));
    EXPECT_FALSE(t.events.empty()) << "rank " << rank << "'s trace was not kept";
  }
  expect_failed_naming_rank2(net, dir);
}

// A rank that stops (SIGSTOP: alive, silent) is not waited on forever: its peers give up
// after mpi.timeout_s (tests/run/stall.yaml: 5 s), and the job ends with exit 1, the stopped
// worker included. Whichever rank gives up first (one waiting on a peer that waits on the
// stopped rank, or at the iteration barrier, which names no peer) names the stopped one as
// silent (workloads/worker/liveness.h), in the output and in the summary.
TEST(Run, AStalledRankEndsTheJobAfterTimeoutNamingIt) {
  const std::string net = "trstall";
  const fs::path dir = fresh_dir("stall");
  const fs::path log = fs::temp_directory_path() / "xdc-run-test-stall.log";
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = run_and_signal_rank2("tests/run/stall.yaml", net, dir, log, SIGSTOP, 120);
  const std::string out = xdc::read_text_file_or_empty(log);
  std::printf("stalled rank: xdc run ended with %d after %.1f s\n", rc,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("waited 5 s (timeout_s)"), std::string::npos) << out;
  EXPECT_NE(out.find("rank 2 (host w1): no sign of life for"), std::string::npos) << out;
  expect_failed_naming_rank2(net, dir);
  EXPECT_NE(summary_of(dir)["schedules"][0]["error"].get<std::string>().find(
                "rank 2 (host w1): no sign of life for"),
            std::string::npos);
  // No other rank is named silent: the others were waiting, which is a sign of life.
  for (const char* other :
       {"rank 0 (host east-h1): no", "rank 1 (host east-h2): no", "rank 3 (host w2): no"})
    EXPECT_EQ(out.find(other), std::string::npos) << out;
}

TEST(Run, CtrlCStopsTheRunAndLeavesNothingBehind) {
  const std::string net = "trint";
  const fs::path dir = fresh_dir("interrupt");
  const fs::path log = fs::temp_directory_path() / "xdc-run-test-interrupt.log";
  int rc = -1;
  double stop_s = 0;
  {
    xdc::proc::Background run(
        {XDC_EXE_PATH, "run", "tests/run/kill.yaml", "-o", dir.string(), "--name", net},
        log.string());
    bool running = false;
    for (int i = 0; i < 600 && !running; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      running = fs::exists(dir / "1f1b" / "rank0.json");
    }
    ASSERT_TRUE(running) << xdc::read_text_file_or_empty(log);
    // Only xdc gets the signal (a terminal would signal mpirun too): the harder case.
    const auto t0 = std::chrono::steady_clock::now();
    ::kill(run.pid(), SIGINT);
    rc = run.wait_for(std::chrono::seconds(60));
    stop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::printf("stopped %.1f s after SIGINT\n", stop_s);
  EXPECT_EQ(rc, 1) << xdc::read_text_file_or_empty(log);  // -1: still running after 60 s
  EXPECT_NE(xdc::read_text_file_or_empty(log).find("interrupted"), std::string::npos)
      << xdc::read_text_file_or_empty(log);
  EXPECT_TRUE(summary_of(dir)["interrupted"].get<bool>());
  EXPECT_FALSE(xdc::trace::from_csv(xdc::read_text_file_or_empty(dir / "1f1b" / "rank0.trace.csv"))
                   .events.empty());
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
  EXPECT_EQ(job_processes(net, dir), std::vector<std::string>{});
}

TEST(Run, ScheduledWanFlapIsSurvivedShownAndLogged) {
  // tests/run/flap-pair.yaml: down 1 s at 5 s into the run, 10 -> 30 ms at 8 s.
  const std::string net = "trflap";
  const fs::path dir = fresh_dir("flap");
  auto r = xdc_run("tests/run/flap.yaml", dir, net, 180);
  ASSERT_EQ(r.rc, 0) << r.out;
  // Every measured iteration completed; the one the flap hit carries the stall.
  std::vector<double> iters;
  std::istringstream csv(xdc::read_text_file_or_empty(dir / "iterations.csv"));
  std::string line;
  std::getline(csv, line);
  while (std::getline(csv, line)) {
    auto a = line.find(','), b = line.find(',', a + 1), c = line.find(',', b + 1);
    iters.push_back(std::stod(line.substr(b + 1, c - b - 1)));
  }
  ASSERT_EQ(iters.size(), 8u) << "every iteration";
  std::vector<double> sorted = iters;
  std::sort(sorted.begin(), sorted.end());
  std::printf("flap: iterations (s):");
  for (double x : iters) std::printf(" %.3f", x);
  std::printf("\n");
  EXPECT_GT(sorted.back(), sorted[sorted.size() / 2] + 0.7) << "no iteration shows the 1 s stall";
  // The cut meets messages in flight: their connections wait for retransmission timeouts,
  // which the hosts' kernel counters show (summary_schema.h `tcp`), on both sides' hosts.
  const auto tcp = summary_of(dir)["schedules"][0]["tcp"];
  ASSERT_TRUE(tcp.is_object()) << summary_of(dir).dump(1);
  std::printf("flap: %lld retransmission timeouts, %lld fast recoveries\n",
              static_cast<long long>(tcp["timeouts"].get<int64_t>()),
              static_cast<long long>(tcp["fast_recoveries"].get<int64_t>()));
  EXPECT_GE(tcp["timeouts"].get<int64_t>(), 1);
  EXPECT_GT(tcp["hosts"]["e1"]["sent_segments"].get<int64_t>(), 0);
  EXPECT_GT(tcp["hosts"]["w1"]["sent_segments"].get<int64_t>(), 0);
  EXPECT_GE(tcp["retransmitted_segments"].get<int64_t>(), tcp["timeouts"].get<int64_t>());
  // What was applied, when: cut, restore 1 s later, delay, then the topology's again.
  auto events = nlohmann::json::parse(xdc::read_text_file_or_empty(dir / "1f1b" / "events.json"));
  std::vector<std::string> kinds;
  int64_t down_ns = 0, up_ns = 0;
  for (const auto& e : events) {
    if (e["link"] != "east->west") continue;
    kinds.push_back(e["kind"]);
    if (e["kind"] == "link_down") down_ns = e["t_ns"];
    if (e["kind"] == "link_up") up_ns = e["t_ns"];
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"link_down", "link_up", "link_set", "link_restore"}));
  // Restored after the cut (how punctually is scripts/bench_dynamic.sh's figure).
  std::printf("flap: restored %.3f s after the cut (scheduled 1 s)\n", (up_ns - down_ns) / 1e9);
  EXPECT_GT((up_ns - down_ns) / 1e9, 0.5);
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
  EXPECT_EQ(job_processes(net, dir), std::vector<std::string>{});
}

TEST(Run, PartitionLongerThanTheTimeoutEndsTheRunNamingTheLinkAndTheChange) {
  // tests/run/partition-pair.yaml cuts the WAN at 4 s for 20 s; mpi.timeout_s is 8.
  const std::string net = "trpart";
  const fs::path dir = fresh_dir("part");
  auto r = xdc_run("tests/run/partition.yaml", dir, net, 120);
  EXPECT_EQ(r.rc, 1) << r.out;
  const std::string says = "WAN link east->west was down from 4.0 s into the run until it failed ";
  auto at = r.out.find(says);
  ASSERT_NE(at, std::string::npos) << r.out;
  const double after_s = std::stod(r.out.substr(at + says.size()));
  std::printf("partition: the run failed %.1f s after the cut\n", after_s);
  EXPECT_NE(r.out.find("cut by tests/run/partition-pair.yaml:12 (at 4s)"), std::string::npos)
      << r.out;
  for (const char* f : {"rank0.trace.csv", "rank1.trace.csv", "events.json"})
    EXPECT_GT(fs::file_size(dir / "1f1b" / f), 0u) << f << " not kept";
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
  EXPECT_EQ(job_processes(net, dir), std::vector<std::string>{});
}

// experiments/flap.yaml cuts the WAN for 2 s when measured
// iteration 5 starts (an event anchored to training progress).
TEST(Run, FlapAtAnIterationIsSurvivedShownAndPredicted) {
  const std::string net = "trevflap";
  const fs::path dir = fresh_dir("evflap");
  auto r = xdc_run("experiments/flap.yaml", dir, net, 180);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto sc = summary_of(dir)["schedules"][0];
  const std::vector<double> measured = sc["iteration_s"];
  ASSERT_EQ(measured.size(), 10u) << "every iteration";
  const std::vector<double> simulated = sc["simulated_series"]["iteration_s"];
  ASSERT_EQ(simulated.size(), 10u);
  std::vector<double> sorted = measured;
  std::sort(sorted.begin(), sorted.end());
  std::printf("flap event: iteration 5 measured %.3f s, simulated %.3f s (median %.3f s)\n",
              measured[5], simulated[5], sorted[5]);
  EXPECT_GT(measured[5], sorted[4] + 1.5) << "iteration 5 does not carry the 2 s stall";
  EXPECT_EQ(std::max_element(measured.begin(), measured.end()) - measured.begin(), 5);
  // The prediction carries the stall too (how closely is scripts/bench_prediction.sh's).
  EXPECT_GT(simulated[5], simulated[4] + 1.5) << "the prediction misses the 2 s stall";
  // The series: every iteration's start, WAN bytes and waits; iteration 5 waited longest.
  const auto series = sc["series"];
  ASSERT_EQ(series["wan_bytes"].size(), 10u);
  EXPECT_GT(series["wan_bytes"][5].get<int64_t>(), 0);
  EXPECT_GT(series["waits_s"]["RECV_F"][5].get<double>(),
            series["waits_s"]["RECV_F"][4].get<double>() + 1.5);
  // events.json: both directions cut by the event, restored 2 s later.
  auto events = nlohmann::json::parse(xdc::read_text_file_or_empty(dir / "1f1b" / "events.json"));
  int64_t down_ns = 0, up_ns = 0;
  for (const auto& e : events) {
    if (e["link"] != "east->west" || e["kind"] == "link_restore") continue;
    if (e["kind"] == "link_down") down_ns = e["t_ns"];
    if (e["kind"] == "link_up") up_ns = e["t_ns"];
    EXPECT_NE(e["source"].get<std::string>().find("flap.yaml:19:5 (at_iteration 5)"),
              std::string::npos)
        << e.dump();
  }
  std::printf("flap event: restored %.3f s after the cut (scheduled 2 s)\n",
              (up_ns - down_ns) / 1e9);
  EXPECT_GT((up_ns - down_ns) / 1e9, 1.0);
  // The merged Chrome trace carries them as instant events, the cut inside iteration 5 on
  // rank 0 (on the traces' clock; 1 ms of clock offset allowed before its start).
  const auto chrome =
      nlohmann::json::parse(xdc::read_text_file_or_empty(dir / "1f1b" / "trace.json"));
  double cut_us = -1;
  for (const auto& e : chrome["traceEvents"])
    if (e["ph"] == "i" && e["name"] == "link_down east->west") cut_us = e["ts"];
  ASSERT_GT(cut_us, 0) << "no instant event for the cut";
  const auto rank0 =
      nlohmann::json::parse(xdc::read_text_file_or_empty(dir / "1f1b" / "rank0.json"));
  const double start_us = rank0["iteration_start_ns"][5].get<double>() / 1000;
  std::printf("flap event: cut %.1f ms after iteration 5 started on rank 0\n",
              (cut_us - start_us) / 1000);
  EXPECT_GE(cut_us - start_us, -1000);
  EXPECT_LT(cut_us, rank0["iteration_end_ns"][5].get<double>() / 1000);
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
  EXPECT_EQ(job_processes(net, dir), std::vector<std::string>{});
}

TEST(Run, KillRanksEventEndsTheRunNamingTheDcAndTheEvent) {
  // tests/run/kill-dc.yaml kills DC west's ranks when iteration 3 starts.
  const std::string net = "trkilldc";
  const fs::path dir = fresh_dir("killdc");
  auto r = xdc_run("tests/run/kill-dc.yaml", dir, net, 120);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("DC west failed: its rank(s) 1 were killed by the event at "
                       "tests/run/kill-dc.yaml:15:5 (at_iteration 3)"),
            std::string::npos)
      << r.out;
  const auto sc = summary_of(dir)["schedules"][0];
  EXPECT_EQ(sc["iterations"], 3u) << "iterations 0-2 measured";
  for (const char* f : {"rank0.trace.csv", "rank1.trace.csv", "trace.json", "events.json"})
    EXPECT_GT(fs::file_size(dir / "1f1b" / f), 0u) << f << " not kept";
  auto events = nlohmann::json::parse(xdc::read_text_file_or_empty(dir / "1f1b" / "events.json"));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0]["kind"], "dc_kill_ranks");
  EXPECT_EQ(events[0]["dc"], "west");
  EXPECT_EQ(sc["simulated_series"]["iteration_s"].size(), 3u);
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
  EXPECT_EQ(job_processes(net, dir), std::vector<std::string>{});
}

}  // namespace
