#pragma once
// The WAN's utilisation over a run of the user's program (run/workload_results.h wan.csv:
// one row per sample per direction), as SVG: Mbit/s per sample interval against seconds
// since the program started, one line per WAN direction, and the program's steps (rank
// 0's, steps.csv) as alternating bands behind them.
#include <string>

namespace xdc::report {

// "" when `wan_csv` has no sample with a rate.
std::string wan_utilisation_svg(const std::string& wan_csv, const std::string& steps_csv,
                                double width_px = 720);

}  // namespace xdc::report
