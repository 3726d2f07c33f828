// optimal: CrossPipe's model as a MILP, solved by COIN-OR CBC for small instances.
// One interval per (stage, microbatch, F/B/W) and one per message per link direction;
// per stage, F, B and W each run in microbatch order and every remaining pair of
// different kinds gets a big-M disjunction; memory is a running total <= cap (F of
// microbatch i waits for W of i - cap); minimise the makespan. Warm-started from the
// crosspipe-greedy schedule, time-limited (Params::milp_seconds). The solution's order
// is re-timed by the same evaluator as the greedy; the better of the two is returned,
// so `optimal` is never worse than the greedy. Plain placement (one stage per rank).
// Schedule::info reports status, objective, bound and gap (gap of the returned schedule
// against CBC's bound). XDC_CBC_LOG=1 in the environment shows CBC's log.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>

#include "workloads/schedule/generators.h"
#include "workloads/schedule/greedy.h"

#ifdef XDC_HAVE_CBC
#include <coin/Cbc_C_Interface.h>
#endif

namespace xdc::sched {

namespace {
std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

#ifdef XDC_HAVE_CBC
// Thin owner of a CBC model with the few calls we need.
class Milp {
 public:
  Milp() : m_(Cbc_newModel()) { Cbc_setLogLevel(m_, std::getenv("XDC_CBC_LOG") ? 1 : 0); }
  ~Milp() { Cbc_deleteModel(m_); }
  Milp(const Milp&) = delete;
  Milp& operator=(const Milp&) = delete;

  int var(double ub, double obj, bool integer) {
    names_.push_back("x" + std::to_string(n_));
    Cbc_addCol(m_, names_.back().c_str(), 0, ub, obj, integer ? 1 : 0, 0, nullptr, nullptr);
    return n_++;
  }
  // sum coef * var >= rhs
  void ge(std::initializer_list<std::pair<int, double>> terms, double rhs) {
    std::vector<int> cols;
    std::vector<double> coefs;
    for (auto [c, v] : terms) cols.push_back(c), coefs.push_back(v);
    Cbc_addRow(m_, "", static_cast<int>(cols.size()), cols.data(), coefs.data(), 'G', rhs);
    rows_.push_back({cols, coefs, rhs});
  }
  // Index of the first row the point violates, or -1.
  int violated(const std::vector<double>& x) const {
    for (size_t r = 0; r < rows_.size(); ++r) {
      double lhs = 0;
      for (size_t k = 0; k < rows_[r].cols.size(); ++k)
        lhs += rows_[r].coefs[k] * x[rows_[r].cols[k]];
      if (lhs < rows_[r].rhs - 1e-6) return static_cast<int>(r);
    }
    return -1;
  }
  Cbc_Model* get() { return m_; }
  int size() const { return n_; }

 private:
  struct Row {
    std::vector<int> cols;
    std::vector<double> coefs;
    double rhs;
  };
  Cbc_Model* m_;
  int n_ = 0;
  std::vector<Row> rows_;

 public:
  std::vector<std::string> names_;
};
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
  std::vector<std::vector<Action>> g_order(S);
  for (int r = 0; r < S; ++r)
    for (const Action& a : greedy.actions[r])
      if (is_compute(a.kind)) g_order[r].push_back(a);
  std::vector<std::vector<double>> g_start;
  const double g_span = evaluate_order(md, g_order, &g_start);

  Schedule best = greedy;
  best.name = "optimal";
  best.info = {{"greedy_makespan", num(g_span)}, {"makespan", num(g_span)}};
#ifndef XDC_HAVE_CBC
  best.info.push_back({"milp_status", "unavailable (built without CBC): greedy schedule"});
  return best;
#else
  const long variables = 3L * S * m + 1 + 2L * (S - 1) * m + 3L * S * m * (m - 1) / 2;
  if (variables > p.milp_max_variables) {
    best.info.push_back({"milp_status", "skipped: " + std::to_string(variables) +
                                            " variables > milp_max_variables: greedy schedule"});
    return best;
  }
  const auto& c = md.costs;
  const double M = g_span + 1 + *std::max_element(c.f.begin(), c.f.end()) +
                   *std::max_element(c.b.begin(), c.b.end()) +
                   *std::max_element(c.w.begin(), c.w.end());
  Milp milp;
  std::vector<double> start;  // warm start, indexed like the columns
  auto var = [&](double ub, double obj, bool integer, double warm) {
    start.push_back(warm);
    return milp.var(ub, obj, integer);
  };
  // Greedy start times by (kind, stage, mb).
  std::vector<double> gs(3 * S * m, 0);
  auto kidx = [](Kind k) { return k == Kind::F ? 0 : k == Kind::B ? 1 : 2; };
  for (int r = 0; r < S; ++r)
    for (size_t i = 0; i < g_order[r].size(); ++i) {
      const Action& a = g_order[r][i];
      gs[(kidx(a.kind) * S + a.stage) * m + a.microbatch] = g_start[r][i];
    }
  auto g = [&](int k, int s, int i) { return gs[(k * S + s) * m + i]; };
  std::vector<int> F(S * m), B(S * m), W(S * m);
  for (int s = 0; s < S; ++s)
    for (int i = 0; i < m; ++i) {
      F[s * m + i] = var(M, 0, false, g(0, s, i));
      B[s * m + i] = var(M, 0, false, g(1, s, i));
      W[s * m + i] = var(M, 0, false, g(2, s, i));
    }
  const int C = var(M, 1, false, g_span);
  auto f = [&](int s, int i) { return F[s * m + i]; };
  auto b = [&](int s, int i) { return B[s * m + i]; };
  auto w = [&](int s, int i) { return W[s * m + i]; };
  // Messages: activation s -> s+1 and gradient s+1 -> s, FIFO in microbatch order.
  for (int s = 0; s + 1 < S; ++s) {
    const LinkDelay fw = md.link(s, s + 1), bw = md.link(s + 1, s);
    double free_a = 0, free_g = 0;
    int prev_a = -1, prev_g = -1;
    for (int i = 0; i < m; ++i) {
      const double wa = free_a = std::max(g(0, s, i) + c.f[s], free_a) + fw.transfer;
      const double wg = free_g = std::max(g(1, s + 1, i) + c.b[s + 1], free_g) + bw.transfer;
      const int xa = var(M, 0, false, wa - fw.transfer);
      const int xg = var(M, 0, false, wg - bw.transfer);
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
      if (i > 0) {
        milp.ge({{f(s, i), 1}, {f(s, i - 1), -1}}, df);
        milp.ge({{b(s, i), 1}, {b(s, i - 1), -1}}, db);
        milp.ge({{w(s, i), 1}, {w(s, i - 1), -1}}, dw);
      }
      if (i >= cap) milp.ge({{f(s, i), 1}, {w(s, i - cap), -1}}, dw);
      // Pairs not ordered by dependencies: X(i) vs Y(j) for j < i. y = 1: Y(j) first.
      for (int j = 0; j < i; ++j) {
        auto disj = [&](int x, double dx, int y, double dy, double wx, double wy) {
          const int z = var(1, 0, true, wy + dy <= wx + 1e-9 ? 1 : 0);
          milp.ge({{x, 1}, {y, -1}, {z, -M}}, dy - M);  // z=1: x >= y + dy
          milp.ge({{y, 1}, {x, -1}, {z, M}}, dx);       // z=0: y >= x + dx
        };
        disj(f(s, i), df, b(s, j), db, g(0, s, i), g(1, s, j));
        disj(f(s, i), df, w(s, j), dw, g(0, s, i), g(2, s, j));
        disj(b(s, i), db, w(s, j), dw, g(1, s, i), g(2, s, j));
      }
    }
    milp.ge({{C, 1}, {w(s, m - 1), -1}}, dw);
    // Valid cut: all of the stage's work runs after its first F starts.
    milp.ge({{C, 1}, {f(s, 0), -1}}, m * (df + db + dw));
  }
  if (std::getenv("XDC_CBC_LOG"))
    std::fprintf(stderr, "warm start violates row %d\n", milp.violated(start));
  std::vector<const char*> names;
  for (const auto& n : milp.names_) names.push_back(n.c_str());
  Cbc_setMIPStart(milp.get(), milp.size(), names.data(), start.data());
  Cbc_setParameter(milp.get(), "preprocess", "off");  // else CBC drops the MIP start
  // CBC's root cut rounds ignore the time limit; on big models they overrun it by minutes.
  if (milp.size() > 5000) Cbc_setParameter(milp.get(), "cuts", "off");
  Cbc_setMaximumSeconds(milp.get(), std::max(0.1, p.milp_seconds));
  Cbc_solve(milp.get());
  const int saved = Cbc_numberSavedSolutions(milp.get());
  const double obj = Cbc_getObjValue(milp.get());
  const double bound = Cbc_getBestPossibleObjValue(milp.get());
  const bool proven = Cbc_isProvenOptimal(milp.get());
  best.info.push_back({"milp_status", proven      ? "optimal"
                                      : saved > 0 ? "time limit, feasible"
                                                  : "time limit, no solution"});
  best.info.push_back({"milp_variables", std::to_string(milp.size())});
  if (saved <= 0 && !proven) return best;
  best.info.push_back({"milp_objective", num(obj)});
  best.info.push_back({"milp_bound", num(bound)});
  const double found = std::min(obj, g_span);
  best.info.push_back({"milp_gap", num(found > 0 ? std::max(0.0, (found - bound) / found) : 0)});
  // Per rank order by MILP start time, then re-timed like the greedy.
  const double* x = Cbc_getColSolution(milp.get());
  std::vector<std::vector<Action>> order(S);
  for (int s = 0; s < S; ++s) {
    std::vector<std::pair<double, Action>> acts;
    for (int i = 0; i < m; ++i) {
      acts.push_back({x[f(s, i)], {Kind::F, s, i}});
      acts.push_back({x[b(s, i)], {Kind::B, s, i}});
      acts.push_back({x[w(s, i)], {Kind::W, s, i}});
    }
    std::stable_sort(acts.begin(), acts.end(),
                     [](const auto& a, const auto& b2) { return a.first < b2.first - 1e-7; });
    for (auto& [t, a] : acts) order[s].push_back(a);
  }
  double span = 0;
  try {
    span = evaluate_order(md, order);
  } catch (const std::invalid_argument&) {
    best.info.push_back({"milp_order", "not executable, kept greedy"});
    return best;
  }
  if (span < g_span - 1e-9) {
    Schedule s = lower("optimal", S, m, md.stage_rank, order, p.optimizer);
    s.info = best.info;
    s.info[1].second = num(span);
    return s;
  }
  return best;
#endif
}

}  // namespace xdc::sched
