// The simulator: link latency, bandwidth and FIFO queueing; deadlock detection.
#include "harness/sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "harness/trace/analysis.h"
#include "workloads/schedule/generators.h"

using namespace xdc;
using sched::Kind;

namespace {
constexpr int64_t kMs = 1'000'000;
sched::Schedule gpipe(int p, int m) {
  sched::Params x;
  x.ranks = p;
  x.microbatches = m;
  x.optimizer = false;
  return sched::generate("gpipe", x);
}
}  // namespace

TEST(Simulator, TwoStagesWithLatencyAndBandwidth) {
  // One microbatch: F0 (1 ms), 1 MB over 8 Gbit/s (1 ms) + 5 ms, F1, BW1 (2 ms), back.
  auto s = gpipe(2, 1);
  auto c = sim::constant_costs(2, kMs, kMs, kMs, 1'000'000);
  auto l = sim::LinkModel::uniform(2, {5 * kMs, 8e9});
  auto t = sim::simulate(s, c, l);
  auto sum = trace::analyze(t);
  // 1 + (1 + 5) + 1 + 2 + (1 + 5) + 2 = 18 ms
  EXPECT_EQ(sum.iteration_ns, 18 * kMs);
  bool saw_send = false;
  for (const auto& e : t.events)
    if (e.kind == Kind::SEND_F) {
      saw_send = true;
      EXPECT_EQ(e.bytes, 1'000'000);
      EXPECT_EQ(e.start_ns, kMs);
      EXPECT_EQ(e.end_ns, 2 * kMs);  // on the wire for bytes / bandwidth
    }
  EXPECT_TRUE(saw_send);
}

TEST(Simulator, MessagesQueueFifoPerDirection) {
  // GPipe sends 4 activations 1 ms apart over a link that needs 3 ms each: the last
  // leaves the queue at 1 + 4 * 3 = 13 ms.
  auto s = gpipe(2, 4);
  auto c = sim::constant_costs(2, kMs, kMs, 0, 3'000'000);
  auto l = sim::LinkModel::uniform(2, {0, 8e9});
  auto t = sim::simulate(s, c, l);
  int64_t last = 0;
  for (const auto& e : t.events)
    if (e.kind == Kind::SEND_F) last = std::max(last, e.end_ns);
  EXPECT_EQ(last, 13 * kMs);
}

TEST(Simulator, RankPairsCrossingOneWanShareItsFifo) {
  // Interleaved on 2 DCs: activations 1 -> 2 and gradients 0 -> 3 both go from DC 0 to
  // DC 1; on the wire they never overlap.
  sched::Params x;
  x.ranks = 4;
  x.microbatches = 8;
  x.chunks = 2;
  auto s = sched::generate("interleaved", x);
  auto c = sim::constant_costs(8, kMs, kMs, kMs, 2'000'000);
  auto l = sim::LinkModel::dcs({0, 0, 1, 1}, {kMs, 8e9});
  EXPECT_EQ(l.channel_of(1, 2), l.channel_of(0, 3));
  EXPECT_NE(l.channel_of(1, 2), l.channel_of(2, 1));
  auto t = sim::simulate(s, c, l);
  std::vector<std::pair<int64_t, int64_t>> wire;
  std::set<int> senders;
  for (const auto& e : t.events)
    if ((e.kind == Kind::SEND_F || e.kind == Kind::SEND_B) && e.rank < 2 && e.peer >= 2) {
      wire.push_back({e.start_ns, e.end_ns});
      senders.insert(e.rank);
    }
  EXPECT_EQ(senders.size(), 2u);
  std::sort(wire.begin(), wire.end());
  for (size_t i = 1; i < wire.size(); ++i) EXPECT_LE(wire[i - 1].second, wire[i].first);
}

TEST(Simulator, DeadlockIsReported) {
  auto s = gpipe(2, 1);
  std::swap(s.actions[0][1], s.actions[0][2]);  // RECV_B before SEND_F
  auto c = sim::constant_costs(2, kMs, kMs, kMs, 0);
  EXPECT_THROW(sim::simulate(s, c, sim::LinkModel::uniform(2, {})), std::invalid_argument);
}

TEST(Simulator, LargeIterationIsFast) {
  sched::Params x;
  x.ranks = 64;
  x.microbatches = 512;
  auto s = sched::generate("1f1b", x);
  auto t = sim::simulate(s, sim::constant_costs(64, kMs, 2 * kMs, 0, 1000),
                         sim::LinkModel::uniform(64, {}));
  auto sum = trace::analyze(t);
  EXPECT_EQ(sum.iteration_ns, (512 + 63) * 3 * kMs);
}
