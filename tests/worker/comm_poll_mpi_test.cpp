// The comm thread's backed-off poll against OpenMPI itself (poll.h: the simulator answers a
// rendezvous at the receiver's next poll). tests/worker/poll_probe.cpp under mpirun on
// loopback: a 256 KiB send to a rank that computes with its receive posted completes later
// than one to a rank that waits, by the wait for the receiver's comm thread's next poll:
// polled every 1 ms once backed off, half of that on average, never much more than all of it.
#include <gtest/gtest.h>
#include <sys/prctl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "harness/process/process.h"
#include "workloads/worker/compute.h"
#include "workloads/worker/poll.h"

namespace {

struct Trial {
  bool computing = false;
  long long posted = 0, submit = 0, complete = 0;
};

std::map<int, Trial> run_probe(int trials) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  const auto r = xdc::proc::run(
      {"mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "tcp,self",
       "--mca", "btl_tcp_if_include", "lo", XDC_POLL_PROBE, std::to_string(trials)},
      std::chrono::minutes(2));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<int, Trial> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string what, mode;
    int t = 0;
    if (!(l >> what >> t >> mode)) continue;
    Trial& x = out[t];
    x.computing = mode == "computing";
    if (what == "send") l >> x.submit >> x.complete;
    if (what == "recv") l >> x.posted;
  }
  return out;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

TEST(CommPollMpi, ASendToAComputingRankWaitsForItsBackedOffPoll) {
  const std::map<int, Trial> trials = run_probe(80);
  ASSERT_EQ(trials.size(), 80u);
  std::vector<double> waiting;
  for (const auto& [t, x] : trials)
    if (!x.computing) waiting.push_back(static_cast<double>(x.complete - x.submit) / 1e3);
  std::sort(waiting.begin(), waiting.end());
  const double base = waiting[waiting.size() / 2];  // us, the receiver waiting
  std::vector<double> extra, model;                 // us, the capped period's trials
  int within = 0;
  for (const auto& [t, x] : trials) {
    if (!x.computing || x.submit - x.posted < 2'500'000) continue;
    const double e = static_cast<double>(x.complete - x.submit) / 1e3 - base;
    extra.push_back(e);
    model.push_back(static_cast<double>(xdc::worker::expected_poll_wait_ns(
                        false, x.posted, x.submit, 100'000, xdc::worker::timer_slack_ns())) /
                    1e3);
    if (e > -150 && e < 1150) ++within;
  }
  ASSERT_GE(extra.size(), 20u);
  std::sort(extra.begin(), extra.end());
  const double median = extra[extra.size() / 2];
  std::printf(
      "waiting receiver: median %.0f us; computing (%zu trials past the doubling): "
      "extra median %.0f us, mean %.0f, p10 %.0f, p90 %.0f; the model's mean %.0f us\n",
      base, extra.size(), median, mean(extra), extra[extra.size() / 10],
      extra[extra.size() * 9 / 10], mean(model));
  // About half the 1 ms capped period (the model's mean), spread over it. Medians and a
  // majority, not the mean: on a busy machine late wake-ups add a tail of several periods.
  EXPECT_GT(median, 150);  // a rank acting at once would add about none
  EXPECT_LT(median, 1000);
  EXPECT_GE(within, static_cast<int>(extra.size() * 6 / 10));
}

// The median duration (us) of `wait` with 1 ns of timer slack and with the kernel's default
// 50 us, on this thread: the two slacks alternate call by call, so that a machine busy for
// part of the test delays both alike. {-1, -1} where the slack cannot be set.
template <typename Wait>
std::array<double, 2> medians_by_slack(int calls, Wait wait) {
  const int64_t was = xdc::worker::timer_slack_ns();
  std::vector<double> took[2];  // us: [0] 1 ns of slack, [1] 50 us
  for (int i = 0; i < calls; ++i) {
    if (prctl(PR_SET_TIMERSLACK, i % 2 ? 50'000UL : 1UL, 0, 0, 0) != 0) return {-1, -1};
    const auto t = std::chrono::steady_clock::now();
    wait();
    took[i % 2].push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
  }
  prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(was), 0, 0, 0);
  for (auto& v : took) std::sort(v.begin(), v.end());
  return {took[0][took[0].size() / 2], took[1][took[1].size() / 2]};
}

// A timed wait like the comm thread's (a condition variable's wait_for) ends its timer
// slack after its deadline: 4000 waits of 100 us.
TEST(CommPollKernel, ATimedWaitEndsItsTimerSlackLate) {
  std::mutex m;
  std::condition_variable cv;
  const auto [tight, slack] = medians_by_slack(4000, [&] {
    std::unique_lock<std::mutex> l(m);
    cv.wait_for(l, std::chrono::microseconds(100));
  });
  std::printf("100 us waits, median: %.1f us with 1 ns of slack, %.1f with 50 us\n", tight, slack);
  EXPECT_GE(tight, 100);
  EXPECT_GT(slack - tight, 25);
  EXPECT_LT(slack - tight, 100);
}

// Modeled compute's sleep (workloads/worker/compute.cpp's sleep_ns, an absolute
// clock_nanosleep) ends its timer slack after its deadline too: 600 sleeps of 2 ms
// (CostModel::sleep_slack_ns adds the slack to each).
TEST(CommPollKernel, AModeledComputeSleepEndsItsTimerSlackLate) {
  const auto [tight, slack] = medians_by_slack(600, [] { xdc::worker::sleep_ns(2'000'000); });
  std::printf("2 ms sleeps, median: %.1f us with 1 ns of slack, %.1f with 50 us\n", tight, slack);
  EXPECT_GE(tight, 2000);
  EXPECT_GT(slack - tight, 25);
  EXPECT_LT(slack - tight, 100);
}

}  // namespace
