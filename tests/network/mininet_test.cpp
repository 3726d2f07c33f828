// The Mininet backend (harness/network/mininet.h) on real namespaces: Mininet's nodes
// pinned under xdc's names, hosts reachable across DCs (routed through one), WAN and
// intra-DC round trips as configured, and nothing left -- no namespace, link, file, driver
// or Mininet node shell -- after xdc down, after a kill -9 of the driver, after a kill -9
// of xdc up half-way, and after `mn -c` followed by xdc down.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/text_file.h"
#include "harness/check/probes.h"
#include "harness/network/state.h"
#include "harness/network/teardown.h"
#include "harness/process/process.h"
#include "tests/network/leftovers.h"
#include "tests/network/round_trip_base.h"

using xdc::testing::leftovers;
using xdc::testing::run_xdc;

namespace {

const std::string kChain = "tests/network/mininet-chain.yaml";

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += x + "\n";
  return s;
}

bool alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto close = line.rfind(')');
  return close != std::string::npos && line.substr(close + 2, 1) != "Z";
}

// Processes whose command line contains `needle` (Mininet's node shells are
// "bash ... mininet:<node>", its driver "xdc-mininet ... --prefix=xdc-<net>.").
std::vector<int> pids_with(const std::string& needle) {
  std::vector<int> out;
  for (auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmd(e.path() / "cmdline");
    std::string args((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    if (args.find(needle) != std::string::npos && alive(std::stoi(pid)))
      out.push_back(std::stoi(pid));
  }
  return out;
}

// Everything of network `net`, plus the Mininet processes its state named.
std::string left_of(const std::string& net, const xdc::net::NetworkState& s) {
  std::string out = joined(leftovers(net));
  if (alive(s.mininet_pid)) out += "driver " + std::to_string(s.mininet_pid) + "\n";
  for (auto& [node, pid] : s.mininet_nodes)
    if (alive(pid)) out += "node shell " + node + " " + std::to_string(pid) + "\n";
  for (int pid : pids_with("mininet:xdc-" + net + "."))
    out += "node shell " + std::to_string(pid) + "\n";
  return out;
}

xdc::net::NetworkState up(const std::string& net) {
  auto r = run_xdc({"up", kChain, "--name", net});
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("built by mininet"), std::string::npos) << r.out;
  auto s = xdc::net::load_state(net);
  EXPECT_TRUE(s);
  return s ? *s : xdc::net::NetworkState{};
}

TEST(Mininet, BuildsTheTopologyXdcMeasuresAndDownLeavesNothing) {
  setenv("XDC_EXE", XDC_EXE_PATH, 1);
  auto s = up("tmn");
  ASSERT_EQ(s.backend, "mininet");
  // Mininet's nodes: 5 hosts, 3 gateways, 3 DC switches, the management switch, root.
  EXPECT_EQ(s.mininet_nodes.size(), 13u);
  ASSERT_TRUE(alive(s.mininet_pid));
  for (auto& [node, pid] : s.mininet_nodes) EXPECT_TRUE(alive(pid)) << node;
  for (const char* ns : {"east-h1", "gw.west", "sw.eu", "mgmt"})
    EXPECT_TRUE(std::filesystem::exists(std::string("/run/netns/xdc-tmn.") + ns)) << ns;
  // Reachable by name across two WAN links (3 router hops), with its own hostname.
  auto ping =
      run_xdc({"exec", "--name", "tmn", "east-h1", "--", "ping", "-c", "2", "-i", "0.2", "eu-h1"});
  EXPECT_EQ(ping.rc, 0) << ping.out;
  EXPECT_NE(ping.out.find("ttl=61"), std::string::npos) << ping.out;
  EXPECT_EQ(run_xdc({"exec", "--name", "tmn", "w2", "--", "hostname"}).out, "w2\n");
  // Round trips as configured. Every packet crosses the fabric (1 ms, on the gateway's
  // lan0 egress) of the DC it is delivered in, once: inside a DC 2 x 1 ms; east->west
  // 2 x (10 + 1) ms; east->eu, routed through west, 2 x (10 + 5 + 1) ms. Each least one is
  // held to its delays plus this machine's base round trip on the same path, measured
  // with the same pings and every delay at 0 (tests/common/round_trip.h).
  struct Path {
    std::string what, to_ip;
    std::vector<double> waits_ms;
  };
  for (const Path& p : {Path{"east-h1->w1", "10.1.1.1", {10, 1, 10, 1}},
                        Path{"east-h1->eu-h1", "10.1.2.1", {10, 5, 1, 5, 10, 1}},
                        Path{"east-h1->east-h2", "10.1.0.2", {1, 1}}}) {
    try {  // xdc down below runs either way
      auto pings = [&] { return xdc::check::ping_rtts("tmn", "east-h1", p.to_ip, 20, 50); };
      const xdc::testing::RoundTrips shaped(pings());
      EXPECT_EQ(shaped.size(), 20u) << p.what;
      const auto base = xdc::testing::zero_delay_base("tmn", pings);
      EXPECT_TRUE(xdc::testing::within(p.what + " least", shaped.min(),
                                       xdc::testing::least_bounds(p.waits_ms, base)));
    } catch (const std::exception& e) {
      ADD_FAILURE() << p.what << ": " << e.what();
    }
  }
  auto down = run_xdc({"down", "tmn"});
  EXPECT_EQ(down.rc, 0) << down.out;
  EXPECT_EQ(left_of("tmn", s), "");
}

TEST(Mininet, KillNineOfTheDriverThenDownLeavesNothing) {
  auto s = up("tmnk");
  ASSERT_TRUE(alive(s.mininet_pid));
  kill(s.mininet_pid, SIGKILL);
  // Its node shells exit when their terminal closes; the pinned namespaces stay up.
  for (int i = 0; i < 100 && !pids_with("mininet:xdc-tmnk.").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(pids_with("mininet:xdc-tmnk."), std::vector<int>{});
  EXPECT_TRUE(std::filesystem::exists("/run/netns/xdc-tmnk.w1"));
  auto down = run_xdc({"down", "tmnk"});
  EXPECT_EQ(down.rc, 0) << down.out;
  EXPECT_EQ(left_of("tmnk", s), "");
}

TEST(Mininet, KillNineOfUpHalfWayThenDownLeavesNothing) {
  // Up stops itself at a chosen step (XDC_TEST_STOP_UP_AT, harness/network/builder.h) and
  // is killed there, the same moment on any machine: while the driver builds, halfway
  // through the hosts' addresses, and with everything shaped but no state file written.
  const std::string log = testing::TempDir() + "/tmn9-up.log";
  for (std::string at : {"2", "7", "last"}) {
    {
      xdc::proc::Background b(
          {"env", "XDC_TEST_STOP_UP_AT=" + at, XDC_EXE_PATH, "up", kChain, "--name", "tmn9"}, log);
      ASSERT_TRUE(xdc::testing::wait_stopped(b)) << "up did not stop at step " << at << ":\n"
                                                 << xdc::read_text_file_or_empty(log);
      kill(b.pid(), SIGKILL);
      b.wait_for(std::chrono::seconds(5));
    }
    const std::string stopped = xdc::read_text_file_or_empty(log);
    EXPECT_TRUE(!leftovers("tmn9").empty() || !pids_with("--prefix=xdc-tmn9.").empty())
        << "nothing was built when " << stopped;
    // The orphaned driver finishes its build, finds its caller gone and stops Mininet;
    // xdc down stops it first if it has not yet.
    if (!leftovers("tmn9").empty()) {
      auto down = run_xdc({"down", "tmn9"});
      EXPECT_EQ(down.rc, 0) << down.out;
    }
    for (int i = 0; i < 300 && !pids_with("--prefix=xdc-tmn9.").empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(left_of("tmn9", xdc::net::NetworkState{}), "") << "killed when " << stopped;
    EXPECT_EQ(pids_with("--prefix=xdc-tmn9."), std::vector<int>{});
  }
}

// `mn -c` kills every Mininet node shell on the machine (and every ping): run only when
// no other xdc network is up, as lifecycle_test.cpp does for xdc clean.
TEST(Mininet, MnCleanThenXdcCleanEachRemoveTheirOwn) {
  if (auto others = xdc::net::networks_present(); !others.empty())
    GTEST_SKIP() << "other xdc networks are up (" << others.front() << ", ...)";
  auto s = up("tmnc");
  // Mininet's cleanup also runs `rm -f /tmp/*.log /tmp/*.out`: it gets a /tmp of its own
  // (a private mount namespace), so the tests do not delete the machine's files.
  auto mn = xdc::proc::run({"unshare", "--mount", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs tmpfs /tmp && exec mn -c"},
                           std::chrono::seconds(120));
  EXPECT_EQ(mn.exit_code, 0) << mn.err;
  EXPECT_EQ(pids_with("mininet:xdc-tmnc."), std::vector<int>{}) << "mn -c left node shells";
  // The namespaces are xdc's: pinned until xdc removes them.
  EXPECT_TRUE(std::filesystem::exists("/run/netns/xdc-tmnc.east-h1"));
  auto clean = run_xdc({"clean"});
  EXPECT_EQ(clean.rc, 0) << clean.out;
  EXPECT_EQ(left_of("tmnc", s), "");
}

}  // namespace
