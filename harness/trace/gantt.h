#pragma once
// Text Gantt chart of a trace's compute, one row per rank, one column per `quantum_ns`
// (0 = the gcd of the compute durations). A cell holds the action and microbatch
// ("F3", "B3", "W3"; a full backward is "B3" over its whole length, "--" continues it);
// "." is idle. With more than one chunk per rank, odd chunks are lower case ("f3"). A
// co-executed pair (schedule.h) is its F's cell, then its partner's ("F5 b2 --").
#include <cstdint>
#include <string>

#include "workloads/trace/trace.h"

namespace xdc::trace {

std::string text_gantt(const Trace& t, int chunks = 1, int64_t quantum_ns = 0,
                       int max_columns = 400);

}  // namespace xdc::trace
