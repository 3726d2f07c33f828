// paper_utilisation against Table 4 of Streaming DiLoCo (arXiv 2501.18512): hand-computed
// timelines of tiny models, CU rising with bandwidth, the DiLoCo fit behind paper_models(), and
// every cell of the table (printed, paper next to ours).
#include "harness/sim/paper_utilisation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace xdc::sim {
namespace {

// Parameters whose reduction of one layer takes `layer_s` over 1 Gbit/s in bf16.
double params_for(int layers, double layer_s) {
  return layer_s * 1e9 * layers / 16;
}

const PaperModel& model_named(const std::string& name) {
  for (const PaperModel& m : paper_models()) {
    if (m.name == name) return m;
  }
  throw std::invalid_argument("no paper model " + name);
}

TEST(PaperUtilisation, DataParallelTwoLayersByHand) {
  // 2 layers, 5 nodes of 0.1 s: forward 0 and 1 end at 0.2; layer 1's gradients at 0.4 (its
  // activation gradient first), layer 0's at 0.5. Reductions of 0.15 s: layer 1 0.4-0.55,
  // layer 0 0.55-0.7, so the next forward of layer 0 starts at 0.7: CU = 0.5 / 0.7.
  const PaperModel m{"tiny", 2, 0.5, params_for(2, 0.15)};
  EXPECT_NEAR(paper_utilisation(m, PaperMethod::kDataParallel, 1.0), 0.5 / 0.7, 1e-9);
  // Same sync once per 100 steps: 0.2 s exposed per 50 s of compute.
  EXPECT_NEAR(paper_utilisation(m, PaperMethod::kDiloco, 1.0), 50.0 / 50.2, 1e-9);
  // At 8 Gbit/s a layer takes 18.75 ms, hidden but for layer 0's, which starts at 0.5.
  EXPECT_NEAR(paper_utilisation(m, PaperMethod::kDataParallel, 8.0), 0.5 / 0.51875, 1e-9);
}

TEST(PaperUtilisation, StreamingOneFragmentByHand) {
  // 3 layers = 1 fragment, synced on step 49 of each 100; 8 nodes of 0.1 s. Gradients of
  // layers 2, 1, 0 at 0.5, 0.7, 0.8; reductions of 0.5 s run 0.5-1.0, 1.0-1.5, 1.5-2.0.
  const PaperModel m{"tiny", 3, 0.8, params_for(3, 0.5)};
  // Not overlapped: the next step's forward of layer 0 waits from 0.8 to 2.0.
  EXPECT_NEAR(paper_utilisation(m, PaperMethod::kStreaming, 1.0), 80.0 / 81.2, 1e-9);
  // Overlapped by one step: the step after next starts at 1.6 and waits until 2.0.
  EXPECT_NEAR(paper_utilisation(m, PaperMethod::kStreamingOverlapped, 1.0), 80.0 / 80.4, 1e-9);
  // FP4 sends a quarter of the bits: 0.125 s each, all done by 0.95, within the next step.
  EXPECT_NEAR(paper_utilisation(m, PaperMethod::kStreamingOverlappedFp4, 1.0), 1.0, 1e-9);
  // Not overlapped at 0.3 s a layer: 0.5-0.8, 0.8-1.1, 1.1-1.4; layer 0 waits from 0.8 to 1.4,
  // and layer 1, needed at 1.5, is there.
  const PaperModel faster{"tiny", 3, 0.8, params_for(3, 0.3)};
  EXPECT_NEAR(paper_utilisation(faster, PaperMethod::kStreaming, 1.0), 80.0 / 80.6, 1e-9);
}

TEST(PaperUtilisation, StreamingNeedsWholeFragments) {
  const PaperModel m{"odd", 4, 1.0, 1e6};
  EXPECT_THROW(paper_utilisation(m, PaperMethod::kStreaming, 1.0), std::invalid_argument);
  EXPECT_GT(paper_utilisation(m, PaperMethod::kDiloco, 1.0), 0.0);
}

TEST(PaperUtilisation, RisesWithBandwidth) {
  for (const PaperModel& m : paper_models()) {
    for (const PaperRow& row : paper_table4()) {
      if (row.model != m.name) continue;
      double last = 0;
      for (double g : paper_bandwidth_grid()) {
        const double cu = paper_utilisation(m, row.method, g);
        EXPECT_GE(cu, last) << m.name << " " << paper_method_name(row.method) << " at " << g;
        EXPECT_LE(cu, 1.0 + 1e-12);
        last = cu;
      }
    }
  }
}

TEST(PaperUtilisation, ParamsAreTheDilocoFit) {
  for (const PaperRow& row : paper_table4()) {
    if (row.method != PaperMethod::kDiloco) continue;
    const PaperModel& m = model_named(row.model);
    const double fit = paper_fit_params(m.layers, m.step_s, row.gbit_per_s);
    std::printf("%-5s fitted params %.4g (paper_models: %.4g)\n", m.name.c_str(), fit, m.params);
    EXPECT_NEAR(m.params / fit, 1.0, 0.01) << m.name;
  }
}

// How far a cell may land from the paper's: 20%, with two exceptions.
double bound(const PaperRow& row, size_t cell) {
  // The one DiLoCo or Streaming cell beyond 20%: our threshold is 0.30 Gbit/s against the
  // paper's 0.4. That row's cells (0.4, 0.9, 3.0) are not on the grid of the other rows, so it
  // came from another sweep; reaching 0.31 would take 0.87e9 parameters, above every count
  // that fits the 1B DiLoCo row (0.83e9 to 0.86e9).
  if (row.model == "1B" && row.method == PaperMethod::kStreamingOverlappedFp4 && cell == 0) {
    return 0.25;
  }
  // Data-parallel may land one grid step (20.7%) off: 1B at 80% has its threshold 0.1% above
  // a grid point, and does.
  return row.method == PaperMethod::kDataParallel ? 0.21 : 0.20;
}

TEST(PaperUtilisation, Table4) {
  const std::vector<double>& grid = paper_bandwidth_grid();
  int cells = 0, within = 0, on_grid_point = 0, dp_cells = 0, dp_within = 0;
  std::printf("%-5s %-40s %5s %8s %8s %8s %7s\n", "model", "method", "CU", "paper", "ours", "exact",
              "error");
  for (const PaperRow& row : paper_table4()) {
    const PaperModel& m = model_named(row.model);
    for (size_t cell = 0; cell < kPaperCu.size(); ++cell) {
      const double paper = row.gbit_per_s[cell];
      const double ours = paper_bandwidth_for(m, row.method, kPaperCu[cell]);
      const double exact = paper_bandwidth_threshold(m, row.method, kPaperCu[cell]);
      const double error = ours / paper - 1;
      std::printf("%-5s %-40s %4.0f%% %8.2f %8.2f %8.3f %+6.1f%%\n", m.name.c_str(),
                  paper_method_name(row.method), 100 * kPaperCu[cell], paper, ours, exact,
                  100 * error);
      const bool dp = row.method == PaperMethod::kDataParallel;
      (dp ? dp_cells : cells) += 1;
      (dp ? dp_within : within) += std::abs(error) <= 0.20;
      double nearest = grid[0];
      for (double g : grid) {
        if (std::abs(std::log(g / paper)) < std::abs(std::log(nearest / paper))) nearest = g;
      }
      on_grid_point += ours == nearest && !dp;
      EXPECT_LE(std::abs(error), bound(row, cell))
          << m.name << " " << paper_method_name(row.method) << " CU " << kPaperCu[cell];
    }
  }
  std::printf(
      "DiLoCo and Streaming: %d of %d cells within 20%% of the paper's, %d on the grid point "
      "nearest it; Data-Parallel: %d of %d within 20%%\n",
      within, cells, on_grid_point, dp_within, dp_cells);
}

}  // namespace
}  // namespace xdc::sim
