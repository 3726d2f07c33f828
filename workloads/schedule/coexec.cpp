#include "workloads/schedule/coexec.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace xdc::sched {

CoexecStep coexec_step(const Op* x, const Op* y, double k) {
  const double c = (x ? x->compute : 0) + (y ? y->compute : 0);
  const double m = (x ? x->comm : 0) + (y ? y->comm : 0);
  CoexecStep s;
  if (!x || !y || m == 0) {
    s.time = c + m;
    s.compute_time = c;
  } else if (c * (1 + k) <= m) {
    s.time = m;
    s.compute_time = c * (1 + k);
  } else {
    s.time = c + m * k / (1 + k);
    s.compute_time = s.time;
  }
  return s;
}

CoexecPlan plan_coexec(const std::vector<Op>& a, const std::vector<Op>& b, double k) {
  if (k < 0) throw std::invalid_argument("co-execution interference must be >= 0");
  for (const auto* half : {&a, &b})
    for (const Op& o : *half)
      if (o.compute < 0 || o.comm < 0)
        throw std::invalid_argument("co-execution: an operator with a negative time");
  const size_t n = a.size(), m = b.size(), w = m + 1;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[i * w + j]: fastest time to finish a[0, i) and b[0, j); move: 0 a alone, 1 b
  // alone, 2 both.
  std::vector<double> best((n + 1) * w, kInf);
  std::vector<char> move((n + 1) * w, 0);
  best[0] = 0;
  for (size_t i = 0; i <= n; ++i)
    for (size_t j = 0; j <= m; ++j) {
      const double here = best[i * w + j];
      if (here == kInf) continue;
      auto relax = [&](size_t ni, size_t nj, double t, char mv) {
        double& to = best[ni * w + nj];
        if (here + t < to - 1e-12) {
          to = here + t;
          move[ni * w + nj] = mv;
        }
      };
      if (i < n) relax(i + 1, j, coexec_step(&a[i], nullptr, k).time, 0);
      if (j < m) relax(i, j + 1, coexec_step(nullptr, &b[j], k).time, 1);
      if (i < n && j < m) relax(i + 1, j + 1, coexec_step(&a[i], &b[j], k).time, 2);
    }
  CoexecPlan plan;
  for (size_t i = n, j = m; i > 0 || j > 0;) {
    const char mv = move[i * w + j];
    const int ai = mv != 1 ? static_cast<int>(--i) : -1;
    const int bj = mv != 0 ? static_cast<int>(--j) : -1;
    CoexecStep s = coexec_step(ai >= 0 ? &a[ai] : nullptr, bj >= 0 ? &b[bj] : nullptr, k);
    s.a = ai;
    s.b = bj;
    plan.steps.push_back(s);
  }
  std::reverse(plan.steps.begin(), plan.steps.end());
  for (const CoexecStep& s : plan.steps) plan.time += s.time;
  double total_a = 0, total_b = 0;
  for (const Op& o : a) total_a += o.compute;
  for (const Op& o : b) total_b += o.compute;
  for (const auto* half : {&a, &b})
    for (const Op& o : *half) plan.serial += o.compute + o.comm;
  double done_a = 0, done_b = 0;
  for (const CoexecStep& s : plan.steps) {
    if (s.a >= 0) done_a += a[s.a].compute;
    const double share_a = total_a > 0 ? done_a / total_a : 1;
    const double share_b = total_b > 0 ? done_b / total_b : 0;
    plan.peak_excess = std::max(plan.peak_excess, share_a - share_b);
    if (s.b >= 0) done_b += b[s.b].compute;
  }
  return plan;
}

std::vector<Op> sliced_ops(double compute, int n, double comm, double tail) {
  std::vector<Op> ops;
  if (n <= 0) {
    ops.push_back({compute + tail, 0});
    return ops;
  }
  // The same slicing as the modeled worker's sleeps (integer-exact for integer times).
  for (int i = 0; i < n; ++i) {
    const double from = (compute + tail) * i / n, to = (compute + tail) * (i + 1) / n;
    ops.push_back({to - from, 0});
    ops.push_back({0, comm / n});
  }
  return ops;
}

}  // namespace xdc::sched
