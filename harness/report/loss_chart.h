#pragma once
// Training loss per measured iteration, one line per schedule, as SVG. Missing values
// (NaN) break a line rather than drawing it through zero: each unbroken run of values is
// one <polyline class="loss..."> (tests count them), a lone value a dot. The y axis spans
// the data with round ticks; each series has its own colour and dash, so that identical
// curves (same seed) still show in the key.
#include <string>
#include <vector>

namespace xdc::report {

struct LossSeries {
  std::string name;            // schedule (escaped when drawn)
  std::vector<double> values;  // per iteration
};

// The colour of series i, shared with the page's other per-schedule marks.
std::string series_colour(size_t i);

// "" when no series holds a finite value.
std::string loss_chart_svg(const std::vector<LossSeries>& series, double width_px = 720);

}  // namespace xdc::report
