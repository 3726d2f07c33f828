// Runtime changes of a shaped direction (reshape_egress, shaper.h), with each backend, on
// GW's egress towards B of a testbed::Line, measured from A to B while traffic flows:
//  - a delay change is in force for packets sent >= 1 ms after reshape_egress returned
//    (a one-way UDP stream every 0.5 ms, send and arrival on one clock), with no packet
//    lost or reordered, and nothing torn down (same delay line, qdisc counters go on);
//  - a rate change is in force within 10 ms of that (received bytes per 10 ms of a UDP
//    stream above the rate), and the only drops are the rate stage's overflow, counted
//    exactly;
//  - under a saturating TCP flow, delay changes up and down drop nothing (no TCP
//    retransmission, no drop counted) and reorder nothing (a UDP stream in the same queue);
//  - after a rate decrease under TCP, the only drops are the bottleneck queue's overflow.
// How long reshape_egress itself takes (the request until the change is in force) is a
// speed figure: scripts/bench_dynamic.sh measures it (0.2-0.4 ms on the userspace backend
// here); the tests print it.
// The kernel cases skip where the kernel has no sch_netem; ctest runs them inside the
// User-Mode Linux guest (shaper_kernel_backend_in_uml), where they must run. There a
// change's netlink work (milliseconds of the guest's one CPU when it opened its socket
// and found the interface for each change; 0.2-0.6 ms since ReshapeHandle keeps them)
// holds back netem's timers: packets in flight then arrive late by as much, so the UML
// entry widens the upper delay bound (XDC_RESHAPE_SLACK_MS=20; default 2) and the time
// after reshape_egress returns from which a delay change must be in force
// (XDC_RESHAPE_GRACE_MS=2; default 1: there changes were measured in force 0.4-1.6 ms after
// the request, 1.3-4.4 ms before the handle). Lower bounds, order, loss and drop counts
// are the real kernel's.
#include "tests/shaper/reshape.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "netem/nl/netns.h"
#include "netem/shaper/qdisc.h"
#include "netem/shaper/shaper.h"
#include "tests/common/stall_meter.h"
#include "tests/shaper/testbed.h"

namespace xdc::netem {
void PrintTo(Backend b, std::ostream* os);  // fidelity_test.cpp
}  // namespace xdc::netem

namespace xdc::testbed {
namespace {

using netem::Backend;
using netem::LinkParams;

void sleep_s(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

// ShapedDirection (reshape.h), saying how long each change took to be in force.
struct Shaped : ShapedDirection {
  using ShapedDirection::ShapedDirection;
  std::pair<int64_t, int64_t> change(const LinkParams& p) {
    auto t = ShapedDirection::change(p);
    std::printf("RESHAPE delay %.1f ms rate %.1f mbit: in force %.3f ms after the request\n",
                p.delay_us / 1e3, p.rate_bps / 1e6, (t.second - t.first) / 1e6);
    return t;
  }
};

class Reshape : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() { line_ = std::make_unique<Line>("rsh"); }
  static void TearDownTestSuite() { line_.reset(); }
  void SetUp() override {
    if (GetParam() == Backend::kKernel) {
      std::string why;
      if (!netem::kernel_has_netem(&why)) {
        if (std::getenv("XDC_UML_GUEST")) FAIL() << "UML guest without sch_netem: " << why;
        GTEST_SKIP() << "kernel backend not measured: this kernel has no sch_netem (" << why << ")";
      }
    }
  }
  // A late timer only adds delay: the upper bound allows for the machine's wake-up
  // latency and load (see the top of this file).
  static double upper_slack_ms() {
    const char* s = std::getenv("XDC_RESHAPE_SLACK_MS");
    return s ? std::atof(s) : 2.0;
  }
  // How long after a change returns it may take to be in force: 1 ms (the target, which
  // the userspace delay line meets); the UML guest's run sets XDC_RESHAPE_GRACE_MS, its
  // netlink changes measured in force 1.3-4.4 ms after the request (scripts/bench_dynamic.sh's
  // kernel backend in the guest), so there a packet sent 1-4 ms after the return may still get
  // the old delay. A grace above 1 ms also opens the window that much less 1 ms before the
  // request: in the guest a packet stamped just before it (user space, then sendto) was
  // seen reaching the qdisc after the change (5 ms after a 30 -> 5 ms change, then FIFO
  // behind the packet before it: 29.3 ms).
  static double grace_ms() {
    const char* s = std::getenv("XDC_RESHAPE_GRACE_MS");
    return s ? std::atof(s) : 1.0;
  }
  static std::unique_ptr<Line> line_;
};
std::unique_ptr<Line> Reshape::line_;

TEST_P(Reshape, DelayChangeIsInForceWithin1msWithoutLossOrReorder) {
  const Line& l = *line_;
  LinkParams p;
  p.delay_us = 10'000;
  Shaped s(GetParam(), l, p);
  const pid_t delayline = s.r.delayline_pid;
  OneWayResult res;
  std::thread stream([&] { res = one_way_stream(l.a, l.b, l.b_ip, 3000, 0.0005, 32, 0.3); });
  sleep_s(0.5);
  LinkParams up = p, down = p;
  up.delay_us = 30'000;
  down.delay_us = 5'000;
  auto [t1, t1_done] = s.change(up);
  sleep_s(0.5);
  auto [t2, t2_done] = s.change(down);
  stream.join();
  netem::ShapeCounters c = netem::shape_counters(s.r);

  EXPECT_EQ(res.lost(), 0);
  EXPECT_EQ(res.reorders(), 0);
  EXPECT_EQ(s.r.delayline_pid, delayline) << "the delay line was replaced";
  EXPECT_GE(c.sent, 3000u) << "counters restarted: the shaper was rebuilt";
  EXPECT_EQ(c.loss_drops + c.delay_queue_drops + c.rate_queue_drops, 0u);

  // Expected one-way delay by send time: old before the request, new from 1 ms after the
  // change was in force; after the decrease a packet may wait behind those sent before it
  // (FIFO), no longer.
  // early: the send and receive stamps are two clock readings (both the kernel's, see
  // one_way_stream); one packet of ~3000 came 0.09 ms early for 10 ms here with a
  // user-space send stamp (cause not pinned down). A change not in force is off by
  // milliseconds, far beyond this.
  // The delay line's own worst release lateness over its life (this test's; the kernel
  // backend has none): a packet late by up to that was held by a busy host waking the line
  // late, not by a change out of force (which the line would release on time, at the old
  // delay).
  const double line_late_ms = netem::delayline_stats(s.r).value("late_max_us", 0.0) / 1e3;
  const double slack = upper_slack_ms(), early = 0.25;
  const auto ms = static_cast<int64_t>(grace_ms() * 1e6);  // in force this long after
  const int64_t before = ms - 1'000'000;                   // ambiguous this long before
  int checked = 0, bad = 0, late = 0;
  int64_t last_old_arrival = 0;  // latest arrival of a packet sent before the decrease
  std::string first_bad;
  for (const auto& pk : res.packets) {
    if (pk.arrived_ns < 0) continue;
    double owd = (pk.arrived_ns - pk.sent_ns) / 1e6;
    double low, high;
    if (pk.sent_ns < t1 - before) {
      low = 10, high = 10 + slack;
    } else if (pk.sent_ns < t1_done + ms) {
      continue;  // while the change is made, and the millisecond after
    } else if (pk.sent_ns < t2 - before) {
      low = 30, high = 30 + slack;
    } else if (pk.sent_ns < t2_done + ms) {
      last_old_arrival = std::max(last_old_arrival, pk.arrived_ns);
      continue;
    } else {
      low = 5;
      high = std::max(5.0, (last_old_arrival - pk.sent_ns) / 1e6) + slack;
    }
    if (pk.sent_ns < t2_done + ms) last_old_arrival = std::max(last_old_arrival, pk.arrived_ns);
    ++checked;
    high += line_late_ms;
    if (owd > high && owd >= low) ++late;  // counted below: the host's scheduling noise
    if (owd < low - early || owd > high) {
      if (bad++ == 0)
        first_bad = "sent " + std::to_string((pk.sent_ns - t1) / 1e6) + " ms after the first " +
                    "change: one-way " + std::to_string(owd) + " ms, expected " +
                    std::to_string(low) + ".." + std::to_string(high);
    }
  }
  std::printf(
      "RESHAPE delay 10 -> 30 -> 5 ms: %d packets checked, %d off, lost %d, reordered %d; the "
      "delay line released at most %.3f ms late; %d send times the kernel's\n",
      checked, bad, res.lost(), res.reorders(), line_late_ms, res.kernel_send_stamps);
  EXPECT_GT(checked, 2800);
  // No packet may arrive before its delay (a change not yet in force, or reordering); a
  // few may arrive late by more than the slack and the line's own lateness when a busy host
  // wakes the receiver late (seen: 1-2 of ~2900, by 0.6 ms on the host, 9 ms in the UML
  // guest): at most 1 in 500.
  EXPECT_EQ(bad - late, 0) << first_bad;
  EXPECT_LE(late, std::max(2, checked / 500)) << first_bad;
}

TEST_P(Reshape, RateChangeIsInForceWithin10msAndOnlyTheQueueDrops) {
  const Line& l = *line_;
  LinkParams p;
  p.delay_us = 2'000;
  p.rate_bps = 20'000'000;
  Shaped s(GetParam(), l, p);
  // 1400-byte datagrams at 30 Mbit/s of payload: above every rate below, so the rate
  // stage is always busy and its overflow drops the rest.
  const int payload = 1400, count = 4000;
  const double interval = payload * 8 / 30e6;
  OneWayResult res;
  xdc::testing::StallMeter stalls(netem::ShapeOptions{}.rt_prio, stall_meter_period());
  std::thread stream(
      [&] { res = one_way_stream(l.a, l.b, l.b_ip, count, interval, payload, 0.3, 0.001); });
  sleep_s(0.5);
  LinkParams slow = p, mid = p;
  slow.rate_bps = 8'000'000;
  mid.rate_bps = 16'000'000;
  auto [t1, t1_done] = s.change(slow);
  sleep_s(0.5);
  auto [t2, t2_done] = s.change(mid);
  stream.join();
  const double stalled = stalls.stop();
  netem::ShapeCounters c = netem::shape_counters(s.r);

  // Received per 10 ms bin, from 10 ms after each change was in force: L2 bytes as tbf
  // counts them. (tbf refills its bucket on a change: up to one bucket, 1 ms at the rate
  // or 8 frames, may pass at once.) In force within 10 ms: the median of the first five
  // bins is the new rate's (the old one's is twice or half of it). The rate itself: the
  // bins' total over their span, within 2%. A process of this machine woken late (the
  // delay line, the receiver) moves packets into the next bin, and a stall of the delay
  // line long enough to empty the rate stage's queue loses a few bins' worth of the
  // link's time for good; neither is the rate stage's. The first moves neither figure
  // much; the second takes the stalled share of the time (testing::StallMeter) from the
  // rate's lower bound.
  const double wire_bits = (payload + 8 + 20 + 14) * 8.0;
  auto bins_after = [&](int64_t from, int64_t to, double rate_bps) {
    std::vector<int> got;
    const double expect = rate_bps * 0.01 / wire_bits;
    for (int64_t b = from + 10'000'000; b + 10'000'000 <= to; b += 10'000'000) {
      int n = 0;
      for (const auto& pk : res.packets) n += pk.arrived_ns >= b && pk.arrived_ns < b + 10'000'000;
      got.push_back(n);
    }
    std::string seen;
    for (size_t i = 0; i < got.size() && i < 12; ++i) seen += std::to_string(got[i]) + " ";
    std::vector<int> first(got.begin(), got.begin() + std::min<size_t>(5, got.size()));
    std::sort(first.begin(), first.end());
    const double median = first.empty() ? 0 : first[first.size() / 2];
    const double rate = std::accumulate(got.begin(), got.end(), 0.0) /
                        std::max<double>(1, static_cast<double>(got.size())) * wire_bits / 0.01;
    std::printf(
        "RESHAPE rate %.0f mbit: %zu bins of 10 ms from 10 ms after the change; first packets "
        "per bin: %s(expected %.1f); median of the first five %.0f; %.2f mbit over them all; "
        "the machine stalled %.1f%% of the time\n",
        rate_bps / 1e6, got.size(), seen.c_str(), expect, median, rate / 1e6, 100 * stalled);
    EXPECT_GE(got.size(), 20u);
    EXPECT_NEAR(median, expect, 2.0) << "not in force 10 ms after the change";
    EXPECT_GE(rate, 0.98 * rate_bps * (1 - stalled));
    EXPECT_LE(rate, 1.02 * rate_bps);
  };
  int64_t last_arrival = 0;
  for (const auto& pk : res.packets) last_arrival = std::max(last_arrival, pk.arrived_ns);
  bins_after(t1_done, t2, 8e6);
  bins_after(t2_done, last_arrival - 50'000'000, 16e6);
  EXPECT_EQ(res.reorders(), 0);
  // Every datagram lost was the rate stage's overflow, and counted as such.
  std::printf(
      "RESHAPE rate drops: lost %d of %d; counted loss %lu delay-queue %lu rate-queue %lu\n",
      res.lost(), count, c.loss_drops, c.delay_queue_drops, c.rate_queue_drops);
  EXPECT_GT(res.lost(), 0);
  EXPECT_EQ(c.loss_drops, 0u);
  EXPECT_EQ(c.delay_queue_drops, 0u);
  EXPECT_EQ(c.rate_queue_drops, static_cast<uint64_t>(res.lost()));
}

TEST_P(Reshape, ARateAChangeAddedGoesAtTheRestoreAfterItsQueue) {
  // A change adds a rate to a direction without one (an experiment's `changes:`), and the
  // end of the run's changes restores the direction: the rate stage goes, once what it
  // holds has left, and from then on the stream passes unthrottled, in order, whole.
  const Line& l = *line_;
  LinkParams p;
  p.delay_us = 2'000;
  Shaped s(GetParam(), l, p);
  const int payload = 1400, count = 3000;
  const double interval = payload * 8 / 12e6;  // 12 Mbit/s of payload
  OneWayResult res;
  std::thread stream(
      [&] { res = one_way_stream(l.a, l.b, l.b_ip, count, interval, payload, 0.3, 0.001); });
  sleep_s(0.5);
  LinkParams slow = p;
  slow.rate_bps = 8'000'000;  // below the stream: the rate stage is busy and full
  s.change(slow);
  EXPECT_FALSE(s.r.rate_qdisc.empty());
  sleep_s(0.5);
  auto [t2, t2_done] = s.change(p);
  stream.join();
  int after = 0, lost_after = 0, throttled_before = 0, slow_period = 0;
  for (const auto& pk : res.packets) {
    if (pk.sent_ns >= t2_done) {
      ++after;
      lost_after += pk.arrived_ns < 0;
    } else if (pk.sent_ns >= t2 - 400'000'000) {
      ++slow_period;
      throttled_before += pk.arrived_ns < 0;
    }
  }
  std::printf(
      "RESHAPE rate removed: %d datagrams sent after, %d lost; %d of %d lost while 8 mbit\n", after,
      lost_after, throttled_before, slow_period);
  EXPECT_GT(throttled_before, 0) << "the added rate did not throttle";
  EXPECT_GT(after, 1000);
  EXPECT_EQ(lost_after, 0);
  EXPECT_EQ(res.reorders(), 0);
  EXPECT_TRUE(s.r.rate_qdisc.empty());
  const uint32_t stage = GetParam() == Backend::kKernel ? netem::kChildHandle : netem::kRootHandle;
  EXPECT_FALSE(netem::qdisc_counters(s.r.netns, s.r.ifname, stage).found)
      << "the rate stage is still there";
}

TEST_P(Reshape, DelayChangesUnderSaturatingTcpDropAndReorderNothing) {
  const Line& l = *line_;
  LinkParams p;
  p.delay_us = 10'000;
  p.rate_bps = 50'000'000;
  p.queue_pkts = 2000;  // 3 MB: more than the flow's window below, so no overflow
  Shaped s(GetParam(), l, p);
  // B advertises at most ~1-2 MiB: the flow fills 50 Mbit/s at every delay below (BDP at
  // 60 ms: 375 kB) and never overflows the bottleneck, so any drop is the changes' doing.
  nl::write_sysctl(l.b, "net/ipv4/tcp_rmem", "4096 131072 2097152");
  big_tcp_buffers(l.a);
  IperfResult tcp;
  OneWayResult probe;
  std::thread flow([&] { tcp = iperf_tcp(l.a, l.b, l.b_ip, 5, 0); });
  std::thread stream([&] { probe = one_way_stream(l.a, l.b, l.b_ip, 5000, 0.001, 32, 0.5); });
  for (uint64_t d : {60'000, 5'000, 40'000, 10'000}) {
    sleep_s(1.0);
    LinkParams q = s.was;
    q.delay_us = d;
    s.change(q);
  }
  flow.join();
  stream.join();
  netem::ShapeCounters c = netem::shape_counters(s.r);
  std::printf(
      "RESHAPE tcp under delay changes 10/60/5/40/10 ms: goodput %.1f Mbit/s, "
      "retransmits %ld; probe lost %d reordered %d; drops loss %lu delay-queue %lu "
      "rate-queue %lu\n",
      tcp.goodput_bps / 1e6, tcp.retransmits, probe.lost(), probe.reorders(), c.loss_drops,
      c.delay_queue_drops, c.rate_queue_drops);
  ASSERT_TRUE(tcp.error.empty()) << tcp.error;
  EXPECT_GT(tcp.goodput_bps, 0.5 * 50e6) << "the flow did not saturate the link";
  // Not held: TCP's retransmissions. A step up in delay past the tail loss probe's timeout
  // (2 srtt) makes Linux send probes, counted as retransmissions though nothing was lost;
  // what the shaper dropped and the probe stream's order are what a change must not touch.
  EXPECT_EQ(probe.lost(), 0);
  EXPECT_EQ(probe.reorders(), 0);
  EXPECT_EQ(c.loss_drops + c.delay_queue_drops + c.rate_queue_drops, 0u);
}

TEST_P(Reshape, RateDecreaseUnderTcpDropsOnlyFromTheBottleneckQueue) {
  const Line& l = *line_;
  const RateDecrease r = rate_decrease_under_tcp(GetParam(), l);
  const IperfResult& tcp = r.tcp;
  const netem::ShapeCounters &before = r.before, &c = r.after;
  std::printf(
      "RESHAPE tcp rate 50 -> 10 mbit: goodput %.1f Mbit/s, retransmits %ld; drops "
      "before the change %lu, after: loss %lu delay-queue %lu rate-queue %lu\n",
      tcp.goodput_bps / 1e6, tcp.retransmits,
      before.loss_drops + before.delay_queue_drops + before.rate_queue_drops, c.loss_drops,
      c.delay_queue_drops, c.rate_queue_drops);
  ASSERT_TRUE(tcp.error.empty()) << tcp.error;
  EXPECT_EQ(c.loss_drops, 0u);
  EXPECT_EQ(c.delay_queue_drops, 0u);
  EXPECT_GT(c.rate_queue_drops, before.rate_queue_drops) << "TCP never overflowed 10 Mbit/s";
  EXPECT_GT(tcp.retransmits, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, Reshape,
                         ::testing::Values(Backend::kUserspace, Backend::kKernel),
                         [](const auto& info) {
                           return std::string(netem::to_string(info.param));
                         });

}  // namespace
}  // namespace xdc::testbed
