// proc::run_quiet (harness/process/process.h): exit codes, the timeout, and no pipe that a
// child started meanwhile could inherit (the reason it exists: a lab run pings its machines
// from a thread while mpirun starts).
#include "harness/process/process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

namespace xdc::proc {
namespace {

using namespace std::chrono_literals;

TEST(RunQuiet, GivesTheExitCode) {
  EXPECT_EQ(run_quiet({"true"}, 10s), 0);
  EXPECT_EQ(run_quiet({"sh", "-c", "exit 3"}, 10s), 3);
  EXPECT_EQ(run_quiet({"no-such-program-xdc"}, 10s), -1);
}

TEST(RunQuiet, KillsAtTheTimeout) {
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run_quiet({"sleep", "30"}, 300ms), -1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

// The child's output goes to /dev/null, not to a pipe: a long-lived child started by
// another thread while it runs (mpirun, here `sleep 30`) inherits nothing of it, so
// run_quiet returns when its own child exits (proc::run would wait for the pipes to close,
// that is for `sleep 30`).
TEST(RunQuiet, ReturnsWhenAChildStartedMeanwhileLivesOn) {
  std::unique_ptr<Background> other;
  std::thread starter([&] {
    std::this_thread::sleep_for(100ms);
    other = std::make_unique<Background>(std::vector<std::string>{"sleep", "30"});
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run_quiet({"sh", "-c", "echo out; echo err >&2; sleep 0.5"}, 10s), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  starter.join();
}

}  // namespace
}  // namespace xdc::proc
