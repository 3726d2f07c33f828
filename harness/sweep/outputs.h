#pragma once
// What a sweep directory holds besides the points' own directories, rebuilt from the
// points' summary.json files after every point (so a partial sweep is readable):
//   sweep.csv (metrics.h), one SVG per plot (plot.h), index.html (a table of points with
//   their state and figures, the plots inline, links to each point's report.html when it
//   exists, else its summary.json), sweep.yaml (the sweep file as given).
#include <string>
#include <vector>

#include "harness/sweep/metrics.h"

namespace xdc::sweep {

struct PointStatus {
  Point point;
  PointState state = PointState::kMissing;
};

// Returns the rows written to sweep.csv.
std::vector<Row> write_sweep_outputs(const Sweep& s, const std::vector<PointStatus>& points,
                                     const std::string& dir);

std::string index_html(const Sweep& s, const std::vector<PointStatus>& points,
                       const std::vector<Row>& rows, const std::vector<std::string>& svgs,
                       const std::string& dir);

}  // namespace xdc::sweep
