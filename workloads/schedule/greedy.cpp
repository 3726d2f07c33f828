#include "workloads/schedule/greedy.h"

#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

namespace xdc::sched {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEps = 1e-9;

// Per link direction FIFO: a message leaves when the link is free, arrives latency later.
struct Links {
  const PlanModel& model;
  std::vector<double> free;
  int ranks;
  explicit Links(const PlanModel& m, int r) : model(m), free(r * r, 0), ranks(r) {}
  double deliver(int from, int to, double t) {
    if (from == to) return t;
    const LinkDelay d = model.link(from, to);
    double& f = free[from * ranks + to];
    f = std::max(t, f) + d.transfer;
    return f + d.latency;
  }
};

int rank_count(const std::vector<int>& stage_rank) {
  int r = 0;
  for (int x : stage_rank) r = std::max(r, x + 1);
  return r;
}

// Dependency state shared by the greedy and the evaluator.
struct Deps {
  int S, m;
  std::vector<std::vector<double>> ready_f, ready_b;  // [stage][mb]
  std::vector<int> nf, nb;
  Deps(int stages, int mbs)
      : S(stages),
        m(mbs),
        ready_f(stages, std::vector<double>(mbs, kInf)),
        ready_b(stages, std::vector<double>(mbs, kInf)),
        nf(stages, 0),
        nb(stages, 0) {
    for (int i = 0; i < mbs; ++i) ready_f[0][i] = 0;
  }
};

double duration(const PlanModel& md, const Action& a) {
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
}

// Commit a compute action ending at `end`: publish what it makes ready.
void publish(const PlanModel& md, Deps& d, Links& links, const Action& a, double end) {
  const int r = md.stage_rank[a.stage];
  if (a.kind == Kind::F) {
    if (a.stage + 1 < d.S)
      d.ready_f[a.stage + 1][a.microbatch] = links.deliver(r, md.stage_rank[a.stage + 1], end);
    else
      d.ready_b[a.stage][a.microbatch] = end;
  } else if ((a.kind == Kind::B || a.kind == Kind::BW) && a.stage > 0) {
    d.ready_b[a.stage - 1][a.microbatch] = links.deliver(r, md.stage_rank[a.stage - 1], end);
  }
}
}  // namespace

std::vector<std::vector<Action>> greedy_order(const PlanModel& md, const GreedyOptions& o) {
  const int S = static_cast<int>(md.stage_rank.size()), m = md.microbatches;
  const int R = rank_count(md.stage_rank);
  Deps d(S, m);
  Links links(md, R);
  std::vector<std::vector<int>> stages_of(R);
  for (int s = S - 1; s >= 0; --s) stages_of[md.stage_rank[s]].push_back(s);  // high first
  std::vector<double> t(R, 0);
  std::vector<int> mem(R, 0), inflight(R, 0);
  std::vector<Kind> last(R, Kind::F);
  std::vector<std::deque<Action>> wq(R);
  std::vector<std::vector<Action>> order(R);
  struct Cand {
    Action a;
    double start = kInf;
  };
  auto candidate = [&](int r) {
    Cand best;
    const double now = t[r];
    const bool mem_ok =
        mem[r] + 1 <= o.cap_units[r] && (o.max_inflight.empty() || inflight[r] < o.max_inflight[r]);
    Cand f_now, b_now, f_later, b_later;
    for (int s : stages_of[r]) {
      if (d.nf[s] < m && mem_ok) {
        const double rf = d.ready_f[s][d.nf[s]];
        Cand c{{Kind::F, s, d.nf[s]}, std::max(now, rf)};
        if (rf <= now + kEps) {
          if (f_now.start == kInf) f_now = c;
        } else if (c.start < f_later.start) {
          f_later = c;
        }
      }
      if (d.nb[s] < d.nf[s]) {
        const double rb = d.ready_b[s][d.nb[s]];
        Cand c{{o.split_backward ? Kind::B : Kind::BW, s, d.nb[s]}, std::max(now, rb)};
        if (rb <= now + kEps) {
          if (b_now.start == kInf) b_now = c;
        } else if (c.start < b_later.start) {
          b_later = c;
        }
      }
    }
    if (f_now.start < kInf && b_now.start < kInf) return last[r] == Kind::F ? b_now : f_now;
    if (b_now.start < kInf) return b_now;
    if (f_now.start < kInf) return f_now;
    if (!wq[r].empty()) return Cand{wq[r].front(), now};
    return f_later.start <= b_later.start ? f_later : b_later;
  };
  const long total = static_cast<long>(S) * m * (o.split_backward ? 3 : 2);
  std::vector<Cand> cache(R);
  for (int r = 0; r < R; ++r) cache[r] = candidate(r);
  for (long done = 0; done < total; ++done) {
    int r = -1;
    for (int q = 0; q < R; ++q)
      if (cache[q].start < kInf && (r < 0 || cache[q].start < cache[r].start - kEps)) r = q;
    if (r < 0)
      throw std::invalid_argument("greedy: no rank can proceed: the memory cap is too small");
    const Action a = cache[r].a;
    const double end = cache[r].start + duration(md, a);
    t[r] = end;
    order[r].push_back(a);
    if (a.kind == Kind::F) {
      d.nf[a.stage]++;
      mem[r]++;
      inflight[r]++;
    } else if (a.kind == Kind::W) {
      wq[r].pop_front();
      mem[r]--;
    } else {
      d.nb[a.stage]++;
      inflight[r]--;
      if (a.kind == Kind::BW)
        mem[r]--;
      else
        wq[r].push_back({Kind::W, a.stage, a.microbatch});
    }
    if (a.kind != Kind::W) last[r] = a.kind == Kind::F ? Kind::F : Kind::B;
    publish(md, d, links, a, end);
    cache[r] = candidate(r);
    for (int s : {a.stage - 1, a.stage + 1})
      if (s >= 0 && s < S && md.stage_rank[s] != r)
        cache[md.stage_rank[s]] = candidate(md.stage_rank[s]);
  }
  return order;
}

double evaluate_order(const PlanModel& md, const std::vector<std::vector<Action>>& order,
                      std::vector<std::vector<double>>* starts) {
  const int S = static_cast<int>(md.stage_rank.size()), R = static_cast<int>(order.size());
  Deps d(S, md.microbatches);
  Links links(md, R);
  std::vector<double> t(R, 0);
  std::vector<size_t> pc(R, 0);
  std::vector<std::vector<double>> b_end(S, std::vector<double>(md.microbatches, kInf));
  if (starts) starts->assign(R, {});
  auto ready = [&](int r) {
    const Action& a = order[r][pc[r]];
    double dep = 0;
    if (a.kind == Kind::F) dep = d.ready_f[a.stage][a.microbatch];
    if (a.kind == Kind::B || a.kind == Kind::BW) dep = d.ready_b[a.stage][a.microbatch];
    if (a.kind == Kind::W) dep = b_end[a.stage][a.microbatch];
    return std::max(t[r], dep);
  };
  double makespan = 0;
  for (;;) {
    int r = -1;
    double best = kInf;
    bool left = false;
    for (int q = 0; q < R; ++q) {
      if (pc[q] >= order[q].size()) continue;
      left = true;
      const double s = ready(q);
      if (s < best) best = s, r = q;
    }
    if (!left) break;
    if (r < 0) throw std::invalid_argument("evaluate_order: the order deadlocks");
    const Action& a = order[r][pc[r]++];
    const double end = best + duration(md, a);
    if (starts) (*starts)[r].push_back(best);
    t[r] = end;
    makespan = std::max(makespan, end);
    if (a.kind == Kind::B || a.kind == Kind::BW) b_end[a.stage][a.microbatch] = end;
    publish(md, d, links, a, end);
  }
  return makespan;
}

}  // namespace xdc::sched
