// optimal: the planner's model (greedy.h: compute costs, latency + transfer per message,
// FIFO per link direction, the memory cap) as a MILP, solved by COIN-OR CBC within
// Params::milp_seconds, warm-started from the crosspipe-greedy schedule. Plain placement.
//
// Formulation. Continuous start times F(s,i), B(s,i), W(s,i) per stage s and microbatch i,
// a departure time per message (activation s -> s+1, gradient s+1 -> s) and the makespan C.
//  - data: F(s+1,i) >= depart + transfer + latency, depart >= F(s,i) + T_F, likewise for
//    the gradient of B; B(S-1,i) >= F(S-1,i) + T_F; W(s,i) >= B(s,i) + T_B;
//  - links: departures on one link direction in microbatch order, transfer apart (FIFO);
//  - one rank runs one action at a time: F, B and W each in microbatch order (with identical
//    microbatches and FIFO links any order can be relabelled into this one; the brute-force
//    test over all orders checks it), and every pair of different kinds whose order the
//    dependencies do not imply -- F(i) vs B(j), F(i) vs W(j), B(i) vs W(j) for j < i -- gets
//    a binary z and two big-M rows (z = 1: the j-action first), so F/B/W interleave freely;
//  - memory: F(s,i) starts after W(s,i-cap) ends (at most `cap` activations, schedule.h);
//  - C >= every W end, C <= the greedy makespan (big-M = that horizon), and the valid cut
//    C >= F(s,0) + m (T_F + T_B + T_W). Minimise C.
// The solution's per-rank order (by start time) is re-timed by evaluate_order() -- the
// same evaluator the greedy is judged by -- and replaces the greedy only when strictly
// shorter. Schedule::info says what the result is:
//   result = "optimal (proved)"                 CBC proved the optimum and the returned
//                                               schedule reaches it;
//            "MILP incumbent, gap x% after N s" the MILP's order, better than the greedy;
//            "greedy, MILP gap x% after N s"    nothing better found in time;
//            "greedy, MILP skipped: ..."        too big (Params::milp_max_variables) or no CBC;
// plus greedy_makespan, makespan (both by evaluate_order), milp_status, milp_bound,
// milp_gap (of the returned makespan against the bound), milp_seconds, milp_variables.
// XDC_CBC_LOG=1 in the environment shows CBC's log.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "common/number_text.h"
#include "workloads/schedule/generators.h"
#include "workloads/schedule/greedy.h"

#ifdef XDC_HAVE_CBC
#include <coin/Cbc_C_Interface.h>
#endif

namespace xdc::sched {

namespace {
std::string num(double x) {
  return format_general(x);
}
std::string pct(double x) {
  return format_fixed(100 * x, 1) + "%";
}

#ifdef XDC_HAVE_CBC
// Thin owner of a CBC model: columns with a warm-start value, rows sum coef * x >= rhs.
class Milp {
 public:
  Milp() : m_(Cbc_newModel()) { Cbc_setLogLevel(m_, std::getenv("XDC_CBC_LOG") ? 1 : 0); }
  ~Milp() { Cbc_deleteModel(m_); }
  Milp(const Milp&) = delete;
  Milp& operator=(const Milp&) = delete;

  int var(double ub, double obj, bool integer, double warm) {
    names_.push_back("x" + std::to_string(warm_.size()));
    Cbc_addCol(m_, names_.back().c_str(), 0, ub, obj, integer ? 1 : 0, 0, nullptr, nullptr);
    warm_.push_back(warm);
    return static_cast<int>(warm_.size()) - 1;
  }
  void ge(std::initializer_list<std::pair<int, double>> terms, double rhs) {
    std::vector<int> cols;
    std::vector<double> coefs;
    for (auto [c, v] : terms) cols.push_back(c), coefs.push_back(v);
    Cbc_addRow(m_, "", static_cast<int>(cols.size()), cols.data(), coefs.data(), 'G', rhs);
  }
  int size() const { return static_cast<int>(warm_.size()); }

  struct Outcome {
    bool solved = false, proven = false;
    double objective = 0, bound = 0, seconds = 0;
    std::vector<double> x;
  };
  Outcome solve(double seconds) {
    std::vector<const char*> names;
    for (const auto& n : names_) names.push_back(n.c_str());
    Cbc_setMIPStart(m_, size(), names.data(), warm_.data());
    Cbc_setParameter(m_, "preprocess", "off");  // else CBC drops the MIP start
    // CBC's root cut rounds ignore the time limit; on big models they overrun it by minutes.
    if (size() > 5000) Cbc_setParameter(m_, "cuts", "off");
    Cbc_setParameter(m_, "timeMode", "elapsed");  // the limit in wall-clock seconds, as reported
    Cbc_setMaximumSeconds(m_, std::max(0.1, seconds));
    const auto t0 = std::chrono::steady_clock::now();
    Cbc_solve(m_);
    Outcome o;
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    o.proven = Cbc_isProvenOptimal(m_);
    o.solved = o.proven || Cbc_numberSavedSolutions(m_) > 0;
    o.bound = Cbc_getBestPossibleObjValue(m_);
    if (o.solved) {
      o.objective = Cbc_getObjValue(m_);
      // A search that ends because no node can beat the incumbent may leave the root
      // relaxation's value as the "best possible"; proven, the bound is the objective.
      if (o.proven) o.bound = o.objective;
      const double* x = Cbc_getColSolution(m_);
      o.x.assign(x, x + size());
    }
    return o;
  }

 private:
  Cbc_Model* m_;
  std::vector<std::string> names_;
  std::vector<double> warm_;
};
#endif

struct MilpAnswer {
  std::string status;                      // CBC's word: "optimal", "time limit, feasible", ...
  std::vector<std::vector<Action>> order;  // empty: none
  double bound = 0, seconds = 0;
  bool proven = false;
  int variables = 0;
};

// Variables of the model for S stages and m microbatches.
long milp_variables(int S, int m) {
  return 3L * S * m + 1 + 2L * (S - 1) * m + 3L * S * m * (m - 1) / 2;
}

#ifdef XDC_HAVE_CBC
MilpAnswer solve_milp(const PlanModel& md, int cap, const std::vector<std::vector<Action>>& g_order,
                      const std::vector<std::vector<double>>& g_start, double g_span,
                      double seconds) {
  const int S = static_cast<int>(md.stage_rank.size()), m = md.microbatches;
  const auto& c = md.costs;
  // Greedy start times by (kind, stage, mb): the warm start.
  std::vector<double> gs(3 * S * m, 0);
  auto kidx = [](Kind k) { return k == Kind::F ? 0 : k == Kind::B ? 1 : 2; };
  for (size_t r = 0; r < g_order.size(); ++r)
    for (size_t k = 0; k < g_order[r].size(); ++k) {
      const Action& a = g_order[r][k];
      gs[(kidx(a.kind) * S + a.stage) * m + a.microbatch] = g_start[r][k];
    }
  auto g = [&](int k, int s, int i) { return gs[(k * S + s) * m + i]; };
  const double H = g_span;  // horizon: only schedules at least as short as the greedy
  const double M = H + std::max({*std::max_element(c.f.begin(), c.f.end()),
                                 *std::max_element(c.b.begin(), c.b.end()),
                                 *std::max_element(c.w.begin(), c.w.end())});
  Milp milp;
  std::vector<int> F(S * m), B(S * m), W(S * m);
  for (int s = 0; s < S; ++s)
    for (int i = 0; i < m; ++i) {
      F[s * m + i] = milp.var(H, 0, false, g(0, s, i));
      B[s * m + i] = milp.var(H, 0, false, g(1, s, i));
      W[s * m + i] = milp.var(H, 0, false, g(2, s, i));
    }
  const int C = milp.var(H, 1, false, g_span);
  auto f = [&](int s, int i) { return F[s * m + i]; };
  auto b = [&](int s, int i) { return B[s * m + i]; };
  auto w = [&](int s, int i) { return W[s * m + i]; };
  // Messages: departure >= producer's end, FIFO in microbatch order per link direction.
  for (int s = 0; s + 1 < S; ++s) {
    const LinkDelay fw = md.link(md.stage_rank[s], md.stage_rank[s + 1]);
    const LinkDelay bw = md.link(md.stage_rank[s + 1], md.stage_rank[s]);
    double free_a = 0, free_g = 0;
    int prev_a = -1, prev_g = -1;
    for (int i = 0; i < m; ++i) {
      const double da = std::max(g(0, s, i) + c.f[s], free_a);
      const double dg = std::max(g(1, s + 1, i) + c.b[s + 1], free_g);
      free_a = da + fw.transfer, free_g = dg + bw.transfer;
      const int xa = milp.var(H, 0, false, da);
      const int xg = milp.var(H, 0, false, dg);
      milp.ge({{xa, 1}, {f(s, i), -1}}, c.f[s]);
      milp.ge({{f(s + 1, i), 1}, {xa, -1}}, fw.transfer + fw.latency);
      milp.ge({{xg, 1}, {b(s + 1, i), -1}}, c.b[s + 1]);
      milp.ge({{b(s, i), 1}, {xg, -1}}, bw.transfer + bw.latency);
      if (prev_a >= 0) milp.ge({{xa, 1}, {prev_a, -1}}, fw.transfer);
      if (prev_g >= 0) milp.ge({{xg, 1}, {prev_g, -1}}, bw.transfer);
      prev_a = xa, prev_g = xg;
    }
  }
  for (int s = 0; s < S; ++s) {
    const double df = c.f[s], db = c.b[s], dw = c.w[s];
    for (int i = 0; i < m; ++i) {
      if (s == S - 1) milp.ge({{b(s, i), 1}, {f(s, i), -1}}, df);
      milp.ge({{w(s, i), 1}, {b(s, i), -1}}, db);
      milp.ge({{C, 1}, {w(s, i), -1}}, dw);
      if (i > 0) {
        milp.ge({{f(s, i), 1}, {f(s, i - 1), -1}}, df);
        milp.ge({{b(s, i), 1}, {b(s, i - 1), -1}}, db);
        milp.ge({{w(s, i), 1}, {w(s, i - 1), -1}}, dw);
      }
      if (i >= cap) milp.ge({{f(s, i), 1}, {w(s, i - cap), -1}}, dw);
      for (int j = 0; j < i; ++j) {
        // x = the action of microbatch i, y = the one of j; z = 1: y first.
        auto disj = [&](int x, double dx, int y, double dy, double wx, double wy) {
          const int z = milp.var(1, 0, true, wy < wx ? 1 : 0);
          milp.ge({{x, 1}, {y, -1}, {z, -M}}, dy - M);
          milp.ge({{y, 1}, {x, -1}, {z, M}}, dx);
        };
        disj(f(s, i), df, b(s, j), db, g(0, s, i), g(1, s, j));
        disj(f(s, i), df, w(s, j), dw, g(0, s, i), g(2, s, j));
        disj(b(s, i), db, w(s, j), dw, g(1, s, i), g(2, s, j));
      }
    }
    milp.ge({{C, 1}, {f(s, 0), -1}}, m * (df + db + dw));
  }
  MilpAnswer ans;
  ans.variables = milp.size();
  const Milp::Outcome o = milp.solve(seconds);
  ans.seconds = o.seconds;
  ans.proven = o.proven;
  ans.bound = std::min(o.bound, g_span);
  ans.status = o.proven ? "optimal" : o.solved ? "time limit, feasible" : "time limit, no solution";
  if (!o.solved) return ans;
  // Per rank, the actions by MILP start time (ties: F before B before W, then microbatch).
  const int R = static_cast<int>(g_order.size());
  std::vector<std::vector<std::pair<double, Action>>> acts(R);
  for (int s = 0; s < S; ++s)
    for (int i = 0; i < m; ++i) {
      const int r = md.stage_rank[s];
      acts[r].push_back({o.x[f(s, i)], {Kind::F, s, i}});
      acts[r].push_back({o.x[b(s, i)], {Kind::B, s, i}});
      acts[r].push_back({o.x[w(s, i)], {Kind::W, s, i}});
    }
  ans.order.assign(R, {});
  for (int r = 0; r < R; ++r) {
    std::sort(acts[r].begin(), acts[r].end(), [](const auto& x, const auto& y) {
      if (std::abs(x.first - y.first) > 1e-7) return x.first < y.first;
      if (x.second.kind != y.second.kind) return x.second.kind < y.second.kind;
      return x.second.microbatch < y.second.microbatch;
    });
    for (const auto& [t, a] : acts[r]) ans.order[r].push_back(a);
  }
  return ans;
}
#endif
}  // namespace

Schedule gen_optimal(const Params& p) {
  if (p.ranks < 1 || p.microbatches < 1)
    throw std::invalid_argument("optimal: ranks and microbatches must be >= 1");
  const int S = p.ranks, m = p.microbatches;
  const int cap =
      p.memory_cap > 0 ? std::max(1, static_cast<int>(std::floor(p.memory_cap + 1e-9))) : S;
  Params gp = p;
  gp.memory_cap = cap;
  Schedule greedy = gen_crosspipe_greedy(gp);
  PlanModel md;
  md.stage_rank = greedy.stage_rank;
  md.microbatches = m;
  md.costs = stage_costs(p, S);
  md.links = p.links;
  md.channel = p.channel;
  const auto g_order = compute_order(greedy);
  std::vector<std::vector<double>> g_start;
  const double g_span = evaluate_order(md, g_order, &g_start);

  Schedule best = greedy;
  best.name = "optimal";
  best.info = {{"greedy_makespan", num(g_span)}, {"makespan", num(g_span)}};
  const long variables = milp_variables(S, m);
#ifndef XDC_HAVE_CBC
  (void)variables;
  best.info.push_back({"result", "greedy, MILP skipped: built without CBC"});
  return best;
#else
  if (variables > p.milp_max_variables) {
    best.info.push_back({"result", "greedy, MILP skipped: " + std::to_string(variables) +
                                       " variables > milp_max_variables " +
                                       std::to_string(p.milp_max_variables)});
    return best;
  }
  const MilpAnswer ans = solve_milp(md, cap, g_order, g_start, g_span, p.milp_seconds);
  double span = g_span;
  if (!ans.order.empty()) {
    try {
      const double s = evaluate_order(md, ans.order);
      if (s < g_span - 1e-9) {
        span = s;
        Schedule milp = lower("optimal", S, m, md.stage_rank, ans.order, p.optimizer);
        best.actions = std::move(milp.actions);
      }
    } catch (const std::invalid_argument&) {
      // An order the evaluator cannot run (only with a CBC tolerance slip): keep the greedy.
    }
  }
  const double gap = span > 0 ? std::max(0.0, (span - ans.bound) / span) : 0;
  const bool from_milp = span < g_span;
  const std::string after = pct(gap) + " after " + num(ans.seconds) + " s";
  std::string result;
  if (ans.proven && gap < 1e-6)
    result = "optimal (proved)";
  else
    result = (from_milp ? "MILP incumbent, gap " : "greedy, MILP gap ") + after;
  best.info[1].second = num(span);
  best.info.push_back({"result", result});
  best.info.push_back({"milp_status", ans.status});
  best.info.push_back({"milp_bound", num(ans.bound)});
  best.info.push_back({"milp_gap", num(gap)});
  best.info.push_back({"milp_seconds", num(ans.seconds)});
  best.info.push_back({"milp_variables", std::to_string(ans.variables)});
  return best;
#endif
}

}  // namespace xdc::sched
