#pragma once
// The one split of a multi-iteration trace into its iterations, for the run's analysis
// (run/results.h) and the report's drawing (report/results_dir.h) alike.
#include <cstdint>
#include <vector>

#include "workloads/trace/trace.h"

namespace xdc::trace {

// With each rank's own iteration bounds (`starts` / `ends`: [rank][i], as rank<r>.json
// records them, for every rank of the trace): iteration i holds the events that start in
// [start, end) of their rank's iteration i, and a PREFILL in the barrier's wait after it
// (up to the next iteration's start: run/prefill_results.h); as many iterations as every rank has.
// Without bounds: by OPT (an OPT closes its rank's iteration), else one iteration.
std::vector<Trace> split_iterations(const Trace& t, const std::vector<std::vector<int64_t>>& starts,
                                    const std::vector<std::vector<int64_t>>& ends);

}  // namespace xdc::trace
