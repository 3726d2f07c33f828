// CrossPipe's orderings over its delay grid, and GeoPipe-style
// overlap against 1F1B across a 20 ms WAN.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness/sim/experiments.h"

using namespace xdc::sim;

namespace {
// The benchmark's grid (m = 32) without the MILP, which the bench runs for longer.
const GridResult& grid() {
  static const GridResult g = [] {
    GridSetup s;
    s.schedules = {"1f1b", "zbh1", "zbv", "interleaved", "overlap", "crosspipe-greedy"};
    return crosspipe_grid(s);
  }();
  return g;
}
// A small grid (m = 8) where CBC finishes in a few seconds.
const GridResult& small_grid() {
  static const GridResult g = [] {
    GridSetup s;
    s.microbatches = 8;
    s.milp_seconds = 2;
    s.schedules = {"crosspipe-greedy", "optimal"};
    return crosspipe_grid(s);
  }();
  return g;
}
const GridRow& row(const std::string& name, const GridResult& g = grid()) {
  for (const auto& r : g.rows)
    if (r.schedule == name) return r;
  throw std::runtime_error("no row " + name);
}
}  // namespace

// Against the schedules of CrossPipe's Table 5 (1F1B, ZB-H1, ZB-V, CrossPipe). Interleaved
// 1F1B, not in that table, is slower than the authors' ZB-V at (2, 2) in our model
// (8.09 vs 7.86 T_F per microbatch).
TEST(CrossPipeGrid, ZbvBestWithoutDelayAndWorstWithBoth) {
  for (const auto& r : grid().rows) {
    if (r.schedule == "zbv" || r.schedule == "interleaved") continue;
    EXPECT_LT(row("zbv").time_per_mb[0], r.time_per_mb[0]) << r.schedule;
    EXPECT_GT(row("zbv").time_per_mb[3], r.time_per_mb[3]) << r.schedule;
  }
}

TEST(CrossPipeGrid, GreedyBeatsOneFOneBUnderDelay) {
  EXPECT_LE(row("crosspipe-greedy").time_per_mb[3], 0.7 * row("1f1b").time_per_mb[3]);
  // With zero delay it matches ZB-H1.
  EXPECT_NEAR(row("crosspipe-greedy").time_per_mb[0], row("zbh1").time_per_mb[0], 1e-9);
}

TEST(CrossPipeGrid, OptimalNeverWorseThanGreedy) {
  const auto& g = small_grid();
  for (int k = 0; k < 4; ++k)
    EXPECT_LE(row("optimal", g).time_per_mb[k], row("crosspipe-greedy", g).time_per_mb[k] + 1e-9)
        << k;
  for (const auto& info : row("optimal", g).info) {
    bool gap = false;
    for (const auto& [k, v] : info) gap = gap || k == "milp_gap";
    EXPECT_TRUE(gap);
  }
}

TEST(CrossPipeGrid, SameMemoryCapForTheCapAwareSchedules) {
  for (const char* name : {"1f1b", "zbh1", "zbv", "overlap", "crosspipe-greedy"})
    for (double peak : row(name).peak_activations) EXPECT_LE(peak, 8) << name;
}

TEST(Overlap, HalvesTheBubbleOfOneFOneBAcrossTheWan) {
  const auto rows = overlap_case();
  ASSERT_EQ(rows.size(), 2u);
  const auto& base = rows[0];
  const auto& ov = rows[1];
  EXPECT_EQ(base.schedule, "1f1b");
  EXPECT_LE(ov.bubble.zerobubble, 0.5 * base.bubble.zerobubble);
  EXPECT_LE(ov.bubble.crosspipe, 0.5 * base.bubble.crosspipe);
  EXPECT_LE(ov.bubble.megatron, 0.5 * base.bubble.megatron);
  EXPECT_LT(ov.iteration_ms, base.iteration_ms);
  EXPECT_LE(ov.peak_activations, 4 + 2);
}
