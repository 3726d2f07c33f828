#include "harness/report/loss_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/report/svg.h"

namespace xdc::report {

std::string series_colour(size_t i) {
  static const char* colours[] = {"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1",
                                  "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#bab0ac"};
  return colours[i % std::size(colours)];
}

std::string loss_chart_svg(const std::vector<LossSeries>& series, double width_px) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  size_t n = 0;
  for (const auto& s : series) {
    n = std::max(n, s.values.size());
    for (double v : s.values)
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  }
  if (!std::isfinite(lo)) return "";
  if (hi - lo < 1e-9) {
    lo -= 0.5;
    hi += 0.5;
  }
  auto yt = nice_ticks(lo, hi, 6);
  lo = std::min(lo, yt.front());
  hi = std::max(hi, yt.back());
  const double left = 56, right = 150, top = 10, bottom = 40;
  const double h = 300, plot_w = width_px - left - right, plot_h = h - top - bottom;
  const double last = static_cast<double>(std::max<size_t>(n, 2) - 1);
  auto x_of = [&](double i) { return left + plot_w * i / last; };
  auto y_of = [&](double v) { return top + plot_h * (hi - v) / (hi - lo); };
  Svg svg(width_px, h, "chart", "training loss per iteration");
  for (double v : yt) {
    svg.line(left, y_of(v), left + plot_w, y_of(v), "grid");
    svg.text(left - 6, y_of(v) + 4, fmt::format("{:.4g}", v), "tl", "end");
  }
  for (double v : nice_ticks(0, last, 10)) {  // numbered from 0, as iterations.csv
    if (v != std::floor(v)) continue;
    svg.line(x_of(v), top + plot_h, x_of(v), top + plot_h + 4, "tick");
    svg.text(x_of(v), top + plot_h + 16, fmt::format("{:g}", v), "tl", "middle");
  }
  svg.line(left, top + plot_h, left + plot_w, top + plot_h, "axis");
  svg.line(left, top, left, top + plot_h, "axis");
  svg.text(left + plot_w / 2, h - 6, "measured iteration", "tl", "middle");
  svg.text(14, top + plot_h / 2, "loss", "tl", "middle");
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& s = series[i];
    // Dashes differ per series: schedules with the same seed train identically.
    const char* dash = i % 3 == 0 ? "" : i % 3 == 1 ? " d1" : " d2";
    std::vector<std::pair<double, double>> pts;
    auto flush = [&] {
      if (pts.size() == 1) svg.circle(pts[0].first, pts[0].second, 2.5, "dot", series_colour(i));
      if (pts.size() > 1) svg.polyline(pts, std::string("loss") + dash, series_colour(i));
      pts.clear();
    };
    for (size_t k = 0; k < s.values.size(); ++k) {
      if (!std::isfinite(s.values[k])) {
        flush();
        continue;
      }
      pts.emplace_back(x_of(static_cast<double>(k)), y_of(s.values[k]));
    }
    flush();
    const double ly = top + 12 + 18 * static_cast<double>(i);
    svg.polyline({{left + plot_w + 10, ly - 4}, {left + plot_w + 36, ly - 4}},
                 std::string("key") + dash, series_colour(i));
    svg.text(left + plot_w + 40, ly, s.name, "tl");
  }
  return svg.str();
}

}  // namespace xdc::report
