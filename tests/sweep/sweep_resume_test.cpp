// `xdc sweep` end to end (integration: real namespaces, real OpenMPI, xdc-worker): a
// 2-point modeled sweep on a 2-DC pair, SIGINT to the xdc process once the second point
// has started -> exit 1, no network left behind, the first point done and the second not;
// the rerun runs only the second point.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/text_file.h"
#include "harness/process/process.h"
#include "tests/network/leftovers.h"

namespace {
namespace fs = std::filesystem;
using xdc::testing::leftovers;

TEST(SweepRun, InterruptedSweepLeavesNoNetworkAndResumesTheMissingPoint) {
  const std::string net = "tswp";
  const fs::path dir = fs::temp_directory_path() / "xdc-sweep-resume";
  fs::remove_all(dir);
  const fs::path first = dir / "delay-1ms", second = dir / "delay-10ms";
  const fs::path log = fs::temp_directory_path() / "xdc-sweep-resume.log";
  int rc = -1;
  {
    xdc::proc::Background run(
        {XDC_EXE_PATH, "sweep", "tests/sweep/two-point.yaml", "-o", dir.string(), "--name", net},
        log.string());
    bool second_started = false;
    for (int i = 0; i < 1200 && !second_started; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      // The second point's job is running once the log says "launching" a second time
      // (its experiment.yaml alone came too early or too late to be sure of landing the
      // SIGINT inside the ~2 s point).
      const std::string text = xdc::read_text_file_or_empty(log);
      const size_t first_launch = text.find("launching");
      second_started = fs::exists(second / "experiment.yaml") &&
                       first_launch != std::string::npos &&
                       text.find("launching", first_launch + 1) != std::string::npos;
      if (!run.running()) break;
    }
    ASSERT_TRUE(second_started) << xdc::read_text_file_or_empty(log);
    ::kill(run.pid(), SIGINT);
    rc = run.wait_for(std::chrono::seconds(60));
  }
  EXPECT_EQ(rc, 1) << xdc::read_text_file_or_empty(log);
  EXPECT_NE(xdc::read_text_file_or_empty(log).find("interrupted"), std::string::npos)
      << xdc::read_text_file_or_empty(log);
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
  ASSERT_TRUE(fs::exists(first / "summary.json")) << xdc::read_text_file_or_empty(log);
  const auto first_mtime = fs::last_write_time(first / "summary.json");

  auto r = xdc::testing::run_xdc(
      {"sweep", "tests/sweep/two-point.yaml", "-o", dir.string(), "--name", net}, 180);
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("2 points, 1 to run, 1 already finished"), std::string::npos) << r.out;
  EXPECT_EQ(fs::last_write_time(first / "summary.json"), first_mtime);
  EXPECT_TRUE(fs::exists(second / "summary.json")) << r.out;
  const std::string csv = xdc::read_text_file_or_empty(dir / "sweep.csv");
  EXPECT_NE(csv.find(",1ms,1f1b,ok,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",10ms,1f1b,ok,"), std::string::npos) << csv;
  EXPECT_TRUE(fs::exists(dir / "index.html"));
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
}

}  // namespace
