#include "workloads/model/config.h"

#include <yaml-cpp/yaml.h>

#include <stdexcept>

#include "common/input_error.h"

namespace xdc::model {

int64_t ModelConfig::block_params() const {
  const int64_t d = dim;
  return 2 * d + int64_t(qkv_dim()) * d + d * d + 2 * int64_t(ffn) * d + int64_t(ffn) * d;
}

int64_t ModelConfig::param_count() const {
  return int64_t(vocab) * dim + layers * block_params() + dim + int64_t(vocab) * dim;
}

int64_t ModelConfig::non_embedding_params() const {
  return param_count() - int64_t(vocab) * dim;
}

double ModelConfig::train_flops_per_token() const {
  return 6.0 * double(non_embedding_params()) + 12.0 * layers * dim * double(seq);
}

void ModelConfig::validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("model config: " + what);
  };
  need(vocab > 0, "vocab: expected > 0");
  need(dim > 0, "dim: expected > 0");
  need(layers > 0, "layers: expected > 0");
  need(heads > 0 && dim % heads == 0, "heads: expected a divisor of dim");
  need(head_dim() % 2 == 0, "heads: expected an even head dimension (RoPE rotates pairs)");
  need(kv_heads > 0 && heads % kv_heads == 0, "kv_heads: expected a divisor of heads");
  need(ffn > 0, "ffn: expected > 0");
  need(seq > 0, "seq: expected > 0");
  need(rope_theta > 0, "rope_theta: expected > 0");
  need(norm_eps > 0, "norm_eps: expected > 0");
}

void TensorParallel::validate(const ModelConfig& cfg) const {
  auto need = [&](bool ok, const std::string& what) {
    if (!ok)
      throw std::invalid_argument("tensor parallel size " + std::to_string(size) + ": " + what);
  };
  need(size >= 1, "expected >= 1");
  need(rank >= 0 && rank < size, "rank " + std::to_string(rank) + " out of range");
  need(cfg.heads % size == 0, "expected a divisor of heads (" + std::to_string(cfg.heads) + ")");
  need(cfg.kv_heads % size == 0,
       "expected a divisor of kv_heads (" + std::to_string(cfg.kv_heads) + ")");
  need(cfg.ffn % size == 0, "expected a divisor of ffn (" + std::to_string(cfg.ffn) + ")");
}

ModelConfig ModelConfig::preset(const std::string& name) {
  ModelConfig c;
  if (name == "small") return c;
  if (name == "tiny") {
    c.dim = 128;
    c.layers = 2;
    c.heads = 4;
    c.kv_heads = 2;
    c.ffn = 344;
    return c;
  }
  if (name == "medium") {  // the GPU reference config (scripts/bench_gpu.sh)
    c.dim = 1024;
    c.layers = 12;
    c.heads = 16;
    c.kv_heads = 16;
    c.ffn = 2736;  // 8/3 dim rounded up to 16, as "small"'s 688
    c.seq = 1024;
    return c;
  }
  throw std::invalid_argument("model preset: expected \"tiny\", \"small\" or \"medium\", got \"" +
                              name + "\"");
}

ModelConfig ModelConfig::from_yaml(const YAML::Node& node, const std::string& file) {
  auto pos = [&](const YAML::Node& n) {
    return SourcePos{file, n.Mark().line + 1, n.Mark().column + 1};
  };
  if (!node.IsMap()) throw InputError(pos(node), "model: expected a mapping");
  ModelConfig c;
  if (auto p = node["preset"]) {
    try {
      c = preset(p.as<std::string>());
    } catch (const std::exception& e) {
      throw InputError(pos(p), e.what());
    }
  }
  static const char* kInt[] = {"vocab", "dim", "layers", "heads", "kv_heads", "ffn", "seq"};
  int* ints[] = {&c.vocab, &c.dim, &c.layers, &c.heads, &c.kv_heads, &c.ffn, &c.seq};
  bool kv_given = false;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar())  // as<std::string>() would throw YAML::TypedBadConversion
      throw InputError(pos(kv.first), "model: expected keys like layers or dim, got a " +
                                          std::string(kv.first.IsMap() ? "map" : "list"));
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    try {
      bool known = key == "preset";
      for (size_t i = 0; i < std::size(kInt); ++i) {
        if (key == kInt[i]) {
          *ints[i] = v.as<int>();
          known = true;
        }
      }
      if (key == "kv_heads") kv_given = true;
      if (key == "rope_theta") c.rope_theta = v.as<double>(), known = true;
      if (key == "norm_eps") c.norm_eps = v.as<double>(), known = true;
      if (key == "seed") c.seed = v.as<uint64_t>(), known = true;
      if (key == "precision") {
        c.precision = v.as<std::string>();
        if (c.precision != "fp32" && c.precision != "bf16")
          throw InputError(pos(v),
                           "model.precision: expected fp32 or bf16, got \"" + c.precision + "\"");
        known = true;
      }
      if (!known) throw InputError(pos(kv.first), "model." + key + ": unknown key");
    } catch (const YAML::Exception&) {
      throw InputError(pos(v), "model." + key + ": expected a number, got \"" +
                                   (v.IsScalar() ? v.Scalar() : std::string("?")) + "\"");
    }
  }
  if (!kv_given && node["heads"]) c.kv_heads = c.heads;  // MHA unless told otherwise
  try {
    c.validate();
  } catch (const std::exception& e) {
    throw InputError(pos(node), e.what());
  }
  return c;
}

std::vector<StageRange> split_layers(const ModelConfig& cfg, int stages) {
  if (stages < 1 || stages > cfg.layers) {
    throw std::invalid_argument("stages: expected 1.." + std::to_string(cfg.layers) + ", got " +
                                std::to_string(stages));
  }
  std::vector<StageRange> out;
  int begin = 0;
  for (int s = 0; s < stages; ++s) {
    int n = cfg.layers / stages + (s < cfg.layers % stages ? 1 : 0);
    out.push_back({begin, begin + n});
    begin += n;
  }
  return out;
}

}  // namespace xdc::model
