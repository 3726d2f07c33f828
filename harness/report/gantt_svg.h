#pragma once
// The timeline of one iteration as SVG: one row per rank, time to the right.
// Each row has a compute lane (F blue, B green, W yellow, BW dark green, OPT grey; a
// rank's second, fourth... chunk drawn lighter) over two thin communication lanes (SEND
// red: the message on the wire, and ALLREDUCE purple; below them RECV pink: the rank
// waited for data). The row's background from 0 to the iteration's end is the idle
// colour, so bubbles show as gaps. Every compute event is exactly one
// <rect class="blk KIND..."> (tests count them); a block wide enough for its text carries
// its microbatch number. Sizes scale with the number of ranks (row height 30 px down to
// 8 px) and stay drawable at 64 ranks x 512 microbatches (labels and tooltips are dropped
// where they would not fit or would bloat; a "dense" timeline, under 3 px per block,
// draws blocks without white borders).
#include <cstdint>
#include <string>

#include "workloads/trace/trace.h"

namespace xdc::report {

struct GanttOptions {
  int64_t span_ns = 0;         // length of the time axis; 0 = the trace's own (pass the
                               // longer of two traces to draw them on one scale)
  double width_px = 1100;      // of the viewBox; the page scales it to its column
  std::string label;           // the picture's accessible name
  size_t max_tooltips = 4000;  // events beyond this many get no <title>
};

// Times are taken as they are (from_zero() them first). Empty trace -> a note, no SVG.
std::string gantt_svg(const trace::Trace& t, const GanttOptions& o);

// The colour key shared by every timeline on the page (HTML).
std::string gantt_legend_html();

}  // namespace xdc::report
