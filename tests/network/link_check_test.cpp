// `xdc check`'s verdicts (harness/check/link_check.h) on figures given, no network.
#include "harness/check/link_check.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

// A 20 ms link each way with 1 ms of normal jitter each way: RTT stdev sqrt(2) ms.
xdc::check::LinkCheck jittered(double measured_stdev_ms, int samples) {
  xdc::check::LinkCheck c;
  c.configured.delay_us = c.reverse.delay_us = 20'000;
  c.configured.jitter_us = c.reverse.jitter_us = 1'000;
  c.rtt_median_ms = 40;
  c.rtt_stdev_ms = measured_stdev_ms;
  c.rtt_samples = samples;
  xdc::check::judge(c);
  return c;
}

TEST(LinkCheck, TheJitterToleranceWidensForFewPings) {
  // 1.15 ms measured against 1.414 expected (-19%): within what 20 pings can tell apart
  // (three standard errors: 49%), not within what 200 can (15%).
  EXPECT_TRUE(jittered(1.15, 20).ok());
  EXPECT_FALSE(jittered(1.15, 200).ok());
  EXPECT_TRUE(jittered(1.30, 200).ok());  // -8%
  const auto c = jittered(1.15, 20);
  ASSERT_EQ(c.verdicts.size(), 2u);
  EXPECT_NEAR(c.verdicts[1].tolerance, 3 / std::sqrt(38.0) * std::sqrt(2.0), 1e-9);
}

}  // namespace
