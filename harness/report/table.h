#pragma once
// The report's tables as HTML: the comparison of schedules (the measured mean with its 95%
// confidence interval over repeats, p50 / p95, the simulator's prediction with its band,
// measured / simulated and whether they agree, the three bubble ratios under the terminal
// table's names and units (trace::kBubbleLegend), tokens/s, MFU) and the link check
// (configured vs measured per WAN direction). Columns with no value in any row are left
// out, so a simulation-only directory gets a table of predictions. The fastest mean and
// the fastest prediction are bold. All text escaped.
#include <nlohmann/json.hpp>
#include <string>

#include "harness/report/results_dir.h"

namespace xdc::report {

std::string comparison_table_html(const RunData& d);

// Waiting time per iteration by cause (columns), per schedule (rows); "" when no schedule
// recorded any.
std::string waits_table_html(const RunData& d);

// `check` in the `xdc check --json` form: {"backend", "links": [...]}.
std::string link_table_html(const nlohmann::json& check);

}  // namespace xdc::report
