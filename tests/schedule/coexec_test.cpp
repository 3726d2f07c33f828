// Co-execution (DHelix's strand interleaving): the operator plan (coexec.h) against an
// exhaustive search and worked cases, pairs in the IR (lowering, CSV, validator, memory),
// the engine's pair rules, and the `dhelix` generator's folded slot schedule.
#include "workloads/schedule/coexec.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "workloads/schedule/csv.h"
#include "workloads/schedule/engine.h"
#include "workloads/schedule/generators.h"
#include "workloads/schedule/validate.h"

using namespace xdc::sched;

namespace {
// Every way to interleave a and b into steps (each step: one op of a, one of b, or one
// of each), the fastest: what the dynamic programme must find.
double brute_force(const std::vector<Op>& a, const std::vector<Op>& b, double k, size_t i = 0,
                   size_t j = 0) {
  if (i == a.size() && j == b.size()) return 0;
  double best = 1e300;
  if (i < a.size())
    best = std::min(best, coexec_step(&a[i], nullptr, k).time + brute_force(a, b, k, i + 1, j));
  if (j < b.size())
    best = std::min(best, coexec_step(nullptr, &b[j], k).time + brute_force(a, b, k, i, j + 1));
  if (i < a.size() && j < b.size())
    best = std::min(best, coexec_step(&a[i], &b[j], k).time + brute_force(a, b, k, i + 1, j + 1));
  return best;
}

Costs unit_costs(const Schedule& s, double pair_fraction) {
  Costs c;
  const double per = 1.0 / s.chunks();
  c.duration = [per](int, const Action& a) {
    switch (a.kind) {
      case Kind::F:
        return per;
      case Kind::BW:
        return 2 * per;
      default:
        return 0.0;
    }
  };
  c.pair = [c, pair_fraction](int r, const Action& f, const Action& b) {
    return pair_fraction * (c.duration(r, f) + c.duration(r, b));
  };
  return c;
}

Schedule make(const char* name, int p, int m) {
  Params x;
  x.ranks = p;
  x.microbatches = m;
  x.optimizer = false;
  return generate(name, x);
}
}  // namespace

TEST(Coexec, StepRules) {
  const Op c{3, 0}, m{0, 2}, big{0, 5};
  EXPECT_DOUBLE_EQ(coexec_step(&c, nullptr, 0.5).time, 3);
  EXPECT_DOUBLE_EQ(coexec_step(&c, &c, 0.5).time, 6);  // one device: computations in turn
  EXPECT_DOUBLE_EQ(coexec_step(&m, &m, 0.5).time, 4);  // one set of links likewise
  // 3 of compute beside 2 of communication at k = 0.5: 2 / 1.5 of the compute done
  // during the communication, the rest after it: 2 + 3 - 4/3 = 3 + 2 x 0.5 / 1.5.
  EXPECT_NEAR(coexec_step(&c, &m, 0.5).time, 3 + 1.0 / 1.5, 1e-12);
  // 3 x 1.5 <= 5: the communication is the longer, the compute fits inside it.
  const CoexecStep s = coexec_step(&c, &big, 0.5);
  EXPECT_DOUBLE_EQ(s.time, 5);
  EXPECT_DOUBLE_EQ(s.compute_time, 4.5);
}

TEST(Coexec, PlanIsTheFastestInterleaving) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 4);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<Op> a, b;
    for (int i = 0; i < 1 + trial % 5; ++i) a.push_back(i % 2 ? Op{0, u(rng)} : Op{u(rng), 0});
    for (int i = 0; i < 1 + trial % 4; ++i) b.push_back(i % 2 ? Op{0, u(rng)} : Op{u(rng), 0});
    const double k = trial % 3 * 0.1;
    const CoexecPlan plan = plan_coexec(a, b, k);
    ASSERT_NEAR(plan.time, brute_force(a, b, k), 1e-9) << "trial " << trial;
    double sum = 0;
    for (const CoexecStep& s : plan.steps) sum += s.time;
    EXPECT_NEAR(sum, plan.time, 1e-9);
    EXPECT_LE(plan.time, plan.serial + 1e-9);
  }
}

TEST(Coexec, PlanKeepsEachHalfInOrderAndRunsEveryOperatorOnce) {
  const auto a = sliced_ops(8, 4, 6);
  const auto b = sliced_ops(16, 4, 6, 6);
  const CoexecPlan plan = plan_coexec(a, b, 0.1);
  int na = 0, nb = 0;
  for (const CoexecStep& s : plan.steps) {
    if (s.a >= 0) {
      EXPECT_EQ(s.a, na++);
    }
    if (s.b >= 0) {
      EXPECT_EQ(s.b, nb++);
    }
  }
  EXPECT_EQ(na, static_cast<int>(a.size()));
  EXPECT_EQ(nb, static_cast<int>(b.size()));
}

TEST(Coexec, WithoutCommunicationNothingIsGained) {
  const CoexecPlan plan = plan_coexec(sliced_ops(5, 0, 0), sliced_ops(7, 0, 0, 3), 0.2);
  EXPECT_DOUBLE_EQ(plan.time, 15);
  EXPECT_DOUBLE_EQ(plan.hidden(), 0);
}

TEST(Coexec, CommunicationHidesUnderTheOtherHalfsCompute) {
  // F: 4 slices of 1 each followed by 1 of all-reduce; B: 4 of 2 each, then 1. With no
  // interference every all-reduce can run beside a compute slice of the other half
  // except the last one (nothing is left to compute beside it): 8 + 4 + ... The plan
  // must at least hide 6 of the 8 units of communication.
  const auto f = sliced_ops(4, 4, 4);
  const auto b = sliced_ops(8, 4, 4);
  const CoexecPlan plan = plan_coexec(f, b, 0);
  EXPECT_DOUBLE_EQ(plan.serial, 20);
  EXPECT_LE(plan.time, 14 + 1e-9);
  EXPECT_GE(plan.time, 12 - 1e-9);  // the computation alone
  // Interference only slows it down.
  EXPECT_GT(plan_coexec(f, b, 0.3).time, plan.time);
}

TEST(Coexec, BadInputIsRefused) {
  EXPECT_THROW(plan_coexec({{1, 0}}, {{0, 1}}, -0.1), std::invalid_argument);
  EXPECT_THROW(plan_coexec({{-1, 0}}, {{0, 1}}, 0), std::invalid_argument);
}

TEST(Pairs, LowerPutsBothReceivesBeforeAndBothSendsAfter) {
  // Rank 1 of a plain 3-rank pipeline: F of stage 1 paired with the BW of another
  // microbatch.
  const std::vector<int> sr = plain_placement(3);
  std::vector<Action> out;
  lower_pair(sr, 1, {Kind::F, 1, 3}, {Kind::BW, 1, 0}, out);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(to_string(out[0]), "1RECV_F3");
  EXPECT_EQ(to_string(out[1]), "1RECV_B0");
  EXPECT_EQ(to_string(out[2]), "1F3+");
  EXPECT_EQ(to_string(out[3]), "1BW0");
  EXPECT_EQ(to_string(out[4]), "1SEND_F3");
  EXPECT_EQ(to_string(out[5]), "1SEND_B0");
  std::vector<std::vector<Action>> bad = {{Action{Kind::F, 0, 0, -1, true}}};
  EXPECT_THROW(lower("x", 1, 1, plain_placement(1), bad), std::invalid_argument);
}

TEST(Pairs, CsvRoundTripKeepsThePairs) {
  const Schedule s = make("dhelix", 4, 8);
  const Schedule back = from_csv(to_csv(s), "mem.csv", "dhelix");
  EXPECT_EQ(back, s);
  EXPECT_NE(to_csv(s).find("+,"), std::string::npos);
  EXPECT_THROW(from_csv("0B0+\n", "x.csv"), std::exception);  // only an F can be paired
}

TEST(Pairs, ValidatorNamesAPairWithoutItsPartner) {
  Schedule s = make("1f1b", 2, 2);
  // 1f1b rank 0: F0 SEND F1 SEND RECV_B0 BW0 ...: pair F1 with nothing right after it.
  for (Action& a : s.actions[0])
    if (a.kind == Kind::F && a.microbatch == 1) a.paired = true;
  const auto rep = validate(s);
  ASSERT_FALSE(rep.ok());
  EXPECT_NE(rep.message().find("paired (co-executed) but not an F right before a B or BW"),
            std::string::npos)
      << rep.message();
}

TEST(Pairs, EngineRunsAPairAsOneAndWaitsForBothInputs) {
  // Two ranks, plain placement, F = 1, BW = 2 per stage; on rank 0 the F of microbatch 1
  // is paired with the BW of microbatch 0 and the pair lasts 2.
  Schedule s;
  s.name = "pair";
  s.ranks = 2;
  s.stages = 2;
  s.microbatches = 2;
  s.stage_rank = plain_placement(2);
  Action f1{Kind::F, 0, 1};
  f1.paired = true;
  s.actions = {{}, {}};
  lower_action(s.stage_rank, 0, {Kind::F, 0, 0}, s.actions[0]);
  lower_pair(s.stage_rank, 0, f1, {Kind::BW, 0, 0}, s.actions[0]);
  lower_action(s.stage_rank, 0, {Kind::BW, 0, 1}, s.actions[0]);
  for (const Action& a : {Action{Kind::F, 1, 0}, Action{Kind::BW, 1, 0}, Action{Kind::F, 1, 1},
                          Action{Kind::BW, 1, 1}})
    lower_action(s.stage_rank, 1, a, s.actions[1]);
  ASSERT_TRUE(validate(s).ok()) << validate(s).message();
  Costs c;
  c.duration = [](int, const Action& a) { return a.kind == Kind::F ? 1.0 : 2.0; };
  c.pair = [](int, const Action&, const Action&) { return 2.0; };
  InstantMessages instant;
  const Execution x = execute(s, c, instant);
  ASSERT_TRUE(x.ok());
  // Rank 0: F0 [0,1]; the pair waits for BW0 of stage 1 (rank 1: F0 [1,2], BW0 [2,4]),
  // so it runs [4,6], its partner BW0 a zero-length record at 6; then BW1 after rank 1's
  // F1 [6,7] and BW1 [7,9]: [9,11].
  const auto& row = s.actions[0];
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i].paired) {
      EXPECT_DOUBLE_EQ(x.records[0][i].start, 4);
      EXPECT_DOUBLE_EQ(x.records[0][i].end, 6);
      EXPECT_DOUBLE_EQ(x.records[0][i + 1].start, 6);
      EXPECT_DOUBLE_EQ(x.records[0][i + 1].end, 6);
    }
  }
  EXPECT_DOUBLE_EQ(x.makespan, 11);
}

TEST(Pairs, APartnerThatNeedsItsOwnFIsADeadlock) {
  // One rank, one stage: F0 paired with BW0 of the same microbatch cannot run together.
  Schedule s = lower("x", 1, 1, plain_placement(1), {{Action{Kind::F, 0, 0}, {Kind::BW, 0, 0}}});
  s.actions[0][0].paired = true;
  const auto rep = validate(s);
  EXPECT_FALSE(rep.ok());
  InstantMessages instant;
  const Execution x = execute(s, Costs{}, instant);
  ASSERT_FALSE(x.ok());
  EXPECT_NE(x.deadlock_message().find("its partner 0BW0's dependency: its F"), std::string::npos)
      << x.deadlock_message();
}

TEST(Dhelix, FoldedSlotsGiveOnePairPerSlotAtOneF1BsMemory) {
  for (int p : {2, 4, 8})
    for (int m : {1, 4, 16, 32}) {
      const Schedule s = make("dhelix", p, m);
      const auto rep = validate(s);
      ASSERT_TRUE(rep.ok()) << p << "x" << m << ": " << rep.message();
      EXPECT_EQ(s.stage_rank, v_placement(p));
      // 1F1B's peak: p microbatches on rank 0 (fewer with fewer microbatches).
      for (double peak : rep.peak_activations) EXPECT_LE(peak, std::min(p, m) + 1e-9);
      int pairs = 0;
      for (const auto& row : s.actions)
        for (const Action& a : row) pairs += a.paired;
      // In the steady state every slot of every rank is a pair: all but the ramps.
      if (m >= 4 * p) {
        EXPECT_GE(pairs, p * (2 * m - 4 * p)) << p << "x" << m;
      }
    }
}

TEST(Dhelix, PairsAsSlowAsTheirHalvesGiveOneF1BsTimeAndFasterPairsLess) {
  const Schedule d = make("dhelix", 4, 32), o = make("1f1b", 4, 32);
  InstantMessages instant;
  const double t1f1b = execute(o, unit_costs(o, 1), instant).makespan;
  EXPECT_DOUBLE_EQ(execute(d, unit_costs(d, 1), instant).makespan, t1f1b);
  const double t75 = execute(d, unit_costs(d, 0.75), instant).makespan;
  const double t55 = execute(d, unit_costs(d, 0.55), instant).makespan;
  EXPECT_LT(t75, 0.8 * t1f1b);
  EXPECT_LT(t55, t75);
}
