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
  // One panel per direction on one scale: the two directions of a link often carry the
  // same bytes at the same time (a ring all-reduce), and on one plot one hides the other.
  const auto yt = nice_ticks(0, std::max(peak, 1.0), 4);
  const double hi = std::max(yt.back(), peak);  // the ticks may stop below the peak
  const double left = 56, right = 150, top = 10, bottom = 40, gap = 14, panel_h = 120;
  const double n = static_cast<double>(links.size());
  const double h = top + n * panel_h + (n - 1) * gap + bottom, plot_w = width_px - left - right;
  auto x_of = [&](double t) { return left + plot_w * t / t_max; };
  Svg svg(width_px, h, "chart", "WAN utilisation over time, Mbit/s per direction");
  struct Band {
    double t0, t1;
    std::string step;
  };
  std::vector<Band> bands;  // every other step (steps.csv: step,start_s,step_s,...)
  std::istringstream steps(steps_csv);
  std::getline(steps, line);
  for (int i = 0; std::getline(steps, line); ++i) {
    const auto f = fields(line);
    if (f.size() < 3 || i % 2) continue;
    bands.push_back({std::clamp(number(f[1]), 0.0, t_max),
                     std::clamp(number(f[1]) + number(f[2]), 0.0, t_max), "step " + f[0]});
  }
  size_t i = 0;
  for (const auto& [link, pts] : links) {
    const double p_top = top + static_cast<double>(i) * (panel_h + gap);
    auto y_of = [&](double v) { return p_top + panel_h * (hi - v) / hi; };
    for (const auto& b : bands)
      svg.rect(x_of(b.t0), p_top, x_of(b.t1) - x_of(b.t0), panel_h, "band", b.step, "#eef2f7");
    for (double v : yt) {
      svg.line(left, y_of(v), left + plot_w, y_of(v), "grid");
      svg.text(left - 6, y_of(v) + 4, fmt::format("{:g}", v), "tl", "end");
    }
    svg.line(left, p_top + panel_h, left + plot_w, p_top + panel_h, "axis");
    svg.line(left, p_top, left, p_top + panel_h, "axis");
    std::vector<std::pair<double, double>> xy;
    for (const auto& [t, v] : pts) xy.emplace_back(x_of(t), y_of(v));
    svg.polyline(xy, "wan", series_colour(i));
    svg.text(left + plot_w + 10, p_top + 16, link, "tl");
    svg.text(14, p_top + panel_h / 2, "Mbit/s", "tl", "middle");
    ++i;
  }
  const double base = top + n * panel_h + (n - 1) * gap;
  for (double v : nice_ticks(0, t_max, 10)) {
    svg.line(x_of(v), base, x_of(v), base + 4, "tick");
    svg.text(x_of(v), base + 16, fmt::format("{:g}", v), "tl", "middle");
  }
  svg.text(left + plot_w / 2, h - 6, "s since the program started (shaded: every other step)", "tl",
           "middle");
  return svg.str();
}

}  // namespace xdc::report
