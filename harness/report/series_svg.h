#pragma once
// A run over time, as SVG: one panel each for the iteration time (measured, and
// predicted with the same WAN changes, dashed), the bytes each iteration put on the WAN,
// and the ranks' waits by cause, on one time axis (s from measured iteration 0's start);
// every WAN change applied is a vertical mark across the panels (red: a cut, green: a
// restore, blue: a change of parameters), its tooltip naming what and who caused it.
#include <string>

#include "harness/report/results_dir.h"

namespace xdc::report {

// "" when the schedule has no series (ScheduleData::start_s empty).
std::string run_series_svg(const ScheduleData& s, double width_px = 720);

}  // namespace xdc::report
