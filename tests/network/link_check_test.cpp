// `xdc check`'s verdicts (harness/check/link_check.h) on figures given, no network.
#include "harness/check/link_check.h"

#include <gtest/gtest.h>

#include <algorithm>
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

TEST(LinkCheck, TheMachinesFloorAddsToTheConfiguredJitterAndRoundTrip) {
  // 1.67 ms measured against 1.414 configured with 200 pings (+18%) fails on its own; with
  // the delay lines released 0.6 ms apart (stdev) each way, expected is
  // hypot(1.414, 0.849) = 1.649 and the same figure passes.
  xdc::check::LinkCheck c;
  c.configured.delay_us = c.reverse.delay_us = 20'000;
  c.configured.jitter_us = c.reverse.jitter_us = 1'000;
  c.rtt_median_ms = 40.6;
  c.rtt_stdev_ms = 1.67;
  c.rtt_samples = 200;
  xdc::check::judge(c);
  EXPECT_FALSE(c.ok());
  c.late_stdev_ms[0] = c.late_stdev_ms[1] = 0.6;
  c.late_mean_ms[0] = c.late_mean_ms[1] = 0.15;
  EXPECT_NEAR(c.floor_stdev_ms(), std::sqrt(0.72), 1e-12);
  xdc::check::judge(c);
  ASSERT_EQ(c.verdicts.size(), 2u);
  EXPECT_NEAR(c.verdicts[0].expected, 40.3, 1e-9);  // the lines' mean lateness each way
  EXPECT_NEAR(c.verdicts[1].expected, std::sqrt(2 + 0.72), 1e-9);
  EXPECT_TRUE(c.ok());
}

TEST(LinkCheck, ARateBeyondTheMachineNamesTheDilationThatFitsIt) {
  // 100 Gbit/s configured, 6 Gbit/s carried: the table says to build it 34 x slower.
  xdc::check::LinkCheck c;
  c.from = "dc1", c.to = "dc2";
  c.configured.delay_us = c.reverse.delay_us = 2'000;
  c.configured.rate_bps = 100'000'000'000;
  c.rtt_median_ms = 4;
  c.goodput_mbit = 5'000, c.flows = 8, c.multi_goodput_mbit = 6'000;
  xdc::check::judge(c);
  EXPECT_FALSE(c.ok());
  const std::string t = xdc::check::to_table({c});
  EXPECT_NE(t.find("dc1 -> dc2: 100000 Mbit/s is more than this machine carried (6000 Mbit/s); "
                   "check it built slower: --time-dilation 34"),
            std::string::npos)
      << t;
  // The same link at k = 40 where each of 8 flows is held by its window (7.8 Gbit/s
  // undilated each, 61 together): more flows, not more dilation.
  c.time_dilation = 40, c.goodput_mbit = 7'800, c.multi_goodput_mbit = 61'000;
  xdc::check::judge(c);
  const std::string w = xdc::check::to_table({c});
  EXPECT_NE(w.find("dc1 -> dc2: each of the 8 flows is window-limited at this round trip (one "
                   "carried 7800 Mbit/s): check it with more flows, --flows 17"),
            std::string::npos)
      << w;
  EXPECT_EQ(w.find("--time-dilation"), std::string::npos) << w;
}

}  // namespace

TEST(LinkCheck, ALinkFasterThanItsHostsIsJudgedAtTheHostsRate) {
  // 800 Gbit/s between DCs whose hosts have 10 Gbit/s links: the probes' flows run host to
  // host, so 9.6 Gbit/s is the link working, and the table says what it was judged at.
  xdc::check::LinkCheck c;
  c.from = "camp1", c.to = "camp2";
  c.configured.delay_us = c.reverse.delay_us = 10;
  c.configured.rate_bps = 800'000'000'000;
  c.host_rate_bps = 10'000'000'000;
  c.rtt_median_ms = 0.02;
  c.goodput_mbit = 9'500, c.flows = 8, c.multi_goodput_mbit = 9'600;
  xdc::check::judge(c);
  EXPECT_TRUE(c.ok());
  EXPECT_NE(xdc::check::to_table({c}).find("camp1 -> camp2: judged at the hosts' intra-DC rate, "
                                           "10000 Mbit/s: the link's 800000 Mbit/s"),
            std::string::npos)
      << xdc::check::to_table({c});
  // Below 92% of the hosts' rate it still fails, and the machine hint names the hosts' rate.
  c.multi_goodput_mbit = 4'000;
  xdc::check::judge(c);
  EXPECT_FALSE(c.ok());
  EXPECT_NE(xdc::check::to_table({c}).find("10000 Mbit/s is more than this machine carried"),
            std::string::npos);
  // A link slower than its hosts is judged at its own rate.
  c.configured.rate_bps = 2'000'000'000, c.multi_goodput_mbit = 1'950;
  xdc::check::judge(c);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.verdicts[1].expected, 2'000);
}

// `xdc check --sample N`: N distinct WAN links of the network, each link once whatever its
// directions, the same for the same seed; all of them when N reaches their number.
TEST(LinkCheck, ASampleDrawsDistinctLinksTheSameForASeed) {
  xdc::net::NetworkState s;
  for (int d = 1; d <= 6; ++d) {
    const std::string a = "dc" + std::to_string(d), b = "dc" + std::to_string(d % 6 + 1);
    xdc::net::ShapedLink there, back;
    there.from = back.to = a;
    there.to = back.from = b;
    s.links.push_back(there);
    s.links.push_back(back);
  }
  const auto all = xdc::check::wan_links(s);
  ASSERT_EQ(all.size(), 6u);
  const auto some = xdc::check::sample_links(s, 3, 7);
  ASSERT_EQ(some.size(), 3u);
  for (const auto& l : some) EXPECT_NE(std::find(all.begin(), all.end(), l), all.end());
  EXPECT_NE(some[0], some[1]);
  EXPECT_NE(some[1], some[2]);
  EXPECT_NE(some[0], some[2]);
  EXPECT_EQ(xdc::check::sample_links(s, 3, 7), some);
  EXPECT_EQ(xdc::check::sample_links(s, 6, 7), all);
  EXPECT_EQ(xdc::check::sample_links(s, 60, 1), all);
  bool other = false;  // another seed draws other links sooner or later
  for (uint64_t seed = 8; seed < 40 && !other; ++seed)
    other = xdc::check::sample_links(s, 3, seed) != some;
  EXPECT_TRUE(other);
}
