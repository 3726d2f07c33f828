// The comm thread's poll period (comm.h, poll.h): a pending send is polled at the short
// period even while the executor computes; only a rank with nothing but receives pending
// backs off, along the schedule the simulator times answers with.
#include <gtest/gtest.h>
#include <sys/prctl.h>

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

TEST(CommPoll, TheNextPollFollowsTheDoublingScheduleThenHalfTheCappedPeriod) {
  constexpr int64_t p = 100'000;  // 100 us
  // Backed off since 0: polls at 100, 300, 700, 1500 us, then every kPollBackoff x 100 us.
  EXPECT_EQ(expected_poll_wait_ns(false, 0, 50'000, p), 50'000);
  EXPECT_EQ(expected_poll_wait_ns(false, 0, 250'000, p), 50'000);
  EXPECT_EQ(expected_poll_wait_ns(false, 0, 600'000, p), 100'000);
  EXPECT_EQ(expected_poll_wait_ns(false, 0, 1'000'000, p), 500'000);
  EXPECT_EQ(expected_poll_wait_ns(false, 0, 1'500'000, p), 0);
  EXPECT_EQ(expected_poll_wait_ns(false, 0, 9'000'000, p), kPollBackoff * p / 2);
  // Polling every period (the executor waits or a send is pending): half of one.
  EXPECT_EQ(expected_poll_wait_ns(true, 0, 9'000'000, p), p / 2);
  EXPECT_EQ(expected_poll_wait_ns(false, 0, 9'000'000, 0), 0);
}

TEST(CommPoll, EachWaitLastsItsPeriodPlusTheTimerSlack) {
  constexpr int64_t p = 100'000, s = 50'000;
  // Backed off since 0: polls at 150, 400, 850, 1700 us, then every 1050 us.
  EXPECT_EQ(expected_poll_wait_ns(false, 0, 100'000, p, s), 50'000);
  EXPECT_EQ(expected_poll_wait_ns(false, 0, 300'000, p, s), 100'000);
  EXPECT_EQ(expected_poll_wait_ns(false, 0, 1'600'000, p, s), 100'000);
  EXPECT_EQ(expected_poll_wait_ns(false, 0, 9'000'000, p, s), (kPollBackoff * p + s) / 2);
  EXPECT_EQ(expected_poll_wait_ns(true, 0, 9'000'000, p, s), (p + s) / 2);
}

TEST(CommPoll, TheTimerSlackIsTheMainThreadsAsTheKernelKeepsIt) {
  const int64_t was = timer_slack_ns();
  ASSERT_GT(was, 0);
  ASSERT_EQ(prctl(PR_SET_TIMERSLACK, 20'000UL, 0, 0, 0), 0);
  EXPECT_EQ(timer_slack_ns(), 20'000);
  ASSERT_EQ(prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(was), 0, 0, 0), 0);
  EXPECT_EQ(timer_slack_ns(), was);
}

}  // namespace
}  // namespace xdc::worker
