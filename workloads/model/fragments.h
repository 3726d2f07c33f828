#pragma once
// Streaming DiLoCo's fragments (Douillard et al., arXiv 2501.18512): the model's layers
// dealt out in stride, layer l to fragment l % P (the paper's better pattern: a fragment
// spans the depth), the embedding with layer 0 and the final norm and LM head with the
// last layer. Fragment p of every replica is synchronised every H inner steps, the first
// time after (p * H) / P steps (fragment_due). One rule for the worker (which
// synchronises a stage's runs of each fragment), the plan (the bytes each sync carries)
// and the simulator.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "workloads/model/config.h"

namespace xdc::model {

struct ParamTensor;

// The fragment of a tensor of the model by its name ("layers.3.wqkv", "embedding",
// "final_norm", "lm_head") among `fragments`.
int tensor_fragment(const ModelConfig& cfg, const std::string& name, int fragments);

// Fragment p's elements of a stage's flat buffer, as [offset, size) runs in buffer order.
std::vector<std::pair<int64_t, int64_t>> fragment_runs(const ModelConfig& cfg,
                                                       const std::vector<ParamTensor>& tensors,
                                                       int fragments, int p);

// Modeled compute has no tensors: a stage of `elements` values holding layers
// [range.begin, range.end) gives fragment p its layers' share (integer, the remainder to
// the stage's last fragment present), in fragment order.
std::vector<int64_t> modeled_fragment_elements(int64_t elements, StageRange range, int fragments);

// Whether fragment p's sync starts after `steps` inner steps (steps >= 1): steps =
// (p * H) / P + k * H for some k >= 0, with the first at H for p = 0.
inline bool fragment_due(int64_t steps, int p, int fragments, int inner_steps) {
  const int64_t offset = static_cast<int64_t>(p) * inner_steps / fragments;
  const int64_t first = offset > 0 ? offset : inner_steps;
  return steps >= first && (steps - offset) % inner_steps == 0;
}

}  // namespace xdc::model
