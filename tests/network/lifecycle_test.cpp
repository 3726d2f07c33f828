// xdc up / down / clean on real namespaces: reachability across DCs, routing through an
// intermediate DC, nothing left behind after down, cycles, a killed up, foreign objects.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/text_file.h"
#include "harness/network/names.h"
#include "harness/network/state.h"
#include "harness/network/teardown.h"
#include "harness/process/process.h"
#include "tests/network/leftovers.h"

using xdc::testing::leftovers;
using xdc::testing::run_xdc;

namespace {

const std::string kChain = "tests/network/plain-chain.yaml";

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += x + "\n";
  return s;
}

TEST(Lifecycle, UpReachesAcrossDcsByNameAndDownLeavesNothing) {
  auto up = run_xdc({"up", kChain, "--name", "tlc"});
  ASSERT_EQ(up.rc, 0) << up.out;
  auto state = xdc::net::load_state("tlc");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->hosts.size(), 5u);
  // east -> eu has no direct link: routed through west (TTL drops by 3 gateways... 3 hops).
  auto ping =
      run_xdc({"exec", "--name", "tlc", "east-h1", "--", "ping", "-c", "2", "-i", "0.2", "eu-h1"});
  EXPECT_EQ(ping.rc, 0) << ping.out;
  EXPECT_NE(ping.out.find("eu-h1 (10.1.2.1)"), std::string::npos) << ping.out;
  EXPECT_NE(ping.out.find("ttl=61"), std::string::npos) << "expected 3 router hops:\n" << ping.out;
  auto name = run_xdc({"exec", "--name", "tlc", "w2", "--", "hostname"});
  EXPECT_EQ(name.out, "w2\n");
  auto down = run_xdc({"down", "tlc"});
  EXPECT_EQ(down.rc, 0) << down.out;
  EXPECT_EQ(joined(leftovers("tlc")), "");
}

// The shipped 1,024-host, 64-DC ring: its management subnet is sized from the hosts (a /21)
// and its switch spans two bridges (a Linux bridge takes at most 1,024 ports). A host
// whose management port is on the second bridge reaches the root and a host on the first;
// the ring routes dc1 to its neighbour dc64; down leaves nothing.
TEST(Lifecycle, AThousandHostsInSixtyFourDcsComeUpReachEachOtherAndLeaveNothing) {
  auto up = run_xdc({"up", "topologies/scale-1024.yaml", "--name", "tk"});
  ASSERT_EQ(up.rc, 0) << up.out;
  auto state = xdc::net::load_state("tk");
  ASSERT_TRUE(state);
  ASSERT_EQ(state->hosts.size(), 1024u);
  EXPECT_EQ(xdc::net::subnet_prefix(state->mgmt_subnet), 21) << state->mgmt_subnet;
  const auto& second = state->hosts[1000];  // the first host on the second bridge
  for (const std::string& to : {state->mgmt_root_ip, state->hosts[0].mgmt_ip}) {
    auto ping = run_xdc(
        {"exec", "--name", "tk", second.name, "--", "ping", "-c", "3", "-i", "0.2", "-W", "2", to});
    EXPECT_EQ(ping.rc, 0) << second.name << " -> " << to << ":\n" << ping.out;
  }
  // Over the shaped ring link (0.1% loss): one reply of three is enough.
  auto ring =
      run_xdc({"exec", "--name", "tk", "dc1-h1", "--", "ping", "-c", "3", "-i", "0.2", "dc64-h16"});
  EXPECT_EQ(ring.rc, 0) << ring.out;
  auto down = run_xdc({"down", "tk"});
  EXPECT_EQ(down.rc, 0) << down.out;
  EXPECT_EQ(joined(leftovers("tk")), "");
}

TEST(Lifecycle, FiftyUpDownCyclesLeaveNothing) {
  for (int i = 0; i < 50; ++i) {
    auto up = run_xdc({"up", kChain, "--name", "tcyc"});
    ASSERT_EQ(up.rc, 0) << "cycle " << i << ": " << up.out;
    auto down = run_xdc({"down", "tcyc"});
    ASSERT_EQ(down.rc, 0) << "cycle " << i << ": " << down.out;
  }
  EXPECT_EQ(joined(leftovers("tcyc")), "");
}

TEST(Lifecycle, UpRefusesANameInUse) {
  ASSERT_EQ(run_xdc({"up", kChain, "--name", "tdup"}).rc, 0);
  auto again = run_xdc({"up", kChain, "--name", "tdup"});
  EXPECT_EQ(again.rc, 1);
  EXPECT_NE(again.out.find("already exists"), std::string::npos) << again.out;
  EXPECT_NE(xdc::net::load_state("tdup"), std::nullopt) << "the refused up must not harm the first";
  EXPECT_EQ(run_xdc({"down", "tdup"}).rc, 0);
  EXPECT_EQ(joined(leftovers("tdup")), "");
}

// `xdc clean` removes every xdc network on the machine: these tests run it only when no
// other network is up, so a developer's (or a concurrent test's) network survives.
#define SKIP_IF_OTHER_NETWORKS_ARE_UP()                            \
  if (auto others = xdc::net::networks_present(); !others.empty()) \
  GTEST_SKIP() << "other xdc networks are up (" << others.front()  \
               << ", ...): not running xdc clean over them"

TEST(Lifecycle, KillNineMidwayThenCleanLeavesNothing) {
  SKIP_IF_OTHER_NETWORKS_ARE_UP();
  // Up stops itself at a chosen step (XDC_TEST_STOP_UP_AT, builder.h) and is killed there,
  // so that each kill lands at the same moment on any machine: with only the state
  // directory made, with one host's namespace made and the other's not, halfway through
  // the hosts' addresses, and with the delay lines running but no state file written.
  const std::string log = testing::TempDir() + "/tk9-up.log";
  for (std::string at : {"1", "3", "7", "last"}) {
    {
      xdc::proc::Background up({"env", "XDC_TEST_STOP_UP_AT=" + at, XDC_EXE_PATH, "up",
                                "tests/network/shaped-pair.yaml", "--name", "tk9"},
                               log);
      ASSERT_TRUE(xdc::testing::wait_stopped(up)) << "up did not stop at step " << at << ":\n"
                                                  << xdc::read_text_file_or_empty(log);
      kill(up.pid(), SIGKILL);
      up.wait_for(std::chrono::seconds(5));
    }
    const std::string stopped = xdc::read_text_file_or_empty(log);
    EXPECT_NE(joined(leftovers("tk9")), "") << "nothing was built when " << stopped;
    auto clean = run_xdc({"clean"});
    EXPECT_EQ(clean.rc, 0) << clean.out;
    EXPECT_EQ(joined(leftovers("tk9")), "") << "after kill -9 when " << stopped;
  }
}

// Whether helper_pids() found process p.
bool has(const std::vector<pid_t>& pids, pid_t p) {
  return std::find(pids.begin(), pids.end(), p) != pids.end();
}

// `xdc clean` kills a process named xdc-* that names a network's namespace as an argument
// ("--netns=xdc-<net>.<...>"), not one that has such text inside a path: a libFuzzer
// target writing to /tmp/xdc-fuzz.XXXX/ was killed by every clean.
TEST(Lifecycle, HelpersAreFoundByANamespaceArgumentNotByAPath) {
  const std::string bash = "/tmp/xdc-fakehelper-" + std::to_string(::getpid());
  std::filesystem::copy_file("/bin/bash", bash, std::filesystem::copy_options::overwrite_existing);
  const std::string body = "sleep 300; true";  // two commands: bash does not exec sleep
  xdc::proc::Background helper({bash, "-c", body, "x", "--netns=xdc-tfz.gw.a", "--if=wan"});
  xdc::proc::Background fuzzer({bash, "-c", body, "x", "-artifact_prefix=/tmp/xdc-fuzz.ab1/"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // bash has its command line
  EXPECT_TRUE(has(xdc::net::helper_pids("tfz"), helper.pid()));
  EXPECT_TRUE(has(xdc::net::helper_pids(""), helper.pid()));
  EXPECT_FALSE(has(xdc::net::helper_pids("tf"), helper.pid())) << "another network's name";
  EXPECT_FALSE(has(xdc::net::helper_pids(""), fuzzer.pid()));
  EXPECT_FALSE(has(xdc::net::helper_pids("fuzz"), fuzzer.pid()));
  std::filesystem::remove(bash);
}

// An MPI daemon that a launch was starting while its network went down outlives its
// namespace's name (seen once: an orted of an interrupted sweep, in an unnamed namespace,
// that `xdc clean` did not find). Its command line carries its launcher's rsh agent,
// `xdc mpi-agent --name <net>`: down and clean find it by that, and nothing else.
TEST(Lifecycle, CleanFindsAnMpiDaemonWhoseNamespaceIsGoneByItsCommandLine) {
  SKIP_IF_OTHER_NETWORKS_ARE_UP();
  const std::string body = "sleep 300; true";  // two commands: bash does not exec sleep
  xdc::proc::Background daemon({"unshare", "-n", "bash", "-c", body, "orted", "-mca",
                                "plm_rsh_agent", "/usr/bin/xdc", "mpi-agent", "--name", "torph",
                                "-mca", "orte_hnp_uri", "x"});
  xdc::proc::Background foreign({"bash", "-c", body, "x", "notmpi-agent", "--name", "torph"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // bash has its command line
  EXPECT_TRUE(has(xdc::net::helper_pids("torph"), daemon.pid()));
  EXPECT_TRUE(has(xdc::net::helper_pids(""), daemon.pid()));
  EXPECT_FALSE(has(xdc::net::helper_pids("torp"), daemon.pid())) << "another network's name";
  EXPECT_FALSE(has(xdc::net::helper_pids(""), foreign.pid()));
  EXPECT_EQ(joined(leftovers("torph")), "process " + std::to_string(daemon.pid()) + "\n");
  auto clean = run_xdc({"clean"});
  EXPECT_EQ(clean.rc, 0) << clean.out;
  EXPECT_NE(daemon.wait_for(std::chrono::seconds(5)), -1) << "the daemon survived xdc clean";
  EXPECT_EQ(joined(leftovers("")), "");
  EXPECT_TRUE(foreign.running()) << "clean killed a process that only looks like xdc's";
}

// The helper search reads every process's command line while processes come and go: one
// that exits between open and read fails the read with ESRCH. That once threw out of
// teardown (an interrupted sweep's mpirun exiting as its network went down) and left the
// whole network up. Processes started and reaped as fast as bash can, under the search.
TEST(Lifecycle, HelperSearchSurvivesProcessesExitingUnderIt) {
  xdc::proc::Background churn({"bash", "-c", "while :; do /bin/true & /bin/true & wait; done"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int searches = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_NO_THROW(xdc::net::helper_pids("")) << "after " << searches << " searches";
    ++searches;
  }
  EXPECT_TRUE(churn.running());
  EXPECT_GT(searches, 10);
}

// A part that will not go (here an /etc/netns entry made immutable) does not stop the
// rest: `xdc down` removes the namespaces, links and processes, exits 1 naming the part,
// and keeps the state so that the network stays listed; once the part can go, a second
// `xdc down` finishes.
TEST(Lifecycle, DownRemovesTheRestWhenOnePartWillNotGo) {
  const std::string net = "tstk";
  const std::string stuck = "/etc/netns/xdc-" + net + ".zz";
  struct Unpin {  // whatever happens, the file can go again
    std::string file;
    ~Unpin() {
      xdc::proc::run({"chattr", "-i", file});
      std::filesystem::remove_all(std::filesystem::path(file).parent_path());
    }
  } unpin{stuck + "/pinned"};
  auto up = run_xdc({"up", kChain, "--name", net});
  ASSERT_EQ(up.rc, 0) << up.out;
  std::filesystem::create_directories(stuck);
  std::ofstream(unpin.file) << "x\n";
  if (xdc::proc::run({"chattr", "+i", unpin.file}).exit_code != 0) {
    run_xdc({"down", net});
    GTEST_SKIP() << "chattr +i is refused on /etc here: no file that will not go";
  }
  const auto before = leftovers(net);
  const auto namespaces = std::count_if(
      before.begin(), before.end(), [](const std::string& x) { return x.rfind("netns ", 0) == 0; });
  auto down = run_xdc({"down", net});
  EXPECT_EQ(down.rc, 1) << down.out;
  EXPECT_NE(down.out.find(stuck), std::string::npos) << down.out;
  EXPECT_NE(down.out.find("1 of its parts could not be removed"), std::string::npos) << down.out;
  EXPECT_NE(down.out.find("the rest was: " + std::to_string(namespaces) + " namespaces"),
            std::string::npos)
      << down.out;
  EXPECT_EQ(joined(leftovers(net)), "state " + xdc::net::state_dir(net) + "\nfile " + stuck + "\n");
  // The steps after the one that failed ran too: no host's UTS pin is still mounted.
  std::ifstream mounts("/proc/self/mountinfo");
  for (std::string line; std::getline(mounts, line);)
    EXPECT_EQ(line.find(xdc::net::state_dir(net) + "/uts/"), std::string::npos) << line;
  xdc::proc::run({"chattr", "-i", unpin.file});
  auto again = run_xdc({"down", net});
  EXPECT_EQ(again.rc, 0) << again.out;
  EXPECT_EQ(joined(leftovers(net)), "");
}

// Look-alikes of xdc's names, made with iproute2, removed again whatever happens.
struct ForeignObjects {
  std::vector<std::string> netns{"xdcfoo", "my-xdc-ns", "xdc-nodot"};
  std::string link = "xdcv0";
  ForeignObjects() {
    remove();
    for (auto& ns : netns) EXPECT_EQ(xdc::proc::run({"ip", "netns", "add", ns}).exit_code, 0);
    EXPECT_EQ(xdc::proc::run({"ip", "link", "add", link, "type", "veth", "peer", "name", "xdcv1"})
                  .exit_code,
              0);
  }
  ~ForeignObjects() { remove(); }
  void remove() {
    for (auto& ns : netns) xdc::proc::run({"ip", "netns", "del", ns});
    xdc::proc::run({"ip", "link", "del", link});
  }
};

TEST(Lifecycle, CleanNeverTouchesWhatXdcDidNotCreate) {
  SKIP_IF_OTHER_NETWORKS_ARE_UP();
  // Look-alikes without xdc's exact prefix "xdc-<net>.": they must survive.
  ForeignObjects foreign;
  ASSERT_EQ(run_xdc({"up", kChain, "--name", "tcl"}).rc, 0);
  auto clean = run_xdc({"clean"});
  EXPECT_EQ(clean.rc, 0) << clean.out;
  EXPECT_EQ(joined(leftovers("")), "");
  for (auto& ns : foreign.netns)
    EXPECT_TRUE(std::filesystem::exists("/run/netns/" + ns)) << ns << " was removed";
  EXPECT_TRUE(std::filesystem::exists("/sys/class/net/" + foreign.link));
}

}  // namespace
