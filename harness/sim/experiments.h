#pragma once
// Reproducible simulated experiments, shared by the benchmark program and the tests so
// that both report the same figures:
//  - formula_checks(): zero-delay bubble ratios and peak activations vs the closed forms;
//  - crosspipe_grid(): CrossPipe's setting (8 stages, 2 DCs split in the middle,
//    T_F = T_B = T_W = 1 ms, delays in units of T_F), time per microbatch per schedule;
//  - overlap_case(): GeoPipe-style overlap vs 1F1B across a 20 ms WAN;
//  - optimal_vs_greedy(): `optimal` (the MILP) against crosspipe-greedy on its documented
//    instance and on random heterogeneous small instances;
//  - time_large_1f1b(): seconds to simulate one big 1F1B iteration.
#include <array>
#include <string>
#include <vector>

#include "harness/sim/cost_model.h"
#include "harness/sim/link_model.h"
#include "harness/trace/analysis.h"
#include "workloads/schedule/params.h"
#include "workloads/schedule/schedule.h"

namespace xdc::sim {

struct FormulaCheck {
  std::string name;
  double expected = 0;
  double simulated = 0;
};
std::vector<FormulaCheck> formula_checks();

struct GridSetup {
  int ranks = 8;
  int split = 4;
  int microbatches = 32;
  double milp_seconds = 30;
  std::vector<std::string> schedules = {
      "1f1b", "zbh1", "zbv", "interleaved", "overlap", "crosspipe-greedy", "optimal"};
};
// (latency, bandwidth-delay) in units of T_F, in CrossPipe's order.
inline constexpr std::array<std::array<double, 2>, 4> kGridDelays = {
    {{0, 0}, {2, 0.25}, {0.25, 2}, {2, 2}}};
struct GridRow {
  std::string schedule;
  std::array<double, 4> time_per_mb{};   // in T_F
  std::vector<double> peak_activations;  // per delay: max over ranks, microbatches
  // Per delay: the generator's notes (Schedule::info), e.g. the MILP's status and gap.
  std::vector<std::vector<std::pair<std::string, std::string>>> info;
};
struct GridResult {
  std::vector<GridRow> rows;  // in setup order (1f1b first)
};
GridResult crosspipe_grid(const GridSetup& g);
// CrossPipe's Table 5 (M70) as ratios to its 1F1B; empty for schedules it lacks.
// crosspipe-greedy is compared with CrossUD.
std::vector<double> paper_table5_ratio(const std::string& schedule);

struct OverlapRow {
  std::string schedule;
  double iteration_ms = 0;
  trace::BubbleRatios bubble;
  double peak_activations = 0;
};
std::vector<OverlapRow> overlap_case();  // rows: 1f1b, overlap

// `optimal` vs crosspipe-greedy, both makespans by sched::evaluate_order on the returned
// orders (not the MILP's objective), and the simulator's iteration time of each.
// The documented instance: p = 3, m = 6, T_F = T_B = T_W = 1 except stage 0's T_W = 3,
// two DCs {0} | {1, 2} with a (latency 2, transfer 0.5) WAN both ways, cap 3 microbatches.
// The random class (seed k): p in 2..4, m in 2..6, per-stage T_F, T_B, T_W ~ U[0.5, 2],
// every link direction its own latency ~ U[0, 3] and transfer ~ U[0.25, 1], cap p or p+1.
sched::Params optimal_documented_instance();
sched::Params optimal_random_instance(unsigned seed);
struct OptimalRow {
  std::string instance;
  int ranks = 0, microbatches = 0;
  double greedy = 0, optimal = 0;          // evaluate_order makespans
  double greedy_sim = 0, optimal_sim = 0;  // simulated iteration, same units
  bool valid = false;                      // validate() under the cap
  std::string result;                      // the schedule's info "result"
};
OptimalRow optimal_vs_greedy(const std::string& instance, const sched::Params& p);

double time_large_1f1b(int ranks, int microbatches);  // simulate() seconds

}  // namespace xdc::sim
