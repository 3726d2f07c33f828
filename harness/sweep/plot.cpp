// SVG line plots of sweep rows (see plot.h).
#include "harness/sweep/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "harness/report/html.h"

namespace xdc::sweep {

namespace {

using report::escape;  // one HTML/SVG escaper, harness/report/html.h

// About five round ticks covering [lo, hi].
std::vector<double> ticks(double lo, double hi) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / 5;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * mag >= raw) {
      step = f * mag;
      break;
    }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    out.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return out;
}

std::string num(double v) {
  return fmt::format("{:.4g}", v);
}

const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                          "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

std::string base_name(const std::string& n) {
  const std::string sim = " (sim)";
  return n.size() > sim.size() && n.compare(n.size() - sim.size(), sim.size(), sim) == 0
             ? n.substr(0, n.size() - sim.size())
             : n;
}

}  // namespace

std::string svg_line_plot(const Plot& p) {
  const double W = 640, H = 400, L = 70, R = 180, T = 40, B = 50;
  const double pw = W - L - R, ph = H - T - B;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y1 = -x0;
  double y0 = 0;  // y from zero: slowdowns and times read honestly
  for (auto& s : p.series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, s.y[i]);
      y1 = std::max(y1, s.y[i]);
    }
  if (!p.categories.empty()) {
    x0 = -0.5;
    x1 = static_cast<double>(p.categories.size()) - 0.5;
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y1 = 1;
  if (!(x1 > x0)) x0 -= 1, x1 += 1;
  if (!(y1 > y0)) y1 = y0 + 1;
  std::vector<double> yt = ticks(y0, y1);
  if (yt.size() >= 2 && yt.back() < y1) yt.push_back(yt.back() + (yt[1] - yt[0]));
  y1 = std::max(y1, yt.back());  // the axis ends on a labelled tick
  auto X = [&](double v) { return L + (v - x0) / (x1 - x0) * pw; };
  auto Y = [&](double v) { return T + ph - (v - y0) / (y1 - y0) * ph; };

  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      W, H, W, H);
  o += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"white\"/>\n", W, H);
  o += fmt::format("<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n",
                   L + pw / 2, escape(p.title));
  // Grid and y ticks.
  for (double t : yt)
    o += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        L, Y(t), L + pw, Y(t), L - 6, Y(t) + 4, num(t));
  // x ticks.
  if (!p.categories.empty()) {
    for (size_t i = 0; i < p.categories.size(); ++i)
      o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                       X(static_cast<double>(i)), T + ph + 18, escape(p.categories[i]));
  } else {
    for (double t : ticks(x0, x1))
      o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", X(t),
                       T + ph + 18, num(t));
  }
  o += fmt::format("<path d=\"M{:.1f},{:.1f} V{:.1f} H{:.1f}\" fill=\"none\" stroke=\"black\"/>\n",
                   L, T, T + ph, L + pw);
  o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", L + pw / 2,
                   H - 10, escape(p.x_label));
  o += fmt::format(
      "<text x=\"16\" y=\"{:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {:.1f})\">{}"
      "</text>\n",
      T + ph / 2, T + ph / 2, escape(p.y_label));
  // Series: colours by base name so "x" and "x (sim)" match.
  std::map<std::string, size_t> colour_of;
  for (auto& s : p.series) colour_of.emplace(base_name(s.name), colour_of.size());
  double ly = T + 8;
  for (auto& s : p.series) {
    const char* colour = kColours[colour_of[base_name(s.name)] % std::size(kColours)];
    const char* dash = s.dashed ? " stroke-dasharray=\"6 4\"" : "";
    std::string pts;
    for (size_t i = 0; i < s.x.size(); ++i)
      pts += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", X(s.x[i]), Y(s.y[i]));
    o += fmt::format(
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}><title>{}</title>"
        "</polyline>\n",
        pts, colour, dash, escape(s.name));
    for (size_t i = 0; i < s.x.size(); ++i)
      o += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: "
          "{}</title></circle>\n",
          X(s.x[i]), Y(s.y[i]), s.dashed ? "white\" stroke=\"" + std::string(colour) : colour,
          escape(s.name), num(s.y[i]));
    o += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"2\"{}/><text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
        L + pw + 10, ly, L + pw + 30, ly, colour, dash, L + pw + 36, ly + 4, escape(s.name));
    ly += 18;
  }
  return o + "</svg>\n";
}

std::string plot_file_name(const PlotSpec& spec) {
  return spec.y + "-vs-" + spec.x + ".svg";
}

Plot sweep_plot(const Sweep& s, const PlotSpec& spec, std::vector<Row> rows) {
  size_t xa = 0;
  while (xa < s.axes.size() && s.axes[xa].name != spec.x) ++xa;
  if (xa == s.axes.size()) return {};
  add_slowdown(s, xa, rows);
  const Axis& ax = s.axes[xa];
  Plot p;
  std::string unit;
  const bool numeric = axis_is_numeric(ax);
  if (numeric) numeric_value(ax.labels[0], &unit);
  p.x_label = ax.name + (unit.empty() ? "" : " (" + unit + ")");
  if (!numeric) p.categories = ax.labels;
  p.y_label = spec.y;
  p.title = spec.y + " vs " + ax.name + " — " + s.name;
  std::map<std::string, size_t> index;  // series name -> position
  auto add = [&](const std::string& name, bool dashed, double x, double y) {
    auto [it, fresh] = index.emplace(name, p.series.size());
    if (fresh) p.series.push_back(Series{name, {}, {}, dashed});
    Series& se = p.series[it->second];
    se.x.push_back(x);
    se.y.push_back(y);
  };
  // A sweep only simulated (`xdc simulate SWEEP.yaml`) plots its simulation whatever
  // `simulated:` says: there is nothing measured to draw.
  const bool measured =
      std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.m.count(spec.y) > 0; });
  // Rows come in point order, so each series' x follows the axis' value order.
  for (auto& r : rows) {
    std::string name = r.schedule;
    for (size_t a = 0; a < s.axes.size(); ++a)
      if (a != xa && s.axes[a].size() > 1 && s.axes[a].name != "schedules")
        name += " " + s.axes[a].name + "=" + s.axes[a].labels[r.at[a]];
    const double x = numeric ? *numeric_value(ax.labels[r.at[xa]]) : static_cast<double>(r.at[xa]);
    if (auto it = r.m.find(spec.y); it != r.m.end()) add(name, false, x, it->second);
    if (spec.simulated || !measured) {
      const std::string sim =
          spec.y == "iteration_s" || spec.y == "slowdown" || spec.y.rfind("bubble.", 0) == 0
              ? "simulated_" + spec.y
              : "";
      if (auto it = r.m.find(sim); !sim.empty() && it != r.m.end())
        add(name + " (sim)", true, x, it->second);
    }
  }
  for (auto& se : p.series) {  // sort by x (values may be listed out of order)
    std::vector<size_t> order(se.x.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return se.x[a] < se.x[b]; });
    Series sorted{se.name, {}, {}, se.dashed};
    for (size_t i : order) sorted.x.push_back(se.x[i]), sorted.y.push_back(se.y[i]);
    se = sorted;
  }
  return p;
}

}  // namespace xdc::sweep
