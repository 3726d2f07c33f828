#pragma once
// The report's tables as HTML: the comparison of schedules (iteration time mean/p50/p95
// measured, the simulator's prediction and measured/simulated, the three bubble ratios
// each named, tokens/s, MFU with the device peak it assumes) and the link check
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
