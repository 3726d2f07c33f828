#include "harness/report/series_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "harness/report/loss_chart.h"
#include "harness/report/svg.h"

namespace xdc::report {

namespace {

const char* change_colour(const std::string& what) {
  if (what.rfind("link_down", 0) == 0 || what.rfind("dc_kill", 0) == 0) return "#c0392b";
  if (what.rfind("link_up", 0) == 0 || what.rfind("link_restore", 0) == 0) return "#27ae60";
  return "#2980b9";
}

}  // namespace

std::string run_series_svg(const ScheduleData& s, double width_px) {
  const size_t n = std::min(s.start_s.size(), s.iteration_s.size());
  const size_t sim_n = std::min(s.simulated_start_s.size(), s.simulated_series.size());
  if (n == 0 && sim_n == 0) return "";
  // Nothing measured (xdc simulate): the prediction's panel alone.
  const int panels = n > 0 ? 3 : 1;
  // The time axis: every iteration measured or predicted, and the changes made meanwhile.
  double t_lo = 0, t_hi = n > 0 ? s.start_s[n - 1] + s.iteration_s[n - 1] : 0;
  for (size_t i = 0; i < sim_n; ++i)
    t_hi = std::max(t_hi, s.simulated_start_s[i] + s.simulated_series[i]);
  const auto& changes = s.changes.empty() ? s.simulated_changes : s.changes;
  for (const auto& c : changes)
    if (c.t_s >= -5 && c.t_s <= t_hi + 5) t_lo = std::min(t_lo, c.t_s);
  const double left = 64, right = 150, top = 10, panel = 100, gap = 26, bottom = 40;
  const double h = top + panels * panel + (panels - 1) * gap + bottom,
               plot_w = width_px - left - right;
  auto x_of = [&](double t) { return left + plot_w * (t - t_lo) / std::max(t_hi - t_lo, 1e-9); };
  Svg svg(width_px, h, "chart",
          n > 0 ? "iteration time, WAN bytes and waits over the run"
                : "simulated iteration time over the run");

  // One panel: its y range from the values, ticks, a title.
  auto axis = [&](int k, double hi, const std::string& title, const char* fmt_tick) {
    const double y0 = top + k * (panel + gap);
    auto ticks = nice_ticks(0, std::max(hi, 1e-9), 4);
    const double top_v = std::max(hi, ticks.back());
    for (double v : ticks) {
      const double y = y0 + panel * (1 - v / top_v);
      svg.line(left, y, left + plot_w, y, "grid");
      svg.text(left - 6, y + 4, fmt::format(fmt::runtime(fmt_tick), v), "tl", "end");
    }
    svg.line(left, y0 + panel, left + plot_w, y0 + panel, "axis");
    svg.line(left, y0, left, y0 + panel, "axis");
    svg.text(left + plot_w + 10, y0 + 12, title, "tl");
    return [y0, top_v, &panel](double v) { return y0 + panel * (1 - v / top_v); };
  };

  // 1: iteration time, measured and predicted.
  double it_hi = 0;
  for (size_t i = 0; i < n; ++i) it_hi = std::max(it_hi, s.iteration_s[i]);
  for (double v : s.simulated_series) it_hi = std::max(it_hi, v);
  auto y1 = axis(0, it_hi, "iteration (s)", "{:g}");
  std::vector<std::pair<double, double>> pts;
  for (size_t i = 0; i < n; ++i) {
    pts.emplace_back(x_of(s.start_s[i]), y1(s.iteration_s[i]));
    svg.circle(pts.back().first, pts.back().second, 2.5, "dot", series_colour(0));
  }
  if (n > 0) {
    svg.polyline(pts, "loss", series_colour(0));
    svg.polyline({{left + plot_w + 10, top + 26}, {left + plot_w + 36, top + 26}}, "key",
                 series_colour(0));
    svg.text(left + plot_w + 40, top + 30, "measured", "tl");
  }
  pts.clear();
  for (size_t i = 0; i < sim_n; ++i)
    pts.emplace_back(x_of(s.simulated_start_s[i]), y1(s.simulated_series[i]));
  if (!pts.empty()) svg.polyline(pts, "loss d1", "#888");
  if (!pts.empty()) {
    svg.polyline({{left + plot_w + 10, top + 42}, {left + plot_w + 36, top + 42}}, "key d1",
                 "#888");
    svg.text(left + plot_w + 40, top + 46, "simulated", "tl");
  }

  // 2: WAN bytes per iteration, a bar over the iteration's span (measured only).
  double mib_hi = 0;
  if (n > 0) {
    for (size_t i = 0; i < std::min(n, s.wan_bytes.size()); ++i)
      mib_hi = std::max(mib_hi, s.wan_bytes[i] / 1048576);
    auto y2 = axis(1, mib_hi, "WAN MiB sent", "{:g}");
    for (size_t i = 0; i < std::min(n, s.wan_bytes.size()); ++i) {
      const double x = x_of(s.start_s[i]), w = x_of(s.start_s[i] + s.iteration_s[i]) - x;
      const double y = y2(s.wan_bytes[i] / 1048576);
      svg.rect(x, y, std::max(w - 1, 1.0), y2(0) - y, "bar",
               fmt::format("iteration {}: {:.1f} MiB over the WAN", i, s.wan_bytes[i] / 1048576),
               "#9fb4c7");
    }

    // 3: waits by cause, summed over ranks.
    double w_hi = 0;
    for (const auto& [cause, v] : s.waits_series)
      for (double x : v)
        if (std::isfinite(x)) w_hi = std::max(w_hi, x);
    auto y3 = axis(2, w_hi, "waits (s, all ranks)", "{:g}");
    for (size_t c = 0; c < s.waits_series.size(); ++c) {
      const auto& [cause, v] = s.waits_series[c];
      pts.clear();
      for (size_t i = 0; i < std::min(n, v.size()); ++i)
        if (std::isfinite(v[i])) pts.emplace_back(x_of(s.start_s[i]), y3(v[i]));
      if (pts.size() > 1) svg.polyline(pts, "loss", series_colour(c + 1));
      const double ly = top + 2 * (panel + gap) + 28 + 16 * static_cast<double>(c);
      svg.polyline({{left + plot_w + 10, ly - 4}, {left + plot_w + 36, ly - 4}}, "key",
                   series_colour(c + 1));
      svg.text(left + plot_w + 40, ly, cause, "tl");
    }
  }

  // The time axis and the changes across every panel.
  const double base = top + panels * panel + (panels - 1) * gap;
  for (double v : nice_ticks(t_lo, t_hi, 10)) {
    svg.line(x_of(v), base, x_of(v), base + 4, "tick");
    svg.text(x_of(v), base + 16, fmt::format("{:g}", v), "tl", "middle");
  }
  svg.text(left + plot_w / 2, h - 6, "time (s) from measured iteration 0", "tl", "middle");
  for (const auto& c : changes) {
    if (c.t_s < t_lo || c.t_s > t_hi) continue;
    svg.rect(x_of(c.t_s) - 0.75, top, 1.5, base - top, "chg",
             fmt::format("{:.3f} s: {} ({})", c.t_s, c.what, c.source), change_colour(c.what));
  }
  return svg.str();
}

}  // namespace xdc::report
