// The workers' iteration-level behaviour in the simulator (worker_model.h): libnbc's
// binomial all-reduce and dissemination barrier on hand-worked cases, the gradient-norm
// all-reduce holding every rank's first OPT, the barrier's staggered starts.
#include "harness/sim/worker_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "harness/sim/simulator.h"
#include "harness/trace/analysis.h"
#include "workloads/schedule/generators.h"

using namespace xdc;
using sched::Kind;

namespace {
constexpr int64_t kMs = 1'000'000;
// Ranks 0, 1 in one DC and 2, 3 in another: 1 ms inside, 10 ms between.
sim::LinkModel two_dcs() {
  return sim::LinkModel::dcs({0, 0, 1, 1}, {10 * kMs, 0}, {kMs, 0});
}
// Two ranks, one stage each, running `actions` over `microbatches`.
sched::Schedule pair(int microbatches, std::vector<std::vector<sched::Action>> actions) {
  sched::Schedule s;
  s.name = "pair";
  s.ranks = 2;
  s.stages = 2;
  s.microbatches = microbatches;
  s.stage_rank = {0, 1};
  s.actions = std::move(actions);
  return s;
}
}  // namespace

TEST(WorkerModel, BinomialAllreduceReducesToRankZeroThenBroadcasts) {
  // Reduce: 1 -> 0 (1 ms), 3 -> 2 (1 ms), then 2 -> 0 (10 ms): rank 0 has the sum at 11.
  // Broadcast: 0 -> 1 (12), 0 -> 2 (21), 2 -> 3 (22).
  EXPECT_EQ(sim::binomial_allreduce({0, 0, 0, 0}, two_dcs(), 8),
            (std::vector<int64_t>{11 * kMs, 12 * kMs, 21 * kMs, 22 * kMs}));
  // The last to enter decides: rank 3 at 50 ms -> 2 at 51 -> 0 at 61 -> 3 at 72.
  EXPECT_EQ(sim::binomial_allreduce({0, 0, 0, 50 * kMs}, two_dcs(), 8),
            (std::vector<int64_t>{61 * kMs, 62 * kMs, 71 * kMs, 72 * kMs}));
}

TEST(WorkerModel, DisseminationBarrier) {
  // Round 1 (from r - 1): 0 <- 3 at 10, 1 <- 0 at 1, 2 <- 1 at 10, 3 <- 2 at 1.
  // Round 2 (from r - 2): 0 <- 2 at 20, 1 <- 3 at 11, 2 <- 0 at 20, 3 <- 1 at 11.
  EXPECT_EQ(sim::dissemination_barrier({0, 0, 0, 0}, two_dcs()),
            (std::vector<int64_t>{20 * kMs, 11 * kMs, 20 * kMs, 11 * kMs}));
  // Three ranks, 1 ms apart, rank 1 enters at 5: round 1 (from r - 1) gives 1, 5, 6;
  // round 2 (from r - 2 = r + 1 mod 3) gives 6, 7, 6.
  const auto u = sim::LinkModel::uniform(3, {kMs, 0});
  EXPECT_EQ(sim::dissemination_barrier({0, 5 * kMs, 0}, u),
            (std::vector<int64_t>{6 * kMs, 7 * kMs, 6 * kMs}));
}

TEST(WorkerModel, GradNormHoldsEveryFirstOptUntilTheAllreduceCompletes) {
  sched::Params p;
  p.ranks = 4;
  p.microbatches = 4;
  const sched::Schedule s = sched::generate("1f1b", p);
  const auto c = sim::constant_costs(4, kMs, 2 * kMs, kMs, 1000);
  const sim::LinkModel l = two_dcs();
  auto first_opt = [](const trace::Trace& t) {
    std::vector<int64_t> at(4, -1);
    for (const auto& e : t.events)
      if (e.kind == Kind::OPT && (at[e.rank] < 0 || e.start_ns < at[e.rank]))
        at[e.rank] = e.start_ns;
    return at;
  };
  const std::vector<int64_t> free = first_opt(sim::simulate(s, c, l));
  ASSERT_TRUE(std::none_of(free.begin(), free.end(), [](int64_t x) { return x < 0; }));
  sim::IterationSetup setup;
  setup.grad_norm = [&](const std::vector<int64_t>& enter) {
    return sim::binomial_allreduce(enter, l, 8);
  };
  // Everything before the first OPT is unchanged, so each rank enters where it reached
  // its OPT without the all-reduce, and starts the OPT where the all-reduce ends.
  EXPECT_EQ(first_opt(sim::simulate(s, c, l, setup)), sim::binomial_allreduce(free, l, 8));
}

TEST(WorkerModel, BarrierStaggersTheStartsAsHandWorked) {
  // Rank 0: F (1 ms), SEND_F; rank 1: RECV_F, F (3 ms); 10 ms between them.
  const sched::Schedule s = pair(1, {{{Kind::F, 0, 0, -1}, {Kind::SEND_F, 0, 0, 1}},
                                     {{Kind::RECV_F, 1, 0, 0}, {Kind::F, 1, 0, -1}}});
  sim::CostModel c;
  c.f_ns = {kMs, 3 * kMs};
  c.b_ns = c.w_ns = {0, 0};
  c.activation_bytes = {0, 0};
  const auto l = sim::LinkModel::uniform(2, {10 * kMs, 0});
  // Without the barrier both start at 0: 1 + 10 + 3 = 14 ms.
  sim::WorkerModel w;
  w.iteration_barrier = false;
  EXPECT_EQ(trace::analyze(sim::simulate_iteration(s, c, l, w)).iteration_ns, 14 * kMs);
  // With it: rank 0 ends at 1 and rank 1 at 14; the barrier releases rank 0 at
  // 14 + 10 = 24 and rank 1 at 14, so rank 0 starts 10 ms after rank 1, whose RECV
  // waits from its own start: 10 + 1 + 10 + 3 = 24 ms, and the next barrier gives the
  // same offsets.
  w.iteration_barrier = true;
  const trace::Trace t = sim::simulate_iteration(s, c, l, w);
  EXPECT_EQ(trace::analyze(t).iteration_ns, 24 * kMs);
  for (const auto& e : t.events)
    if (e.kind == Kind::F && e.rank == 0) {
      EXPECT_EQ(e.start_ns, 10 * kMs);
    }
}

TEST(WorkerModel, AnIterationsDataParallelAllreducesShareTheWanTheyCross) {
  // Two stages x two replicas, replica 0 in DC A (world ranks 0, 1), replica 1 in DC B
  // (2, 3): each stage's all-reduce crosses the WAN (10 ms, 100 Mbit/s, one FIFO channel
  // per direction), 8 MiB each, T = 671 ms on the wire. Stage 1 enters first (at t1):
  // reduce 3 -> 1 at t1, then stage 0's 2 -> 0 queues behind it on B -> A; the broadcasts
  // 1 -> 3 and 0 -> 2 likewise on A -> B. So stage 1 lasts 2T + 20 ms, and stage 0 ends at
  // t1 + 3T + 20 ms, where alone it would last 2T + 20 ms too.
  sched::Params p;
  p.ranks = 2;
  p.microbatches = 2;
  const sched::Schedule s = sched::generate("1f1b", p);
  auto c = sim::constant_costs(2, kMs, 2 * kMs, 0, 1000);
  c.allreduce_ns = 5 * kMs;
  c.grad_bytes = {8 << 20, 8 << 20};
  const auto lan = sim::LinkModel::uniform(2, {kMs, 0});
  sim::WorkerModel w;
  w.iteration_barrier = false;
  w.replicas = 2;
  w.world = sim::LinkModel::dcs({0, 0, 1, 1}, {10 * kMs, 1e8}, {kMs, 0});
  auto allreduces = [&](const sim::WorkerModel& m) {
    std::vector<std::pair<int64_t, int64_t>> at(2, {-1, -1});  // per stage: start, end
    for (const auto& e : sim::simulate_iteration(s, c, lan, m).events)
      if (e.kind == Kind::ALLREDUCE) at[e.stage] = {e.start_ns, e.end_ns};
    return at;
  };
  // Without dp_links: the cost model's time.
  for (const auto& [start, end] : allreduces(w)) EXPECT_EQ(end - start, 5 * kMs);
  w.dp_links = w.world;
  const auto at = allreduces(w);
  const int64_t T = (8 << 20) * 8 * 10;  // ns at 100 Mbit/s
  const int64_t t1 = at[1].first, t0 = at[0].first;
  ASSERT_LT(t1, t0);
  EXPECT_EQ(at[1].second - t1, 2 * T + 20 * kMs);
  EXPECT_EQ(at[0].second, t1 + 3 * T + 20 * kMs);
}

TEST(WorkerModel, TheBarriersMessagesRestartTheIdleClockOfTheAllreducesConnections) {
  // Two stages x two replicas in two DCs (40 ms, 1 Gbit/s, stock socket buffers), 4 MiB of
  // gradients a stage, six iterations from new connections. OpenMPI has one TCP connection
  // per pair of processes, so the iteration barrier's message between two replicas goes
  // on the connection their all-reduce uses (the kernel's tcp_probe shows its 22 bytes
  // there), and Linux halves the window once per retransmission timeout (RTO, 284 ms here)
  // of idle at each send (tcp_cwnd_restart): at the barrier's message for the idle since
  // the previous all-reduce, at the all-reduce for the idle since the barrier. An OPT of
  // 300 or 400 ms after the all-reduce leaves one RTO before the barrier either way, so
  // the window the next all-reduce finds, and its time, are the same; counted from the
  // previous all-reduce instead, the idle differs by 100 ms and crosses an RTO.
  sched::Params p;
  p.ranks = 2;
  p.microbatches = 2;
  const sched::Schedule s = sched::generate("1f1b", p);
  sim::WorkerModel w;
  w.iteration_barrier = true;
  w.replicas = 2;
  w.world = sim::LinkModel::dcs({0, 0, 1, 1}, {40 * kMs, 1e9}, {kMs, 0});
  sim::TcpPath tcp;
  tcp.window_bytes = sim::tcp_window_bytes(4 << 20, 6 << 20);
  w.world.tcp.assign(16, tcp);
  w.dp_links = w.world;
  const auto lan = sim::LinkModel::uniform(2, {kMs, 0});
  auto last_allreduces_ms = [&](int64_t opt_ns) {
    auto c = sim::constant_costs(2, 100 * kMs, 100 * kMs, 0, 1000);
    c.grad_bytes = {4 << 20, 4 << 20};
    c.opt_ns = opt_ns;
    sim::RunTimeline tl{sim::LinkTimeline(2), sim::LinkTimeline(4), nullptr, true};
    const auto run = sim::simulate_run(s, c, lan, w, 6, tl);
    std::vector<double> out;
    for (const auto& e : run.back().events)
      if (e.kind == Kind::ALLREDUCE) out.push_back((e.end_ns - e.start_ns) / 1e6);
    return out;
  };
  const std::vector<double> a = last_allreduces_ms(300 * kMs), b = last_allreduces_ms(400 * kMs);
  ASSERT_EQ(a.size(), 2u);  // replica 0's two ranks (replica 1 runs alike)
  std::printf("last all-reduces after OPT 300 ms: %.1f / %.1f ms, after 400 ms: %.1f / %.1f ms\n",
              a[0], a[1], b[0], b[1]);
  EXPECT_EQ(a, b);
}

TEST(WorkerModel, EachMemberOfTheAllreduceEndsItsOwnRequest) {
  // Four replicas of one stage in four DCs (10 ms, 1 Gbit/s), 4 MiB: libnbc's binomial
  // rounds reduce 1 -> 0 and 3 -> 2, then 2 -> 0; the broadcast sends 0 -> 1 and 0 -> 2
  // at once, then 1 -> 3; T a message's serialisation. A rank's request ends when it has
  // the sum and its own sends have left it: the root and the member that forwards to 3
  // a one-way delay before those they send to. Measured (experiments/repro/dp-sync.yaml,
  // 4 MiB, 10 ms, four replicas; the ranks' traces): ranks 0, 2, 1, 3 ended 980, 992,
  // 1103, 1124 ms into the iteration, and the barrier after it released 3, then 0 and 1
  // 10 ms later, then 2 at 24 ms.
  sched::Schedule s;
  s.name = "one";
  s.ranks = s.stages = 1;
  s.microbatches = 1;
  s.stage_rank = {0};
  s.actions = {{{Kind::ALLREDUCE, 0, -1, -1}}};
  sim::CostModel c = sim::constant_costs(1, kMs, kMs, 0, 0);
  c.grad_bytes = {4 << 20};
  sim::WorkerModel w;
  w.replicas = 4;
  w.world = sim::LinkModel::dcs({0, 1, 2, 3}, {10 * kMs, 1e9}, {kMs, 0});
  w.dp_links = w.world;
  trace::Trace t;
  t.ranks = 1;
  t.events.push_back({0, Kind::ALLREDUCE, 0, -1, 0, 0});
  sim::TimedLinks wire(w.dp_links, sim::LinkTimeline(4), 0);
  std::vector<int64_t> own;
  const std::vector<int64_t> ns = sim::dp_allreduce_ns(t, s, c, w, wire, &own);
  const int64_t T = w.world.at(0, 1).transfer_ns(4 << 20), d = 10 * kMs;
  ASSERT_EQ(ns.size(), 1u);
  EXPECT_EQ(ns[0], 4 * T + 4 * d);  // three rounds of messages, the last rank's sum
  EXPECT_EQ(own,
            (std::vector<int64_t>{3 * T + 2 * d, 4 * T + 3 * d, 3 * T + 3 * d, 4 * T + 4 * d}));
}

TEST(WorkerModel, LibnbcCopiesItsInPlaceBufferWithAnOddRoundCountAndSumsEachReceive) {
  // 64 MiB: a fresh temporary (HostMemory::kFreshBufferBytes) copied at 1 GB/s, C = 67.1 ms;
  // each received partial sum added at 2 GB/s, S = 33.6 ms; 1 ms a message.
  const int64_t bytes = 64LL << 20, C = bytes, S = bytes / 2;
  const sim::HostMemory mem{1e9, 1e10, 2e9};
  auto ms = [](int from, int to, int64_t, int64_t at) { return at + (from == to ? 0 : kMs); };
  // Two ranks, one round (odd): both copy first; rank 0 sums what 1 sent, then broadcasts.
  EXPECT_EQ(sim::binomial_allreduce({0, 0}, bytes, true, ms, mem),
            (std::vector<int64_t>{C + kMs + S, C + 2 * kMs + S}));
  // Four, two rounds (even): no copy; 0 and 2 sum in round 1, 0 again in round 2.
  EXPECT_EQ(
      sim::binomial_allreduce({0, 0, 0, 0}, bytes, true, ms, mem),
      (std::vector<int64_t>{2 * kMs + 2 * S, 3 * kMs + 2 * S, 3 * kMs + 2 * S, 4 * kMs + 2 * S}));
  // Below glibc's largest mmap threshold the temporary's pages are reused: the warm rate.
  EXPECT_EQ(mem.copy_ns(16LL << 20, 2), 1677722);  // 16 MiB / 10 GB/s, rounded
  EXPECT_EQ(mem.copy_ns(16LL << 20, 5), 1677722);
  EXPECT_EQ(sim::HostMemory{}.copy_ns(bytes, 2), 0);  // no rates: free

  // The iteration's all-reduce over dp_links (dp_allreduce_ns): C + S longer.
  sched::Params p;
  p.ranks = 1;
  p.microbatches = 2;
  const sched::Schedule s = sched::generate("1f1b", p);
  auto c = sim::constant_costs(1, kMs, 2 * kMs, 0, 1000);
  c.grad_bytes = {bytes};
  sim::WorkerModel w;
  w.iteration_barrier = false;
  w.replicas = 2;
  w.world = sim::LinkModel::dcs({0, 1}, {10 * kMs, 1e9}, {kMs, 0});
  w.dp_links = w.world;
  auto allreduce = [&](const sim::WorkerModel& m) {
    for (const auto& e :
         sim::simulate_iteration(s, c, sim::LinkModel::uniform(1, {0, 0}), m).events)
      if (e.kind == Kind::ALLREDUCE) return e.end_ns - e.start_ns;
    return int64_t{-1};
  };
  const int64_t free_ns = allreduce(w);
  w.host_memory = mem;
  EXPECT_EQ(allreduce(w), free_ns + C + S);
}

TEST(WorkerModel, ARendezvousReachingAComputingRankWaitsForItsBackedOffPoll) {
  // Rank 0: F (10 ms), SEND_F, twice; rank 1: RECV_F, F (20 ms), twice; 256 KiB messages
  // (OpenMPI's put protocol: a request, the receiver's answer, the data) over 50 us at
  // 10 Gbit/s. Microbatch 0's request reaches rank 1 waiting in its RECV, which polls every
  // 100 us (half of it expected), and its answer reaches rank 0 computing with that send
  // pending (the same): 100 us later than acted on at once. Microbatch 1's reaches rank 1
  // 9.6 ms into its F, its comm thread backed off to a poll every 1 ms (half expected):
  // 550 us later.
  const sched::Schedule s = pair(
      2,
      {{{Kind::F, 0, 0, -1}, {Kind::SEND_F, 0, 0, 1}, {Kind::F, 0, 1, -1}, {Kind::SEND_F, 0, 1, 1}},
       {{Kind::RECV_F, 1, 0, 0},
        {Kind::F, 1, 0, -1},
        {Kind::RECV_F, 1, 1, 0},
        {Kind::F, 1, 1, -1}}});
  sim::CostModel c;
  c.f_ns = {10 * kMs, 20 * kMs};
  c.b_ns = c.w_ns = {0, 0};
  c.activation_bytes = {256 << 10, 0};
  sim::LinkModel l = sim::LinkModel::uniform(2, {50'000, 1e10});
  sim::TcpPath p;
  p.window_bytes = 4 << 20;
  l.tcp.assign(4, p);
  sim::WorkerModel w;
  w.iteration_barrier = false;
  auto sends = [&](int64_t poll_ns) {
    w.poll_ns = poll_ns;
    std::vector<int64_t> end(2, -1);
    for (const auto& e : sim::simulate_iteration(s, c, l, w).events)
      if (e.kind == Kind::SEND_F) end[e.microbatch] = e.end_ns;
    return end;
  };
  const std::vector<int64_t> at_once = sends(0), polled = sends(100'000);
  EXPECT_EQ(polled[0] - at_once[0], 100'000);
  EXPECT_EQ(polled[1] - at_once[1], 550'000);
}
