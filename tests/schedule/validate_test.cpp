// The validator rejects broken schedules and names the rank and the action.
#include "workloads/schedule/validate.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "workloads/schedule/generators.h"

using namespace xdc::sched;

namespace {
Schedule one_f_one_b(int p, int m) {
  Params x;
  x.ranks = p;
  x.microbatches = m;
  return generate("1f1b", x);
}
bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
}  // namespace

TEST(Validate, MissingReceiveIsRejectedNamingRankAndAction) {
  Schedule s = one_f_one_b(4, 4);
  auto& row = s.actions[2];
  row.erase(std::find(row.begin(), row.end(), Action{Kind::RECV_F, 2, 1, 1}));
  auto rep = validate(s);
  ASSERT_FALSE(rep.ok());
  EXPECT_TRUE(contains(rep.message(), "rank 2")) << rep.message();
  EXPECT_TRUE(contains(rep.message(), "(2F1)")) << rep.message();
  EXPECT_TRUE(contains(rep.message(), "RECV_F")) << rep.message();
}

TEST(Validate, CycleIsRejectedAsDeadlock) {
  Schedule s = one_f_one_b(2, 1);
  // Rank 0 waits for the gradient before sending the activation that produces it.
  auto& row = s.actions[0];
  ASSERT_EQ(row[1], (Action{Kind::SEND_F, 0, 0, 1}));
  ASSERT_EQ(row[2], (Action{Kind::RECV_B, 0, 0, 1}));
  std::swap(row[1], row[2]);
  auto rep = validate(s);
  ASSERT_FALSE(rep.ok());
  EXPECT_TRUE(contains(rep.message(), "rank 0, action 1 (0RECV_B0): deadlock")) << rep.message();
  EXPECT_TRUE(contains(rep.message(), "rank 1, action 0 (1RECV_F0): deadlock")) << rep.message();
}

TEST(Validate, WrongPeerMissingComputeAndWrongRankAreRejected) {
  Schedule s = one_f_one_b(4, 4);
  s.actions[1][0].peer = 3;  // RECV_F from rank 0, not 3
  EXPECT_TRUE(contains(validate(s).message(), "peer is 3")) << validate(s).message();

  s = one_f_one_b(4, 4);
  auto& row = s.actions[3];
  row.erase(std::find(row.begin(), row.end(), Action{Kind::BW, 3, 2}));
  EXPECT_TRUE(contains(validate(s).message(), "stage 3 microbatch 2")) << validate(s).message();

  s = one_f_one_b(4, 4);
  s.actions[1].insert(s.actions[1].begin() + 1, s.actions[1][0]);  // RECV_F twice
  EXPECT_TRUE(contains(validate(s).message(), "rank 1, action 1 (1RECV_F0): duplicate"))
      << validate(s).message();

  s = one_f_one_b(4, 4);
  s.actions[0].push_back({Kind::F, 1, 0});
  EXPECT_TRUE(contains(validate(s).message(), "stage 1 lives on rank 1")) << validate(s).message();
}

TEST(Validate, MemoryCapIsChecked) {
  Schedule s = one_f_one_b(4, 8);
  EXPECT_TRUE(validate(s, 4).ok());
  auto rep = validate(s, 3);
  ASSERT_FALSE(rep.ok());
  EXPECT_TRUE(contains(rep.message(), "rank 0: peak activations 4")) << rep.message();
}

TEST(Validate, WeightGradBeforeInputGradIsADeadlock) {
  Params x;
  x.ranks = 2;
  x.microbatches = 2;
  Schedule s = generate("zbh1", x);
  auto& row = s.actions[1];
  auto b = std::find(row.begin(), row.end(), Action{Kind::B, 1, 0});
  auto w = std::find(row.begin(), row.end(), Action{Kind::W, 1, 0});
  std::iter_swap(b, w);
  auto rep = validate(s);
  ASSERT_FALSE(rep.ok());
  EXPECT_TRUE(contains(rep.message(), "(1W0): deadlock: waits forever for its B")) << rep.message();
}
