// The dependency engine (engine.h): its timing rules on cases worked by hand, FIFO
// channels shared by rank pairs, deadlocks named per rank, appending in any order, and
// the validator and the planner's evaluator giving the same verdicts (both run it).
// tests/sim/engine_agreement_test.cpp adds the simulator.
#include "workloads/schedule/engine.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "workloads/schedule/generators.h"
#include "workloads/schedule/greedy.h"
#include "workloads/schedule/validate.h"

using namespace xdc::sched;

namespace {
// latency + transfer per message on the given channels.
struct Timing : MessageTiming {
  FifoChannels fifo;
  double latency, transfer;
  Timing(int ranks, double lat, double tr, std::vector<int> channel = {})
      : fifo(ranks, std::move(channel)), latency(lat), transfer(tr) {}
  Transfer send(int from, int to, int64_t, double ready, const Action&) override {
    return fifo.send(from, to, ready, transfer, latency);
  }
};

Costs costs(double f, double b, double w) {
  Costs c;
  c.duration = [=](int, const Action& a) {
    switch (a.kind) {
      case Kind::F:
        return f;
      case Kind::B:
        return b;
      case Kind::W:
        return w;
      case Kind::BW:
        return b + w;
      default:
        return 0.0;
    }
  };
  return c;
}

Schedule make(const char* name, int p, int m,
              const std::vector<std::vector<LinkDelay>>& links = {}) {
  Params x;
  x.ranks = p;
  x.microbatches = m;
  x.links = links;
  x.optimizer = false;
  return generate(name, x);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
}  // namespace

TEST(Engine, TwoStagesOneMicrobatchByHand) {
  // F = 1, BW = 1 + 2; each message 1 on the wire + 5 latency.
  const Schedule s =
      lower("t", 2, 1, plain_placement(2),
            {{{Kind::F, 0, 0}, {Kind::BW, 0, 0}}, {{Kind::F, 1, 0}, {Kind::BW, 1, 0}}}, false);
  Timing t(2, 5, 1);
  const Execution x = execute(s, costs(1, 1, 2), t);
  ASSERT_TRUE(x.ok()) << x.deadlock_message();
  // rank 0: F [0,1), SEND_F [1,2) arriving at 7, RECV_B [1,17), BW [17,20)
  // rank 1: RECV_F [0,7), F [7,8), BW [8,11), SEND_B [11,12) arriving at 17
  ASSERT_EQ(s.actions[0][2].kind, Kind::RECV_B);
  const std::vector<std::pair<double, double>> r0 = {{0, 1}, {1, 2}, {1, 17}, {17, 20}};
  const std::vector<std::pair<double, double>> r1 = {{0, 7}, {7, 8}, {8, 11}, {11, 12}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(x.records[0][i].start, r0[i].first) << i;
    EXPECT_EQ(x.records[0][i].end, r0[i].second) << i;
    EXPECT_EQ(x.records[1][i].start, r1[i].first) << i;
    EXPECT_EQ(x.records[1][i].end, r1[i].second) << i;
  }
  EXPECT_EQ(x.makespan, 20);
}

TEST(Engine, AComputeActionEndsWhereCostsEndSays) {
  // The same pipeline with rank 1's F held 4 longer (Costs::end, from its start): its SEND_B
  // and rank 0's RECV_B and BW move by 4, nothing before.
  const Schedule s =
      lower("t", 2, 1, plain_placement(2),
            {{{Kind::F, 0, 0}, {Kind::BW, 0, 0}}, {{Kind::F, 1, 0}, {Kind::BW, 1, 0}}}, false);
  Timing t(2, 5, 1);
  Costs c = costs(1, 1, 2);
  std::vector<double> asked;
  c.end = [&asked](int rank, const Action& a, double start, double d) {
    asked.push_back(start);
    return rank == 1 && a.kind == Kind::F ? start + d + 4 : start + d;
  };
  const Execution x = execute(s, c, t);
  ASSERT_TRUE(x.ok()) << x.deadlock_message();
  EXPECT_EQ(x.records[1][1].start, 7);
  EXPECT_EQ(x.records[1][1].end, 12);  // F [7, 8) + 4
  EXPECT_EQ(x.records[0][3].end, 24);  // BW [21, 24): SEND_B [15, 16) arriving at 21
  EXPECT_EQ(x.makespan, 24);
  EXPECT_EQ(asked.size(), 4u);  // every compute action asked once
}

TEST(Engine, FifoChannelSharedByTwoPairsServesThemInTurn) {
  // Pairs 1 -> 2 and 0 -> 3 share channel 16 (one WAN direction); 2 -> 1 has its own.
  std::vector<int> ch(16);
  for (int i = 0; i < 16; ++i) ch[i] = i;
  ch[1 * 4 + 2] = ch[0 * 4 + 3] = 16;
  FifoChannels f(4, ch);
  const Transfer a = f.send(1, 2, 0, 3, 1);
  const Transfer b = f.send(0, 3, 1, 3, 1);  // ready at 1, waits for the channel until 3
  const Transfer c = f.send(2, 1, 1, 3, 1);  // other direction: not delayed
  EXPECT_EQ(a.start, 0);
  EXPECT_EQ(a.end, 3);
  EXPECT_EQ(a.arrival, 4);
  EXPECT_EQ(b.start, 3);
  EXPECT_EQ(b.end, 6);
  EXPECT_EQ(b.arrival, 7);
  EXPECT_EQ(c.start, 1);
  EXPECT_EQ(c.arrival, 5);
  EXPECT_THROW(FifoChannels(4, {0, 1}), std::invalid_argument);
}

// Every message takes 10; a send while earlier ones are still on their way delays each of
// them by 10 more (as if they shared the channel), through tickets and current().
struct Sharing : MessageTiming {
  std::vector<Transfer> sent;
  Transfer send(int, int, int64_t, double ready, const Action&) override {
    for (Transfer& x : sent)
      if (x.arrival > ready) x.arrival += 10;
    sent.push_back({ready, ready, ready + 10, static_cast<int64_t>(sent.size())});
    return sent.back();
  }
  Transfer current(int64_t ticket) override { return sent.at(static_cast<size_t>(ticket)); }
};

TEST(Engine, ARecvWaitsForTheArrivalLaterSendsRevised) {
  // rank 0: F0 [0,1), SEND_F0 at 1 (arrives at 11), F1 [1,2), SEND_F1 at 2, which delays
  // message 0 to 21. Rank 1 was woken for 11 but completes RECV_F0 at 21, not 11.
  const Schedule s =
      lower("t", 2, 2, plain_placement(2),
            {{{Kind::F, 0, 0}, {Kind::F, 0, 1}}, {{Kind::F, 1, 0}, {Kind::F, 1, 1}}}, false);
  Sharing t;
  const Execution x = execute(s, costs(1, 1, 1), t);
  ASSERT_TRUE(x.ok()) << x.deadlock_message();
  ASSERT_EQ(s.actions[1][0].kind, Kind::RECV_F);
  EXPECT_EQ(x.records[1][0].start, 0);
  EXPECT_EQ(x.records[1][0].end, 21);
  EXPECT_EQ(x.records[1][1].start, 21);  // F0 of stage 1
  EXPECT_EQ(x.makespan, 23);
  // A timing that gives no tickets is never asked, and says so if it is.
  Timing fifo(2, 0, 0);
  EXPECT_THROW(fifo.current(0), std::logic_error);
}

TEST(Engine, DeadlockNamesEveryStuckRankAndWhatItWaitsFor) {
  Schedule s = make("1f1b", 2, 1);
  std::swap(s.actions[0][1], s.actions[0][2]);  // RECV_B before the SEND_F it depends on
  Timing t(2, 0, 0);
  const Execution x = execute(s, costs(1, 1, 1), t);
  ASSERT_EQ(x.stalls.size(), 2u);
  EXPECT_EQ(x.stalls[0].message(),
            "rank 0, action 1 (0RECV_B0): deadlock: waits forever for SEND_B of stage 1");
  EXPECT_EQ(x.stalls[1].message(),
            "rank 1, action 0 (1RECV_F0): deadlock: waits forever for SEND_F of stage 0");
}

TEST(Engine, AppendingRanksInAnyOrderGivesTheSameRecords) {
  // With one FIFO per pair the timing cannot depend on when the caller appends: rank 3's
  // list first and run, then the others (ranks wait for messages and are woken).
  const Schedule s = make("zbh1", 4, 8);
  Timing whole_t(4, 2, 0.5);
  const Execution whole = execute(s, costs(1, 1, 1), whole_t);
  ASSERT_TRUE(whole.ok());
  Timing t(4, 2, 0.5);
  Engine e(4, s.stage_rank, 8, costs(1, 1, 1), t);
  for (int r : {3, 1, 0, 2}) {
    for (const Action& a : s.actions[r]) e.append(r, a);
    e.run(r == 2 ? kNever : 3.5);
  }
  ASSERT_TRUE(e.finished());
  for (int r = 0; r < 4; ++r)
    for (size_t i = 0; i < s.actions[r].size(); ++i) {
      EXPECT_EQ(e.records(r)[i].start, whole.records[r][i].start) << r << " " << i;
      EXPECT_EQ(e.records(r)[i].end, whole.records[r][i].end) << r << " " << i;
    }
  EXPECT_EQ(e.makespan(), whole.makespan);
}

TEST(Engine, ActionsTheRulesCannotPlaceAreRefused) {
  Timing t(2, 0, 0);
  Engine e(2, plain_placement(2), 2, Costs{}, t);
  EXPECT_THROW(e.append(0, {Kind::F, 1, 0}), std::invalid_argument);          // stage of rank 1
  EXPECT_THROW(e.append(1, {Kind::SEND_F, 1, 0, 0}), std::invalid_argument);  // no stage 2
  EXPECT_THROW(e.append(0, {Kind::F, 0, 2}), std::invalid_argument);          // microbatch
}

// The validator and evaluate_order run the same engine: a valid order's evaluation and
// the validator's verdict agree, and a deadlocking or misordered one is refused by both
// with the same stuck ranks.
TEST(Engine, ValidatorAndEvaluatorGiveTheSameVerdicts) {
  const auto wan = two_dc_links(4, 2, {3, 1});
  PlanModel md;
  md.stage_rank = plain_placement(4);
  md.microbatches = 8;
  md.costs = {std::vector<double>(4, 1), std::vector<double>(4, 1), std::vector<double>(4, 1)};
  md.links = wan;
  for (const char* name : {"1f1b", "gpipe", "zbh1", "crosspipe-greedy", "overlap"}) {
    const Schedule s = make(name, 4, 8, wan);
    EXPECT_TRUE(validate(s).ok()) << name;
    EXPECT_GT(evaluate_order(md, compute_order(s)), 0) << name;
  }
  // Deadlock across ranks: rank 0 runs the backward of microbatch 1 before its forward
  // (which rank 1 needs to produce that backward's gradient).
  auto order = compute_order(make("1f1b", 4, 8));
  auto& r0 = order[0];
  auto f1 = std::find(r0.begin(), r0.end(), Action{Kind::F, 0, 1});
  auto b1 = std::find(r0.begin(), r0.end(), Action{Kind::BW, 0, 1});
  std::iter_swap(f1, b1);
  // Wrong order on one rank: W before its B.
  auto zorder = compute_order(make("zbh1", 4, 8));
  auto& z1 = zorder[1];
  std::iter_swap(std::find(z1.begin(), z1.end(), Action{Kind::B, 1, 0}),
                 std::find(z1.begin(), z1.end(), Action{Kind::W, 1, 0}));
  for (const auto& bad : {order, zorder}) {
    const auto rep = validate(lower("bad", 4, 8, plain_placement(4), bad, false));
    ASSERT_FALSE(rep.ok());
    try {
      evaluate_order(md, bad);
      ADD_FAILURE() << "evaluate_order ran a deadlocking order";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), rep.message())) << e.what() << "\nvs\n" << rep.message();
    }
  }
  EXPECT_TRUE(
      contains(validate(lower("bad", 4, 8, plain_placement(4), order, false)).message(),
               "rank 0, action 2 (0RECV_B1): deadlock: waits forever for SEND_B of stage 1"));
  EXPECT_TRUE(contains(validate(lower("bad", 4, 8, plain_placement(4), zorder, false)).message(),
                       "(1W0): deadlock: waits forever for its B"));
}

// The planner now queues on the shared WAN as the simulator does: interleaved over two
// DCs sends activations 1 -> 2 and gradients 0 -> 3 (stage 4 -> 3) over one direction.
TEST(Engine, PlannerQueuesOnTheSharedWan) {
  Params x;
  x.ranks = 4;
  x.microbatches = 8;
  x.chunks = 2;
  x.optimizer = false;
  const Schedule s = generate("interleaved", x);
  PlanModel md;
  md.stage_rank = s.stage_rank;
  md.microbatches = 8;
  md.costs = stage_costs(x, s.stages);
  md.links = two_dc_links(4, 2, {0.5, 2});  // transfer 2 > compute 0.5 per chunk
  const double per_pair = evaluate_order(md, compute_order(s));
  md.channel.resize(16);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      md.channel[a * 4 + b] = (a < 2) != (b < 2) ? 16 + (a < 2) : a * 4 + b;
  const double shared = evaluate_order(md, compute_order(s));
  EXPECT_GT(shared, per_pair);
}

// The list scheduler decides with the engine's timing (messages sent in time order, also
// on a shared WAN channel): the makespan it planned is what evaluate_order gives its order.
TEST(Engine, GreedyPlansWithTheEvaluatorsTiming) {
  int checked = 0;
  for (int p : {4, 8})
    for (int m : {p, 4 * p})
      for (double latency : {0.0, 2.0, 10.0})
        for (double transfer : {0.0, 0.7, 3.0})
          for (bool shared : {false, true})
            for (bool split : {true, false}) {
              PlanModel md;
              md.stage_rank = plain_placement(p);
              md.microbatches = m;
              md.costs = {std::vector<double>(p, 1), std::vector<double>(p, 1.25),
                          std::vector<double>(p, 0.75)};
              md.links = two_dc_links(p, p / 2, {latency, transfer});
              if (shared) {
                md.channel.resize(static_cast<size_t>(p) * p);
                for (int a = 0; a < p; ++a)
                  for (int b = 0; b < p; ++b)
                    md.channel[a * p + b] =
                        (a < p / 2) != (b < p / 2) ? p * p + (a < p / 2) : a * p + b;
              }
              GreedyOptions o;
              o.split_backward = split;
              o.cap_units.assign(p, p);
              double planned = 0;
              const auto order = greedy_order(md, o, &planned);
              EXPECT_EQ(planned, evaluate_order(md, order))
                  << "p=" << p << " m=" << m << " latency=" << latency << " transfer=" << transfer
                  << " shared=" << shared << " split=" << split;
              ++checked;
            }
  EXPECT_EQ(checked, 144);
}

// Data-parallel replicas simulated together (Schedule::replicas): each replica runs its own
// pipeline exactly as the schedule alone would with its costs, and a stage's ALLREDUCE
// waits for that stage of every replica: it ends at the latest arrival + its duration on
// every replica, its record starting where that replica reached it.
TEST(Engine, ReplicasRunTheirPipelinesAndMeetAtEachAllReduce) {
  Params x;
  x.ranks = 2;
  x.microbatches = 4;
  const Schedule one = generate("1f1b", x);  // with REDUCE_GRAD and OPT
  const Schedule two = replicated(one, 2);
  ASSERT_EQ(two.ranks, 4);
  ASSERT_EQ(two.stages, 4);
  ASSERT_EQ(two.replicas, 2);
  EXPECT_EQ(two.stage_rank, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_THROW(replicated(two, 2), std::invalid_argument);
  // Replica 1 computes 1.5 x slower; an all-reduce takes 2.
  auto timed = [](double scale) {
    Costs c = costs(1, 2, 0);
    const auto base = c.duration;
    c.duration = [=](int rank, const Action& a) {
      if (a.kind == Kind::ALLREDUCE) return 2.0;
      return base(rank, a) * (rank >= 2 ? scale : 1.0);
    };
    return c;
  };
  Timing t1(2, 3, 1), t2(4, 3, 1);
  const Execution a = execute(one, timed(1.0), t1);
  ASSERT_TRUE(a.ok()) << a.deadlock_message();
  Timing t1s(2, 3, 1);
  Costs slow = timed(1.5);
  const auto slow_dur = slow.duration;
  slow.duration = [=](int rank, const Action& act) { return slow_dur(rank + 2, act); };
  const Execution b = execute(one, slow, t1s);
  const Execution both = execute(two, timed(1.5), t2);
  ASSERT_TRUE(both.ok()) << both.deadlock_message();
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < one.actions[r].size(); ++i) {
      const Action& act = one.actions[r][i];
      if (act.kind == Kind::ALLREDUCE) {
        const double enter0 = a.records[r][i].start, enter1 = b.records[r][i].start;
        EXPECT_EQ(both.records[r][i].start, enter0);
        EXPECT_EQ(both.records[r + 2][i].start, enter1);
        EXPECT_EQ(both.records[r][i].end, std::max(enter0, enter1) + 2);
        EXPECT_EQ(both.records[r + 2][i].end, std::max(enter0, enter1) + 2);
        break;  // what follows starts later on the faster replica
      }
      EXPECT_EQ(both.records[r][i].start, a.records[r][i].start) << r << " " << to_string(act);
      EXPECT_EQ(both.records[r + 2][i].start, b.records[r][i].start) << r << " " << to_string(act);
    }
  EXPECT_GT(both.makespan, a.makespan);
}
