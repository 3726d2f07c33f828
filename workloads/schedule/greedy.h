#pragma once
// A latency-aware list scheduler (CrossPipe's greedy, also the zero-bubble heuristics):
// repeatedly commits, over all ranks, the action that can start earliest. A rank prefers
// warm-up forwards while memory allows, then alternates F and backward, runs W whenever
// nothing else is ready or memory blocks a forward, and drains B before W at the end.
// Timing, readiness and messages come from the dependency engine (engine.h), the rules
// the simulator runs: a message costs latency + transfer and queues FIFO on its channel
// (per rank pair and direction, or shared by the pairs that cross one WAN direction).
// Output: compute order per rank (lower() adds the communication).
#include <vector>

#include "workloads/schedule/params.h"
#include "workloads/schedule/schedule.h"

namespace xdc::sched {

struct PlanModel {
  std::vector<int> stage_rank;
  int microbatches = 0;
  StageCosts costs;                           // per stage
  std::vector<std::vector<LinkDelay>> links;  // [from][to] ranks; empty = zero delay
  std::vector<int> channel;  // [from * ranks + to] FIFO ids (Params::channel); empty = per pair
  LinkDelay link(int from, int to) const {
    return from == to || links.empty() ? LinkDelay{} : links[from][to];
  }
};

struct GreedyOptions {
  bool split_backward = true;  // B + W (else BW)
  std::vector<int> cap_units;  // per rank, in stage activations
  // Per rank, most forwards awaiting their backward (F done - B done); empty = no limit.
  // GeoPipe-style overlap sets it from the link round trip.
  std::vector<int> max_inflight;
};

// `planned_makespan`, when given, gets the makespan of the order as the scheduler timed it
// while deciding (the engine's, so equal to evaluate_order of the result).
std::vector<std::vector<Action>> greedy_order(const PlanModel& model, const GreedyOptions& o,
                                              double* planned_makespan = nullptr);

// Timing of a fixed compute order under the model: lower()ed (no optimizer step) and run
// by the engine. Returns the makespan; start times per compute action when `starts` given.
// Throws std::invalid_argument naming the stuck ranks when the order deadlocks.
double evaluate_order(const PlanModel& model, const std::vector<std::vector<Action>>& order,
                      std::vector<std::vector<double>>* starts = nullptr);

}  // namespace xdc::sched
