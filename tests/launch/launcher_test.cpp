// The launcher on real namespaces and real OpenMPI: ranks land on the hosts the job
// names (and see their own host names), MPI traffic crosses the shaped WAN, a rank that
// dies is named with its host, a hung job is stopped at its timeout, nothing is left.
// The MPI program is a trivial one of ours (mpi_probe.c), not the worker.
#include "harness/launch/launcher.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/text_file.h"
#include "harness/network/names.h"
#include "harness/network/namespace.h"
#include "harness/network/state.h"
#include "tests/network/leftovers.h"

namespace fs = std::filesystem;
using xdc::testing::leftovers;
using xdc::testing::run_xdc;

namespace {

const std::string kNet = "tlaunch";

// orted or probe processes of this job still alive anywhere.
std::vector<std::string> job_processes() {
  return xdc::testing::processes_matching(
      [](const std::string& cmd) {
        return cmd.find("xdc-mpi-probe") != std::string::npos ||
               (cmd.find("orted") != std::string::npos &&
                cmd.find("--name " + kNet) != std::string::npos);
      },
      80);
}

class Launcher : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("XDC_EXE", XDC_EXE_PATH, 1);  // the rsh agent is `xdc mpi-agent`
    run_xdc({"down", kNet});
    auto up = run_xdc({"up", "tests/launch/two-dc-launch.yaml", "--name", kNet});
    ASSERT_EQ(up.rc, 0) << up.out;
  }
  static void TearDownTestSuite() {
    auto down = run_xdc({"down", kNet});
    EXPECT_EQ(down.rc, 0) << down.out;
    EXPECT_EQ(leftovers(kNet), std::vector<std::string>{});
  }
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("xdc-launch-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  xdc::launch::Job job(std::vector<std::string> hosts, std::vector<std::string> args = {}) {
    xdc::launch::Job j;
    j.run_dir = dir_.string();
    j.rank_hosts = std::move(hosts);
    j.program = {XDC_MPI_PROBE};
    j.program.insert(j.program.end(), args.begin(), args.end());
    j.stall_timeout = std::chrono::seconds(60);
    return j;
  }
  xdc::net::NetworkState state() { return *xdc::net::load_state(kNet); }
  fs::path dir_;
};

TEST_F(Launcher, RanksRunOnTheirHostsAndTalkAcrossTheShapedWan) {
  // Out of order and with a host twice: rank r must land on hosts[r] all the same.
  const std::vector<std::string> hosts{"w1", "e1", "w1", "e2"};
  auto r = xdc::launch::run_job(state(), job(hosts));
  ASSERT_TRUE(r.ok()) << r.message() << "\n" << xdc::read_text_file_or_empty(dir_ / "mpirun.log");
  EXPECT_EQ(xdc::read_text_file_or_empty(dir_ / "hostfile"),
            "w1 slots=2\ne1 slots=1\ne2 slots=1\n");
  for (size_t rank = 0; rank < hosts.size(); ++rank) {
    const std::string log =
        xdc::read_text_file_or_empty(dir_ / ("rank" + std::to_string(rank) + ".log"));
    EXPECT_NE(log.find("rank " + std::to_string(rank) + " of 4 host " + hosts[rank]),
              std::string::npos)
        << "rank " << rank << ": " << log;
  }
  // Rank 0 sits on w1: one round trip to e1 crosses the WAN twice (>= 40 ms), to the
  // other rank on w1 it does not.
  const std::string log0 = xdc::read_text_file_or_empty(dir_ / "rank0.log");
  std::map<int, double> rtt;
  const std::regex re(R"(rtt_to (\d+) ms ([\d.]+))");
  for (std::sregex_iterator it(log0.begin(), log0.end(), re); it != std::sregex_iterator(); ++it)
    rtt[std::stoi((*it)[1])] = std::stod((*it)[2]);
  ASSERT_EQ(rtt.size(), 3u) << log0;
  EXPECT_GE(rtt[1], 40.0);
  EXPECT_LT(rtt[1], 80.0);
  EXPECT_LT(rtt[2], 30.0);  // same host: no WAN (the margin is for a loaded machine)
  EXPECT_GE(rtt[3], 40.0);
  EXPECT_EQ(job_processes(), std::vector<std::string>{});
}

TEST_F(Launcher, ARankThatDiesIsNamedWithItsHost) {
  auto r = xdc::launch::run_job(state(), job({"e1", "e2", "w1"}, {"die", "2"}));
  EXPECT_FALSE(r.ok());
  ASSERT_FALSE(r.failures.empty()) << xdc::read_text_file_or_empty(dir_ / "mpirun.log");
  EXPECT_EQ(r.failures[0].rank, 2);
  EXPECT_EQ(r.failures[0].host, "w1");
  EXPECT_NE(r.message().find("rank 2 (host w1)"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("signal 9"), std::string::npos) << r.message();
  EXPECT_NE(xdc::read_text_file_or_empty(dir_ / "rank0.log").find("rank 0 of 3 host e1"),
            std::string::npos);
  EXPECT_EQ(job_processes(), std::vector<std::string>{});
}

TEST_F(Launcher, AJobWithNoRankWritingForItsStallTimeoutIsStoppedAndLeavesNothing) {
  auto j = job({"e1", "w1"}, {"hang"});
  j.stall_timeout = std::chrono::seconds(4);
  auto r = xdc::launch::run_job(state(), j);
  EXPECT_TRUE(r.timed_out);  // stopped by its own timeout: a hang would be ctest's
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message().find("no rank wrote a line for 4 s"), std::string::npos) << r.message();
  // What the ranks printed before the hang is kept.
  EXPECT_NE(xdc::read_text_file_or_empty(dir_ / "rank1.log").find("rank 1 of 2 host w1"),
            std::string::npos);
  for (auto& h : {"e1", "w1"})
    EXPECT_EQ(xdc::net::netns_pids(xdc::net::host_ns(kNet, h)).size(), 0u) << h;
  EXPECT_EQ(job_processes(), std::vector<std::string>{});
}

// The limit is on silence, not on length: a job that runs three times its stall_timeout
// while its ranks keep writing (a line each half second) ends on its own, exit 0.
TEST_F(Launcher, ALongJobThatKeepsWritingOutlivesItsStallTimeout) {
  auto j = job({"e1", "w1"}, {"ticks", "24"});
  j.stall_timeout = std::chrono::seconds(8);
  auto r = xdc::launch::run_job(state(), j);
  EXPECT_TRUE(r.ok()) << r.message();
  EXPECT_FALSE(r.timed_out);
  EXPECT_GT(r.seconds, 24.0);
  EXPECT_NE(xdc::read_text_file_or_empty(dir_ / "rank1.log").find("rank 1 tick 47"),
            std::string::npos);
  EXPECT_EQ(job_processes(), std::vector<std::string>{});
}

TEST(LauncherFiles, HostfileAndArgv) {
  EXPECT_EQ(xdc::launch::hostfile_text({"a", "b", "a", "c"}), "a slots=2\nb slots=1\nc slots=1\n");
  xdc::net::NetworkState n;
  n.name = "x";
  n.mgmt_subnet = "198.18.3.0/24";
  xdc::launch::Job j;
  j.run_dir = "/r";
  j.rank_hosts = {"a", "b"};
  j.program = {"/bin/prog", "--spec", "/r/spec.json"};
  j.tcp_links = 4;
  j.env = {{"OPENBLAS_NUM_THREADS", "1"}};
  auto a = xdc::launch::mpirun_argv(n, j);
  std::string s;
  for (auto& x : a) s += x + " ";
  for (const char* want :
       {"OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun ",
        "--mca plm_rsh_no_tree_spawn 1 ", "--mca oob_tcp_if_include 198.18.3.0/24 ",
        "--mca btl tcp,self ", "--mca btl_tcp_if_include 10.0.0.0/8 ", "--bind-to none ",
        "--mca btl_tcp_links 4 ", "-np 2 ", "--default-hostfile /r/hostfile ",
        "--hostfile /r/rankmap --mca rmaps seq ", "-x OPENBLAS_NUM_THREADS=1 ",
        "/bin/prog --spec /r/spec.json "})
    EXPECT_NE(s.find(want), std::string::npos) << want << " not in " << s;
  EXPECT_NE(s.find(" mpi-agent --name x "), std::string::npos) << s;
}

TEST(LauncherFiles, FailuresParsedFromMpirunOutput) {
  const std::vector<std::string> hosts{"e1", "e2", "w1", "w2"};
  auto f = xdc::launch::parse_failures(
      "[1,1]<stderr>:xdc-worker: rank 1 (host e2): RECV_F from rank 0 timed out after 600 s\n"
      "--------\nMPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD\n"
      "with errorcode 1.\n",
      hosts);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rank, 1);
  EXPECT_EQ(f[0].host, "e2");
  EXPECT_NE(f[0].what.find("timed out"), std::string::npos);
  EXPECT_NE(f[0].what.find("MPI_Abort"), std::string::npos);
  f = xdc::launch::parse_failures(
      "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
      "the job to be terminated. The first process to do so was:\n\n"
      "  Process name: [[4142,1],3]\n  Exit code:    3\n",
      hosts);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rank, 3);
  EXPECT_EQ(f[0].host, "w2");
  EXPECT_EQ(f[0].what, "exited with code 3");
  f = xdc::launch::parse_failures(
      "ORTE has lost communication with a remote daemon.\n\n"
      "  HNP daemon   : [[17451,0],0] on node vm\n"
      "  Remote daemon: [[17451,0],1] on node e1\n\nThis is usually due to...\n",
      hosts);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rank, -1);
  EXPECT_EQ(f[0].host, "e1");
  xdc::launch::Result r;
  r.exit_code = 205;
  r.failures = f;
  EXPECT_EQ(r.message(), "host e1: lost its MPI daemon (orted died or was killed)");
}

}  // namespace
