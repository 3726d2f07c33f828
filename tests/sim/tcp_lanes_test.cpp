// Lanes (LinkModel::lanes): a stage's tensor-parallel ranks each receive their own copy
// of a pipeline message over their own connection across the WAN, and the stage goes on
// at the latest. The kernel's view of it (a traced ZB-H1 run whose long TP all-reduces
// each matched the lag between the pair's two copies) is in docs/history/predictions.md.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "harness/sim/link_model.h"
#include "harness/sim/tcp_model.h"

namespace {

using xdc::sim::LinkModel;
using xdc::sim::LinkState;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kMiB = 1 << 20;

// Two ranks in two DCs, 20 ms one way at 200 Mbit/s, stock OpenMPI (rendezvous) over stock
// buffers; the pair's `copies` on `lanes` connections, `loss` at random.
LinkModel wan_pair(int copies, int lanes, double loss) {
  LinkModel m = LinkModel::uniform(2, {20 * kMs, 200e6});
  xdc::sim::TcpPath p;
  p.window_bytes = xdc::sim::tcp_window_bytes(4 << 20, 6 << 20);
  p.loss = loss;
  m.tcp.assign(4, p);
  m.copies = {1, copies, copies, 1};  // [cell(from, to)]: across, both ways
  m.lanes = {1, lanes, lanes, 1};
  return m;
}

// Eight messages of 8 MiB each way, one every 400 ms, from new connections whose losses
// fall as seed `seed` draws them (0: evenly spaced): when the last arrives, in seconds.
double run_s(const LinkModel& m, uint64_t seed) {
  LinkState wire(m, LinkState::launch(m, seed));
  std::vector<int64_t> tickets;
  for (int k = 0; k < 8; ++k) {
    tickets.push_back(wire.post(0, 1, 8 * kMiB, k * 400 * kMs).ticket);
    tickets.push_back(wire.post(1, 0, 8 * kMiB, k * 400 * kMs + 10 * kMs).ticket);
  }
  int64_t last = 0;
  for (const int64_t t : tickets) last = std::max(last, wire.current(t).arrival_ns);
  return static_cast<double>(last) / 1e9;
}

}  // namespace

TEST(TcpLanes, WithoutRandomLossTwoLanesMoveAsTheirAggregate) {
  // Nothing drawn: both lanes meet the same losses at the same places and finish together,
  // as the aggregate of their windows does.
  const double aggregate = run_s(wan_pair(2, 1, 0), 0), lanes = run_s(wan_pair(2, 2, 0), 0);
  std::printf("no loss: aggregate %.3f s, two lanes %.3f s\n", aggregate, lanes);
  EXPECT_NEAR(lanes / aggregate, 1.0, 0.02);
}

TEST(TcpLanes, UnderRandomLossTheStageWaitsForTheLatestLane) {
  // 0.05% loss, drawn per connection: each lane meets its own losses, a message arrives
  // with its slower copy, so over seeds the lanes take longer than the aggregate, whose
  // copies lose and finish together.
  double aggregate = 0, lanes = 0;
  int slower = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    const double l = run_s(wan_pair(2, 2, 5e-4), seed), a = run_s(wan_pair(2, 1, 5e-4), seed);
    aggregate += a;
    lanes += l;
    slower += l > a;
  }
  std::printf("0.05%% loss, 16 seeds: aggregate %.3f s, two lanes %.3f s (later in %d)\n",
              aggregate / 16, lanes / 16, slower);
  EXPECT_GT(lanes, aggregate);
}

TEST(TcpLanes, EachLaneAnswersItsRendezvousOnItsOwnConnection) {
  // A lane's rendezvous request is answered on the same lane the other way: with every
  // lane a connection of its own, the history holds the pair's two connections and one
  // more lane each way, and each has sent (its request, data or answer).
  const LinkModel m = wan_pair(4, 2, 0);
  LinkState wire(m, LinkState::launch(m));
  wire.send(0, 1, 8 * kMiB, 0);
  const std::vector<xdc::sim::TcpConn> h = wire.history();
  ASSERT_EQ(h.size(), 6U);  // 4 pairs' connections (2 used), a second lane each way
  const size_t forward = m.connection(0, 1), back = m.connection(1, 0);
  for (const size_t i : {forward, back, size_t{4}, size_t{5}})
    EXPECT_GT(h[i].last_send_ns, 0) << "connection " << i;
  // Each lane carries two of the four copies: its initial window is two connections'.
  EXPECT_EQ(LinkState::launch(m)[4].cwnd, 2 * xdc::sim::kTcpInitialWindow);
}

TEST(TcpLanes, TheSawtoothsDropChanceGrowsWithTheBurstBehindIt) {
  // A 1 Gbit/s port: 12.5 kB on the wire, 178 kB of queue, the TP pair's 45-segment
  // aggregates. A burst that fits under the sawtooth's backlog is dropped only near its
  // top; one of the port's whole queue always is; between, the chance grows with the burst.
  using xdc::sim::kTcpMss;
  const int64_t bdp = 12'500, limit = 178'000, skb = 45 * kTcpMss, top = bdp + limit;
  auto chance = [&](int64_t burst) {
    return xdc::sim::tcp_sawtooth_drop_chance(top, bdp, skb, limit, burst);
  };
  EXPECT_LT(chance(4 * kTcpMss), 0.01);
  EXPECT_EQ(chance(limit), 1.0);
  const double ten = chance(10 * kTcpMss), eighty = chance(80 * kTcpMss);
  std::printf("behind the sawtooth: 10 segments %.3f, 80 segments %.3f\n", ten, eighty);
  EXPECT_GT(eighty, ten);
  EXPECT_GT(eighty, 0.5);
  EXPECT_EQ(xdc::sim::tcp_sawtooth_drop_chance(bdp, bdp, skb, limit, limit), 0.0);  // no queue
}

TEST(TcpLanes, ARootsBacklogCutsItsOwnLanesStripes) {
  // Stage 0's TP root has its sum queued at its 1 Gbit/s port each time it sends 8 MiB over
  // eight stripes across a 20 ms WAN, once a second: the stripes' first rounds (116 kB)
  // meet it with chance 0.99, each stripe a share by its bytes, so the root's lane's eight
  // stripes are cut (their first ssthresh) and its partner's, the other lane, are not.
  using xdc::sim::kTcpMss;
  LinkModel m = wan_pair(2, 2, 0);
  m.port = {0, 1};
  for (xdc::sim::TcpPath& p : m.tcp) {
    p.connections = 8;
    p.eager_limit = xdc::sim::kNoRendezvous;
    p.feed_bps = 1e9;
    p.host_queue_bytes = 178'000;
  }
  auto cut = [&](int lane) {  // the connections with an ssthresh after the messages
    LinkState wire(m, LinkState::launch(m));
    for (int k = 0; k < 8; ++k) {
      const int64_t at = k * 1000 * kMs;
      if (lane >= 0) wire.note_port_backlog(0, lane, {at, 12'500 + 178'000, 12'500, 45 * kTcpMss});
      wire.send(0, 1, 8 * kMiB, at);
    }
    std::vector<size_t> out;
    const std::vector<xdc::sim::TcpConn> h = wire.history();
    for (size_t i = 0; i < h.size(); ++i)
      if (h[i].ssthresh > 0) out.push_back(i);
    return out;
  };
  // The history: the four pairs' own connections, pair (0, 0)'s stripes, then pair (0, 1)'s
  // lane 0 stripes and lane 1 stripes.
  std::vector<size_t> lane0(8), lane1(8);
  for (size_t k = 0; k < 8; ++k) {
    lane0[k] = 12 + k;
    lane1[k] = 20 + k;
  }
  EXPECT_TRUE(cut(-1).empty());
  EXPECT_EQ(cut(0), lane0);
  EXPECT_EQ(cut(1), lane1);
}
