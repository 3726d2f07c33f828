#include "workloads/model/fragments.h"

#include <stdexcept>

#include "workloads/model/stage.h"

namespace xdc::model {

int tensor_fragment(const ModelConfig& cfg, const std::string& name, int fragments) {
  if (fragments < 1) throw std::invalid_argument("fragments: expected 1 or more");
  const std::string prefix = "layers.";
  if (name.rfind(prefix, 0) == 0) return std::stoi(name.substr(prefix.size())) % fragments;
  if (name == "embedding") return 0;
  return (cfg.layers - 1) % fragments;  // final_norm, lm_head
}

std::vector<std::pair<int64_t, int64_t>> fragment_runs(const ModelConfig& cfg,
                                                       const std::vector<ParamTensor>& tensors,
                                                       int fragments, int p) {
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (const ParamTensor& t : tensors) {
    if (tensor_fragment(cfg, t.name, fragments) != p) continue;
    if (!runs.empty() && runs.back().first + runs.back().second == t.offset)
      runs.back().second += t.size;  // adjacent: one run
    else
      runs.emplace_back(t.offset, t.size);
  }
  return runs;
}

std::vector<int64_t> modeled_fragment_elements(int64_t elements, StageRange range, int fragments) {
  if (fragments < 1) throw std::invalid_argument("fragments: expected 1 or more");
  std::vector<int64_t> layers(fragments, 0);
  const int n = range.end - range.begin;
  if (n <= 0) {
    layers[0] = 1;
  } else {
    for (int l = range.begin; l < range.end; ++l) ++layers[l % fragments];
  }
  const int total = n <= 0 ? 1 : n;
  std::vector<int64_t> out(fragments, 0);
  int64_t given = 0;
  int last = 0;
  for (int p = 0; p < fragments; ++p) {
    out[p] = elements * layers[p] / total;
    given += out[p];
    if (layers[p] > 0) last = p;
  }
  out[last] += elements - given;
  return out;
}

}  // namespace xdc::model
