#pragma once
// Discrete-event simulator: runs a Schedule's per-rank action lists as the executor
// would. A rank runs its actions in order; compute lasts the cost model's time; SEND is
// non-blocking and puts the message on its channel (FIFO, latency + bytes / bandwidth,
// link_model.h); RECV blocks until the message has arrived. Ranks advance in global
// time order, so a channel shared by several rank pairs serves them in send order. Output: the
// shared trace (harness/trace). Throws std::invalid_argument if the schedule deadlocks.
#include <functional>
#include <vector>

#include "harness/sim/cost_model.h"
#include "harness/sim/link_model.h"
#include "workloads/schedule/schedule.h"
#include "workloads/trace/trace.h"

namespace xdc::sim {

// What a rank does in an iteration besides its actions (executor.h; worker_model.h fills
// it): `start_ns`, when each rank starts (empty: all at 0); `grad_norm`, the gradient-norm
// all-reduce: each rank's first OPT waits until the all-reduce that every rank enters at
// its own first OPT has completed on it (grad_norm maps the entry times to completion
// times); unset, or when a rank has no OPT, there is none.
struct IterationSetup {
  std::vector<int64_t> start_ns;
  std::function<std::vector<int64_t>(const std::vector<int64_t>& enter)> grad_norm;
};

trace::Trace simulate(const sched::Schedule& s, const CostModel& costs, const LinkModel& links,
                      const IterationSetup& it = {});

}  // namespace xdc::sim
