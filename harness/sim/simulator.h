#pragma once
// Discrete-event simulator: runs a Schedule's per-rank action lists through the
// dependency engine (workloads/schedule/engine.h, the rules the validator and the planner
// use too), with the cost model's durations and the link model's messages (LinkState,
// link_model.h: latency + bytes / bandwidth FIFO per channel, or OpenMPI over TCP with the
// messages in flight on a channel sharing it). Output: the shared trace
// (workloads/trace), events in execution order. Throws std::invalid_argument naming the stuck ranks
// on a deadlock.
#include <functional>
#include <vector>

#include "harness/sim/cost_model.h"
#include "harness/sim/link_model.h"
#include "workloads/schedule/engine.h"
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
  // TCP connections as the previous iteration left them (LinkState::history, on this
  // iteration's clock; empty: warm, just used); `tcp_after`, when set, receives their state
  // at the end of this one (on its clock: the caller shifts it to the next's).
  std::vector<TcpConn> tcp_history;
  std::vector<TcpConn>* tcp_after = nullptr;
  std::function<std::vector<int64_t>(const std::vector<int64_t>& enter)> grad_norm;
  // A SEND's place in the grant order of an exclusive channel (LinkModel::exclusive;
  // smaller first); unset: its ready time (first come, first served).
  std::function<int64_t(int rank, const sched::Action& send)> send_priority;
  // != 0: compute durations drawn with CostModel::noise_factor (this iteration of one band
  // replica); 0: the costs' means.
  uint64_t noise_key = 0;
};

trace::Trace simulate(const sched::Schedule& s, const CostModel& costs, const LinkModel& links,
                      const IterationSetup& it = {});
// The same with the messages timed by `timing` (link_timeline.h's TimedLinks: links that
// change under the run); `links` still names each message's connections in the trace.
trace::Trace simulate(const sched::Schedule& s, const CostModel& costs, const LinkModel& links,
                      const IterationSetup& it, sched::MessageTiming& timing);

}  // namespace xdc::sim
