#pragma once
// Chrome / Perfetto trace JSON of a trace (workloads/trace/trace.h): one process per
// rank; tid 0 compute, then one tid per (direction, peer): "send -> r", "recv <- r";
// flow arrows from each SEND to its RECV.
#include <string>

#include "workloads/trace/trace.h"

namespace xdc::trace {

std::string to_chrome_json(const Trace& t);

}  // namespace xdc::trace
