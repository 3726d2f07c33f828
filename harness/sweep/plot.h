#pragma once
// Line plots as self-contained SVG (no scripts, fonts or fetches): one <polyline> per
// series with a <circle> per point, axes with ticks, a legend. A numeric x axis is laid
// out to scale; a categorical one (labels) evenly. Dashed series (simulated figures)
// share the colour of the series named the same without " (sim)".
#include <string>
#include <vector>

#include "harness/sweep/metrics.h"

namespace xdc::sweep {

struct Series {
  std::string name;
  std::vector<double> x, y;
  bool dashed = false;
};

struct Plot {
  std::string title, x_label, y_label;
  std::vector<std::string> categories;  // non-empty: x values are indices into these
  std::vector<Series> series;
};

std::string svg_line_plot(const Plot& p);

// The plot `spec` of a sweep's rows: one series per schedule and combination of the other
// axes' values (axes with a single value are left out of the name).
Plot sweep_plot(const Sweep& s, const PlotSpec& spec, std::vector<Row> rows);
// "iteration_s-vs-wan.delay.svg"
std::string plot_file_name(const PlotSpec& spec);

}  // namespace xdc::sweep
