#include "harness/trace/gantt.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <numeric>

namespace xdc::trace {

std::string text_gantt(const Trace& t, int chunks, int64_t quantum_ns, int max_columns) {
  int64_t first = std::numeric_limits<int64_t>::max(), last = 0, q = quantum_ns;
  size_t width = 2;
  for (const Event& e : t.events) {
    if (!sched::is_compute(e.kind)) continue;
    first = std::min(first, e.start_ns);
    last = std::max(last, e.end_ns);
    if (quantum_ns == 0 && e.end_ns > e.start_ns) q = std::gcd(q, e.end_ns - e.start_ns);
    width = std::max(width, 1 + std::to_string(e.microbatch).size());
  }
  if (first > last || q <= 0) return "(no compute events)\n";
  if (quantum_ns == 0 && first > 0) q = std::gcd(q, first);  // a given quantum is kept
  const int64_t columns = (last + q - 1) / q;
  if (columns > max_columns)
    return "(" + std::to_string(columns) + " columns: too wide to draw; use the Chrome trace)\n";
  const std::string idle = "." + std::string(width, ' ');
  std::vector<std::vector<std::string>> rows(t.ranks, std::vector<std::string>(columns, idle));
  auto label_of = [&](const Event& e) {
    char k = e.kind == Kind::F ? 'F' : e.kind == Kind::W ? 'W' : 'B';
    const int ranks = std::max(1, t.ranks);
    if (chunks > 1 && (e.stage / ranks) % 2 == 1) k = static_cast<char>(std::tolower(k));
    std::string label = k + std::to_string(e.microbatch);
    label.resize(width + 1, ' ');
    return label;
  };
  // A co-executed pair (schedule.h): its F spans the pair, its partner is zero-length at
  // the end; the partner's label goes in the pair's second cell.
  std::map<std::pair<int, int64_t>, std::string> partner;
  for (const Event& e : t.events)
    if ((e.kind == Kind::B || e.kind == Kind::BW) && e.start_ns == e.end_ns)
      partner[{e.rank, e.end_ns}] = label_of(e);
  for (const Event& e : t.events) {
    if (!sched::is_compute(e.kind) || e.start_ns == e.end_ns) continue;
    const int64_t a = e.start_ns / q, b = std::max(a + 1, e.end_ns / q);
    auto p = e.kind == Kind::F ? partner.find({e.rank, e.end_ns}) : partner.end();
    for (int64_t c = a; c < b && c < columns; ++c)
      rows[e.rank][c] = c == a                             ? label_of(e)
                        : c == a + 1 && p != partner.end() ? p->second
                                                           : std::string(width, '-') + " ";
  }
  std::string out;
  for (int r = 0; r < t.ranks; ++r) {
    std::string line = "rank " + std::to_string(r) + (r < 10 ? "  |" : " |");
    for (const auto& cell : rows[r]) line += cell;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace xdc::trace
