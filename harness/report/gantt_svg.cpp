#include "harness/report/gantt_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "harness/report/html.h"
#include "harness/report/svg.h"

namespace xdc::report {

namespace {

using trace::Kind;

std::string kind_class(Kind k) {
  switch (k) {
    case Kind::SEND_F:
    case Kind::SEND_B:
      return "send";
    case Kind::RECV_F:
    case Kind::RECV_B:
      return "recv";
    case Kind::ALLREDUCE:
    case Kind::OUTER_SYNC:  // the DP collective of an outer step (outer_sync.h)
      return "ar";
    case Kind::TP_ALLREDUCE:  // inside an F or B: drawn in the communication lane
      return "ar tp";
    case Kind::OPT:
      return "opt";
    default:
      return "blk " + std::string(sched::kind_name(k));
  }
}

// The unit that keeps tick labels short for a time axis of `span_s`.
std::pair<double, const char*> axis_unit(double span_s) {
  if (span_s < 2e-3) return {1e6, "µs"};
  if (span_s < 2) return {1e3, "ms"};
  return {1, "s"};
}

// "rank 3"; "rank 4 · s0" when the rank runs other stages than its number (data-parallel
// replicas, interleaved and V-shaped placements).
std::string rank_label(int rank, const std::set<int>& stages) {
  std::string out = "rank " + std::to_string(rank);
  if (stages.empty() || (stages.size() == 1 && *stages.begin() == rank)) return out;
  out += " · s";
  int shown = 0;
  for (int s : stages) {
    if (shown == 2) return out + ",…";
    out += (shown++ ? "," : "") + std::to_string(s);
  }
  return out;
}

std::string tick_text(double v) {
  std::string s = fmt::format("{:.6g}", v);
  return s;
}

}  // namespace

std::string gantt_svg(const trace::Trace& t, const GanttOptions& o) {
  int ranks = t.ranks;
  int64_t end_ns = 0;
  for (const auto& e : t.events) {
    ranks = std::max(ranks, e.rank + 1);
    end_ns = std::max(end_ns, e.end_ns);
  }
  if (t.events.empty() || ranks <= 0 || end_ns <= 0)
    return "<p class=\"note\">(no events in this trace)</p>";
  const int64_t span_ns = std::max(o.span_ns, end_ns);

  const double row_h = std::clamp(520.0 / ranks, 8.0, 30.0);
  const double compute_h = std::round(row_h * 0.58 * 2) / 2;
  const double comm_h = std::max(1.0, std::round(row_h * 0.13 * 2) / 2);
  // One left margin for every timeline, so that two drawn on one span line up.
  const double left = 100, right = 14, top = 6, axis_h = 34;
  const double plot_w = o.width_px - left - right;
  const double height = top + ranks * row_h + axis_h;
  // Where the average block is under 3 px, white block borders would wash the colours
  // out: a "dense" timeline draws blocks without them.
  size_t blocks = 0;
  for (const auto& e : t.events) blocks += sched::is_compute(e.kind);
  const double px_per_block =
      blocks == 0 ? plot_w : plot_w * static_cast<double>(ranks) / static_cast<double>(blocks);
  Svg svg(o.width_px, height, px_per_block < 3 ? "gantt dense" : "gantt", o.label);
  auto x_of = [&](int64_t ns) {
    return left + plot_w * static_cast<double>(ns) / static_cast<double>(span_ns);
  };

  // A rank's chunks in stage order: odd positions are drawn lighter.
  std::map<int, std::set<int>> rank_stages;
  for (const auto& e : t.events)
    if (sched::is_compute(e.kind)) rank_stages[e.rank].insert(e.stage);
  auto odd_chunk = [&](const trace::Event& e) {
    const auto& s = rank_stages[e.rank];
    return std::distance(s.begin(), s.find(e.stage)) % 2 == 1;
  };

  // Rows: label and idle background over the iteration.
  const double font = std::clamp(row_h * 0.55, 7.0, 12.0);
  for (int r = 0; r < ranks; ++r) {
    const double y = top + r * row_h;
    svg.rect(left, y, x_of(end_ns) - left, compute_h, "idle");
    if (row_h >= 11 || r % 4 == 0 || r == ranks - 1)
      svg.text(left - 6, y + compute_h * 0.5 + font * 0.35, rank_label(r, rank_stages[r]), "rl",
               "end");
  }
  // Time axis with grid lines through the rows.
  const auto [scale, unit] = axis_unit(static_cast<double>(span_ns) / 1e9);
  const double span_u = static_cast<double>(span_ns) / 1e9 * scale;
  const double axis_y = top + ranks * row_h + 2;
  for (double v : nice_ticks(0, span_u, 11)) {
    const double x = left + plot_w * v / span_u;
    svg.line(x, top, x, axis_y, "grid");
    svg.line(x, axis_y, x, axis_y + 4, "tick");
    svg.text(x, axis_y + 15, tick_text(v), "tl", "middle");
  }
  svg.line(left, axis_y, left + plot_w, axis_y, "axis");
  svg.text(left + plot_w, axis_y + 29, std::string("time (") + unit + ")", "tl", "end");

  // Events: compute over idle, then communication in its lane below.
  const bool tooltips = t.events.size() <= o.max_tooltips;
  const double char_w = font * 0.62;
  const auto partners = trace::pair_partners(t);  // co-executed pairs: drawn on their F
  for (const auto& e : t.events) {
    if (e.rank < 0) continue;
    const auto partner = partners.find({e.rank, e.end_ns});
    if (partner != partners.end() && &t.events[partner->second] == &e) continue;
    const double y = top + e.rank * row_h;
    const double x0 = x_of(e.start_ns), x1 = x_of(e.end_ns);
    const bool compute =
        sched::is_compute(e.kind) || e.kind == Kind::OPT || e.kind == Kind::PREFILL;
    const double dur_s = static_cast<double>(e.end_ns - e.start_ns) / 1e9;
    if (!compute && e.end_ns <= e.start_ns) continue;  // a receive that did not wait
    std::string title;
    if (tooltips) {
      title = std::string(sched::kind_name(e.kind));
      if (e.microbatch >= 0) title += " mb " + std::to_string(e.microbatch);
      if (e.kind == Kind::PREFILL)  // bytes: the prompt's tokens
        title += " rank " + std::to_string(e.rank) + ", " + std::to_string(e.bytes) + " tokens";
      else
        title += " stage " + std::to_string(e.stage) + ", rank " + std::to_string(e.rank);
      if (e.peer >= 0) title += ", peer " + std::to_string(e.peer);
      if (e.bytes > 0 && e.kind != Kind::PREFILL)
        title += ", " + si_text(static_cast<double>(e.bytes)) + "B";
      title += ": " + seconds_text(dur_s);
      if (e.kind == Kind::F && partner != partners.end()) {
        const auto& b = t.events[partner->second];
        title += fmt::format(" (co-executed with {} mb {} stage {})", sched::kind_name(b.kind),
                             b.microbatch, b.stage);
      }
    }
    std::string cls = kind_class(e.kind);
    if (sched::is_compute(e.kind) && odd_chunk(e)) cls += " odd";
    if (compute) {
      // Blocks keep a visible sliver even when a pixel holds many of them.
      svg.rect(x0, y, std::max(x1 - x0, 0.6), compute_h, cls, title);
      const std::string mb = std::to_string(e.microbatch);
      if (sched::is_compute(e.kind) && e.microbatch >= 0 && compute_h >= 8 &&
          x1 - x0 >= char_w * static_cast<double>(mb.size()) + 3)
        svg.text((x0 + x1) / 2, y + compute_h / 2 + font * 0.35, mb,
                 e.kind == Kind::W ? "mb dark" : "mb", "middle");
    } else {
      // Sends (and all-reduces) over waits: an Isend recorded post-to-completion may span
      // a wait, and neither should hide the other.
      const bool wait = e.kind == Kind::RECV_F || e.kind == Kind::RECV_B;
      svg.rect(x0, y + compute_h + 1 + (wait ? comm_h : 0), std::max(x1 - x0, 0.6), comm_h, cls,
               title);
    }
  }
  return svg.str();
}

std::string gantt_legend_html() {
  const std::pair<const char*, const char*> keys[] = {
      {"blk F", "F forward"},        {"blk B", "B input grad"},
      {"blk W", "W weight grad"},    {"blk BW", "BW full backward"},
      {"blk F odd", "second chunk"}, {"opt", "OPT optimizer"},
      {"send", "SEND on the wire"},  {"recv", "RECV waiting for data"},
      {"ar", "ALLREDUCE"},           {"blk PREFILL", "PREFILL inference in a bubble"},
      {"idle", "idle (bubble)"}};
  std::string out = "<div class=\"legend\">";
  for (auto& [cls, text] : keys)
    out += fmt::format(
        R"(<span><svg width="14" height="10" aria-hidden="true"><rect width="14" height="10" class="{}"/></svg> {}</span>)",
        cls, escape(text));
  return out + "</div>";
}

}  // namespace xdc::report
