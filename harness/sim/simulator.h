#pragma once
// Discrete-event simulator: runs a Schedule's per-rank action lists as the executor
// would. A rank runs its actions in order; compute lasts the cost model's time; SEND is
// non-blocking and puts the message on its channel (LinkState::send: FIFO per channel,
// latency + bytes / bandwidth or the TCP model of link_model.h); RECV blocks until the message has
// arrived. Ranks advance in global time order, so a channel shared by several rank pairs serves
// them in send order. Output: the shared trace (harness/trace). Throws std::invalid_argument if the
// schedule deadlocks.
#include "harness/sim/cost_model.h"
#include "harness/sim/link_model.h"
#include "workloads/schedule/schedule.h"
#include "workloads/trace/trace.h"

namespace xdc::sim {

trace::Trace simulate(const sched::Schedule& s, const CostModel& costs, const LinkModel& links);

}  // namespace xdc::sim
