#pragma once
// A latency-aware list scheduler (CrossPipe's greedy, also the zero-bubble heuristics):
// repeatedly commits, over all ranks, the action that can start earliest. A rank prefers
// warm-up forwards while memory allows, then alternates F and backward, runs W whenever
// nothing else is ready or memory blocks a forward, and drains B before W at the end.
// Messages cost latency + transfer with FIFO per rank pair and direction (the simulator
// also models rank pairs sharing one WAN direction; the planner does not). Output: compute
// order per rank (lower() adds the communication).
#include <vector>

#include "workloads/schedule/params.h"
#include "workloads/schedule/schedule.h"

namespace xdc::sched {

struct PlanModel {
  std::vector<int> stage_rank;
  int microbatches = 0;
  StageCosts costs;                           // per stage
  std::vector<std::vector<LinkDelay>> links;  // [from][to] ranks; empty = zero delay
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

std::vector<std::vector<Action>> greedy_order(const PlanModel& model, const GreedyOptions& o);

// Earliest-start timing of a fixed compute order under the model (sends non-blocking,
// FIFO links). Returns the makespan; start times per rank action when `starts` given.
double evaluate_order(const PlanModel& model, const std::vector<std::vector<Action>>& order,
                      std::vector<std::vector<double>>* starts = nullptr);

}  // namespace xdc::sched
