// Several TCP connections per transfer: over 80 ms one way with stock buffers
// one flow is window-limited, 8 parallel flows carry the link's rate. xdc check's
// multi-flow probe (harness/check/probes.h, iperf3 -P) measures both; the rate verdict
// is judged on the multi-flow figure (link_check.h).
#include <gtest/gtest.h>

#include <algorithm>

#include "harness/check/link_check.h"
#include "harness/check/probes.h"
#include "harness/network/state.h"
#include "netem/shaper/shaper.h"
#include "tests/common/stall_meter.h"
#include "tests/network/network_fixture.h"

namespace {

class Wan80 : public xdc::testing::NetworkTest {
 protected:
  Wan80() : NetworkTest("tests/network/wan-80ms.yaml", "wmulti") {}
};

TEST_F(Wan80, EightFlowsCarryAtLeastThreeTimesOneWindowLimitedFlow) {
  auto state = xdc::net::load_state("wmulti");
  ASSERT_TRUE(state);
  const auto* w1 = state->find_host("w1");
  ASSERT_NE(w1, nullptr);
  // 30 round trips of ramp-up omitted, as xdc check does.
  const auto one = xdc::check::tcp_goodput("wmulti", "e1", "w1", w1->data_ip, 5, 4.8);
  xdc::testing::StallMeter stalls(xdc::netem::ShapeOptions{}.rt_prio);
  const auto eight = xdc::check::tcp_goodput("wmulti", "e1", "w1", w1->data_ip, 5, 4.8, "", 8);
  const double stalled = stalls.stop();
  std::printf(
      "80 ms one way, 1 Gbit/s, stock buffers: 1 flow %.1f Mbit/s, 8 flows %.1f Mbit/s; the "
      "machine stalled %.1f%% of the time\n",
      one.goodput_mbit, eight.goodput_mbit, 100 * stalled);
  RecordProperty("one_flow_mbit", std::to_string(one.goodput_mbit));
  RecordProperty("eight_flows_mbit", std::to_string(eight.goodput_mbit));
  // One flow: at most a 6 MiB window per 160 ms round trip (~315 Mbit/s), far below 1 Gbit/s;
  // eight carry eight windows, up to the link's rate, less the link's time a stall of the
  // machine took (testing::StallMeter).
  EXPECT_LT(one.goodput_mbit, 320);
  EXPECT_GE(eight.goodput_mbit, 3 * one.goodput_mbit);
  EXPECT_GE(eight.goodput_mbit, 920 * (1 - stalled));
  EXPECT_LE(eight.goodput_mbit, 1010);
  // Judged on the multi-flow figure: one flow's shortfall says nothing about the link.
  xdc::check::LinkCheck c;
  c.configured.rate_bps = 1'000'000'000;
  c.reverse.rate_bps = 1'000'000'000;
  c.configured.delay_us = c.reverse.delay_us = 80'000;
  c.rtt_median_ms = 160;
  c.goodput_mbit = one.goodput_mbit;
  c.flows = 8;
  c.multi_goodput_mbit = eight.goodput_mbit;
  xdc::check::judge(c);
  const auto rate = std::find_if(c.verdicts.begin(), c.verdicts.end(),
                                 [](const auto& v) { return v.metric == "rate"; });
  ASSERT_NE(rate, c.verdicts.end());
  EXPECT_EQ(rate->measured, eight.goodput_mbit);
  EXPECT_EQ(rate->ok, eight.goodput_mbit >= 920) << "judged " << rate->measured << " Mbit/s";
}

}  // namespace
