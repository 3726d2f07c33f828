#pragma once
// How a run's progress reads on a terminal: one line per schedule, redrawn as its
// iterations end. The runner reports IterationProgress (runner.h); the CLI draws it.
#include <string>

#include "harness/run/runner.h"

namespace xdc::run {

// "1m05s", "2h03m"; "--" for a negative (unknown) time.
std::string hms(double seconds);

// "[1f1b] [##########..........] 12/24 iterations  loss 3.112  0m41s  ETA 0m27s": the ETA
// from the pace so far (every iteration taken as long as the mean of those ended).
std::string iteration_line(const IterationProgress& p, int bar_width = 20);

}  // namespace xdc::run
