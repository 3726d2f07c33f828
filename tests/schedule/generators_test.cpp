// Every generator's output passes the validator over a grid of sizes; peak activations
// follow the closed forms.
#include "workloads/schedule/generators.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "workloads/schedule/greedy.h"
#include "workloads/schedule/validate.h"

using namespace xdc::sched;

namespace {
Params params(int p, int m, int chunks = 2) {
  Params x;
  x.ranks = p;
  x.microbatches = m;
  x.chunks = chunks;
  x.milp_seconds = 0.5;
  x.milp_max_variables = 1000;  // the MILP runs on the small sizes, the greedy on the rest
  return x;
}
}  // namespace

TEST(Generators, EveryScheduleValidatesOverSizes) {
  for (const auto& name : schedule_names())
    for (int p : {2, 4, 8})
      for (int m : {p, 2 * p, 4 * p}) {
        for (bool wan : {false, true}) {
          Params x = params(p, m);
          if (wan) x.links = two_dc_links(p, p / 2, {2, 0.5});
          Schedule s = generate(name, x);
          auto rep = validate(s);
          EXPECT_TRUE(rep.ok()) << name << " p=" << p << " m=" << m << " wan=" << wan << "\n"
                                << rep.message();
          EXPECT_EQ(s.ranks, p);
          EXPECT_EQ(s.microbatches, m);
        }
      }
}

TEST(Generators, PeakActivationsMatchFormulas) {
  const int p = 4, m = 8;
  auto peak = [&](const char* name) {
    return validate(generate(name, params(p, m))).peak_activations;
  };
  EXPECT_DOUBLE_EQ(peak("1f1b")[0], p);
  EXPECT_DOUBLE_EQ(peak("1f1b")[p - 1], 1);
  EXPECT_DOUBLE_EQ(peak("gpipe")[0], m);
  EXPECT_DOUBLE_EQ(peak("zbh1")[0], p);
  EXPECT_DOUBLE_EQ(peak("zbh2")[0], 2 * p - 1);
  auto v = peak("zbv");
  EXPECT_LE(*std::max_element(v.begin(), v.end()), p);  // 1F1B's peak
}

TEST(Generators, MemoryCapIsHonoured) {
  Params x = params(8, 32);
  x.links = two_dc_links(8, 4, {2, 2});
  x.memory_cap = 8;
  for (const char* name : {"crosspipe-greedy", "overlap", "zbh1", "zbv"})
    EXPECT_TRUE(validate(generate(name, x), 8).ok()) << name;
}

TEST(Generators, PlacementsAndCommunication) {
  Schedule v = generate("zbv", params(4, 8));
  EXPECT_EQ(v.stages, 8);
  EXPECT_EQ(v.stage_rank, (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
  // Stages 3 and 4 share rank 3: no message between them.
  for (const Action& a : v.actions[3])
    if (a.kind == Kind::SEND_F) {
      EXPECT_NE(a.stage, 3);
    }
  Schedule i = generate("interleaved", params(4, 8));
  EXPECT_EQ(i.stage_rank, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
  Schedule one = generate("1f1b", params(2, 2));
  const std::vector<Action> rank0 = {{Kind::F, 0, 0},          {Kind::SEND_F, 0, 0, 1},
                                     {Kind::F, 0, 1},          {Kind::SEND_F, 0, 1, 1},
                                     {Kind::RECV_B, 0, 0, 1},  {Kind::BW, 0, 0},
                                     {Kind::RECV_B, 0, 1, 1},  {Kind::BW, 0, 1},
                                     {Kind::ALLREDUCE, 0, -1}, {Kind::OPT, 0, -1}};
  EXPECT_EQ(one.actions[0], rank0);
}

TEST(Generators, UnknownNameAndBadSizesAreRejected) {
  EXPECT_THROW(generate("2f2b", params(4, 8)), std::invalid_argument);
  EXPECT_THROW(generate("interleaved", params(4, 6)), std::invalid_argument);
  EXPECT_THROW(generate("1f1b", params(0, 8)), std::invalid_argument);
}

// `optimal` against the greedy, judged independently: tests/sim/optimal_test.cpp.

namespace {
PlanModel model_of(const Schedule& s, const Params& x) {
  PlanModel md;
  md.stage_rank = s.stage_rank;
  md.microbatches = s.microbatches;
  md.costs = stage_costs(x, s.stages);
  md.links = x.links;
  return md;
}
}  // namespace

// ZB-H1 as the paper's Figure 3 draws it: stage i runs F_x, B_{x-(p-1-i)}, W_{x-(p-1)}.
TEST(Generators, ZbH1IsThePapersHandcraftedOrder) {
  const auto order = compute_order(generate("zbh1", params(3, 4)));
  auto seq = [&](int r) {
    std::string out;
    for (const Action& a : order[r])
      out += std::string(kind_name(a.kind)) + std::to_string(a.microbatch) + " ";
    return out;
  };
  EXPECT_EQ(seq(0), "F0 F1 F2 B0 W0 F3 B1 W1 B2 W2 B3 W3 ");
  EXPECT_EQ(seq(1), "F0 F1 B0 F2 B1 W0 F3 B2 W1 B3 W2 W3 ");
  EXPECT_EQ(seq(2), "F0 B0 F1 B1 F2 B2 W0 F3 B3 W1 W2 W3 ");
}

// The published figures at zero delay, p = 4, m = 8, T_F = T_B = T_W = 1: 1F1B 33 (bubble
// (p-1)/(m+p-1)), ZB-H1 27 (bubble (p-1)(T_F+T_B-T_W) = 3 of 27 = 11.1%, 1F1B's peak p),
// ZB-V no idle time inside any rank's span and 1F1B's peak.
TEST(Generators, ZeroBubbleFiguresAtZeroDelay) {
  const Params x = params(4, 8);
  auto span = [&](const char* name, std::vector<std::vector<double>>* starts = nullptr) {
    Schedule s = generate(name, x);
    return evaluate_order(model_of(s, x), compute_order(s), starts);
  };
  EXPECT_DOUBLE_EQ(span("1f1b"), 33);
  EXPECT_DOUBLE_EQ(span("zbh1"), 27);
  const auto h1 = validate(generate("zbh1", x)).peak_activations;
  EXPECT_EQ(h1, std::vector<double>(4, 4.0));
  std::vector<std::vector<double>> starts;
  Schedule v = generate("zbv", x);
  evaluate_order(model_of(v, x), compute_order(v), &starts);
  for (int r = 0; r < 4; ++r) {
    // 8 microbatches x 2 chunks x (F + B + W) of 0.5 each, back to back.
    EXPECT_DOUBLE_EQ(starts[r].back() + 0.5 - starts[r].front(), 24) << "rank " << r;
  }
  const auto pv = validate(v).peak_activations;
  EXPECT_DOUBLE_EQ(*std::max_element(pv.begin(), pv.end()), 4);
}
