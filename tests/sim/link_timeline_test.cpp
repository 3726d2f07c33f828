// Links that change under a simulated run (harness/sim/link_timeline.h): the timeline's
// lookups, the retransmission backoff across an outage, and TimedLinks timing messages on
// the links in force (no change: exactly LinkState).
#include "harness/sim/link_timeline.h"

#include <gtest/gtest.h>

namespace {

using namespace xdc::sim;
constexpr int64_t kMs = 1'000'000;

LinkModel pair(int64_t latency_ms, double bps) {
  return LinkModel::two_dc(2, 1, Link{latency_ms * kMs, bps});
}

LinkSnapshot snap(int64_t at_ms, int64_t latency_ms, double bps, bool down) {
  LinkSnapshot s;
  s.at_ns = at_ms * kMs;
  s.links.assign(4, Link{latency_ms * kMs, bps});
  s.links[0] = s.links[3] = Link{};
  s.down = {0, static_cast<char>(down), static_cast<char>(down), 0};
  return s;
}

TEST(LinkTimeline, LooksUpTheSnapshotInForceAndTheNextCutAndRestore) {
  LinkTimeline t(2);
  t.add(snap(1000, 10, 1e9, true));
  t.add(snap(3000, 10, 1e9, false));
  EXPECT_EQ(t.at(999 * kMs), nullptr);
  EXPECT_EQ(t.at(1000 * kMs)->at_ns, 1000 * kMs);
  EXPECT_FALSE(t.down(0, 1, 500 * kMs));
  EXPECT_TRUE(t.down(0, 1, 2000 * kMs));
  EXPECT_FALSE(t.down(0, 0, 2000 * kMs));
  EXPECT_EQ(t.next_down(0, 1, 0), 1000 * kMs);
  EXPECT_EQ(t.next_down(0, 1, 3500 * kMs), kNeverNs);
  EXPECT_EQ(t.next_up(0, 1, 1500 * kMs), 3000 * kMs);
  EXPECT_EQ(t.next_up(0, 1, 500 * kMs), 500 * kMs);
}

TEST(LinkTimeline, TimersFireAsLinuxsWheelFiresThem) {
  // A tick late under 63 ticks; 1-8 (4.5 expected) under 504; 1-64 under 4032 (4 ms ticks).
  EXPECT_EQ(tcp_timer_fires_ns(248 * kMs), 252 * kMs);
  EXPECT_EQ(tcp_timer_fires_ns(496 * kMs), 514 * kMs);
  EXPECT_EQ(tcp_timer_fires_ns(2012 * kMs), 2030 * kMs);
  EXPECT_EQ(tcp_timer_fires_ns(2016 * kMs), 2146 * kMs);  // 504 ticks: level 2
}

TEST(LinkTimeline, RetransmissionsAcrossACutStartWithTheTailLossProbe) {
  // 40 ms round trip + rto_min, whole 4 ms clock ticks (up); a route's rto_min replaces 200 ms.
  EXPECT_EQ(tcp_rto_ns(TcpPath{}, 40 * kMs), 240 * kMs);
  EXPECT_EQ(tcp_rto_ns(TcpPath{}, 41 * kMs), 244 * kMs);
  TcpPath slow;
  slow.rto_min_ns = 1000 * kMs;
  EXPECT_EQ(tcp_rto_ns(slow, 40 * kMs), 1040 * kMs);
  // srtt 48 ms, RTO 248 ms. One segment out: the probe at the RTO (252 as fired), then the
  // RTO afresh (504), doubled (504 + 514 = 1018), doubled (1018 + 1010 = 2028).
  const TcpPath p;
  EXPECT_EQ(tcp_retransmit_after(p, 48 * kMs, true, 0, 100 * kMs), 252 * kMs);
  EXPECT_EQ(tcp_retransmit_after(p, 48 * kMs, true, 0, 253 * kMs), 504 * kMs);
  EXPECT_EQ(tcp_retransmit_after(p, 48 * kMs, true, 0, 600 * kMs), 1018 * kMs);
  EXPECT_EQ(tcp_retransmit_after(p, 48 * kMs, true, 0, 2000 * kMs), 2028 * kMs);
  // Several segments out: the probe 2 srtt + 2 ms after the last send (25 ticks + 1).
  EXPECT_EQ(tcp_retransmit_after(p, 48 * kMs, false, 0, 100 * kMs), 104 * kMs);
  EXPECT_EQ(tcp_retransmit_after(p, 48 * kMs, false, 0, 105 * kMs), 356 * kMs);
  EXPECT_EQ(tcp_retransmit_after(p, 48 * kMs, true, 0, kNeverNs), kNeverNs);
  // The pipeline's srtt: 1 MiB bursts at 1 Gbit/s queue 4.2 ms on average.
  EXPECT_EQ(tcp_message_srtt_ns(40 * kMs, 1 << 20, 1e9), 44'194'304);
}

TEST(TimedLinks, WithoutChangesTimesEveryMessageAsLinkState) {
  const LinkModel m = pair(20, 1e9);
  LinkTimeline none(2);
  TimedLinks timed(m, none, 5000 * kMs);
  LinkState plain(m);
  for (int64_t ready : std::vector<int64_t>{0, 1 * kMs, 50 * kMs, 51 * kMs}) {
    const Transfer a = timed.send(0, 1, 1 << 20, ready), b = plain.send(0, 1, 1 << 20, ready);
    EXPECT_EQ(a.start_ns, b.start_ns);
    EXPECT_EQ(a.end_ns, b.end_ns);
    EXPECT_EQ(a.arrival_ns, b.arrival_ns);
  }
}

TEST(TimedLinks, ADelayChangeAppliesToMessagesSentAfterIt) {
  const LinkModel m = pair(20, 0);
  LinkTimeline t(2);
  t.add(snap(1000, 80, 0, false));
  TimedLinks timed(m, t, 0);
  EXPECT_EQ(timed.send(0, 1, 100, 999 * kMs).arrival_ns, 1019 * kMs);
  EXPECT_EQ(timed.send(0, 1, 100, 1500 * kMs).arrival_ns, 1580 * kMs);
  // The same on a clock offset by the iteration's origin.
  TimedLinks late(m, t, 900 * kMs);
  EXPECT_EQ(late.arrival(0, 1, 0, 50 * kMs), 70 * kMs);    // 950 ms: 20 ms
  EXPECT_EQ(late.arrival(0, 1, 0, 150 * kMs), 230 * kMs);  // 1050 ms: 80 ms
}

TEST(TimedLinks, AMessageSentIntoAnOutageWaitsForTheRetransmissionAfterIt) {
  const LinkModel m = pair(20, 0);  // 40 ms round trip: rto 240 ms
  LinkTimeline t(2);
  t.add(snap(1000, 20, 0, true));
  t.add(snap(3000, 20, 0, false));
  TimedLinks timed(m, t, 0);
  // Lost at 1100 ms, one segment out: the probe at +244 (the RTO as fired), the RTO at +488,
  // +986, +1964 = 3064 ms (up at 3000).
  const Transfer x = timed.send(0, 1, 100, 1100 * kMs);
  EXPECT_EQ(x.arrival_ns, 3064 * kMs + 20 * kMs);
  // The pair's next message waits for that recovery; the other direction is cut as well.
  EXPECT_GE(timed.send(0, 1, 100, 1200 * kMs).arrival_ns, x.arrival_ns);
  EXPECT_GT(timed.arrival(1, 0, 0, 2000 * kMs), 3000 * kMs);
  // Before and after the outage: the link's latency.
  TimedLinks fresh(m, t, 0);
  EXPECT_EQ(fresh.arrival(1, 0, 0, 500 * kMs), 520 * kMs);
  EXPECT_EQ(fresh.arrival(0, 1, 0, 3500 * kMs), 3520 * kMs);
}

TEST(TimedLinks, TheRestOfAMessageCutOnTheWireFollowsInSlowStart) {
  const LinkModel m = pair(20, 1e9);
  LinkTimeline t(2);
  t.add(snap(1004, 20, 1e9, true));  // 4 ms into an 8.4 ms transfer of 1 MiB
  t.add(snap(1500, 20, 1e9, false));
  TimedLinks timed(m, t, 0);
  const Transfer x = timed.send(0, 1, 1 << 20, 1000 * kMs);
  // Lost at 1004 ms with many segments out and no ACK after the cut (both directions cut):
  // srtt 44.2 ms (the burst's queueing), the probe at 1100 (2 srtt + 2 ms, as fired), the
  // RTO (248 ms) at 1352, doubled at 1866 (after the restore); what the 4 ms before the
  // cut did not send (548576 of 1048576 bytes) follows from one segment doubling every
  // 40 ms: 8 round trips, then its serialisation.
  const int64_t serial = int64_t{1} << 23;  // 1 MiB at 1 Gbit/s, ns
  const auto left = static_cast<int64_t>((1 << 20) * static_cast<double>(serial - 4 * kMs) /
                                         static_cast<double>(serial));
  EXPECT_EQ(left, 548'576);
  EXPECT_EQ(tcp_slow_start_ns(left, 40 * kMs, 1e9), 8 * 40 * kMs + 4'388'608);
  EXPECT_EQ(x.end_ns, 1866 * kMs + tcp_slow_start_ns(left, 40 * kMs, 1e9)) << "end " << x.end_ns;
  EXPECT_EQ(x.arrival_ns, x.end_ns + 20 * kMs);
  EXPECT_GT(tcp_slow_start_ns(1 << 20, 40 * kMs, 1e9), 9 * 40 * kMs);
}

}  // namespace
