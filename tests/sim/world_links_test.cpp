// A world's data-parallel links as the plan builds them for many ranks (link_model.h: a
// row per host, and connections only for the pairs that the collectives and the barrier
// use, worker_model.h's dp_pairs) time a run exactly as the same links with a row and a
// connection per rank pair do; and their connections grow with the ranks, not with
// their square.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "harness/sim/link_model.h"
#include "harness/sim/link_timeline.h"
#include "harness/sim/simulator.h"
#include "harness/sim/worker_model.h"
#include "workloads/schedule/generators.h"

using namespace xdc;

namespace {
constexpr int64_t kMs = 1'000'000;

// `replicas` replicas of a `stages`-rank pipeline (world rank q x stages + r). Replica q
// runs on the hosts of replica q % 4, so replicas share hosts; the hosts of replicas 0
// and 1 are in DC 0, those of 2 and 3 in DC 1 (10 ms, 100 Mbit/s between, one channel
// per direction; 1 ms, 1 Gbit/s inside). With `tcp`, every pair's TCP path (`loss`
// across the WAN, `eager` OpenMPI's limit). A row per host, every pair a connection.
sim::LinkModel world_by_host(int stages, int replicas, bool tcp, double loss = 0,
                             int64_t eager = sim::kOpenMpiEagerLimit) {
  sim::LinkModel m;
  m.ranks = stages * replicas;
  const int shared = std::min(replicas, 4);
  m.hosts = stages * shared;
  for (int q = 0; q < replicas; ++q)
    for (int r = 0; r < stages; ++r) m.host.push_back((q % shared) * stages + r);
  auto dc = [stages](int h) { return h / stages / 2; };
  const auto rows = static_cast<size_t>(m.hosts);
  m.links.assign(rows * rows, {kMs, 1e9});
  m.channel.assign(rows * rows, -1);
  if (tcp) m.tcp.assign(rows * rows, {});
  for (int a = 0; a < m.hosts; ++a)
    for (int b = 0; b < m.hosts; ++b) {
      const size_t i = static_cast<size_t>(a) * rows + b;
      if (a == b) m.links[i] = {};
      if (dc(a) != dc(b)) {
        m.links[i] = {10 * kMs, 1e8};
        m.channel[i] = m.ranks * m.ranks + dc(a) * 2 + dc(b);
      }
      if (tcp) {
        m.tcp[i].window_bytes = sim::tcp_window_bytes(4 << 20, 6 << 20);
        m.tcp[i].eager_limit = eager;
        if (dc(a) != dc(b)) m.tcp[i].loss = loss;
      }
    }
  return m;
}

using Row = std::tuple<int, sched::Kind, int, int, int64_t, int64_t, int64_t, int, int>;
std::vector<Row> rows_of(const trace::Trace& t) {
  std::vector<Row> out;
  for (const auto& e : t.events)
    out.emplace_back(e.rank, e.kind, e.stage, e.microbatch, e.start_ns, e.end_ns, e.bytes, e.peer,
                     e.connections);
  return out;
}

struct Case {
  int stages, replicas;
  bool gloo, outer;
  double loss;
};

// The steady iteration and a run from new connections (seeded losses), with `w`'s links.
std::vector<std::vector<Row>> predict(const Case& k, const sim::WorkerModel& w) {
  sched::Params p;
  p.ranks = k.stages;
  p.microbatches = 4;
  const sched::Schedule s = sched::generate("1f1b", p);
  sim::CostModel c = sim::constant_costs(k.stages, 20 * kMs, 40 * kMs, 0, 1000);
  c.grad_bytes.assign(k.stages, 1 << 20);
  if (k.outer) c.outer_bytes.assign(k.stages, {512 << 10});
  const auto pipeline = sim::LinkModel::uniform(k.stages, {kMs, 0});
  std::vector<std::vector<Row>> out{rows_of(sim::simulate_iteration(s, c, pipeline, w))};
  sim::RunTimeline tl{sim::LinkTimeline(k.stages), sim::LinkTimeline(w.world.ranks), nullptr, true};
  for (const auto& t : sim::simulate_run(s, c, pipeline, w, 5, tl)) out.push_back(rows_of(t));
  return out;
}
}  // namespace

TEST(WorldLinks, ByHostWithTheCollectivesPairsPredictsAsEveryRankPair) {
  for (const Case& k : {Case{2, 4, false, false, 0}, Case{3, 6, false, true, 0.001},
                        Case{2, 5, true, false, 0.001}, Case{4, 8, false, false, 0.0005}}) {
    SCOPED_TRACE(::testing::Message() << k.stages << " stages x " << k.replicas << " replicas"
                                      << (k.gloo ? ", gloo" : "") << (k.outer ? ", outer" : ""));
    sim::WorkerModel w;
    w.replicas = k.replicas;
    w.iteration_barrier = true;
    w.loss_seed = 7;
    if (k.outer) w.outer_every = 2;
    if (k.gloo) w.dp_collective = sim::WorkerModel::Collective::kGlooRing;
    w.world = world_by_host(k.stages, k.replicas, false);
    w.dp_links = world_by_host(k.stages, k.replicas, true, k.loss,
                               k.gloo ? sim::kNoRendezvous : sim::kOpenMpiEagerLimit);
    sim::WorkerModel every = w;  // a row and a connection per rank pair
    every.world = w.world.by_rank();
    every.dp_links = w.dp_links.by_rank();
    ASSERT_TRUE(every.dp_links.host.empty());
    w.dp_links.set_pairs(sim::dp_pairs(w.dp_links.ranks, k.stages, k.gloo, true));
    ASSERT_LT(w.dp_links.connections(), every.dp_links.connections());
    const auto a = predict(k, w), b = predict(k, every);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "trace " << i;
  }
}

TEST(WorldLinks, TheCollectivesConnectionsGrowWithTheRanks) {
  // 64 pipeline ranks: the binomial all-reduce's pairs (both directions) are at most four
  // per rank; the barrier adds one per rank and round, log2 of the world.
  for (int members : {8, 32, 128}) {
    const int world = 64 * members;
    sim::LinkModel m;
    m.ranks = world;
    m.set_pairs(sim::dp_pairs(world, 64, false, false));
    EXPECT_LE(m.connections(), static_cast<size_t>(4 * world)) << world;
    m.set_pairs(sim::dp_pairs(world, 64, false, true));
    const auto rounds = static_cast<size_t>(std::ceil(std::log2(world)));
    EXPECT_LE(m.connections(), static_cast<size_t>(world) * (4 + rounds)) << world;
    EXPECT_EQ(m.connection(0, 0), sim::LinkModel::kNoConnection);
    EXPECT_NE(m.connection(64, 0), sim::LinkModel::kNoConnection);  // replica 1 -> 0
  }
}
