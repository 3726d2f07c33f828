// The TCP model's congestion and random loss (tcp_model.h, LinkState): the bottleneck's
// queue, the hops before it, CUBIC's cuts and growth, random loss positions, a lone message's
// rounds and the workers' stripes. The kernel checks of these rules are in tests/network
// (shared_bottleneck_test.cpp, routed_burst_test.cpp); the measurements they were held
// against are named at each test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "harness/sim/link_model.h"
#include "harness/sim/tcp_model.h"
#include "workloads/worker/stripe_pieces.h"

namespace {

using xdc::sim::LinkModel;
using xdc::sim::LinkState;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kMiB = 1 << 20;

// Two ranks `latency_ns` apart at an infinite rate (the windows alone decide), each pair
// striped over `stripes` connections of the stock buffers' window, no rendezvous.
LinkModel striped_pair(int64_t latency_ns, int stripes, double loss = 0) {
  LinkModel m = LinkModel::uniform(2, {latency_ns, 0});
  xdc::sim::TcpPath p;
  p.eager_limit = xdc::sim::kNoRendezvous;
  p.window_bytes = xdc::sim::tcp_window_bytes(4 << 20, 6 << 20);
  p.connections = stripes;
  p.loss = loss;
  m.tcp.assign(4, p);
  return m;
}

}  // namespace

namespace {

// A path with a bottleneck of 45 segments' bandwidth-delay product (20 ms there and back)
// behind a tbf that holds 41 frames (CrossPipe's (0.25, 2) point).
xdc::sim::TcpPath bottleneck() {
  xdc::sim::TcpPath p;
  p.bdp_bytes = 45 * xdc::sim::kTcpMss;
  p.queue_bytes = 41 * xdc::sim::kTcpMss;
  return p;
}

TEST(TcpModel, ABurstLargerThanTheBottleneckQueueLosesAndCubicCutsTheWindow) {
  using xdc::sim::kTcpMss;
  const auto p = bottleneck();
  xdc::sim::TcpConn c;
  c.cwnd = 100 * kTcpMss;  // a window left from earlier, the pipe empty: it leaves at once
  EXPECT_EQ(xdc::sim::tcp_round(c, p, 20 * kMs, 0, 181 * kTcpMss), 41 * kTcpMss)
      << "what the queue holds gets through; the rest follows";
  EXPECT_EQ(c.w_max, 100 * kTcpMss);
  EXPECT_EQ(c.ssthresh, 70 * kTcpMss);  // CUBIC's beta 0.7
  EXPECT_EQ(c.cwnd, 70 * kTcpMss);
  // The next round is clocked by this one's ACKs: 41 segments paced, 29 more at once.
  const int64_t next = xdc::sim::tcp_round(c, p, 20 * kMs, 20 * kMs, 140 * kTcpMss);
  EXPECT_EQ(next, 70 * kTcpMss) << "no loss: 29 at once fit the queue";
  EXPECT_GT(c.cwnd, 70 * kTcpMss) << "congestion avoidance grows it";
  EXPECT_LE(c.cwnd, 105 * kTcpMss) << "by at most half per round trip";
}

// A burst after idle leaves at once but reaches the bottleneck at the host's rate, which
// serves part of it while it arrives (TcpPath::idle_burst_bytes; the kernel's check:
// tests/network/routed_burst_test.cpp, IdleBurst); a round the previous one's ACKs clock
// sends its growth interleaved with them, each segment of it queueing.
TEST(TcpModel, AfterIdleTheBottleneckServesPartOfTheBurstWhileItArrives) {
  using xdc::sim::kTcpMss;
  auto p = bottleneck();
  p.idle_burst_bytes = 60 * kTcpMss;  // fed at about a third over its rate
  xdc::sim::TcpConn warm;             // a window left from earlier, HyStart done
  warm.cwnd = 100 * kTcpMss;
  warm.hystart_found = true;
  xdc::sim::TcpConn c = warm;
  EXPECT_EQ(xdc::sim::tcp_round(c, p, 20 * kMs, 0, 55 * kTcpMss), 55 * kTcpMss)
      << "55 segments pass a queue and bucket of 41 fed that slowly";
  EXPECT_EQ(c.ssthresh, 0) << "no loss";
  xdc::sim::TcpConn d = warm;
  EXPECT_EQ(xdc::sim::tcp_round(d, p, 20 * kMs, 0, 80 * kTcpMss), 60 * kTcpMss)
      << "beyond 60 the queue overflows";
  EXPECT_EQ(d.cwnd, 56 * kTcpMss) << "CUBIC's cut of the 80 sent";
  // Clocked by a round of 20: 20 more interleave with its ACKs and queue one for one; of
  // the other 21 segments of the queue's room a burst of 21 x 60 / 41 passes.
  xdc::sim::TcpConn e = warm;
  e.cwnd = 200 * kTcpMss;
  xdc::sim::tcp_round(e, p, 20 * kMs, 0, 20 * kTcpMss);
  const int64_t passed = xdc::sim::tcp_round(e, p, 20 * kMs, 20 * kMs, 150 * kTcpMss);
  EXPECT_NEAR(static_cast<double>(passed), (20 + 20 + 21.0 * 60 / 41) * kTcpMss, 2);
  // Where nothing is known of the feed, the burst arrives at once: the queue alone.
  xdc::sim::TcpConn f = warm;
  EXPECT_EQ(xdc::sim::tcp_round(f, bottleneck(), 20 * kMs, 0, 55 * kTcpMss), 41 * kTcpMss);
}

// Jitter's bunches (TcpPath::jitter_hold_ns): a round the previous one's ACKs clock,
// which fits the pipe and the queue over a steady path, overflows the queue when the delay
// lines hold and release its packets in bunches worth the pipe.
TEST(TcpModel, JittersBunchesTakeTheAckClocksCreditAtTheBottleneck) {
  using xdc::sim::kTcpMss;
  auto steady = bottleneck();
  auto jittery = bottleneck();
  jittery.jitter_hold_ns.fill(20 * kMs);  // a round trip's worth of bunching: no credit left
  for (auto* p : {&steady, &jittery}) {
    xdc::sim::TcpConn c;
    c.cwnd = 80 * kTcpMss;
    c.hystart_found = true;  // an earlier slow start's: only the queue can end this one
    ASSERT_EQ(xdc::sim::tcp_round(c, *p, 20 * kMs, 0, 40 * kTcpMss), 40 * kTcpMss);
    // 80 segments clocked by the 40 before: 40 in the pipe, 40 queued, over a steady path.
    const int64_t sent = xdc::sim::tcp_round(c, *p, 20 * kMs, 20 * kMs, 80 * kTcpMss);
    if (p == &steady) {
      EXPECT_EQ(sent, 80 * kTcpMss);
      EXPECT_EQ(c.ssthresh, 0);
    } else {
      EXPECT_EQ(sent, 41 * kTcpMss) << "only the queue's worth gets through";
      EXPECT_EQ(c.ssthresh, 56 * kTcpMss) << "CUBIC cut 0.7 x 80";
    }
  }
}

TEST(TcpModel, AWindowWithinTheBottleneckQueueLosesNothing) {
  using xdc::sim::kTcpMss;
  const auto p = bottleneck();
  xdc::sim::TcpConn c;
  c.cwnd = 40 * kTcpMss;
  c.hystart_found = true;  // an earlier slow start's: only the queue can end this one
  EXPECT_EQ(xdc::sim::tcp_round(c, p, 20 * kMs, 0, 181 * kTcpMss), 40 * kTcpMss);
  EXPECT_EQ(c.ssthresh, 0) << "no loss yet: slow start has no end";
  EXPECT_EQ(c.cwnd, 80 * kTcpMss);
  // Clocked rounds overflow once they pass the bandwidth-delay product plus the queue.
  EXPECT_EQ(xdc::sim::tcp_round(c, p, 20 * kMs, 20 * kMs, 181 * kTcpMss), 80 * kTcpMss);
  EXPECT_EQ(xdc::sim::tcp_round(c, p, 20 * kMs, 40 * kMs, 181 * kTcpMss), 86 * kTcpMss)
      << "86 = 45 in the pipe + 41 queued";
  EXPECT_EQ(c.ssthresh, 112 * kTcpMss);  // 0.7 x the window (160) at the loss
}

// A connection the send buffer limits grows its window past what is in flight (slow start
// while below twice that: tcp_is_cwnd_limited). Where the bottleneck's queue holds the burst
// of a whole send buffer that a message's first round leaves, nothing is lost and the
// window reaches twice the flight (tcp_probe: 4 MiB all-reduces at 1 Gbit/s, 40 ms one way,
// 2964-3089 segments after rounds of at most 1498); where it cannot, the bursts' losses keep the
// window near the buffer's (kCwndOverWindow; tcp_probe: GeoPipe at 100 Mbit/s and 200 ms,
// 2892-segment bursts into a 2475-segment queue, cwnd 2000-2250).
TEST(TcpModel, ABufferLimitedWindowStaysNearTheBufferOnlyWhereItsBurstsOverflow) {
  using xdc::sim::kTcpMss;
  EXPECT_EQ(xdc::sim::tcp_burst_bytes(4 * kMiB, 6 * kMiB), 4 * kMiB) << "the whole send buffer";
  EXPECT_EQ(xdc::sim::tcp_burst_bytes(4 * kMiB, 4 * kMiB), std::llround(198.0 / 256 * 4 * kMiB))
      << "what an empty receive buffer advertises";
  auto grown = [](int64_t queue_segments) {
    xdc::sim::TcpPath p;
    p.window_bytes = xdc::sim::tcp_window_bytes(4 * kMiB, 6 * kMiB);
    p.burst_bytes = xdc::sim::tcp_burst_bytes(4 * kMiB, 6 * kMiB);
    p.bdp_bytes = 10 * kMiB;  // the buffer, not the link, limits
    p.queue_bytes = queue_segments * kTcpMss;
    xdc::sim::TcpConn c;
    c.cwnd = p.window_bytes;
    for (int64_t t = 0; t < 10; ++t) xdc::sim::tcp_round(c, p, 80 * kMs, t * 80 * kMs, 64 * kMiB);
    EXPECT_EQ(c.ssthresh, 0) << "no loss in either";
    return static_cast<double>(c.cwnd) / static_cast<double>(p.window_bytes);
  };
  EXPECT_DOUBLE_EQ(grown(5000), 2.0) << "the queue holds a whole buffer's burst";
  EXPECT_NEAR(grown(2475), 1.1, 1e-6) << "it does not";
}

// n connections of one path are one aggregate window: an overflow reaches as many of
// them as it loses segments (at most n), and the aggregate backs off by that share.
TEST(TcpModel, AnOverflowCutsTheShareOfTheConnectionsItReaches) {
  using xdc::sim::kTcpMss;
  auto p = bottleneck();
  p.connections = 4;
  xdc::sim::TcpConn one, all;
  one.cwnd = all.cwnd = 200 * kTcpMss;  // bursts after idle: only the queue takes them
  EXPECT_EQ(xdc::sim::tcp_round(one, p, 20 * kMs, 0, 42 * kTcpMss), 41 * kTcpMss);
  EXPECT_NEAR(one.ssthresh, 0.925 * 42 * kTcpMss, 1)  // one segment lost: 1 of 4 backs off
      << "1 - 0.3 / 4 of the window at the loss";
  EXPECT_EQ(xdc::sim::tcp_round(all, p, 20 * kMs, 0, 60 * kTcpMss), 41 * kTcpMss);
  EXPECT_EQ(all.ssthresh, 42 * kTcpMss) << "19 segments lost reach all 4: 0.7 x 60";
}

// A route whose hops before the bottleneck pass 100 segments at once (TcpPath::
// upstream_bytes; tests/network/routed_burst_test.cpp checks it against the kernel): a
// warm connection's burst after idle of 90 segments passes, one of 300 is cut, and the
// same 300 paced by the previous round's ACKs pass.
TEST(TcpModel, ABurstBeyondWhatTheHopsBeforeTheBottleneckPassIsCut) {
  xdc::sim::TcpPath p = bottleneck();
  p.queue_bytes = 1000 * xdc::sim::kTcpMss;  // the bottleneck's own queue never overflows
  p.bdp_bytes = 1000 * xdc::sim::kTcpMss;
  p.upstream_bytes = 100 * xdc::sim::kTcpMss;
  auto burst = [&](int64_t segments, bool clocked) {
    xdc::sim::TcpConn c;
    c.cwnd = 400 * xdc::sim::kTcpMss;
    c.last_send_ns = 0;
    if (clocked) {  // the previous round, a round trip ago, sent as much
      c.round_ns = 0;
      c.round_bytes = segments * xdc::sim::kTcpMss;
    }
    const int64_t now = clocked ? 20 * kMs : 100 * kMs;
    const int64_t sent = xdc::sim::tcp_round(c, p, 20 * kMs, now, segments * xdc::sim::kTcpMss);
    return std::make_pair(sent / xdc::sim::kTcpMss, c.ssthresh > 0);
  };
  EXPECT_EQ(burst(90, false), std::make_pair(int64_t{90}, false));
  EXPECT_EQ(burst(300, false), std::make_pair(int64_t{100}, true));
  EXPECT_EQ(burst(300, true), std::make_pair(int64_t{300}, false));
}

TEST(TcpModel, MessagesOverAShallowBottleneckTakeLongerThanOverADeepOne) {
  // 256 KiB every 120 ms (1F1B's rhythm at CrossPipe's (0.25, 2) point): each message's
  // first round leaves at once; a shallow queue loses part of it, and CUBIC's window, cut
  // below the bandwidth-delay product, then paces the rest under the link's rate.
  auto shallow = bottleneck();
  auto deep = shallow;
  deep.queue_bytes = 0;  // no congestion loss modeled
  auto busy = [](const xdc::sim::TcpPath& p) {
    xdc::sim::TcpConn c;
    int64_t sum = 0;
    for (int i = 0; i < 10; ++i)
      sum += xdc::sim::tcp_transmit(c, p, 26'214'000, 20 * kMs, i * 120 * kMs, 256 << 10) -
             i * 120 * kMs;
    return sum;
  };
  std::printf("10 messages: shallow %.1f ms, deep %.1f ms\n", busy(shallow) / 1e6,
              busy(deep) / 1e6);
  EXPECT_GT(busy(shallow), busy(deep) + 50 * kMs);
}

}  // namespace

// Random loss: one segment in 1/loss of those a connection carries is lost; the round
// that meets it sends that segment again in the next and cuts ssthresh and the window to
// CUBIC's 0.7 of the window then (tcp_model.h).
TEST(TcpModel, ARoundThatMeetsARandomLossCutsTheWindowAndSendsTheSegmentAgain) {
  using xdc::sim::kTcpMss;
  xdc::sim::TcpPath path;
  path.window_bytes = xdc::sim::tcp_window_bytes(4 << 20, 6 << 20);  // 1912 segments
  path.loss = 0.001;                                                 // one in 1000
  xdc::sim::TcpConn c;
  c.carried = 0;  // a new connection, its window open
  c.cwnd = 1500 * kTcpMss;
  c.last_send_ns = c.stamp_ns = 0;
  EXPECT_EQ(xdc::sim::tcp_round(c, path, 40 * kMs, 0, 900 * kTcpMss), 900 * kTcpMss);
  EXPECT_EQ(c.ssthresh, 0) << "900 segments: no loss met yet";
  const int64_t before = c.cwnd;
  EXPECT_EQ(xdc::sim::tcp_round(c, path, 40 * kMs, 40 * kMs, 200 * kTcpMss), 199 * kTcpMss)
      << "the 1000th segment is lost: it goes again in the next round";
  EXPECT_EQ(c.ssthresh, std::llround(0.7 * static_cast<double>(before)));
  EXPECT_EQ(c.cwnd, c.ssthresh);
  EXPECT_EQ(c.carried, 1100 * kTcpMss);
  // A message of 300 segments from here meets none until the 2000th segment carried.
  const int64_t cut = c.cwnd;
  xdc::sim::tcp_transmit(c, path, 1e9, 40 * kMs, 80 * kMs, 300 * kTcpMss);
  EXPECT_EQ(c.ssthresh, cut);
  EXPECT_EQ(c.cwnd, cut) << "300 segments do not fill the window: it does not grow";

  // Losses struck in slow start after idle restarts leave a connection that carries
  // 256 KiB messages a window below Mathis's, as measured on the demo (ssthresh 12-43
  // segments): 400 messages 0.5 s apart over 40 ms round trips.
  xdc::sim::TcpConn m;
  m.carried = 0;
  m.last_send_ns = m.stamp_ns = 0;
  int64_t t = 0;
  for (int i = 0; i < 400; ++i, t += 500 * kMs)
    t = xdc::sim::tcp_transmit(m, path, 1e9, 40 * kMs, t, 256 << 10);
  EXPECT_GT(m.ssthresh, 0);
  EXPECT_LT(m.ssthresh, xdc::sim::tcp_loss_window_bytes(0.001));
}

// Congestion avoidance as tcp_cubic.c grows it. At the demo's small windows on a 40 ms
// round trip CUBIC's curve is nearly flat (K = cbrt((W_max - cwnd) / C) is seconds away),
// so the Reno-friendly estimate leads: one segment per 1.875 windows acknowledged, about
// half a segment per round trip. Measured (the kernel's tcp_probe tracepoint, the demo's
// crosspipe-greedy): 41 -> 47 segments in 12 round trips, 22 -> 32 in 20.
TEST(TcpModel, CongestionAvoidanceAtASmallWindowGrowsHalfASegmentPerRoundTrip) {
  using xdc::sim::kTcpMss;
  xdc::sim::TcpPath path;
  path.window_bytes = xdc::sim::tcp_window_bytes(4 << 20, 6 << 20);
  xdc::sim::TcpConn c;
  c.cwnd = c.ssthresh = c.epoch_cwnd = c.reno_cwnd = 30 * kTcpMss;  // just cut at 43
  c.w_max = 43 * kTcpMss;
  c.last_send_ns = c.stamp_ns = c.epoch_ns = 0;
  int64_t t = 0;
  for (int i = 0; i < 20; ++i, t += 40 * kMs)  // 20 full windows, back to back
    xdc::sim::tcp_round(c, path, 40 * kMs, t, c.cwnd);
  const double grown = static_cast<double>(c.cwnd - 30 * kTcpMss) / kTcpMss;
  std::printf("20 round trips from 30 segments: +%.1f segments\n", grown);
  EXPECT_GT(grown, 8);
  EXPECT_LT(grown, 13) << "not one segment per round trip";
}

// A loss while the window is below the last W_max (the plateau the curve returns to)
// lowers that plateau to (1 + beta) / 2 of the window (fast convergence, tcp_cubic.c's
// default), so that a window losses keep cutting does not climb back to where it was.
TEST(TcpModel, ALossBelowTheLastPlateauLowersItFastConvergence) {
  using xdc::sim::kTcpMss;
  xdc::sim::TcpPath path;
  path.loss = 0.001;
  xdc::sim::TcpConn c;
  c.carried = 950 * kTcpMss;  // the 1000th segment falls in the next round
  c.cwnd = 100 * kTcpMss;
  c.last_send_ns = c.stamp_ns = 0;
  xdc::sim::tcp_round(c, path, 40 * kMs, 0, 1000 * kTcpMss);
  EXPECT_EQ(c.w_max, 100 * kTcpMss) << "the first loss: W_max is the window";
  EXPECT_EQ(c.cwnd, 70 * kTcpMss);
  c.carried = 950 * kTcpMss;
  xdc::sim::tcp_round(c, path, 40 * kMs, 40 * kMs, 1000 * kTcpMss);  // 70 < W_max 100
  EXPECT_EQ(c.w_max, std::llround(0.85 * 70 * kTcpMss));
  EXPECT_EQ(c.ssthresh, 49 * kTcpMss);
}

// LinkState's rounds for one message, written out: each round a tcp_round; its bytes
// leave at the link's rate (the connection's last send then), and the next round starts a
// round trip, or the bytes' serialisation when longer, later. Returns the last byte's time.
int64_t every_round(xdc::sim::TcpConn& c, const xdc::sim::TcpPath& p, double bandwidth_bps,
                    int64_t rtt_ns, int64_t bytes) {
  int64_t t = 0;
  for (int64_t left = bytes;;) {
    const int64_t given = xdc::sim::tcp_round(c, p, rtt_ns, t, left);
    const int64_t wire =
        bandwidth_bps <= 0 ? 0 : std::llround(static_cast<double>(given) * 8e9 / bandwidth_bps);
    if (given > 0) c.last_send_ns = std::max(c.last_send_ns, t + wire);
    left -= given;
    if (left == 0) return t + wire;
    t += std::max(rtt_ns, wire);
  }
}

// A message alone on its channel runs LinkState's rounds without their bookkeeping for
// several messages, and skips the rounds that repeat (a window-limited phase): its times
// and the connection it leaves are those of every round run.
TEST(TcpModel, ALoneMessageTakesEveryRoundsTime) {
  using xdc::sim::kTcpMss;
  struct Case {
    const char* what;
    xdc::sim::TcpPath path;
    double bandwidth_bps;
    xdc::sim::TcpConn conn;
  };
  xdc::sim::TcpConn fresh;  // the initial window, idle for 10 s
  fresh.last_send_ns = -10'000 * kMs;
  fresh.stamp_ns = -10'000 * kMs;
  xdc::sim::TcpConn warm = fresh;  // a window left from earlier, just used
  warm.cwnd = 64 * kMiB;
  warm.last_send_ns = warm.stamp_ns = -kMs;
  std::vector<Case> cases;
  xdc::sim::TcpPath windowed_path;
  windowed_path.eager_limit = xdc::sim::kNoRendezvous;
  windowed_path.window_bytes = xdc::sim::tcp_window_bytes(4 << 20, 6 << 20);
  cases.push_back({"socket-buffer window, slow start", windowed_path, 1e9, fresh});
  cases.push_back({"socket-buffer window, warm", windowed_path, 1e9, warm});
  cases.push_back({"infinite rate", windowed_path, 0, fresh});
  xdc::sim::TcpPath shallow = bottleneck();
  shallow.eager_limit = xdc::sim::kNoRendezvous;
  cases.push_back({"bottleneck queue", shallow, 26'214'000, warm});
  xdc::sim::TcpPath lossy = windowed_path;
  lossy.loss = 0.001;
  xdc::sim::TcpConn launched = fresh;
  launched.carried = 0;
  cases.push_back({"random loss, no loss met yet", lossy, 1e9, launched});
  cases.push_back({"random loss, long in use", lossy, 1e9, warm});
  for (const Case& c : cases)
    for (int64_t bytes : {int64_t{1}, int64_t{64} << 10, 10 * kMiB, 300 * kMiB}) {
      LinkModel m = LinkModel::uniform(2, {10 * kMs, c.bandwidth_bps});
      m.tcp.assign(4, c.path);
      std::vector<xdc::sim::TcpConn> history(4, c.conn);
      LinkState wire(m, history);
      const xdc::sim::Transfer x = wire.send(0, 1, bytes, 0);
      xdc::sim::TcpConn expected = c.conn;
      const int64_t end = every_round(expected, c.path, c.bandwidth_bps, 20 * kMs, bytes);
      EXPECT_EQ(x.end_ns, end) << c.what << ", " << bytes << " bytes";
      EXPECT_EQ(x.arrival_ns, end + 10 * kMs) << c.what << ", " << bytes << " bytes";
      EXPECT_TRUE(wire.history()[1] == expected) << c.what << ", " << bytes << " bytes";
    }
}

// The workers cut a striped message into 256 KiB pieces, one per connection in turn from
// the one after the pair's last (workloads/worker/stripe_pieces.h; WorkerStripes.
// AMessageRidesOnOneConnectionPerPiece checks the worker so): 378 KiB over 5 new stripes
// rides on 2 of them, the next message on the next 2, and it arrives when its whole piece
// (plus header) has come through one connection's slow start. Infinite rate: the windows
// alone decide.
TEST(TcpModel, AStripedMessageRidesOnOneConnectionPerPieceInTurn) {
  const LinkModel m = striped_pair(4 * kMs, 5);
  const xdc::sim::TcpPath& p = m.tcp[0];
  // history(): the 4 pairs, then each pair's 5 stripes; pair 0 -> 1 (the second) has 9-13.
  const std::vector<xdc::sim::TcpConn> launched = LinkState::launch(m);
  ASSERT_EQ(launched.size(), 4u + 4 * 5);
  LinkState wire(m, launched);
  const int64_t bytes = 378 << 10;
  const xdc::sim::Transfer x = wire.send(0, 1, bytes, 0);
  xdc::sim::TcpPath one = p;
  one.connections = 1;
  xdc::sim::TcpConn fresh = launched[9];
  const int64_t piece = xdc::worker::kStripePieceBytes + xdc::worker::kStripeHeaderBytes;
  EXPECT_EQ(x.end_ns, xdc::sim::tcp_transmit(fresh, one, 0, 8 * kMs, 0, piece));
  EXPECT_EQ(x.arrival_ns, x.end_ns + 4 * kMs);
  auto used = [&](std::vector<xdc::sim::TcpConn> h) {
    std::vector<int> out;
    for (int k = 0; k < 5; ++k)
      if (!(h[static_cast<size_t>(9 + k)] == launched[static_cast<size_t>(9 + k)]))
        out.push_back(k);
    return out;
  };
  EXPECT_EQ(used(wire.history()), (std::vector<int>{0, 1}));
  wire.send(0, 1, bytes, 1000 * kMs);
  EXPECT_EQ(used(wire.history()), (std::vector<int>{0, 1, 2, 3}));
  LinkState all(m, launched);  // five pieces: every stripe
  all.send(0, 1, 5 * xdc::worker::kStripePieceBytes, 0);
  EXPECT_EQ(used(all.history()), (std::vector<int>{0, 1, 2, 3, 4}));
}

// The stripes pull the pieces as the worker hands them out (stripe_pieces.h): a connection
// takes the next piece while what it holds unsent is below TCP_NOTSENT_LOWAT plus its
// window. Of three stripes, one whose window a loss cut (10 segments, the others 400) takes
// a few pieces of a 24 MiB message and the others the rest, so the message arrives long
// before that stripe alone could carry a third of it. Infinite rate: the windows decide.
TEST(TcpModel, AStripeWhoseWindowALossCutTakesFewerPieces) {
  // No loss falls at 1e-15; each connection counts what it carries (TcpConn::carried).
  const LinkModel m = striped_pair(10 * kMs, 3, 1e-15);
  const xdc::sim::TcpPath& p = m.tcp[0];
  std::vector<xdc::sim::TcpConn> h = LinkState::launch(m);
  ASSERT_EQ(h.size(), 4u + 4 * 3);  // the 4 pairs, then each pair's 3 stripes: 0 -> 1 has 7-9
  for (size_t k = 7; k <= 9; ++k) h[k].cwnd = h[k].ssthresh = 400 * xdc::sim::kTcpMss;
  h[7].cwnd = h[7].ssthresh = 10 * xdc::sim::kTcpMss;
  LinkState wire(m, h);
  const int64_t bytes = 24 * kMiB;
  const int64_t piece = xdc::worker::kStripePieceBytes + xdc::worker::kStripeHeaderBytes;
  const xdc::sim::Transfer x = wire.send(0, 1, bytes, 0);
  const std::vector<xdc::sim::TcpConn> after = wire.history();
  const int64_t pieces = bytes / xdc::worker::kStripePieceBytes;
  EXPECT_EQ(after[7].carried + after[8].carried + after[9].carried, pieces * piece);
  EXPECT_LE(after[7].carried, 4 * piece) << "the cut stripe";
  EXPECT_GE(after[8].carried, 40 * piece);
  EXPECT_GE(after[9].carried, 40 * piece);
  xdc::sim::TcpPath one = p;
  one.connections = 1;
  xdc::sim::TcpConn cut = h[7];
  const int64_t third = xdc::sim::tcp_transmit(cut, one, 0, 20 * kMs, 0, pieces / 3 * piece);
  EXPECT_LT(x.end_ns, third / 2);
}

TEST(TcpModel, DrawnRandomLossesKeepTheRateAndFallAtGeometricGaps) {
  // The emulator loses each packet with probability `loss` (per-packet Bernoulli, as the
  // delay line and netem draw it): the gaps between losses are geometric, mean 1 / loss
  // packets, sd about the same. Evenly spaced (no stream): exactly one per 1 / loss.
  xdc::sim::TcpPath p;
  p.loss = 0.001;
  constexpr int64_t kSeg = xdc::sim::kTcpMss;
  xdc::sim::TcpConn even;
  even.carried = 0;
  EXPECT_EQ(xdc::sim::tcp_random_losses(even, p, 100'000 * kSeg), 100);
  std::vector<int64_t> per_run;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    xdc::sim::TcpConn c;
    c.carried = 0;
    c.loss_draws = xdc::sim::tcp_loss_stream(seed, 0);
    int64_t lost = 0;
    for (int r = 0; r < 1000; ++r) lost += xdc::sim::tcp_random_losses(c, p, 100 * kSeg);
    per_run.push_back(lost);
  }
  // 100000 segments a run: Poisson-like, mean 100, sd ~10.
  double mean = 0, var = 0;
  for (int64_t x : per_run) mean += static_cast<double>(x) / 200;
  for (int64_t x : per_run)
    var += (static_cast<double>(x) - mean) * (static_cast<double>(x) - mean) / 199;
  EXPECT_NEAR(mean, 100, 3);             // 4.2 standard errors
  EXPECT_NEAR(std::sqrt(var), 10, 2.5);  // the runs spread as Bernoulli draws do
  // The same seed draws the same losses.
  xdc::sim::TcpConn a, b;
  a.carried = b.carried = 0;
  a.loss_draws = b.loss_draws = 7;
  EXPECT_EQ(xdc::sim::tcp_random_losses(a, p, 50'000 * kSeg),
            xdc::sim::tcp_random_losses(b, p, 50'000 * kSeg));
}

namespace {

// The sender's own tbf (TcpPath::host_queue_bytes): slow start over a bottleneck of more than
// half the host's rate sends faster than that tbf passes; TCP small queues let about a
// millisecond of the pacing rate (twice cwnd / srtt) and one TSO aggregate into it, and
// once that exceeds what it queues, its drop puts the sender in CWR: ssthresh at 0.7 of
// the window then, nothing sent again (tests/network/host_queue_test.cpp: the kernel's).
TEST(TcpModel, SlowStartFasterThanTheHostsOwnTbfPassesEndsInCwr) {
  using xdc::sim::kTcpMss;
  xdc::sim::TcpPath p;
  const int64_t rtt = 12 * kMs;
  p.bdp_bytes = 1'256'000;       // 870 Mbit/s of frames, 12 ms
  p.queue_bytes = 1'050'000;     // its tbf's bucket and queue
  p.feed_bps = 956e6;            // the host's 1 Gbit/s tbf, payload
  p.host_queue_bytes = 179'552;  // what that tbf queues
  xdc::sim::TcpConn c;
  int64_t t = 0;
  for (int i = 0; i < 12 && c.ssthresh == 0; ++i, t += rtt)
    xdc::sim::tcp_round(c, p, rtt, t, 64 * kMiB);
  ASSERT_GT(c.ssthresh, 0) << "slow start did not end";
  // TSQ's limit plus one 64 KiB aggregate reach the queue at a window of (queue - 64 KiB)
  // x 1024 x srtt / 2.
  const double w = (179'552.0 - 45 * kTcpMss) * 1024 * 0.012 / 2;
  EXPECT_NEAR(static_cast<double>(c.ssthresh), 0.7 * w, 0.02 * w);
  EXPECT_EQ(c.w_max, std::llround(w));
  EXPECT_LT(c.ssthresh, p.bdp_bytes) << "below where the bottleneck's overflow would cut";

  // A host twice as fast as the bottleneck keeps up with slow start: no cut until the
  // bottleneck's own queue overflows, far later.
  auto fast = p;
  fast.feed_bps = 9.56e9;
  xdc::sim::TcpConn d;
  t = 0;
  for (int i = 0; i < 12 && d.ssthresh == 0; ++i, t += rtt)
    xdc::sim::tcp_round(d, fast, rtt, t, 64 * kMiB);
  EXPECT_GT(d.ssthresh, c.ssthresh * 2);
}

}  // namespace

namespace {

// Two hosts of one DC (ranks 0 and 1, 1 Gbit/s ports by default, 50 us) and one across a 6 ms,
// 870 Mbit/s WAN (rank 2), as tests/network/port_share_test.cpp has them against the
// kernel: the LAN paths' bottleneck is their ports (a tbf queue of 124 frames), the WAN
// paths cross them.
LinkModel port_share_links(int port_gbps = 1) {
  using xdc::sim::kTcpMss;
  const double port_bps = port_gbps * 1e9 * 1448 / 1514, wan_bps = 870e6 * 1448 / 1514;
  LinkModel m = LinkModel::dcs({0, 0, 1}, {6'050'000, wan_bps}, {50'000, port_bps});
  m.port = {0, 1, 2};
  m.tcp.assign(9, {});
  // The intra-DC tbf's queue: 1.5 ms at the rate in frames (netem's rate_queue_pkts).
  const int64_t queue = std::llround(1.5e6 * port_gbps / 8 / 1514) * kTcpMss;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      if (a == b) continue;
      xdc::sim::TcpPath& p = m.tcp[static_cast<size_t>(a) * 3 + b];
      p.window_bytes = 2'768'240;
      p.eager_limit = 1'000'000'000;  // plain writes, as the kernel test's: no rendezvous
      if (a < 2 && b < 2) {           // inside the DC
        p.bdp_bytes = static_cast<int64_t>(port_bps / 8 * 100e-6);
        p.queue_bytes = queue;
        p.port_bottleneck = true;
      } else {
        p.bdp_bytes = static_cast<int64_t>(wan_bps / 8 * 12.1e-3);
        p.queue_bytes = 1'000'000;
        p.feed_bps = port_bps;
        p.host_queue_bytes = queue;
      }
    }
  return m;
}

// The WAN connection from `wf` to `wt` after 20 messages of 1.2 MB every 100 ms, beside
// the same from `lf` to `lt` inside the DC (lf < 0: alone).
xdc::sim::TcpConn wan_after(const LinkModel& m, int wf, int wt, int lf, int lt) {
  LinkState st(m, LinkState::launch(m));
  for (int i = 0; i < 20; ++i) {
    st.send(wf, wt, 1'200'000, i * 100 * kMs);
    if (lf >= 0) st.send(lf, lt, 1'200'000, i * 100 * kMs);
  }
  return st.history()[m.connection(wf, wt)];
}

TEST(TcpModel, AWanConnectionSharingAHostsPortWithALanOneBacksOffMore) {
  const LinkModel m = port_share_links();
  const xdc::sim::TcpConn alone = wan_after(m, 0, 2, -1, -1);
  const xdc::sim::TcpConn out = wan_after(m, 0, 2, 0, 1);  // the sender's port
  const xdc::sim::TcpConn in = wan_after(m, 2, 0, 1, 0);   // the receiver's (the gateway's)
  const xdc::sim::TcpConn back_alone = wan_after(m, 2, 0, -1, -1);
  std::printf(
      "ssthresh (segments): alone %lld, sender's port shared %lld; other way alone %lld, "
      "receiver's port shared %lld\n",
      static_cast<long long>(alone.ssthresh / xdc::sim::kTcpMss),
      static_cast<long long>(out.ssthresh / xdc::sim::kTcpMss),
      static_cast<long long>(back_alone.ssthresh / xdc::sim::kTcpMss),
      static_cast<long long>(in.ssthresh / xdc::sim::kTcpMss));
  EXPECT_LT(out.ssthresh, alone.ssthresh);
  EXPECT_LT(in.ssthresh, back_alone.ssthresh);
  // A LAN connection into the WAN sender's host crosses neither the port the WAN data
  // leaves by nor the one it reaches (its ACKs are not modelled): nothing changes.
  EXPECT_EQ(wan_after(m, 0, 2, 1, 0).ssthresh, alone.ssthresh);
}

// A WAN connection's messages (3.6 MB every 400 ms) while its host sends one bulk transfer
// inside the DC: the bulk connection keeps what TCP small queues let it hold in the port's
// queue (tcp_small_queue_bytes), each WAN aggregate that finds no room behind it is dropped
// whole and CWR cuts the window, again and again (the kernel's in PortBulk,
// tests/network/port_share_test.cpp: ssthresh 186-336 segments beside the transfer,
// 2410-2480 alone). On 10 Gbit/s ports the bulk connection holds about 1.2 ms of the
// port's rate in a queue of 1.5 ms, and the WAN aggregates still fit beside it.
xdc::sim::TcpConn wan_beside_bulk(const LinkModel& m, bool bulk) {
  LinkState st(m, LinkState::launch(m));
  if (bulk) st.send(0, 1, int64_t{200} << 20, 0);
  for (int i = 0; i < 10; ++i) st.send(0, 2, 3'726'336, i * 400 * kMs);
  return st.history()[m.connection(0, 2)];
}

TEST(TcpModel, AWanConnectionBesideABulkTransferLeavingItsHostIsCutAgainAndAgain) {
  const LinkModel gbit = port_share_links(1), ten = port_share_links(10);
  const int64_t alone = wan_beside_bulk(gbit, false).ssthresh;
  const int64_t shared = wan_beside_bulk(gbit, true).ssthresh;
  std::printf("ssthresh (segments): alone %lld, beside the bulk transfer %lld\n",
              static_cast<long long>(alone / xdc::sim::kTcpMss),
              static_cast<long long>(shared / xdc::sim::kTcpMss));
  EXPECT_LT(shared * 4, alone);
  EXPECT_EQ(wan_beside_bulk(ten, true).ssthresh, wan_beside_bulk(ten, false).ssthresh);
}

// A host's tbf takes a TSO aggregate whole or drops it. The kernel's figures: a 124-frame
// queue (179,552 B of payload), 45-segment aggregates (65,160 B), a 1 Gbit/s port's 100 us
// round trip (11,950 B): with a window of 90 segments queued the aggregate still fits
// behind the backlog's low point and rarely meets its top.
TEST(TcpModel, AnAggregateFindsNoRoomWhereThePortsBacklogLeavesLessThanItself) {
  using xdc::sim::kTcpMss;
  using xdc::sim::tcp_port_drop_chance;
  const int64_t limit = 124 * kTcpMss, skb = 45 * kTcpMss, bdp = 11'950;
  auto backlog = [bdp](int segments) { return segments * kTcpMss - bdp; };
  EXPECT_EQ(tcp_port_drop_chance(0, skb, limit, skb), 0.0);
  EXPECT_EQ(tcp_port_drop_chance(limit - skb, skb, limit, skb), 0.0);  // fits exactly
  EXPECT_NEAR(tcp_port_drop_chance(backlog(90), skb, limit, skb),
              static_cast<double>(backlog(90) - (limit - skb)) / skb, 1e-12);
  EXPECT_NEAR(tcp_port_drop_chance(backlog(90), skb, limit, skb), 0.0610, 0.0001);
  EXPECT_NEAR(tcp_port_drop_chance(backlog(110), skb, limit, skb), 0.5055, 0.0001);
  EXPECT_EQ(tcp_port_drop_chance(limit, skb, limit, skb), 1.0);  // full at its low point
  // A small packet (a rendezvous answer) finds room until the queue is all but full.
  EXPECT_EQ(tcp_port_drop_chance(backlog(110), skb, limit, 64), 0.0);
  EXPECT_GT(tcp_port_drop_chance(limit - 10, skb, limit, 64), 0.0);
  // No queue, nothing queued, or nothing to send: no chance.
  EXPECT_EQ(tcp_port_drop_chance(backlog(110), skb, 0, skb), 0.0);
  EXPECT_EQ(tcp_port_drop_chance(backlog(110), skb, limit, 0), 0.0);
}

// LinkState answers the chance from the LAN rounds leaving a rank's port at that moment:
// none before a message or after it, and none at the receiver's port, which its data
// does not leave by.
TEST(TcpModel, APortsDropChanceFollowsTheLanRoundsLeavingIt) {
  const LinkModel m = port_share_links();
  const int64_t skb = 45 * xdc::sim::kTcpMss;
  LinkState st(m, LinkState::launch(m));
  for (int i = 0; i < 20; ++i) st.send(0, 1, 1'200'000, i * 100 * kMs);
  double most = 0, at_receiver = 0;
  for (int64_t t = 1'900 * kMs; t < 1'920 * kMs; t += kMs / 10) {
    most = std::max(most, st.port_drop_chance(0, t, skb));
    at_receiver = std::max(at_receiver, st.port_drop_chance(1, t, skb));
  }
  std::printf("the 20th message: its port's largest chance %.3f\n", most);
  EXPECT_GT(most, 0.0);
  EXPECT_EQ(at_receiver, 0.0);
  EXPECT_EQ(st.port_drop_chance(0, 1'890 * kMs, skb), 0.0);  // between messages
  EXPECT_EQ(st.port_drop_chance(0, 1'950 * kMs, skb), 0.0);  // after the last
  EXPECT_EQ(st.port_drop_chance(2, 1'905 * kMs, skb), 0.0);  // a host with no LAN rounds
}

}  // namespace

// HyStart's ACK train (tcp_hystart_exit_bytes): a slow start round's ACKs come back at the
// bottleneck's rate; once they span half of the round trip plus hystart_ack_delay (1 ms
// here), slow start ends with ssthresh at the window then, and nothing is lost
// (tests/network/hystart_test.cpp: the kernel's, 128-142 segments against these 122).
TEST(TcpModel, HystartEndsSlowStartWhereARoundsAckTrainSpansHalfTheRoundTrip) {
  using xdc::sim::kTcpMss;
  xdc::sim::TcpPath p;
  const int64_t rtt = 4 * kMs;
  p.bdp_bytes = 95'640;       // 200 Mbit/s of frames (23.91 MB/s of payload), 4 ms
  p.queue_bytes = 6'000'000;  // holds every burst: no overflow
  xdc::sim::TcpConn c;
  int64_t t = 0;
  // Rounds of 10, 20 and 40 segments: 40 (57,920 B) pass in 2.42 ms, before the 2.5 ms.
  for (int i = 0; i < 3; ++i, t += rtt) xdc::sim::tcp_round(c, p, rtt, t, 64 * kMiB);
  EXPECT_EQ(c.cwnd, 80 * kTcpMss);
  EXPECT_FALSE(c.hystart_found);
  // The round of 80: 2.5 ms of its ACKs are 59,775 B, which slow start adds to the window.
  xdc::sim::tcp_round(c, p, rtt, t, 64 * kMiB);
  EXPECT_TRUE(c.hystart_found);
  EXPECT_EQ(c.ssthresh, 80 * kTcpMss + 59'775);
  EXPECT_EQ(c.cwnd, c.ssthresh);
  EXPECT_EQ(c.w_max, 0) << "no loss: CUBIC's curve has no plateau";
  // Then congestion avoidance: before any loss 5% a round trip (bictcp_update's cnt <= 20).
  const int64_t before = c.cwnd;
  xdc::sim::tcp_round(c, p, rtt, t += rtt, 64 * kMiB);
  EXPECT_NEAR(static_cast<double>(c.cwnd), static_cast<double>(before) * 1.05, 1);

  // Where a delayed ACK's two segments take more than 2 ms (under 11.6 Mbit/s) there is
  // no train: slow start runs on.
  xdc::sim::TcpPath slow = p;
  slow.bdp_bytes = 4'000;  // 8 Mbit/s, 4 ms
  xdc::sim::TcpConn d;
  d.cwnd = 100 * kTcpMss;
  EXPECT_EQ(xdc::sim::tcp_hystart_exit_bytes(d, slow, rtt, 100 * kTcpMss), -1);
  // Below hystart_low_window (16 segments) HyStart does not look.
  d.cwnd = 15 * kTcpMss;
  EXPECT_EQ(xdc::sim::tcp_hystart_exit_bytes(d, p, rtt, 15 * kTcpMss), -1);
}
