// The ranks' signs of life (workloads/worker/liveness.h) through their files: a rank that
// has not beaten for over a second is named with where it was, one that beats or has
// finished is not, and a rank without a file (another machine) is passed over.
#include "workloads/worker/liveness.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

namespace xdc::worker {
namespace {

namespace fs = std::filesystem;

TEST(Liveness, ARankSilentForOverASecondIsNamedWithWhereItWas) {
  const fs::path dir = fs::temp_directory_path() / ("xdc-liveness-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::vector<std::string> hosts{"a", "b", "c", "d"};
  {
    Liveness r0(dir.string(), 0, 4), r1(dir.string(), 1, 4), r2(dir.string(), 2, 4);
    // Rank 3 has no file here (it runs on another machine of a lab).
    r1.beat("F", 1, 3, 7);
    r2.beat("RECV_B", 2, 0, 7);
    EXPECT_TRUE(r0.silent(hosts).empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    r0.beat("ITERATION_BARRIER", -1, -1, 8);
    r2.beat(Liveness::kFinished, -1, -1, 8);
    EXPECT_GE(r1.since_beat(), Liveness::kSilentNs);
    const auto silent = r0.silent(hosts);
    ASSERT_EQ(silent.size(), 1u);
    EXPECT_EQ(silent[0].rfind("rank 1 (host b): no sign of life for 1.", 0), 0u) << silent[0];
    EXPECT_NE(silent[0].find(", since F stage 1 microbatch 3 of iteration 7"), std::string::npos)
        << silent[0];
    // Rank 1 names nobody: rank 0 just beat, rank 2 finished.
    EXPECT_TRUE(r1.silent(hosts).empty());
  }
  // Without a run directory it is inert.
  Liveness none("", 0, 2);
  none.beat("F", 0, 0, 0);
  EXPECT_TRUE(none.silent(hosts).empty());
  EXPECT_EQ(none.since_beat(), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xdc::worker
