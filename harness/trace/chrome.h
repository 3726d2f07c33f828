#pragma once
// Chrome / Perfetto trace JSON of a trace (workloads/trace/trace.h): one process per
// rank; tid 0 compute, then one tid per (direction, peer): "send -> r", "recv <- r";
// flow arrows from each SEND to its RECV; `markers` (a WAN change applied, a DC's ranks
// killed) as global instant events ("ph": "i", "s": "g", cat "wan").
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/trace/trace.h"

namespace xdc::trace {

struct Marker {
  int64_t t_ns = 0;    // on the trace's clock
  std::string name;    // "link_down east->west"
  std::string source;  // what caused it ("FILE:LINE:COL (at_iteration 5)")
};

std::string to_chrome_json(const Trace& t, const std::vector<Marker>& markers = {});

}  // namespace xdc::trace
