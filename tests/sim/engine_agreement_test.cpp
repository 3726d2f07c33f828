// One dependency engine (workloads/schedule/engine.h) behind the validator, the
// planner's evaluate_order and the simulator: the same schedules, fed to all three, get
// the same verdict, and the planner's makespan and start times equal the simulator's to
// the nanosecond — over per-pair and shared WAN channels, and for a deadlocking and a
// misordered schedule, which all three refuse naming the same stuck ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "harness/sim/simulator.h"
#include "workloads/schedule/generators.h"
#include "workloads/schedule/greedy.h"
#include "workloads/schedule/validate.h"

using namespace xdc;
using sched::Action;
using sched::Kind;

namespace {
constexpr int64_t kMs = 1'000'000;

struct Setting {
  int stages, microbatches;
  int64_t latency_ns;
  double bandwidth_bps;  // 0 = infinite
  bool shared_wan;       // pairs crossing one WAN direction share its FIFO
};

std::string label(const std::string& name, const Setting& g) {
  return name + " p=" + std::to_string(g.stages) + " m=" + std::to_string(g.microbatches) +
         " lat=" + std::to_string(g.latency_ns) + "ns bw=" + std::to_string(g.bandwidth_bps) +
         (g.shared_wan ? " shared" : " per-pair");
}

constexpr int64_t kActivationBytes = 4'000'000;

sim::LinkModel links(const Setting& g) {
  sim::LinkModel l =
      sim::LinkModel::two_dc(g.stages, g.stages / 2, {g.latency_ns, g.bandwidth_bps});
  if (!g.shared_wan) l.channel.clear();
  return l;
}

// Per rank: F 6 ms, B 8 ms, W 4 ms, split over its chunks.
sim::CostModel costs(const sched::Schedule& s) {
  const int64_t c = s.chunks();
  return sim::constant_costs(s.stages, 6 * kMs / c, 8 * kMs / c, 4 * kMs / c, kActivationBytes);
}

// The planner's model of the same run, in ns.
sched::PlanModel plan_model(const sched::Schedule& s, const sim::CostModel& c,
                            const sim::LinkModel& l) {
  sched::PlanModel md;
  md.stage_rank = s.stage_rank;
  md.microbatches = s.microbatches;
  for (int st = 0; st < s.stages; ++st) {
    md.costs.f.push_back(static_cast<double>(c.f_ns[st]));
    md.costs.b.push_back(static_cast<double>(c.b_ns[st]));
    md.costs.w.push_back(static_cast<double>(c.w_ns[st]));
  }
  md.links.assign(s.ranks, std::vector<sched::LinkDelay>(s.ranks));
  for (int a = 0; a < s.ranks; ++a)
    for (int b = 0; b < s.ranks; ++b)
      md.links[a][b] = {static_cast<double>(l.at(a, b).latency_ns),
                        static_cast<double>(l.at(a, b).transfer_ns(kActivationBytes))};
  md.channel = l.channel;
  return md;
}

sched::Schedule generate(const std::string& name, const Setting& g) {
  sched::Params p;
  p.ranks = g.stages;
  p.microbatches = g.microbatches;
  p.chunks = 2;
  p.t_f = 6, p.t_b = 4, p.t_w = 4;  // ms, as the generators plan
  const sim::LinkModel l = links(g);
  p.links = sched::two_dc_links(
      g.stages, g.stages / 2,
      {static_cast<double>(g.latency_ns) / kMs,
       static_cast<double>(l.at(0, g.stages - 1).transfer_ns(kActivationBytes)) / kMs});
  p.channel = l.channel;
  return sched::generate(name, p);
}

const std::vector<Setting> kSettings = {
    {4, 8, 0, 0, false},
    {4, 8, 5 * kMs, 10e9, false},
    {4, 8, 5 * kMs, 10e9, true},
    {6, 12, 20 * kMs, 1e9, true},
    {8, 16, 40 * kMs, 2.5e9, true},
    {2, 6, 10 * kMs, 0, false},
    {4, 16, 80 * kMs, 0.5e9, true},
};
const std::vector<std::string> kSchedules = {
    "1f1b", "gpipe", "zbh1", "zbv", "interleaved", "overlap", "crosspipe-greedy", "dhelix"};
}  // namespace

TEST(EngineAgreement, SameSchedulesSameAnswersFromAllThree) {
  int compared = 0;
  for (const Setting& g : kSettings)
    for (const std::string& name : kSchedules) {
      const std::string what = label(name, g);
      const sched::Schedule s = generate(name, g);
      const auto rep = sched::validate(s);
      ASSERT_TRUE(rep.ok()) << what << "\n" << rep.message();

      const sim::CostModel c = costs(s);
      const sim::LinkModel l = links(g);
      const trace::Trace t = sim::simulate(s, c, l);
      int64_t sim_makespan = 0;
      std::vector<std::vector<int64_t>> sim_starts(s.ranks);  // compute, in rank order
      for (const auto& e : t.events) {
        sim_makespan = std::max(sim_makespan, e.end_ns);
        if (sched::is_compute(e.kind)) sim_starts[e.rank].push_back(e.start_ns);
      }

      std::vector<std::vector<double>> plan_starts;
      const double plan_makespan =
          sched::evaluate_order(plan_model(s, c, l), sched::compute_order(s), &plan_starts);
      EXPECT_EQ(plan_makespan, static_cast<double>(sim_makespan)) << what;
      ASSERT_EQ(plan_starts.size(), sim_starts.size()) << what;
      for (int r = 0; r < s.ranks; ++r) {
        ASSERT_EQ(plan_starts[r].size(), sim_starts[r].size()) << what;
        for (size_t i = 0; i < sim_starts[r].size(); ++i)
          ASSERT_EQ(plan_starts[r][i], static_cast<double>(sim_starts[r][i]))
              << what << " rank " << r << " compute action " << i;
      }
      ++compared;
    }
  EXPECT_EQ(compared, static_cast<int>(kSettings.size() * kSchedules.size()));
}

// With the shared WAN queue the figures differ from per-pair FIFOs (so the agreement
// above covers the sharing), and the planner sees the same difference as the simulator.
TEST(EngineAgreement, SharedWanChangesBothPlannerAndSimulatorAlike) {
  Setting g{4, 8, 5 * kMs, 1e9, true};
  const sched::Schedule s = generate("interleaved", g);
  const sim::CostModel c = costs(s);
  int64_t sim_span[2];
  double plan_span[2];
  for (int shared : {0, 1}) {
    g.shared_wan = shared;
    const sim::LinkModel l = links(g);
    int64_t end = 0;
    for (const auto& e : sim::simulate(s, c, l).events) end = std::max(end, e.end_ns);
    sim_span[shared] = end;
    plan_span[shared] = sched::evaluate_order(plan_model(s, c, l), sched::compute_order(s));
  }
  EXPECT_GT(sim_span[1], sim_span[0]);
  EXPECT_EQ(plan_span[0], static_cast<double>(sim_span[0]));
  EXPECT_EQ(plan_span[1], static_cast<double>(sim_span[1]));
}

TEST(EngineAgreement, DeadlockingAndMisorderedSchedulesAreRefusedByAllThree) {
  const Setting g{4, 8, 5 * kMs, 10e9, true};
  // Deadlock across ranks: rank 0 runs the backward of microbatch 1 before its forward.
  auto cycle = sched::compute_order(generate("1f1b", g));
  std::iter_swap(std::find(cycle[0].begin(), cycle[0].end(), Action{Kind::F, 0, 1}),
                 std::find(cycle[0].begin(), cycle[0].end(), Action{Kind::BW, 0, 1}));
  // Misordered on one rank: W before its B.
  auto misordered = sched::compute_order(generate("zbh1", g));
  std::iter_swap(std::find(misordered[1].begin(), misordered[1].end(), Action{Kind::B, 1, 0}),
                 std::find(misordered[1].begin(), misordered[1].end(), Action{Kind::W, 1, 0}));
  for (const auto& order : {cycle, misordered}) {
    const sched::Schedule s = sched::lower("bad", 4, 8, sched::plain_placement(4), order);
    const auto rep = sched::validate(s);
    ASSERT_FALSE(rep.ok());
    EXPECT_NE(rep.message().find("deadlock"), std::string::npos) << rep.message();
    const sim::CostModel c = costs(s);
    const sim::LinkModel l = links(g);
    try {
      sim::simulate(s, c, l);
      ADD_FAILURE() << "simulated a deadlocking schedule";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "simulate: " + rep.message());
    }
    try {
      sched::evaluate_order(plan_model(s, c, l), order);
      ADD_FAILURE() << "evaluated a deadlocking order";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "evaluate_order: the order deadlocks:\n" + rep.message());
    }
  }
}
