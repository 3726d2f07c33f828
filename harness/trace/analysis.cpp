#include "harness/trace/analysis.h"

#include <algorithm>
#include <limits>

namespace xdc::trace {

Summary analyze(const Trace& t) {
  Summary s;
  const int R = t.ranks;
  if (R == 0 || t.events.empty()) return s;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t first = kMax, last = 0, first_f0 = kMax;
  std::vector<int64_t> c_first(R, kMax), c_last(R, 0), busy_from_f0(R, 0);
  s.compute_ns.assign(R, 0);
  for (const Event& e : t.events) {
    if (e.kind == Kind::PREFILL) continue;  // not the training's (prefill in bubbles)
    first = std::min(first, e.start_ns);
    last = std::max(last, e.end_ns);
    if (e.kind == Kind::F && e.stage == 0) first_f0 = std::min(first_f0, e.start_ns);
    if (e.kind == Kind::SEND_F || e.kind == Kind::SEND_B) s.comm_bytes += e.bytes;
    if (!sched::is_compute(e.kind)) continue;
    s.compute_ns[e.rank] += e.end_ns - e.start_ns;
    c_first[e.rank] = std::min(c_first[e.rank], e.start_ns);
    c_last[e.rank] = std::max(c_last[e.rank], e.end_ns);
  }
  if (first_f0 == kMax) first_f0 = first;
  for (const Event& e : t.events)
    if (sched::is_compute(e.kind) || e.kind == Kind::OPT || e.kind == Kind::ALLREDUCE)
      busy_from_f0[e.rank] += std::max<int64_t>(0, e.end_ns - std::max(e.start_ns, first_f0));
  s.iteration_ns = last - first;
  s.time_per_microbatch_ns =
      t.microbatches > 0 ? static_cast<double>(s.iteration_ns) / t.microbatches : 0;
  const int64_t cmax = *std::max_element(s.compute_ns.begin(), s.compute_ns.end());
  if (cmax > 0) s.bubble.megatron = static_cast<double>(s.iteration_ns - cmax) / cmax;
  s.span_ns.assign(R, 0);
  int longest = 0;
  for (int r = 0; r < R; ++r) {
    s.span_ns[r] = c_first[r] == kMax ? 0 : c_last[r] - c_first[r];
    if (s.span_ns[r] > s.span_ns[longest]) longest = r;
  }
  if (s.span_ns[longest] > 0)
    s.bubble.zerobubble =
        static_cast<double>(s.span_ns[longest] - s.compute_ns[longest]) / s.span_ns[longest];
  const int64_t total = last - first_f0;
  if (total > 0) {
    double sum = 0;
    for (int r = 0; r < R; ++r) sum += static_cast<double>(total - busy_from_f0[r]) / total;
    s.bubble.crosspipe = sum / R;
  }
  return s;
}

}  // namespace xdc::trace
