#pragma once
// Discrete-event simulator: runs a Schedule's per-rank action lists through the
// dependency engine (workloads/schedule/engine.h, the rules the validator and the planner
// use too), with the cost model's durations and the link model's messages (FIFO per
// channel, latency + bytes / bandwidth, link_model.h; a channel shared by several rank
// pairs serves them in send order). Output: the shared trace (workloads/trace), events in
// execution order. Throws std::invalid_argument naming the stuck ranks on a deadlock.
#include "harness/sim/cost_model.h"
#include "harness/sim/link_model.h"
#include "workloads/schedule/schedule.h"
#include "workloads/trace/trace.h"

namespace xdc::sim {

trace::Trace simulate(const sched::Schedule& s, const CostModel& costs, const LinkModel& links);

}  // namespace xdc::sim
