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
