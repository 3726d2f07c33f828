#include "harness/report/wan_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include "harness/report/loss_chart.h"
#include "harness/report/svg.h"

namespace xdc::report {
namespace {

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, ',');) out.push_back(f);
  return out;
}

double number(const std::string& s) {
  try {
    return std::stod(s);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

std::string wan_utilisation_svg(const std::string& wan_csv, const std::string& steps_csv,
                                double width_px) {
  std::map<std::string, std::vector<std::pair<double, double>>> links;  // link -> (t, Mbit/s)
  std::istringstream in(wan_csv);
  std::string line;
  std::getline(in, line);  // t_s,link,bytes,packets,drops,queued,bytes_delta,mbit_s
  double t_max = 0, peak = 0;
  while (std::getline(in, line)) {
    const auto f = fields(line);
    if (f.size() < 8) continue;
    const double t = number(f[0]), mbit = number(f[7]);
    links[f[1]].emplace_back(t, mbit);
    t_max = std::max(t_max, t);
    peak = std::max(peak, mbit);
  }
  if (links.empty() || t_max <= 0) return "";
  const auto yt = nice_ticks(0, std::max(peak, 1.0), 6);
  const double hi = std::max(yt.back(), peak);  // the ticks may stop below the peak
  const double left = 56, right = 150, top = 10, bottom = 40;
  const double h = 260, plot_w = width_px - left - right, plot_h = h - top - bottom;
  auto x_of = [&](double t) { return left + plot_w * t / t_max; };
  auto y_of = [&](double v) { return top + plot_h * (hi - v) / hi; };
  Svg svg(width_px, h, "chart", "WAN utilisation over time, Mbit/s per direction");
  // The steps, alternately shaded (steps.csv: step,start_s,step_s,...).
  std::istringstream steps(steps_csv);
  std::getline(steps, line);
  for (int i = 0; std::getline(steps, line); ++i) {
    const auto f = fields(line);
    if (f.size() < 3 || i % 2) continue;
    const double t0 = std::clamp(number(f[1]), 0.0, t_max);
    const double t1 = std::clamp(number(f[1]) + number(f[2]), 0.0, t_max);
    svg.rect(x_of(t0), top, x_of(t1) - x_of(t0), plot_h, "band", "step " + f[0], "#eef2f7");
  }
  for (double v : yt) {
    svg.line(left, y_of(v), left + plot_w, y_of(v), "grid");
    svg.text(left - 6, y_of(v) + 4, fmt::format("{:g}", v), "tl", "end");
  }
  for (double v : nice_ticks(0, t_max, 10)) {
    svg.line(x_of(v), top + plot_h, x_of(v), top + plot_h + 4, "tick");
    svg.text(x_of(v), top + plot_h + 16, fmt::format("{:g}", v), "tl", "middle");
  }
  svg.line(left, top + plot_h, left + plot_w, top + plot_h, "axis");
  svg.line(left, top, left, top + plot_h, "axis");
  svg.text(left + plot_w / 2, h - 6, "s since the program started (shaded: every other step)", "tl",
           "middle");
  svg.text(14, top + plot_h / 2, "Mbit/s", "tl", "middle");
  size_t i = 0;
  for (const auto& [link, pts] : links) {
    std::vector<std::pair<double, double>> xy;
    for (const auto& [t, v] : pts) xy.emplace_back(x_of(t), y_of(v));
    svg.polyline(xy, "wan", series_colour(i));
    const double ly = top + 12 + 18 * static_cast<double>(i);
    svg.polyline({{left + plot_w + 10, ly - 4}, {left + plot_w + 36, ly - 4}}, "key",
                 series_colour(i));
    svg.text(left + plot_w + 40, ly, link, "tl");
    ++i;
  }
  return svg.str();
}

}  // namespace xdc::report
