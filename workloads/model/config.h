#pragma once
// Shape of the mini Llama and how it is cut into pipeline stages.
// A config is plain data: presets, YAML, and the sizes other parts need (parameter
// count, FLOPs per token) all come from here, so the executor, the simulator and the
// benchmark agree on one formula.
#include <cstdint>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace xdc::model {

struct ModelConfig {
  // Defaults are the reference config of the benchmark (preset "small").
  int vocab = 256;
  int dim = 256;
  int layers = 4;
  int heads = 4;
  int kv_heads = 4;  // < heads: grouped-query attention
  int ffn = 688;     // SwiGLU hidden size
  int seq = 128;
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;
  uint64_t seed = 1;
  // Arithmetic of the GEMMs: "fp32", or "bf16" (the CUDA stage only: GEMM operands rounded
  // to bfloat16, fp32 accumulation and outputs, every other op and the weights, gradients
  // and optimizer in fp32 -- what torch.autocast(dtype=bfloat16) does).
  std::string precision = "fp32";

  int head_dim() const { return dim / heads; }
  int kv_dim() const { return kv_heads * head_dim(); }
  int qkv_dim() const { return dim + 2 * kv_dim(); }  // fused q|k|v projection width

  // Parameters of one block: 2 norms, wqkv, wo, w13 (gate|up), w2.
  int64_t block_params() const;
  int64_t param_count() const;  // everything, embedding and head included
  // N of the FLOP formula: every parameter but the embedding table (LM head included).
  int64_t non_embedding_params() const;
  // Training FLOPs per token, forward + backward: 6N + 12 L d T (attention counted over
  // the full T x T score matrix, as in the Chinchilla / PaLM convention).
  double train_flops_per_token() const;

  // Throws std::invalid_argument naming the field and what was expected.
  void validate() const;

  // "tiny" (2 layers, dim 128), "small" (the CPU reference config) or "medium" (the GPU
  // reference config: dim 1024, 12 layers, 16 heads, seq 1024); throws on others.
  static ModelConfig preset(const std::string& name);
  // {preset: NAME} and/or explicit keys (layers, dim, heads, kv_heads, ffn, seq, vocab,
  // rope_theta, norm_eps, seed); explicit keys override the preset. Errors are
  // xdc::InputError with file:line:col.
  static ModelConfig from_yaml(const YAML::Node& node, const std::string& file = "");
};

// The layers [begin, end) of one pipeline stage. The embedding lives on the stage with
// begin == 0, the final norm, LM head and loss on the stage with end == layers.
struct StageRange {
  int begin = 0;
  int end = 0;
  bool first() const { return begin == 0; }
  bool last(const ModelConfig& c) const { return end == c.layers; }
};

// Tensor parallelism (Megatron-LM, no sequence parallelism) of one stage: this rank is
// `rank` of `size` ranks that hold the same layers. The attention heads (and their KV heads)
// and the SwiGLU hidden units are split into `size` contiguous shares: wqkv and w13 are
// column-parallel (each rank holds its heads' / units' rows), wo and w2 row-parallel (each
// rank holds their columns). Everything else (norms, embedding, final norm, LM head) is
// replicated; activations between the blocks are whole on every rank. stage.h says where
// the all-reduces go.
struct TensorParallel {
  int size = 1;
  int rank = 0;
  // Throws std::invalid_argument unless 0 <= rank < size and size divides heads, kv_heads
  // and ffn.
  void validate(const ModelConfig& cfg) const;
};

// Cut the layers into `stages` contiguous ranges as evenly as possible (earlier stages
// take the remainder). Throws if stages < 1 or stages > layers.
std::vector<StageRange> split_layers(const ModelConfig& cfg, int stages);

}  // namespace xdc::model
