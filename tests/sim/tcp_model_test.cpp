// The TCP / OpenMPI message model (tcp_model.h, LinkState) against single messages measured
// on the emulator, kernel 6.18, OpenMPI 4.1.4, stock CUBIC: `xdc up` of two DCs
// with one host each, 20 ms one way (1 ms normal jitter), 1 Gbit/s, no loss, time dilation
// 1; a 2-rank MPI program (mpirun as harness/launch/launcher.cpp builds it, btl tcp) where
// rank 0 sends one message per step after an idle gap and rank 1, its receive posted
// first, answers each with 1 byte; the figure is rank 1's receive completion minus rank 0's
// send start (CLOCK_MONOTONIC, shared by the namespaces). Steps: 1 MiB to open the
// connection, then for 64 KiB, 1 MiB, 40 MiB in turn, idles 0, 0.2, 0.5, 1, 3 s, twice each.
#include "harness/sim/tcp_model.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "harness/sim/link_model.h"
#include "harness/sim/worker_model.h"

namespace {

using xdc::sim::LinkModel;
using xdc::sim::LinkState;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kMiB = 1 << 20;

// Two ranks 20 ms apart at 1 Gbit/s, each direction a warm connection of `window` bytes.
LinkModel windowed(int64_t window, int64_t eager_limit = xdc::sim::kOpenMpiEagerLimit) {
  LinkModel m = LinkModel::uniform(2, {20 * kMs, 1e9});
  xdc::sim::TcpPath p;
  p.eager_limit = eager_limit;
  p.window_bytes = window;
  m.tcp.assign(4, p);
  return m;
}

LinkModel pair(int64_t eager_limit, uint64_t wmem = 4 << 20, uint64_t rmem = 6 << 20) {
  return windowed(xdc::sim::tcp_window_bytes(wmem, rmem), eager_limit);
}

double ms(int64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

struct Step {
  int64_t bytes;
  double idle_s;
};

// The measurement's steps, replayed: returns each step's modeled time in ms.
std::vector<double> replay(const LinkModel& m, const std::vector<Step>& steps) {
  LinkState wire(m);
  std::vector<double> out;
  int64_t t = 0;
  for (const Step& s : steps) {
    t += std::llround(s.idle_s * 1e9);
    const auto x = wire.send(0, 1, s.bytes, t);
    out.push_back(ms(x.arrival_ns - t));
    t = wire.send(1, 0, 1, x.arrival_ns).arrival_ns;  // the answer
  }
  return out;
}

std::vector<Step> steps(const std::vector<int64_t>& sizes) {
  std::vector<Step> s = {{kMiB, 0}};
  for (int64_t b : sizes)
    for (double idle : {0.0, 0.2, 0.5, 1.0, 3.0})
      for (int rep = 0; rep < 2; ++rep) s.push_back({b, idle});
  return s;
}

// Measured (ms), in the order of steps() after the first; stock OpenMPI (64 KiB eager
// limit) and with `--mca btl_tcp_eager_limit 67108864 --mca btl_tcp_max_send_size 67108864`.
const std::vector<double> kStock = {
    72.0,  71.3,  72.9,  75.9,  115.2, 123.7, 161.1, 164.6, 165.7, 156.4,   // 64 KiB
    207.8, 82.5,  86.7,  84.0,  133.8, 127.0, 239.3, 230.3, 331.9, 348.8,   // 1 MiB
    705.2, 701.8, 639.4, 653.7, 704.1, 701.1, 768.7, 788.8, 967.1, 979.1};  // 40 MiB
const std::vector<double> kEager = {
    21.1,  20.7,  28.2,  20.9,  24.1,  65.2,  105.7, 103.7, 110.4, 111.9,   // 64 KiB
    151.0, 29.9,  27.4,  32.6,  67.8,  66.7,  158.8, 160.7, 269.2, 272.2,   // 1 MiB
    721.5, 643.3, 623.8, 645.9, 664.1, 665.2, 725.8, 729.7, 902.2, 907.8};  // 40 MiB

}  // namespace

TEST(TcpModel, EagerLimitAddsTheRendezvousRoundTrip) {
  // Measured warm, 50 ms apart: 65480 B in 20.2-22.9 ms, 65490 B in 56.8-66.2 ms.
  const LinkModel m = pair(xdc::sim::kOpenMpiEagerLimit);  // LinkState keeps a reference
  LinkState wire(m);
  wire.send(0, 1, kMiB, 0);  // the connection has carried data
  const auto eager = wire.send(0, 1, 65480, 1000 * kMs);
  const auto rndv = wire.send(0, 1, 65490, 1100 * kMs);
  EXPECT_NEAR(ms(eager.arrival_ns - 1000 * kMs), 21, 2);
  EXPECT_NEAR(ms(rndv.arrival_ns - 1100 * kMs), 61, 5);
}

TEST(TcpModel, ARequestThatArrivedBeforeItsReceiveWasPostedIsAnsweredAtThePost) {
  // 20 ms one way, a connection long in use, idle from 48 ms. A 1 MiB message (OpenMPI's
  // put protocol: a request, the receiver's answer, the data) whose receiver posts the
  // receive at 1100 ms: sent then, its request arrives at 1120 and the answer is back at
  // 1140 before the data goes. Requested at 1060 ms instead (libnbc: the sender's round
  // reached it first; the kernel's tcp_probe shows the request on the connection before the
  // receiver's round), the request waits at the receiver, which answers at 1100: the data
  // goes a one-way delay earlier. Both sends restart the window after idle alike (four
  // halvings: more than 4 and less than 5 RTOs of 240 ms).
  const LinkModel m = pair(xdc::sim::kOpenMpiEagerLimit);
  LinkState at_post(m), before(m);
  at_post.send(0, 1, kMiB, 0);
  before.send(0, 1, kMiB, 0);
  const auto posted = at_post.send(0, 1, kMiB, 1100 * kMs);
  const auto x = before.post(0, 1, kMiB, 1100 * kMs, -1, 1060 * kMs);
  const auto early = before.current(x.ticket);
  std::printf("1 MiB posted at 1100 ms: arrives %.1f ms, requested at 1060: %.1f ms\n",
              ms(posted.arrival_ns), ms(early.arrival_ns));
  EXPECT_NEAR(ms(posted.arrival_ns - early.arrival_ns), 20, 0.5);
  // A request that cannot have arrived by the post goes with it, as a plain send.
  LinkState late(m);
  late.send(0, 1, kMiB, 0);
  const auto y = late.post(0, 1, kMiB, 1100 * kMs, -1, 1090 * kMs);
  EXPECT_EQ(late.current(y.ticket).arrival_ns, posted.arrival_ns);
}

TEST(TcpModel, MessagesOnOneConnectionGoInTheOrderTheyWereQueued) {
  // 20 ms one way, 1 Gbit/s, a warm 1 MB window (one round trip carries 1 MB, serialised
  // in 8 ms), no rendezvous. 4 MB alone: rounds at 0, 40, 80, 120 ms, out at 128, in at
  // 148. A second 4 MB issued at 1 ms queues behind the first (OpenMPI's fragments, then the
  // socket's bytes, in order): the first keeps its timing, and the second starts in the
  // round after the first's last (160) and is out at 288.
  const LinkModel m = windowed(1'000'000, xdc::sim::kNoRendezvous);
  LinkState alone(m);
  EXPECT_EQ(alone.send(0, 1, 4'000'000, 0).arrival_ns, 148 * kMs);
  LinkState wire(m);
  const auto first = wire.send(0, 1, 4'000'000, 0);
  EXPECT_EQ(first.arrival_ns, 148 * kMs) << "alone so far";
  const auto second = wire.send(0, 1, 4'000'000, 1 * kMs);
  EXPECT_EQ(second.start_ns, 160 * kMs);
  EXPECT_EQ(wire.current(first.ticket).end_ns, 128 * kMs) << "not delayed by the second";
  EXPECT_EQ(second.end_ns, 288 * kMs);
  // The other direction is another connection: not shared.
  EXPECT_EQ(wire.send(1, 0, 4'000'000, 1 * kMs).arrival_ns, 149 * kMs);
  // A message that fits beside what is queued goes in the next round (CrossPipe's small
  // messages): 0.8 MB at 0 is out at 6.4 ms, and one issued at 1 ms starts then.
  LinkState small(m);
  small.send(0, 1, 800'000, 0);
  EXPECT_EQ(small.send(0, 1, 800'000, 1 * kMs).start_ns, 6'400'000);
}

TEST(TcpModel, IdleRestartHalvesTheWindowPerRto) {
  xdc::sim::TcpPath p;
  xdc::sim::TcpConn c;
  c.cwnd = 1600 * xdc::sim::kTcpMss;
  c.last_send_ns = 0;
  // RTT 40 ms: RTO 240 ms. 1 s idle: 760, 520, 280, 40 ms left after each RTO: 4 halvings.
  xdc::sim::tcp_note_send(c, p, 40 * kMs, 1000 * kMs);
  EXPECT_EQ(c.cwnd, 100 * xdc::sim::kTcpMss);
  // 200 ms idle: less than one RTO, no restart.
  xdc::sim::tcp_note_send(c, p, 40 * kMs, 1200 * kMs);
  EXPECT_EQ(c.cwnd, 100 * xdc::sim::kTcpMss);
  // 10 s: down to the initial window, not below.
  xdc::sim::tcp_note_send(c, p, 40 * kMs, 11200 * kMs);
  EXPECT_EQ(c.cwnd, xdc::sim::kTcpInitialWindow);
  p.slow_start_after_idle = false;
  c.cwnd = 1600 * xdc::sim::kTcpMss;
  xdc::sim::tcp_note_send(c, p, 40 * kMs, 20000 * kMs);
  EXPECT_EQ(c.cwnd, 1600 * xdc::sim::kTcpMss);
}

TEST(TcpModel, FortyMibMessagesAsMeasured) {
  // 40 MiB: the socket-buffer window (warm), slow start after 0.5-3 s idle and the
  // rendezvous, within 10% of each measured figure.
  const auto st = steps({64 << 10, kMiB, 40 * kMiB});
  const auto stock = replay(pair(xdc::sim::kOpenMpiEagerLimit), st);
  const auto eager = replay(pair(64 * kMiB), st);
  for (size_t i = 20; i < 30; ++i) {
    SCOPED_TRACE(i);
    EXPECT_NEAR(stock[i + 1], kStock[i], 0.1 * kStock[i]);
    // The first eager one (721.5 ms) took 12% more than its twin (643.3): the measurement's
    // own spread there is more than the bound (the model: 635 ms).
    if (i != 20) {
      EXPECT_NEAR(eager[i + 1], kEager[i], 0.1 * kEager[i]);
    }
  }
  // Send buffer 16 MiB (tcp_wmem), receive buffer stock 6 MiB: 40 MiB warm in 474.8-518.2
  // ms, after 3 s idle 739.5-745.9 ms (same steps, 40 MiB only, eager).
  const auto big = replay(pair(64 * kMiB, 16 << 20),
                          {{kMiB, 0}, {40 * kMiB, 0}, {40 * kMiB, 0.2}, {40 * kMiB, 3}});
  EXPECT_NEAR(big[2], 480, 0.08 * 480);
  EXPECT_NEAR(big[3], 742, 0.08 * 742);
}

TEST(TcpModel, SmallMessagesAfterIdleAsMeasured) {
  // 64 KiB and 1 MiB: the model follows the measured restart (times grow with the idle
  // gap) within 50% of each figure; worst: the first 64 KiB rendezvous after 0.5 s (60.5
  // ms modeled, 115.2 measured: Linux restarted, the model's RTO had not passed), and the
  // first 1 MiB after the 64 KiB steps (skipped: the model's window is 2x Linux's there,
  // 61 ms vs 29.9). Rendezvous messages run ~10 ms above the model warm (71-76 vs 60.5).
  const auto st = steps({64 << 10, kMiB, 40 * kMiB});
  const auto stock = replay(pair(xdc::sim::kOpenMpiEagerLimit), st);
  const auto eager = replay(pair(64 * kMiB), st);
  for (size_t i = 0; i < 30; ++i)
    std::printf(
        "step %2zu: %8lld B idle %.1f s: stock %6.1f ms (measured %6.1f), eager %6.1f (%6.1f)\n", i,
        static_cast<long long>(st[i + 1].bytes), st[i + 1].idle_s, stock[i + 1], kStock[i],
        eager[i + 1], kEager[i]);
  for (size_t i = 0; i < 20; ++i) {
    SCOPED_TRACE(i);
    if (i == 10 || i == 11) continue;
    EXPECT_NEAR(stock[i + 1], kStock[i], 0.5 * kStock[i]);
    EXPECT_NEAR(eager[i + 1], kEager[i], 0.5 * kEager[i]);
  }
  EXPECT_GT(stock[9], stock[3] + 60);     // 64 KiB: 3 s idle costs slow start's rounds
  EXPECT_GT(eager[19], eager[13] + 200);  // 1 MiB: 3 s idle vs 0.2 s
}

TEST(TcpModel, BinomialAllreduceIsTwoFullTransfersForTwoReplicas) {
  // d = 2: the whole buffer goes 1 -> 0, then 0 -> 1, on connections idle for 5 s.
  const LinkModel m = pair(xdc::sim::kOpenMpiEagerLimit);
  constexpr int64_t kIdle = 5000 * kMs;
  LinkState wire(m, kIdle);
  const auto up = wire.send(1, 0, 40 * kMiB, 0);
  const auto down = wire.send(0, 1, 40 * kMiB, up.arrival_ns);
  EXPECT_EQ(xdc::sim::allreduce_ns(m, 40 * kMiB, kIdle), down.arrival_ns);
  EXPECT_EQ(xdc::sim::allreduce_ns(m, 0, kIdle), 0);
  // Idle 5 s: the window restarts; 40 MiB then takes longer than warm (0.62 s measured).
  EXPECT_GT(up.arrival_ns - up.start_ns, 800 * kMs);
  // d = 4 on one link without TCP: two rounds up, two down.
  const LinkModel four = LinkModel::uniform(4, {20 * kMs, 1e9});
  EXPECT_EQ(xdc::sim::allreduce_ns(four, 8 * kMiB, kIdle), 4 * (20 * kMs + 8 * kMiB * 8));
}

TEST(TcpModel, AllreduceAsMeasuredAcrossTheWan) {
  // `xdc run` of tests/run/dp-modeled.yaml with `wan: {loss: 0%}` and `grad: 40mib`
  // (2 stages x 2 replicas, one replica per DC, so each stage all-reduces across the 20 ms
  // / 1 Gbit/s WAN): ALLREDUCE events of 1.67-1.76 s on all four ranks, 3 iterations. The plan
  // passes 4 microbatches x (30 + 60 ms) as the idle time. Two members: libnbc copies the 40
  // MiB into a fresh temporary first (worker_model.h), at this machine's rates
  // (run/host_memory.h: ~300 MB/s into fresh pages, ~5 GB/s summing).
  const LinkModel m = pair(xdc::sim::kOpenMpiEagerLimit);
  const xdc::sim::HostMemory host{300e6, 5e9, 5e9};
  const double s = static_cast<double>(xdc::sim::allreduce_ns(m, 40 * kMiB, 360 * kMs, host)) / 1e9;
  EXPECT_NEAR(s, 1.72, 0.15 * 1.72);
}

TEST(TcpModel, SeveralConnectionsCarrySeveralWindowsUpToTheLinkRate) {
  // 80 ms one way, 1 Gbit/s, stock buffers (window 0.68 x 4 MiB = 2.87 MB per 160 ms round
  // trip). Measured on the emulator (OpenMPI, one connection, a 2-rank program sending 64
  // MiB warm, docs/experiments.md, "Several connections per transfer"): 3.88-3.90 s, 138 Mbit/s.
  auto path = [](int n) {
    LinkModel m = LinkModel::uniform(2, {80 * kMs, 1e9});
    xdc::sim::TcpPath p;
    p.window_bytes = xdc::sim::tcp_window_bytes(4 << 20, 6 << 20);
    p.connections = n;
    p.eager_limit = n > 1 ? xdc::sim::kNoRendezvous : xdc::sim::kOpenMpiEagerLimit;
    m.tcp.assign(4, p);
    return m;
  };
  auto mbit = [](const LinkModel& m, int64_t bytes) {
    LinkState wire(m);  // warm: the window is open
    const auto x = wire.send(0, 1, bytes, 0);
    return static_cast<double>(bytes) * 8e3 / static_cast<double>(x.arrival_ns);
  };
  const double one = mbit(path(1), 64 * kMiB);
  EXPECT_NEAR(one, 138, 0.05 * 138);
  const double two = mbit(path(2), 64 * kMiB);
  EXPECT_NEAR(two / one, 2, 0.1);  // window-limited: twice the windows, twice the goodput
  const double eight = mbit(path(8), 64 * kMiB);
  EXPECT_GT(eight, 800);  // 8 windows (1.1 Gbit/s) exceed the link: the rate limits
  EXPECT_LE(eight, 1000);
  // After idle each connection restarts from the initial window: n of them, n x as many.
  xdc::sim::TcpConn c;
  c.cwnd = 8 * 1600 * xdc::sim::kTcpMss;
  c.last_send_ns = 0;
  xdc::sim::tcp_note_send(c, path(8).tcp[0], 160 * kMs, 10000 * kMs);
  EXPECT_EQ(c.cwnd, 8 * xdc::sim::kTcpInitialWindow);
}

TEST(TcpModel, ReplicasSharingADirectionShareItsRateEachWithItsWindow) {
  // 20 ms, 1 Gbit/s, 8 MiB windows (eager, warm): 64 MiB alone is rate-limited, ~0.56 s.
  // Two identical replicas crossing the same direction at once (copies = 2) move twice
  // the bytes through it: about twice as long. At 80 ms with stock buffers one connection
  // is window-limited (2.77 MB per round trip, ~140 Mbit/s): two replicas then each keep
  // their own window and the pair takes about as long as one.
  auto model = [](int64_t one_way_ms, uint64_t buf, int copies) {
    LinkModel m = LinkModel::uniform(2, {one_way_ms * kMs, 1e9});
    xdc::sim::TcpPath p;
    p.eager_limit = xdc::sim::kNoRendezvous;
    p.window_bytes = xdc::sim::tcp_window_bytes(buf, buf);
    m.tcp.assign(4, p);
    m.copies.assign(4, copies);
    return m;
  };
  auto seconds = [](const LinkModel& m) {
    LinkState wire(m);
    return static_cast<double>(wire.send(0, 1, 64 * kMiB, 0).arrival_ns) / 1e9;
  };
  const double one = seconds(model(20, 64 << 20, 1)), two = seconds(model(20, 64 << 20, 2));
  std::printf("20 ms, rate-limited: one %.3f s, two replicas %.3f s\n", one, two);
  EXPECT_NEAR(two / one, 2.0, 0.1);
  const double w1 = seconds(model(80, 4 << 20, 1)), w2 = seconds(model(80, 4 << 20, 2));
  std::printf("80 ms, window-limited: one %.3f s, two replicas %.3f s\n", w1, w2);
  EXPECT_NEAR(w2 / w1, 1.0, 0.1);
}

TEST(TcpModel, AConnectionIdleSinceThePreviousIterationRestartsItsWindow) {
  // A warm connection (history: last sent just before time 0) sends 4 MiB in a few round
  // trips; the same connection idle for 3 s (history shifted onto a clock 3 s later)
  // starts again from the initial window, as Linux's slow start after idle does.
  const LinkModel m = pair(xdc::sim::kOpenMpiEagerLimit);
  LinkState first(m);
  const int64_t end = first.send(0, 1, 4 * kMiB, 0).arrival_ns;
  const std::vector<xdc::sim::TcpConn> h = first.history();
  std::vector<xdc::sim::TcpConn> soon = h, late = h;
  xdc::sim::shift_history(soon, end);
  xdc::sim::shift_history(late, end + 3000 * kMs);
  LinkState warm(m, soon), idle(m, late);
  const int64_t w = warm.send(0, 1, 4 * kMiB, 0).arrival_ns;
  const int64_t i = idle.send(0, 1, 4 * kMiB, 0).arrival_ns;
  std::printf("4 MiB after the previous iteration: at once %.0f ms, after 3 s idle %.0f ms\n",
              ms(w), ms(i));
  EXPECT_GT(i, w + 3 * 40 * kMs);  // at least three more round trips of slow start
}

// One connection pair, 20 ms one way, 1 Gbit/s, warm 1 MB windows: rank 1 sends 8 MB to
// rank 0 with no rendezvous at 0 (rounds every 40 ms, its last byte out at 288 ms). Rank 0
// issues 1 MiB to rank 1 at 10 ms, a put (tcp_model.h): its request (no data) arrives at
// rank 1 at 30 ms, and the answer goes on rank 1's connection behind the 8 MB (OpenMPI
// queues the fragments, TCP keeps the order): out at 288, back at 308 ms, not at 50. The
// data then goes from a window halved once for the 298 ms the connection sat idle (RTO
// 240 ms): 500 kB at 308, the rest (548,576 B) at 348, out at 348 + 4.4 ms, its FIN right
// behind, in at 372.4 ms. Alone: the answer is back at 50, 1 MB goes at 50 and the rest
// at 90, in at 110.4 ms.
TEST(TcpModel, ARendezvousAnswerWaitsBehindTheDataQueuedTheOtherWay) {
  LinkModel m = windowed(1'000'000);
  m.tcp[1 * 2 + 0].eager_limit = xdc::sim::kNoRendezvous;
  LinkState quiet(m);
  const int64_t alone = quiet.send(0, 1, kMiB, 10 * kMs).arrival_ns;
  EXPECT_NEAR(ms(alone), 10 + 40 + 40 + 0.4 + 20, 0.1);
  LinkState wire(m);
  const auto back = wire.post(1, 0, 8'000'000, 0);
  const auto x = wire.post(0, 1, kMiB, 10 * kMs);
  EXPECT_EQ(wire.current(back.ticket).end_ns, 288 * kMs);
  const auto got = wire.current(x.ticket);
  std::printf("1 MiB behind 8 MB the other way: in at %.1f ms (alone %.1f)\n", ms(got.arrival_ns),
              ms(alone));
  EXPECT_NEAR(ms(got.arrival_ns), 308 + 40 + 4.4 + 20, 0.1);
}

// ob1's put protocol (tcp_model.h): from btl_tcp_min_rdma_pipeline_size (196608 B, or
// eager_limit + 128 KiB when that is more) a message's request carries no data.
TEST(TcpModel, FromTheRdmaPipelineSizeTheRequestCarriesNoData) {
  xdc::sim::TcpPath p = pair(xdc::sim::kOpenMpiEagerLimit).tcp[1];
  EXPECT_FALSE(xdc::sim::put_protocol(p, 196607));
  EXPECT_TRUE(xdc::sim::put_protocol(p, 196608));
  p.eager_limit = 1 << 20;  // raised: the pipeline starts at eager_limit + 128 KiB
  EXPECT_FALSE(xdc::sim::put_protocol(p, (1 << 20) + 131071));
  EXPECT_TRUE(xdc::sim::put_protocol(p, (1 << 20) + 131072));
  p.eager_limit = xdc::sim::kNoRendezvous;  // the workers' stripes: no OpenMPI protocol
  EXPECT_FALSE(xdc::sim::put_protocol(p, int64_t{1} << 40));
}

// The receiver of a put completes on its FIN, which the sender queues once the put's last
// byte is in the socket, behind whatever was queued by then (GeoPipe `overlap`, 10 MiB
// activations, measured: sent one after the other, the first completes at the
// receiver with the later ones). 20 ms one way, 1 Gbit/s, a warm 1 MB window: 4 MB issued at
// 0 and 4 MB at 1 ms, both answered at once. The first's data goes in rounds 40-160; its
// last byte enters the socket at 160, when the second's data (queued at 41) is ahead of its
// FIN; the second goes in rounds 200-320 (out at 328), and both are in at 348 ms. Alone the
// first is in at 188.
TEST(TcpModel, APutCompletesAtItsFinBehindThePutsQueuedBeforeIt) {
  LinkModel m = windowed(1'000'000);
  LinkState alone(m);
  EXPECT_NEAR(ms(alone.send(0, 1, 4'000'000, 0).arrival_ns), 188, 0.01);
  LinkState wire(m);
  const auto first = wire.post(0, 1, 4'000'000, 0);
  const auto second = wire.post(0, 1, 4'000'000, 1 * kMs);
  EXPECT_NEAR(ms(wire.current(first.ticket).arrival_ns), 348, 0.01);
  EXPECT_NEAR(ms(wire.current(second.ticket).arrival_ns), 348, 0.01);
}

// Both directions of a connection pair are byte streams: a rendezvous answer leaves behind
// what was queued on its direction before it, and a request queued before the peer's answer
// arrives before it (two-dc-modeled `overlap`, measured: rank 2's gradient request, queued
// before its answer to rank 1's activation, was answered at once, not after the activation's
// 40 MiB). 20 ms one way, 1 Gbit/s, warm 1 MB windows: rank 1 puts 4 MB to rank 0 at 0 (its
// data goes from 40, out at 168) and issues M (1 MiB) at 50; rank 0 issues N (1 MiB) to rank
// 1 at 60. M's request and N's answer (queued at 80) wait behind the 4 MB, whose last
// megabyte fills rank 1's window until its ACKs return at 200; then M's request goes, N's
// answer behind it. Rank 0 answers M at 220 before it queues N's data, so M's data goes from
// 240 on and is in at 300.4 ms (behind N's data it would be in at 340.8); N's goes from 220,
// in at 280.4. An answer reads the other direction's queue as far as it has been worked out
// (link_model.h): the 4 MB first, then M, as a receiver waiting for them would ask. Asked
// for N first, N's answer is worked out before M's request is, leaves at 168, and M is in at
// 308.8 behind N's data: the order of queries still decides such ties.
TEST(TcpModel, ARequestQueuedBeforeThePeersAnswerIsAnsweredFirst) {
  LinkModel m = windowed(1'000'000);
  LinkState wire(m);
  const auto e = wire.post(1, 0, 4'000'000, 0);
  EXPECT_NEAR(ms(wire.current(e.ticket).end_ns), 168, 0.01);
  const auto mm = wire.post(1, 0, kMiB, 50 * kMs);
  const auto n = wire.post(0, 1, kMiB, 60 * kMs);
  const auto got_m = wire.current(mm.ticket), got_n = wire.current(n.ticket);
  std::printf("M in at %.1f ms, N in at %.1f ms\n", ms(got_m.arrival_ns), ms(got_n.arrival_ns));
  EXPECT_NEAR(ms(got_m.arrival_ns), 300.4, 0.1);
  EXPECT_NEAR(ms(got_n.arrival_ns), 280.4, 0.1);
}

// A rendezvous answer counts as a send of its connection when it is sent, not when the
// simulation worked it out: the 0 -> 1 connection, idle for a second, restarts its window
// for 4 MiB at 1000 ms whether or not an answer it carries at ~1120 ms (rank 1's 1 MiB
// issued at 1100) was settled before its own rounds were.
TEST(TcpModel, ALaterAnswerDoesNotUndoAnEarlierIdleRestart) {
  const LinkModel m = pair(xdc::sim::kOpenMpiEagerLimit);
  LinkState alone(m);
  const int64_t expected = alone.send(0, 1, 4 * kMiB, 1000 * kMs).arrival_ns;
  LinkState wire(m);
  const auto a = wire.post(0, 1, 4 * kMiB, 1000 * kMs);
  wire.post(1, 0, kMiB, 1100 * kMs);
  wire.post(1, 0, 1, 1300 * kMs);  // settles the 1 -> 0 rounds before 1300, its answer too
  EXPECT_EQ(wire.current(a.ticket).arrival_ns, expected);
  LinkState warm(m);  // without the second of idle: faster, so the restart mattered
  EXPECT_LT(warm.send(0, 1, 4 * kMiB, 0).arrival_ns + 1000 * kMs, expected);
}

// The answers a connection carries count as its sends even when the rounds of the other
// direction that drew them were never settled before its own rounds were (LinkState's
// commit_both): 20 ms one way, 1 Gbit/s, warm 1 MB windows last used at 0. Rank 0 puts 4 MiB
// to rank 1 at 100 ms, whose answer leaves on the 1 -> 0 connection at 120; rank 1 sends 4
// MiB to rank 0 (no rendezvous) at 300. Idle 180 ms since that answer, under the RTO (240
// ms): no restart, as when the answer was settled first (a message on 0 -> 1 at 200 does
// that); counted from 0, idle 300 ms would halve the window once.
TEST(TcpModel, AnAnswerCountsAsASendBeforeTheRoundsThatDrewItAreSettled) {
  LinkModel m = windowed(1'000'000);
  m.tcp[1 * 2 + 0].eager_limit = xdc::sim::kNoRendezvous;
  LinkState wire(m);
  wire.post(0, 1, 4 * kMiB, 100 * kMs);
  const auto b = wire.post(1, 0, 4 * kMiB, 300 * kMs);
  LinkState settled(m);
  settled.post(0, 1, 4 * kMiB, 100 * kMs);
  settled.post(0, 1, 1, 200 * kMs);  // settles the 0 -> 1 rounds before 200, its answer too
  const auto b2 = settled.post(1, 0, 4 * kMiB, 300 * kMs);
  LinkState idle(m);
  const int64_t restarted = idle.send(1, 0, 4 * kMiB, 300 * kMs).arrival_ns;
  const int64_t got = wire.current(b.ticket).arrival_ns;
  std::printf("4 MiB 180 ms after an answer: in at %.1f ms (restarted: %.1f ms)\n", ms(got),
              ms(restarted));
  EXPECT_EQ(got, settled.current(b2.ticket).arrival_ns);
  EXPECT_LT(got, restarted);
}

// Temporal WAN sharing (LinkModel::exclusive): two pairs crossing one WAN direction, 4 MB
// each at 0 over warm 1 MB windows (20 ms one way, 1 Gbit/s). Shared, each connection
// sends its window every round and both arrive together. Exclusive, the smaller priority
// goes alone (out at 128 ms, in at 148 as in the test above) and holds the direction until
// the receiver's release is back (148 + 20 = 168 ms); the other then goes alone from 168.
TEST(TcpModel, AnExclusiveChannelGrantsOneMessageAtATimeInPriorityOrder) {
  LinkModel m = LinkModel::dcs({0, 0, 1, 1}, {20 * kMs, 1e9}, {});
  xdc::sim::TcpPath p;
  p.eager_limit = xdc::sim::kNoRendezvous;
  p.window_bytes = 1'000'000;
  m.tcp.assign(16, p);
  LinkState shared(m);
  const auto a = shared.post(0, 2, 4'000'000, 0, 1);
  const auto b = shared.post(1, 3, 4'000'000, 0, 0);
  EXPECT_EQ(shared.current(a.ticket).arrival_ns, shared.current(b.ticket).arrival_ns);
  EXPECT_GT(shared.current(a.ticket).arrival_ns, 148 * kMs);
  m.exclusive.assign(static_cast<size_t>(m.channels()), 0);
  m.exclusive[static_cast<size_t>(m.channel_of(0, 2))] = 1;
  ASSERT_EQ(m.channel_of(0, 2), m.channel_of(1, 3));
  LinkState wire(m);
  const auto second = wire.post(0, 2, 4'000'000, 0, 1);
  const auto first = wire.post(1, 3, 4'000'000, 0, 0);
  EXPECT_EQ(wire.current(first.ticket).start_ns, 0);
  EXPECT_EQ(wire.current(first.ticket).arrival_ns, 148 * kMs);
  EXPECT_EQ(wire.current(second.ticket).start_ns, 168 * kMs);
  EXPECT_EQ(wire.current(second.ticket).end_ns, (168 + 128) * kMs);
  // The other direction is not exclusive: a message there goes at once.
  EXPECT_EQ(wire.send(2, 0, 1'000'000, 0).start_ns, 0);
}

// Temporal sharing over OpenMPI (no stripes): two 4 MB puts from one rank on an exclusive
// direction. The worker issues a send only once the arbiter grants it, so the second's request
// is not queued ahead of the first's FIN: the first has the direction alone (its request at 0,
// data in rounds 40-160, out at 168, in at 188) and the second starts after the release
// (188 + 20 = 208).
TEST(TcpModel, AnExclusiveChannelCarriesPutsOneAtATime) {
  LinkModel m = LinkModel::dcs({0, 1}, {20 * kMs, 1e9}, {});
  xdc::sim::TcpPath p;
  p.window_bytes = 1'000'000;
  m.tcp.assign(4, p);
  m.exclusive.assign(static_cast<size_t>(m.channels()), 0);
  m.exclusive[static_cast<size_t>(m.channel_of(0, 1))] = 1;
  LinkState wire(m);
  const auto first = wire.post(0, 1, 4'000'000, 0, 0);
  const auto second = wire.post(0, 1, 4'000'000, 1 * kMs, 1);
  EXPECT_NEAR(ms(wire.current(first.ticket).arrival_ns), 188, 0.01);
  EXPECT_NEAR(ms(wire.current(second.ticket).start_ns), 208, 0.01);
}

// A message waiting for an exclusive direction is not issued yet, so the other direction's
// answers do not queue behind its request: rank 3 holds DC 1 -> DC 0 with 4 MB from 0; rank
// 2's 1 MiB to rank 0 waits for it. Rank 0's 1 MiB put to rank 2 at 0: its request is at rank 2
// at 20, the answer (on 2 -> 0, not arbitrated) back at 40, the data in rounds 40 and 80,
// in at 100.4 ms, whether or not the exclusive direction was worked out first.
TEST(TcpModel, AMessageWaitingForAnExclusiveDirectionQueuesNothing) {
  LinkModel m = LinkModel::dcs({0, 0, 1, 1}, {20 * kMs, 1e9}, {});
  xdc::sim::TcpPath p;
  p.window_bytes = 1'000'000;
  m.tcp.assign(16, p);
  m.exclusive.assign(static_cast<size_t>(m.channels()), 0);
  m.exclusive[static_cast<size_t>(m.channel_of(3, 1))] = 1;
  ASSERT_EQ(m.channel_of(3, 1), m.channel_of(2, 0));
  LinkState wire(m);
  wire.post(3, 1, 4'000'000, 0, 0);
  const auto waiting = wire.post(2, 0, kMiB, 0, 1);
  const auto n = wire.post(0, 2, kMiB, 0);
  EXPECT_GT(ms(wire.current(waiting.ticket).start_ns), 188);
  EXPECT_NEAR(ms(wire.current(n.ticket).arrival_ns), 100.4, 0.1);
}

// Over the workers' stripes (TcpPath::early_release) the receiver releases the exclusive
// direction when a round trip of bytes (40 ms at 1 Gbit/s: 5 MB) is left: the second
// message may start as the first's last byte leaves (128 ms), not after the release's way
// back (168 ms); one shorter than that releases a round trip after its first byte.
TEST(TcpModel, StripesReleaseTheExclusiveChannelARoundTripOfBytesEarly) {
  LinkModel m = LinkModel::dcs({0, 0, 1, 1}, {20 * kMs, 1e9}, {});
  xdc::sim::TcpPath p;
  p.eager_limit = xdc::sim::kNoRendezvous;
  p.window_bytes = 1'000'000;
  p.early_release = true;
  m.tcp.assign(16, p);
  m.exclusive.assign(static_cast<size_t>(m.channels()), 0);
  m.exclusive[static_cast<size_t>(m.channel_of(0, 2))] = 1;
  LinkState wire(m);
  const auto first = wire.post(0, 2, 4'000'000, 0, 0);
  const auto second = wire.post(1, 3, 4'000'000, 0, 1);
  EXPECT_EQ(wire.current(first.ticket).end_ns, 128 * kMs);
  EXPECT_EQ(wire.current(second.ticket).start_ns, 128 * kMs);
  LinkState small(m);
  const auto a = small.post(0, 2, 1'000'000, 0, 0);  // out at 8 ms
  const auto b = small.post(1, 3, 1'000'000, 0, 1);
  EXPECT_EQ(small.current(a.ticket).end_ns, 8 * kMs);
  EXPECT_EQ(small.current(b.ticket).start_ns, 40 * kMs);
}

namespace {

// TSO aggregates as Linux's tcp_tso_autosize sizes them: the pacing rate (200% of cwnd x
// MSS / srtt in slow start, 120% after) >> 10, plus 64 KiB >> (min_rtt in us >> 9) on
// short round trips, at most 64 KiB, at least 2 segments. On the demo (40 ms one way,
// 1 Gbit/s) the kernel's net_dev_start_xmit tracepoint at the gateway's WAN interface,
// each aggregate beside the sender's cwnd and srtt from tcp_probe when it left, gave
// medians equal to this figure from 2 to 44 segments (2,272 aggregates; 26 at cwnd 1,100
// segments in slow start and srtt 81 ms): docs/history/simulator.md.
TEST(TcpModel, TsoAggregatesAreAMillisecondAtThePacingRate) {
  using xdc::sim::kTcpMss;
  xdc::sim::TcpPath p;
  xdc::sim::TcpConn c;
  c.cwnd = 1100 * kTcpMss;                                    // slow start (no ssthresh yet): 200%
  EXPECT_EQ(xdc::sim::tcp_tso_segments(c, p, 81 * kMs), 26);  // 2 x 1100 / 0.081 / 1024
  c.ssthresh = c.cwnd;                                        // congestion avoidance: 120%
  EXPECT_EQ(xdc::sim::tcp_tso_segments(c, p, 81 * kMs), 15);
  c.cwnd = 10'000 * kTcpMss;
  EXPECT_EQ(xdc::sim::tcp_tso_segments(c, p, 81 * kMs), 45) << "64 KiB at most";
  c = {};  // 10 segments
  EXPECT_EQ(xdc::sim::tcp_tso_segments(c, p, 80 * kMs), 2) << "tcp_min_tso_segs";
  EXPECT_EQ(xdc::sim::tcp_tso_segments(c, p, 1 * kMs), 42) << "+ 64 KiB >> 1 at 1 ms";
  p.connections = 2;  // the window is two connections'
  c.cwnd = 2200 * kTcpMss;
  c.ssthresh = 0;
  EXPECT_EQ(xdc::sim::tcp_tso_segments(c, p, 81 * kMs), 26);
}

// TCP small queues (tcp_small_queue_check) admit another TSO aggregate while the socket's
// bytes below TCP are at most max(two aggregates, 1 ms at the pacing rate): a LAN
// connection whose window keeps a 1 Gbit/s port's queue standing (200 KB in flight, a
// round trip of 1.6 ms) paces at 120% of the port and holds about 1.2 ms of it there, one
// 64 KiB aggregate more at most. PortBulk (tests/network/port_share_test.cpp) sampled such
// a bulk transfer's socket at 64-143 KB below TCP and its host's tbf at 134-186 KB of its
// 188 KB (docs/history/predictions.md).
TEST(TcpModel, SmallQueuesHoldAMillisecondOfThePacingRateAndOneAggregateMore) {
  using xdc::sim::kTcpMss;
  xdc::sim::TcpPath p;
  xdc::sim::TcpConn c;
  c.cwnd = c.ssthresh = 200'000;  // congestion avoidance: 120%
  const int64_t skb = 45 * kTcpMss;
  EXPECT_EQ(xdc::sim::tcp_tso_segments(c, p, 1'600'000), 45);
  EXPECT_EQ(xdc::sim::tcp_small_queue_bytes(c, p, 1'600'000),
            std::llround(1.2 * 200'000 / 1.6e-3 / 1024) + skb);
  c.ssthresh = 0;  // slow start: 200%
  EXPECT_EQ(xdc::sim::tcp_small_queue_bytes(c, p, 1'600'000),
            std::llround(2.0 * 200'000 / 1.6e-3 / 1024) + skb);
  c = {};  // 10 segments over 80 ms: two aggregates of 2 segments, and one more
  EXPECT_EQ(xdc::sim::tcp_small_queue_bytes(c, p, 80 * kMs), 3 * 2 * kTcpMss);
  c.cwnd = c.ssthresh = int64_t{400} << 20;  // tcp_limit_output_bytes at most
  EXPECT_EQ(xdc::sim::tcp_small_queue_bytes(c, p, kMs), xdc::sim::kTcpLimitOutputBytes + skb);
  p.connections = 2;  // each of two connections: half the window, its own limit
  c.cwnd = c.ssthresh = 400'000;
  EXPECT_EQ(xdc::sim::tcp_small_queue_bytes(c, p, 1'600'000),
            std::llround(1.2 * 200'000 / 1.6e-3 / 1024) + skb);
}

// The delay lines keep each direction's packets in order, so a rendezvous answer that
// follows a message out arrives no earlier than that message's last packet, however late
// jitter makes it (LinkState::queued_until): rank 1's put request (one packet, no lag)
// reaches rank 0 while rank 0's 2 MiB to rank 1 is on its way, 10 ms late; the answer
// leaves behind it and arrives with it, and rank 1's data leaves only then.
TEST(TcpModel, AnAnswerArrivesNoEarlierThanTheJitteredMessageAheadOfIt) {
  auto table = std::make_shared<xdc::sim::JitterLagTable>();
  table->lambdas = {0};
  std::array<double, xdc::sim::JitterLagTable::kSlots> largest{};
  largest.fill(1);
  largest[0] = 0;  // one packet: no lag
  table->largest = {largest};
  LinkModel m = pair(xdc::sim::kOpenMpiEagerLimit);
  for (auto& p : m.tcp) p.jitter_hops = {{10 * kMs, false, table}};
  m.tcp[0 * 2 + 1].eager_limit = xdc::sim::kNoRendezvous;  // rank 0's message goes at once
  LinkState wire(m);
  const auto m0 = wire.post(0, 1, 2 * kMiB, 0);
  const auto m1 = wire.post(1, 0, kMiB, 0);  // a put: an 80-byte request first
  const auto x0 = wire.current(m0.ticket), x1 = wire.current(m1.ticket);
  EXPECT_EQ(x0.arrival_ns, x0.end_ns + 30 * kMs) << "20 ms one way, 10 ms late";
  EXPECT_LT(x0.end_ns + 20 * kMs, 40 * kMs) << "left before the request's answer would";
  EXPECT_EQ(x1.end_ns, x0.arrival_ns + m.at(1, 0).transfer_ns(kMiB))
      << "rank 1's data leaves when the answer behind rank 0's message is back";
}

// Under time dilation k the kernel's wall-clock constants act at 1 / k in the experiment's
// time (TcpPath::dilation): HyStart's 2 ms between ACKs, TCP small queues' millisecond of
// pacing (so the host's tbf overflows at k x the window) and CUBIC's clock (k x faster).
TEST(TcpModel, UnderTimeDilationTheKernelsWallClockConstantsActAtOneKth) {
  using xdc::sim::kTcpMss;
  xdc::sim::TcpPath p;
  const int64_t rtt = 40 * kMs;
  p.bdp_bytes = 60'000;  // 12 Mbit/s: a delayed ACK's two segments 1.93 ms apart
  p.queue_bytes = 6'000'000;
  xdc::sim::TcpConn c;
  c.cwnd = 40 * kTcpMss;
  EXPECT_GT(xdc::sim::tcp_hystart_exit_bytes(c, p, rtt, 40 * kTcpMss), 0);
  auto dilated = p;
  dilated.dilation = 2;  // 3.9 ms of wall clock between them: no train
  EXPECT_EQ(xdc::sim::tcp_hystart_exit_bytes(c, dilated, rtt, 40 * kTcpMss), -1);

  xdc::sim::TcpPath host;
  host.bdp_bytes = 1'256'000;
  host.feed_bps = 956e6;
  host.host_queue_bytes = 179'552;
  xdc::sim::TcpConn w;
  w.cwnd = 1'000'000;
  const int64_t at = xdc::sim::tcp_host_queue_overflow(w, host, 12 * kMs, 100'000);
  ASSERT_GT(at, 0);
  host.dilation = 2;
  EXPECT_EQ(xdc::sim::tcp_host_queue_overflow(w, host, 12 * kMs, 100'000), 0)
      << "half the pacing per millisecond of wall clock: 1 MB does not overflow";
  w.cwnd = 4'000'000;
  EXPECT_NEAR(static_cast<double>(xdc::sim::tcp_host_queue_overflow(w, host, 12 * kMs, 100'000)),
              2.0 * static_cast<double>(at), 2);

  // CUBIC after a loss: a second of the experiment's time is two of the curve's.
  auto grown = [](double dilation) {
    xdc::sim::TcpPath q;
    q.dilation = dilation;
    xdc::sim::TcpConn k;
    k.cwnd = k.ssthresh = k.epoch_cwnd = k.reno_cwnd = 700 * kTcpMss;
    k.w_max = 1000 * kTcpMss;
    k.epoch_ns = 0;
    int64_t t = 0;
    for (int i = 0; i < 20; ++i, t += 50 * kMs) xdc::sim::tcp_round(k, q, 50 * kMs, t, 64 * kMiB);
    return k.cwnd;
  };
  EXPECT_GT(grown(2), grown(1) + 50 * kTcpMss);
}

}  // namespace
