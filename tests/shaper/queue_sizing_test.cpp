#include "netem/shaper/queue_sizing.h"

#include <gtest/gtest.h>

namespace xdc::netem {
namespace {

LinkParams link(uint64_t rate_bps, uint64_t delay_us) {
  LinkParams p;
  p.rate_bps = rate_bps;
  p.delay_us = delay_us;
  return p;
}

TEST(QueueSizing, RateQueueIsOneAndAHalfBdp) {
  // 1 Gbit/s x 20 ms = 2.5 MB; x 1.5 / 1514 B = 2477 frames.
  EXPECT_EQ(rate_queue_pkts(link(1'000'000'000, 20'000)), 2477u);
  // 10 Mbit/s x 20 ms = 25 kB -> 25 frames -> floor of 32.
  EXPECT_EQ(rate_queue_pkts(link(10'000'000, 20'000)), kMinRateQueuePkts);
}

TEST(QueueSizing, ExplicitQueueWins) {
  LinkParams p = link(1'000'000'000, 20'000);
  p.queue_pkts = 100;
  EXPECT_EQ(rate_queue_pkts(p), 100u);
  // ... but the byte limit always holds at least a bucket and a frame.
  EXPECT_GE(rate_queue_bytes(p), uint64_t{tbf_burst_bytes(p.rate_bps)} + kFrameBytes);
}

TEST(QueueSizing, DelayQueueCountsPacketsInFlight) {
  // 1 Gbit/s x 100 ms = 12.5 MB -> x 1.5 / 1514 = 12385 frames.
  EXPECT_EQ(delay_queue_pkts(link(1'000'000'000, 100'000)), 12385u);
  EXPECT_EQ(delay_queue_pkts(link(1'000'000, 1'000)), kMinDelayQueuePkts);
  // Unlimited rate counts as 10 Gbit/s; jitter lengthens the hold.
  LinkParams p = link(0, 10'000);
  EXPECT_EQ(delay_queue_pkts(p), 12385u);
  p.jitter_us = 2'500;
  EXPECT_EQ(delay_queue_pkts(p), 24769u);
}

TEST(QueueSizing, TbfBurstIsAMillisecondOrEightFrames) {
  EXPECT_EQ(tbf_burst_bytes(1'000'000'000), 125'000u);
  EXPECT_EQ(tbf_burst_bytes(10'000'000), 8 * kFrameBytes);
}

}  // namespace
}  // namespace xdc::netem
