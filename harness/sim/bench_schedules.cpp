// Benchmark program (scripts/bench_schedules.sh): the CrossPipe delay grid, the formula
// checks, the GeoPipe-style overlap case and the simulator's speed, printed and written
// as JSON. Usage: xdc-bench-schedules OUT.json [--milp-seconds S] [--microbatches M]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/sim/experiments.h"
#include "harness/sim/simulator.h"
#include "harness/trace/analysis.h"
#include "workloads/schedule/generators.h"

using namespace xdc;

namespace {

// The parts, in the order they run: each prints its figures and adds them to doc.

// 1. Formula checks at zero delay.
void print_formula_checks(nlohmann::json& doc) {
  std::printf("== formula checks (p=4, m=8, zero delay) ==\n");
  auto checks = sim::formula_checks();
  for (const auto& c : checks) {
    std::printf("  %-44s expected %8.4f  simulated %8.4f  %s\n", c.name.c_str(), c.expected,
                c.simulated, std::abs(c.expected - c.simulated) < 1e-3 ? "ok" : "MISMATCH");
    doc["formula_checks"].push_back(
        {{"name", c.name}, {"expected", c.expected}, {"simulated", c.simulated}});
  }
}

// 2. CrossPipe grid.
void print_crosspipe_grid(nlohmann::json& doc, int microbatches, double milp_seconds) {
  sim::GridSetup g;
  g.microbatches = microbatches;
  g.milp_seconds = milp_seconds;
  std::printf(
      "\n== CrossPipe grid: 8 stages, 2 DCs split 4|4, m=%d, T_F=T_B=T_W, cap %d "
      "microbatches; time per microbatch in T_F ==\n",
      g.microbatches, g.ranks);
  auto grid = sim::crosspipe_grid(g);
  const char* delays[] = {"0,0", "2,0.25", "0.25,2", "2,2"};
  std::printf("  %-18s %9s %9s %9s %9s   | ratio to 1f1b          | paper (Table 5, M70)\n",
              "schedule", "(0,0)", "(2,.25)", "(.25,2)", "(2,2)");
  for (const auto& row : grid.rows) {
    std::printf("  %-18s", row.schedule.c_str());
    for (int k = 0; k < 4; ++k) std::printf(" %9.3f", row.time_per_mb[k]);
    std::printf("   |");
    for (int k = 0; k < 4; ++k)
      std::printf(" %.2f", row.time_per_mb[k] / grid.rows[0].time_per_mb[k]);
    std::printf("  |");
    for (double p : sim::paper_table5_ratio(row.schedule)) std::printf(" %.2f", p);
    std::printf("\n");
    for (int k = 0; k < 4; ++k) doc["crosspipe_grid"][row.schedule][delays[k]] = row.time_per_mb[k];
    auto& detail = doc["crosspipe_grid_detail"][row.schedule];
    detail["peak_activations"] = row.peak_activations;
    for (size_t k = 0; k < row.info.size(); ++k)
      for (const auto& [key, value] : row.info[k]) detail["info"][delays[k]][key] = value;
  }
  for (const auto& row : grid.rows)
    for (size_t k = 0; k < row.info.size(); ++k) {
      std::string line;
      for (const auto& [key, value] : row.info[k]) line += " " + key + "=" + value;
      if (!line.empty())
        std::printf("  %s at (%s):%s\n", row.schedule.c_str(), delays[k], line.c_str());
    }
  doc["crosspipe_grid_units"] = "T_F per microbatch (T_F = 1 ms in the simulation)";
  doc["crosspipe_paper_table5_s"] = {{"1f1b", {0.151, 0.242, 0.241, 0.321}},
                                     {"zbh1", {0.133, 0.229, 0.230, 0.309}},
                                     {"zbv", {0.118, 0.314, 0.315, 0.473}},
                                     {"crossud", {0.137, 0.153, 0.177, 0.196}}};
}

// 3. Overlap vs 1F1B across a 20 ms WAN.
void print_overlap_case(nlohmann::json& doc) {
  auto ov = sim::overlap_case();
  std::printf(
      "\n== overlap vs 1F1B: 2 DCs x 2 stages, 20 ms one-way, 10 gbit, 10 MB, "
      "T_F=20ms T_B=40ms, m=8, cap 1F1B peak + 2 ==\n");
  for (const auto& r : ov) {
    std::printf(
        "  %-8s iteration %7.1f ms  bubble megatron %.3f zerobubble %.3f crosspipe %.3f  "
        "peak %g\n",
        r.schedule.c_str(), r.iteration_ms, r.bubble.megatron, r.bubble.zerobubble,
        r.bubble.crosspipe, r.peak_activations);
    doc["overlap_case"][r.schedule] = {{"iteration_ms", r.iteration_ms},
                                       {"bubble_megatron", r.bubble.megatron},
                                       {"bubble_zerobubble", r.bubble.zerobubble},
                                       {"bubble_crosspipe", r.bubble.crosspipe},
                                       {"peak_activations", r.peak_activations}};
  }
  if (ov.size() == 2) {
    auto cut = [](double base, double x) { return base > 0 ? 100 * (1 - x / base) : 0; };
    const auto &b = ov[0].bubble, &o = ov[1].bubble;
    std::printf(
        "  overlap's bubble is lower by %.1f%% (megatron), %.1f%% (zerobubble), %.1f%% "
        "(crosspipe); iteration %.1f%% shorter\n",
        cut(b.megatron, o.megatron), cut(b.zerobubble, o.zerobubble), cut(b.crosspipe, o.crosspipe),
        cut(ov[0].iteration_ms, ov[1].iteration_ms));
  }
}

// 4. optimal (MILP) vs crosspipe-greedy, makespans by evaluate_order on each order.
void print_optimal_vs_greedy(nlohmann::json& doc) {
  std::printf(
      "\n== optimal (CBC MILP, warm-started from the greedy) vs crosspipe-greedy: makespan by "
      "evaluate_order; simulated iteration in ms at 1 unit = 1 ms ==\n"
      "  documented instance: p=3, m=6, T_F=T_B=T_W=1 but stage 0 T_W=3, DCs {0}|{1,2}, WAN "
      "(latency 2, transfer 0.5), cap 3\n"
      "  random class: p 2..4, m 2..6, per-stage T_F,T_B,T_W ~ U[0.5,2], per-direction latency "
      "~ U[0,3], transfer ~ U[0.25,1], cap p or p+1\n");
  std::vector<sim::OptimalRow> rows = {
      sim::optimal_vs_greedy("documented", sim::optimal_documented_instance())};
  for (unsigned seed = 1; seed <= 20; ++seed)
    rows.push_back(sim::optimal_vs_greedy("random seed " + std::to_string(seed),
                                          sim::optimal_random_instance(seed)));
  int wins = 0;
  double gain_sum = 0, gain_max = 0;
  for (const auto& r : rows) {
    const double gain = 100 * (1 - r.optimal / r.greedy);
    std::printf(
        "  %-15s p=%d m=%d  greedy %8.3f  optimal %8.3f  gain %5.2f%%  (simulated %8.3f -> "
        "%8.3f ms)  %s%s\n",
        r.instance.c_str(), r.ranks, r.microbatches, r.greedy, r.optimal, gain, r.greedy_sim,
        r.optimal_sim, r.result.c_str(), r.valid ? "" : "  INVALID");
    if (r.instance != "documented") {
      wins += r.optimal < r.greedy - 1e-9;
      gain_sum += gain;
      gain_max = std::max(gain_max, gain);
    }
    doc["optimal_vs_greedy"].push_back({{"instance", r.instance},
                                        {"ranks", r.ranks},
                                        {"microbatches", r.microbatches},
                                        {"greedy_makespan", r.greedy},
                                        {"optimal_makespan", r.optimal},
                                        {"greedy_sim_ms", r.greedy_sim},
                                        {"optimal_sim_ms", r.optimal_sim},
                                        {"result", r.result},
                                        {"valid", r.valid}});
  }
  std::printf(
      "  random class: optimal strictly shorter on %d of %zu, mean gain %.2f%%, max %.2f%%\n", wins,
      rows.size() - 1, gain_sum / (rows.size() - 1), gain_max);
}

// 5. Simulator speed.
void print_simulator_speed(nlohmann::json& doc) {
  auto t0 = std::chrono::steady_clock::now();
  const double sim_s = sim::time_large_1f1b(64, 512);
  auto t1 = std::chrono::steady_clock::now();
  std::printf(
      "\n== simulator speed ==\n  64 stages x 512 microbatches 1F1B: %.4f s "
      "(simulate only; generate + simulate + analyse %.4f s)\n",
      sim_s, std::chrono::duration<double>(t1 - t0).count());
  doc["sim_64x512_s"] = sim_s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path = "results/bench/schedules.json";
  double milp_seconds = 20;
  int microbatches = 32;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--milp-seconds" && i + 1 < argc)
      milp_seconds = std::stod(argv[++i]);
    else if (a == "--microbatches" && i + 1 < argc)
      microbatches = std::stoi(argv[++i]);
    else
      out_path = a;
  }
  nlohmann::json doc;
  print_formula_checks(doc);
  print_crosspipe_grid(doc, microbatches, milp_seconds);
  print_overlap_case(doc);
  print_optimal_vs_greedy(doc);
  print_simulator_speed(doc);

  std::ofstream out(out_path);
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", out_path.c_str());
    return 1;
  }
  out << doc.dump(2) << "\n";
  std::printf("\nwrote %s\n", out_path.c_str());
  return 0;
}
