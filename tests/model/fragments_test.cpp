// Streaming DiLoCo's fragments (model/fragments.h): layers dealt out in stride, every
// element of a stage in exactly one fragment, and each fragment synchronised every H steps
// from its offset p * H / P.
#include "workloads/model/fragments.h"

#include <gtest/gtest.h>

#include <vector>

#include "workloads/model/stage.h"

using xdc::model::fragment_due;
using xdc::model::ModelConfig;
using xdc::model::StageRange;

TEST(Fragments, LayersAreDealtInStrideWithTheEmbeddingFirstAndTheHeadLast) {
  ModelConfig cfg;
  cfg.layers = 6;
  EXPECT_EQ(xdc::model::tensor_fragment(cfg, "layers.0.wqkv", 3), 0);
  EXPECT_EQ(xdc::model::tensor_fragment(cfg, "layers.4.w2", 3), 1);
  EXPECT_EQ(xdc::model::tensor_fragment(cfg, "layers.5.ln1", 3), 2);
  EXPECT_EQ(xdc::model::tensor_fragment(cfg, "embedding", 3), 0);
  EXPECT_EQ(xdc::model::tensor_fragment(cfg, "final_norm", 4), 1);  // layer 5's
  EXPECT_EQ(xdc::model::tensor_fragment(cfg, "lm_head", 4), 1);
}

TEST(Fragments, EveryElementOfAStageIsInExactlyOneFragment) {
  const ModelConfig cfg = ModelConfig::preset("tiny");
  for (const StageRange range : {StageRange{0, cfg.layers}, StageRange{0, 1}, StageRange{1, 2}}) {
    const auto tensors = xdc::model::stage_tensors(cfg, range);
    int64_t size = 0;
    for (const auto& t : tensors) size += t.size;
    std::vector<int> hits(static_cast<size_t>(size), 0);
    for (int p = 0; p < 2; ++p)
      for (auto [off, len] : xdc::model::fragment_runs(cfg, tensors, 2, p))
        for (int64_t i = off; i < off + len; ++i) ++hits[static_cast<size_t>(i)];
    for (int64_t i = 0; i < size; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << i;
  }
  // One fragment: the whole stage in one run.
  const auto all = xdc::model::stage_tensors(cfg, {0, cfg.layers});
  const auto runs = xdc::model::fragment_runs(cfg, all, 1, 0);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].first, 0);
  EXPECT_EQ(runs[0].second, all.back().offset + all.back().size);
}

TEST(Fragments, ModeledStagesShareTheirValuesByTheirLayers) {
  // Layers 2..4 of a 3-fragment model: fragments 2, 0 and 1 hold one layer each.
  EXPECT_EQ(xdc::model::modeled_fragment_elements(300, StageRange{2, 5}, 3),
            (std::vector<int64_t>{100, 100, 100}));
  // Layers 0..2 with 2 fragments: fragment 0 holds layers 0 and 2.
  EXPECT_EQ(xdc::model::modeled_fragment_elements(301, StageRange{0, 3}, 2),
            (std::vector<int64_t>{200, 101}));
  // A stage holding none of fragment 3.
  EXPECT_EQ(xdc::model::modeled_fragment_elements(10, StageRange{0, 2}, 4),
            (std::vector<int64_t>{5, 5, 0, 0}));
}

TEST(Fragments, EachFragmentIsDueEveryHStepsFromItsOffset) {
  // H = 30, P = 3: fragment 0 after steps 30, 60; fragment 1 after 10, 40; 2 after 20, 50.
  std::vector<std::vector<int>> due(3);
  for (int steps = 1; steps <= 60; ++steps)
    for (int p = 0; p < 3; ++p)
      if (fragment_due(steps, p, 3, 30)) due[p].push_back(steps);
  EXPECT_EQ(due[0], (std::vector<int>{30, 60}));
  EXPECT_EQ(due[1], (std::vector<int>{10, 40}));
  EXPECT_EQ(due[2], (std::vector<int>{20, 50}));
  // One fragment is DiLoCo: every H-th step.
  for (int steps = 1; steps <= 9; ++steps) EXPECT_EQ(fragment_due(steps, 0, 1, 3), steps % 3 == 0);
}
