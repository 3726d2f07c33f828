#pragma once
// What the experiment tests start from: a good experiment file's text (one pipeline over
// two DCs; two replicas for the dp_sync cases), the label its positions are read under
// (inside tests/run, so that relative paths resolve as for a file there), and `with`, the
// good text with one piece replaced.
#include <gtest/gtest.h>

#include <string>

namespace xdc::test {

// Label inside tests/run so that relative paths resolve as for a file there.
inline const std::string kLabel = "tests/run/bad.yaml";

inline const std::string kGood = R"(name: t
topology: ../../topologies/two-dc.yaml
compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}
pipeline: {stages: 4, placement: [east-h1, east-h2, w1, w2]}
microbatches: 8
iterations: 2
schedules: [1f1b, crosspipe-greedy]
)";

// Two replicas of a 2-stage pipeline, one per DC: what dp_sync's cases start from.
inline const std::string kGoodDp = R"(name: t
topology: ../../topologies/two-dc.yaml
compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}
pipeline: {stages: 2, data_parallel: 2, placement: [[east-h1, east-h2], [w1, w2]]}
microbatches: 8
iterations: 4
warmup: 0
schedules: [1f1b]
)";

inline std::string with(const std::string& from, const std::string& to) {
  std::string s = kGood;
  auto i = s.find(from);
  EXPECT_NE(i, std::string::npos) << from;
  return s.replace(i, from.size(), to);
}

}  // namespace xdc::test
