#include "workloads/schedule/greedy.h"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>

#include "workloads/schedule/engine.h"

namespace xdc::sched {

namespace {
constexpr double kEps = 1e-9;

int rank_count(const std::vector<int>& stage_rank) {
  int r = 0;
  for (int x : stage_rank) r = std::max(r, x + 1);
  return r;
}

Costs plan_costs(const PlanModel& md) {
  Costs c;
  c.duration = [&md](int, const Action& a) -> double {
    switch (a.kind) {
      case Kind::F:
        return md.costs.f[a.stage];
      case Kind::B:
        return md.costs.b[a.stage];
      case Kind::W:
        return md.costs.w[a.stage];
      case Kind::BW:
        return md.costs.b[a.stage] + md.costs.w[a.stage];
      default:
        return 0;
    }
  };
  return c;
}

// The model's messages: the link's latency + transfer on the model's FIFO channels.
class PlanTiming : public MessageTiming {
 public:
  PlanTiming(const PlanModel& md, int ranks) : md_(md), fifo_(ranks, md.channel) {}
  Transfer send(int from, int to, int64_t, double ready, const Action&) override {
    const LinkDelay d = md_.link(from, to);
    return fifo_.send(from, to, ready, d.transfer, d.latency);
  }

 private:
  const PlanModel& md_;
  FifoChannels fifo_;
};
}  // namespace

std::vector<std::vector<Action>> greedy_order(const PlanModel& md, const GreedyOptions& o,
                                              double* planned_makespan) {
  const int S = static_cast<int>(md.stage_rank.size()), m = md.microbatches;
  const int R = rank_count(md.stage_rank);
  PlanTiming timing(md, R);
  Engine eng(R, md.stage_rank, m, plan_costs(md), timing);
  std::vector<std::vector<int>> stages_of(R);
  for (int s = S - 1; s >= 0; --s) stages_of[md.stage_rank[s]].push_back(s);  // high first
  std::vector<int> nf(S, 0), nb(S, 0);  // F / backward committed per stage
  std::vector<int> mem(R, 0), inflight(R, 0);
  std::vector<Kind> last(R, Kind::F);
  std::vector<std::deque<Action>> wq(R);
  std::vector<std::vector<Action>> order(R);
  // A candidate's start is exact, or (exact = false) a lower bound while the message it
  // waits for is still to be sent (the engine sends in time order).
  struct Cand {
    Action a;
    double start = kNever;
    bool exact = true;
  };
  auto candidate = [&](int r) {
    const double now = eng.clock(r);
    const bool mem_ok =
        mem[r] + 1 <= o.cap_units[r] && (o.max_inflight.empty() || inflight[r] < o.max_inflight[r]);
    Cand f_now, b_now, f_later, b_later;
    auto consider = [&](const Action& a, Cand& at_now, Cand& later) {
      const Engine::Ready in = eng.input_ready(r, a);
      const Cand c{a, std::max(now, in.time), in.exact};
      if (in.time <= now + kEps) {
        if (at_now.start == kNever) at_now = c;
      } else if (c.start < later.start) {
        later = c;
      }
    };
    for (int s : stages_of[r]) {
      if (nf[s] < m && mem_ok) consider({Kind::F, s, nf[s]}, f_now, f_later);
      if (nb[s] < nf[s])
        consider({o.split_backward ? Kind::B : Kind::BW, s, nb[s]}, b_now, b_later);
    }
    if (f_now.start < kNever && b_now.start < kNever) return last[r] == Kind::F ? b_now : f_now;
    if (b_now.start < kNever) return b_now;
    if (f_now.start < kNever) return f_now;
    if (!wq[r].empty()) return Cand{wq[r].front(), now, true};
    return f_later.start <= b_later.start ? f_later : b_later;
  };
  const long total = static_cast<long>(S) * m * (o.split_backward ? 3 : 2);
  std::vector<Cand> cache(R);
  auto refresh_all = [&] {
    for (int r = 0; r < R; ++r) cache[r] = candidate(r);
  };
  refresh_all();
  std::vector<Action> lowered;
  for (long done = 0; done < total; ++done) {
    int r = -1;
    for (;;) {
      r = -1;
      for (int q = 0; q < R; ++q)
        if (cache[q].start < kNever && (r < 0 || cache[q].start < cache[r].start - kEps)) r = q;
      if (r < 0)
        throw std::invalid_argument("greedy: no rank can proceed: the memory cap is too small");
      if (cache[r].exact) break;
      eng.run(cache[r].start);  // send what is due by then, then look again
      refresh_all();
    }
    const Action a = cache[r].a;
    const size_t sends = eng.sends_done();
    lowered.clear();
    lower_action(md.stage_rank, r, a, lowered);
    for (const Action& x : lowered) eng.append(r, x);
    eng.run(cache[r].start);
    order[r].push_back(a);
    if (a.kind == Kind::F) {
      nf[a.stage]++;
      mem[r]++;
      inflight[r]++;
    } else if (a.kind == Kind::W) {
      wq[r].pop_front();
      mem[r]--;
    } else {
      nb[a.stage]++;
      inflight[r]--;
      if (a.kind == Kind::BW)
        mem[r]--;
      else
        wq[r].push_back({Kind::W, a.stage, a.microbatch});
    }
    if (a.kind != Kind::W) last[r] = a.kind == Kind::F ? Kind::F : Kind::B;
    if (eng.sends_done() != sends) {
      refresh_all();
      continue;
    }
    cache[r] = candidate(r);
    for (int s : {a.stage - 1, a.stage + 1})
      if (s >= 0 && s < S && md.stage_rank[s] != r)
        cache[md.stage_rank[s]] = candidate(md.stage_rank[s]);
  }
  eng.run();
  if (planned_makespan) *planned_makespan = eng.makespan();
  return order;
}

double evaluate_order(const PlanModel& md, const std::vector<std::vector<Action>>& order,
                      std::vector<std::vector<double>>* starts) {
  const int R = static_cast<int>(order.size());
  const Schedule s = lower("", R, md.microbatches, md.stage_rank, order, false);
  PlanTiming timing(md, R);
  const Execution x = execute(s, plan_costs(md), timing);
  if (!x.ok())
    throw std::invalid_argument("evaluate_order: the order deadlocks:\n" + x.deadlock_message());
  if (starts) {
    starts->assign(R, {});
    for (int r = 0; r < R; ++r)
      for (size_t i = 0; i < s.actions[r].size(); ++i)
        if (is_compute(s.actions[r][i].kind)) (*starts)[r].push_back(x.records[r][i].start);
  }
  return x.makespan;
}

}  // namespace xdc::sched
