#include "harness/trace/iterations.h"

#include <algorithm>
#include <limits>

namespace xdc::trace {

std::vector<Trace> split_iterations(const Trace& t, const std::vector<std::vector<int64_t>>& starts,
                                    const std::vector<std::vector<int64_t>>& ends) {
  auto empty_like = [&] {
    Trace o;
    o.name = t.name;
    o.ranks = t.ranks;
    o.microbatches = t.microbatches;
    return o;
  };
  std::vector<Trace> out;
  const bool bounds =
      !starts.empty() && starts.size() == ends.size() && static_cast<int>(starts.size()) >= t.ranks;
  if (bounds) {
    size_t n = std::numeric_limits<size_t>::max();
    for (size_t r = 0; r < starts.size(); ++r) n = std::min({n, starts[r].size(), ends[r].size()});
    out.assign(n, empty_like());
    for (const auto& e : t.events) {
      if (e.rank < 0 || e.rank >= static_cast<int>(starts.size())) continue;
      const auto& s = starts[e.rank];
      for (size_t i = 0; i < n; ++i) {
        const int64_t end = e.kind == Kind::PREFILL && i + 1 < n ? s[i + 1] : ends[e.rank][i];
        if (e.start_ns >= s[i] && e.start_ns < end) {
          out[i].events.push_back(e);
          break;
        }
      }
    }
    return out;
  }
  std::vector<Event> events = t.events;
  std::stable_sort(events.begin(), events.end(),
                   [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  std::vector<size_t> iteration(std::max(0, t.ranks), 0);
  bool any_opt = false;
  for (const auto& e : events) {
    if (e.rank < 0 || e.rank >= t.ranks) continue;
    size_t& i = iteration[e.rank];
    if (out.size() <= i) out.resize(i + 1, empty_like());
    out[i].events.push_back(e);
    if (e.kind == Kind::OPT) {
      ++i;
      any_opt = true;
    }
  }
  if (!any_opt) {
    out.assign(1, empty_like());
    out[0].events = events;
  }
  return out;
}

}  // namespace xdc::trace
