// The comm thread's poll period (comm.h): a pending send is polled at the short period
// even while the executor computes; only a rank with nothing but receives pending backs off.
#include <gtest/gtest.h>

#include "workloads/worker/comm.h"

namespace xdc::worker {
namespace {

using std::chrono::microseconds;

TEST(CommPoll, APendingSendIsPolledAtTheShortPeriodWhileTheExecutorComputes) {
  const microseconds poll{100}, backed_off{800};
  EXPECT_EQ(poll_period(false, true, poll, backed_off), poll);
  EXPECT_EQ(poll_period(true, false, poll, backed_off), poll);
  EXPECT_EQ(poll_period(true, true, poll, backed_off), poll);
  // Computing with only receives posted: the backed-off period.
  EXPECT_EQ(poll_period(false, false, poll, backed_off), backed_off);
}

}  // namespace
}  // namespace xdc::worker
