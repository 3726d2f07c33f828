#include "workloads/model/stage.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <stdexcept>

#include "workloads/model/ops.h"

namespace xdc::model {

namespace {

// splitmix64: a counter-based stream per tensor, so that the weights do not depend on how
// the model is cut (each tensor draws from its own stream, keyed by its global id).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double((next() >> 11) + 1) * 0x1.0p-53; }  // (0, 1]
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

template <typename T>
void copy(T* dst, const T* src, size_t n) {
  std::memcpy(dst, src, n * sizeof(T));
}

constexpr char kMagic[8] = {'X', 'D', 'C', 'M', 'O', 'D', 'L', '2'};  // 2: with the TP shard

}  // namespace

std::vector<ParamTensor> stage_tensors(const ModelConfig& cfg, StageRange range,
                                       TensorParallel tp) {
  tp.validate(cfg);
  const int64_t C = cfg.dim, V = cfg.vocab, F = cfg.ffn / tp.size, Cq = cfg.qkv_dim() / tp.size,
                Cl = C / tp.size;
  const bool split = tp.size > 1;
  const int per_block = 6;
  std::vector<ParamTensor> out;
  int64_t off = 0;
  auto add = [&](std::string name, int id, int64_t size, bool decay, bool sharded = false) {
    out.push_back({std::move(name), id, off, size, decay, sharded});
    off += size;
  };
  if (range.first()) add("embedding", 0, V * C, true);
  for (int l = range.begin; l < range.end; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    const int id = 1 + l * per_block;
    add(p + "attn_norm", id, C, false);
    add(p + "wqkv", id + 1, Cq * C, true, split);
    add(p + "wo", id + 2, C * Cl, true, split);
    add(p + "mlp_norm", id + 3, C, false);
    add(p + "w13", id + 4, 2 * F * C, true, split);
    add(p + "w2", id + 5, C * F, true, split);
  }
  if (range.last(cfg)) {
    add("final_norm", 1 + cfg.layers * per_block, C, false);
    add("lm_head", 2 + cfg.layers * per_block, V * C, true);
  }
  return out;
}

std::vector<int64_t> shard_indices(const ModelConfig& cfg, const ParamTensor& t,
                                   TensorParallel tp) {
  if (!t.sharded) return {};
  const int64_t C = cfg.dim, F = cfg.ffn, KV = cfg.kv_dim(), r = tp.rank;
  const int64_t Cl = C / tp.size, KVl = KV / tp.size, Fl = F / tp.size;
  // The shard is some row blocks {first row, rows} x the columns [c0, c0 + nc) of the uncut
  // (rows, K) matrix: column-parallel tensors take rows, row-parallel ones columns.
  std::vector<std::pair<int64_t, int64_t>> rows;
  int64_t K = C, c0 = 0, nc = C;
  if (t.name.ends_with(".wqkv")) {  // q | k | v rows of this rank's heads
    rows = {{r * Cl, Cl}, {C + r * KVl, KVl}, {C + KV + r * KVl, KVl}};
  } else if (t.name.ends_with(".w13")) {  // gate | up rows of this rank's units
    rows = {{r * Fl, Fl}, {F + r * Fl, Fl}};
  } else if (t.name.ends_with(".wo")) {  // columns of this rank's heads
    rows = {{0, C}};
    c0 = r * Cl, nc = Cl;
  } else if (t.name.ends_with(".w2")) {  // columns of this rank's units
    rows = {{0, C}};
    K = F, c0 = r * Fl, nc = Fl;
  } else {
    throw std::logic_error("shard_indices: " + t.name + " is not a sharded tensor");
  }
  std::vector<int64_t> out;
  out.reserve(size_t(t.size));
  for (auto [first, n] : rows)
    for (int64_t i = first; i < first + n; ++i)
      for (int64_t c = c0; c < c0 + nc; ++c) out.push_back(i * K + c);
  return out;
}

void init_params(const ModelConfig& cfg, const std::vector<ParamTensor>& tensors, double* params,
                 TensorParallel tp) {
  // Norms 1; matrices N(0, 0.02), output projections (wo, w2) scaled by 1/sqrt(2L).
  std::vector<double> full;
  for (const auto& t : tensors) {
    double* p = params + t.offset;
    if (!t.decay) {
      std::fill(p, p + t.size, 1.0);
      continue;
    }
    const bool out_proj = t.name.ends_with(".wo") || t.name.ends_with(".w2");
    const double std = 0.02 / (out_proj ? std::sqrt(2.0 * cfg.layers) : 1.0);
    Rng rng{cfg.seed * 0x100000001B3ull + uint64_t(t.global_id) * 0x9E3779B97F4A7C15ull};
    const std::vector<int64_t> idx = shard_indices(cfg, t, tp);
    if (idx.empty()) {
      for (int64_t i = 0; i < t.size; ++i) p[i] = std * rng.normal();
      continue;
    }
    full.resize(size_t(*std::max_element(idx.begin(), idx.end()) + 1));
    for (double& x : full) x = std * rng.normal();
    for (int64_t i = 0; i < t.size; ++i) p[i] = full[size_t(idx[size_t(i)])];
  }
}

size_t activation_bytes_after_forward(const ModelConfig& cfg, StageRange range, int B,
                                      size_t scalar_bytes, TensorParallel tp) {
  const size_t t = size_t(tp.size), C = cfg.dim, Cq = cfg.qkv_dim() / t, F = cfg.ffn / t,
               V = cfg.vocab;
  const size_t nL = range.end - range.begin;
  // x_in, ln1, x_mid, ln2 whole; att, qkv, scores, h13, g this rank's share.
  const size_t per_layer = 4 * C + C / t + 2 + Cq + size_t(cfg.heads) / t * cfg.seq + 3 * F;
  size_t per_token = nL * per_layer + C;  // + stage output / final hidden
  if (range.last(cfg)) per_token += 1 + C + V;
  return per_token * size_t(B) * cfg.seq * scalar_bytes;
}

size_t activation_bytes_after_backward_input(const ModelConfig& cfg, StageRange range, int B,
                                             size_t scalar_bytes, TensorParallel tp) {
  const size_t t = size_t(tp.size), C = cfg.dim, Cq = cfg.qkv_dim() / t, F = cfg.ffn / t,
               V = cfg.vocab;
  const size_t nL = range.end - range.begin;
  const size_t per_layer = 4 * C + C / t + 2 + F        // kept: X of the linears, norm inputs
                           + Cq + C + 2 * F + 2 * C;    // dY of the linears and norms
  size_t per_token = nL * per_layer + (nL + 1) * C;     // residual gradients
  if (range.last(cfg)) per_token += C + 1 + C + V + C;  // final hidden, rstd, lnf, dlogits, dlnf
  return per_token * size_t(B) * cfg.seq * scalar_bytes;
}

// Pointers into a flat buffer (parameters or gradients), one set per tensor.
template <typename T>
struct StageT<T>::Weights {
  struct Block {
    T* attn_norm;  // (C)
    T* wqkv;       // (Cq, C)
    T* wo;         // (C, C)
    T* mlp_norm;   // (C)
    T* w13;        // (2F, C) gate rows then up rows
    T* w2;         // (C, F)
  };
  T* embedding = nullptr;  // (V, C)
  std::vector<Block> blocks;
  T* final_norm = nullptr;  // (C)
  T* lm_head = nullptr;     // (V, C)

  Weights(T* base, const std::vector<ParamTensor>& ts, int n_layers) : blocks(n_layers) {
    size_t i = 0;
    auto next = [&] { return base + ts.at(i++).offset; };
    if (ts.front().name == "embedding") embedding = next();
    for (auto& b : blocks) {
      b.attn_norm = next();
      b.wqkv = next();
      b.wo = next();
      b.mlp_norm = next();
      b.w13 = next();
      b.w2 = next();
    }
    if (i < ts.size()) {
      final_norm = next();
      lm_head = next();
    }
  }
};

template <typename T>
struct StageT<T>::Layer {
  // Held from F to B (* = also until W).
  Buf<T> x_in;   // * (BT,C) block input
  Buf<T> rstd1;  // * (BT)
  Buf<T> ln1;    // * (BT,C) X of wqkv
  Buf<T> qkv;    //   (BT,Cq) after RoPE
  Buf<T> probs;  //   (B,H,T,T)
  Buf<T> att;    // * (BT,C) X of wo
  Buf<T> x_mid;  // * (BT,C) residual after attention
  Buf<T> rstd2;  // * (BT)
  Buf<T> ln2;    // * (BT,C) X of w13
  Buf<T> h13;    //   (BT,2F) gate|up pre-activation
  Buf<T> g;      // * (BT,F) X of w2
  // Made by B, held until W.
  Buf<T> dqkv;    // (BT,Cq) dY of wqkv
  Buf<T> dx_mid;  // (BT,C)  dY of wo
  Buf<T> dh13;    // (BT,2F) dY of w13
  Buf<T> dln1;    // (BT,C)  dY of attn_norm
  Buf<T> dln2;    // (BT,C)  dY of mlp_norm
};

template <typename T>
struct StageT<T>::Micro {
  int phase = 0;  // 1: forward done, 2: backward_input done
  std::vector<int32_t> tokens, targets;
  std::vector<Layer> layers;
  std::vector<Buf<T>> dres;        // residual-stream gradients at layer boundaries, nL+1
  Buf<T> x_out;                    // (BT,C) stage output / final hidden state on the last stage
  Buf<T> rstdf, lnf, probs, dlnf;  // last stage: final norm, head input, probs->dlogits
  double loss = 0;
};

template <typename T>
StageT<T>::StageT(const ModelConfig& cfg, StageRange range, int microbatch_size, TensorParallel tp)
    : cfg_(cfg), range_(range), tp_(tp), B_(microbatch_size) {
  cfg_.validate();
  tp_.validate(cfg_);
  Hl_ = cfg_.heads / tp_.size;
  KVHl_ = cfg_.kv_heads / tp_.size;
  Cl_ = cfg_.dim / tp_.size;
  Cql_ = cfg_.qkv_dim() / tp_.size;
  Fl_ = cfg_.ffn / tp_.size;
  if (range.begin < 0 || range.end > cfg.layers || range.begin >= range.end) {
    throw std::invalid_argument("stage range: expected 0 <= begin < end <= layers");
  }
  if (B_ < 1) throw std::invalid_argument("microbatch size: expected >= 1");
  // OpenBLAS starts with a thread per core; the model parallelises itself (parallel.h).
  static std::once_flag blas_once;
  std::call_once(blas_once, [] { set_compute_threads(compute_threads()); });
  BT_ = B_ * cfg_.seq;
  nL_ = range.end - range.begin;
  loss_scale_ = T(1.0 / BT_);
  tensors_ = stage_tensors(cfg_, range_, tp_);
  const int64_t count = tensors_.back().offset + tensors_.back().size;
  params_.resize(count);
  grads_.assign(count, T(0));
  std::vector<double> init(count);
  init_params(cfg_, tensors_, init.data(), tp_);
  std::copy(init.begin(), init.end(), params_.begin());
  std::vector<uint8_t> decay(count, 0);
  for (const auto& t : tensors_)
    std::fill(decay.begin() + t.offset, decay.begin() + t.offset + t.size, t.decay ? 1 : 0);
  adam_ = AdamW<T>(std::move(decay));
  w_ = std::make_unique<Weights>(params_.data(), tensors_, nL_);
  dw_ = std::make_unique<Weights>(grads_.data(), tensors_, nL_);
  const int hd = cfg_.head_dim();
  rope_cos_.resize(size_t(cfg_.seq) * hd / 2);
  rope_sin_.resize(size_t(cfg_.seq) * hd / 2);
  rope_tables(rope_cos_.data(), rope_sin_.data(), cfg_.seq, hd, cfg_.rope_theta);
  ws_dg_.resize(size_t(BT_) * Fl_);
  ws_datt_.resize(size_t(BT_) * Cl_);
  ws_dp_.resize(size_t(cfg_.seq) * cfg_.seq);
}

template <typename T>
StageT<T>::~StageT() = default;

template <typename T>
double StageT<T>::flops_per_token() const {
  double n = 0;
  for (const auto& t : tensors_)
    if (t.name != "embedding") n += double(t.size);
  return 6.0 * n + 12.0 * nL_ * Cl_ * double(cfg_.seq);
}

template <typename T>
size_t StageT<T>::activation_bytes_after_forward() const {
  return model::activation_bytes_after_forward(cfg_, range_, B_, sizeof(T), tp_);
}

template <typename T>
size_t StageT<T>::activation_bytes_after_backward_input() const {
  return model::activation_bytes_after_backward_input(cfg_, range_, B_, sizeof(T), tp_);
}

// Pieces of sequences that F and B hand to the threads: the whole microbatch on one thread
// (largest GEMMs), else twice as many pieces as threads.
template <typename T>
int StageT<T>::work_units() const {
  const int nt = compute_threads();
  return nt == 1 ? 1 : std::min(B_, 2 * nt);
}

template <typename T>
void StageT<T>::set_microbatches(int m) {
  if (m < 1) throw std::invalid_argument("microbatches: expected >= 1");
  loss_scale_ = T(1.0 / (double(BT_) * m));
}

template <typename T>
typename StageT<T>::Micro* StageT<T>::lookup(int mb) {
  for (auto& [id, m] : active_)
    if (id == mb) return m.get();
  return nullptr;
}

template <typename T>
typename StageT<T>::Micro& StageT<T>::start(int mb) {
  if (lookup(mb)) {
    throw std::logic_error("stage: forward of microbatch " + std::to_string(mb) +
                           " while it is still in flight");
  }
  std::unique_ptr<Micro> m;
  if (!spare_.empty()) {
    m = std::move(spare_.back());
    spare_.pop_back();
  } else {
    m = std::make_unique<Micro>();
    m->layers.resize(nL_);
    m->dres.resize(nL_ + 1);
  }
  m->phase = 0;
  Micro& ref = *m;
  active_.emplace_back(mb, std::move(m));
  return ref;
}

template <typename T>
typename StageT<T>::Micro& StageT<T>::find(int mb, int phase, const char* what) {
  Micro* m = lookup(mb);
  if (!m || m->phase != phase) {
    throw std::logic_error(std::string("stage: ") + what + " of microbatch " + std::to_string(mb) +
                           (!m ? ", which is not in flight" : " out of order (F, B, W)"));
  }
  return *m;
}

template <typename T>
void StageT<T>::finish(int mb) {
  auto it = std::find_if(active_.begin(), active_.end(), [&](auto& e) { return e.first == mb; });
  Micro& m = *it->second;
  for (auto& L : m.layers) L = Layer{};
  for (auto& d : m.dres) d.reset();
  m.x_out.reset();
  m.rstdf.reset();
  m.lnf.reset();
  m.probs.reset();
  m.dlnf.reset();
  spare_.push_back(std::move(it->second));
  active_.erase(it);  // a handful in flight: a vector keeps its capacity, a map allocates
}

template <typename T>
void StageT<T>::discard(int mb) {
  if (lookup(mb)) finish(mb);
}

template <typename T>
void StageT<T>::tp_sum(T* data, size_t n) {
  if (!tp_allreduce_)
    throw std::logic_error("stage: tensor parallel size " + std::to_string(tp_.size) +
                           " without an all-reduce (set_tp_allreduce)");
  tp_allreduce_(std::span<T>(data, n));
}

// One block on sequences [b0, b1): x_in -> out (both (BT,C); out points at the full buffer).
// Part 0: attention -> x_mid; part 1: MLP -> out. With TP each part leaves this rank's
// share of the row-parallel output (rank 0's with the residual) for the all-reduce.
template <typename T>
void StageT<T>::layer_forward(int l, Micro& m, T* out, int b0, int b1, int part) {
  const int C = cfg_.dim, Cl = Cl_, Cq = Cql_, F = Fl_, H = Hl_, KVH = KVHl_, hd = cfg_.head_dim(),
            Tn = cfg_.seq;
  const int Bc = b1 - b0, n = Bc * Tn;  // sequences and rows of this part
  const int64_t r0 = int64_t(b0) * Tn;
  const T eps = T(cfg_.norm_eps);
  const T residual = tp_.rank == 0 ? T(1) : T(0);
  const auto& w = w_->blocks[l];
  Layer& L = m.layers[l];
  T* x_in = L.x_in.data() + r0 * C;
  T* x_mid = L.x_mid.data() + r0 * C;
  T* rstd2 = L.rstd2.data() + r0;
  T* ln2 = L.ln2.data() + r0 * C;
  if (part != 1) {
    T* rstd1 = L.rstd1.data() + r0;
    T* ln1 = L.ln1.data() + r0 * C;
    T* qkv = L.qkv.data() + r0 * Cq;
    T* probs = L.probs.data() + int64_t(b0) * H * Tn * Tn;
    T* att = L.att.data() + r0 * Cl;
    rmsnorm_forward(ln1, rstd1, x_in, w.attn_norm, n, C, eps);
    linear_forward(qkv, ln1, w.wqkv, n, C, Cq);
    rope_apply(qkv, Cq, 0, H + KVH, rope_cos_.data(), rope_sin_.data(), Bc, Tn, hd, T(1));
    attention_forward(att, probs, qkv, Bc, Tn, H, KVH, hd);
    // x_mid = x_in + att wo^T (residual folded into the GEMM's beta)
    if (tp_.rank == 0) copy(x_mid, x_in, size_t(n) * C);
    gemm(false, true, n, C, Cl, T(1), att, Cl, w.wo, Cl, residual, x_mid, C);
  }
  if (part != 0) {
    T* h13 = L.h13.data() + r0 * 2 * F;
    T* g = L.g.data() + r0 * F;
    out += r0 * C;
    rmsnorm_forward(ln2, rstd2, x_mid, w.mlp_norm, n, C, eps);
    linear_forward(h13, ln2, w.w13, n, C, 2 * F);
    swiglu_forward(g, h13, n, F);
    // out = x_mid + g w2^T
    if (tp_.rank == 0) copy(out, x_mid, size_t(n) * C);
    gemm(false, true, n, C, F, T(1), g, F, w.w2, F, residual, out, C);
  }
}

template <typename T>
StageOutput<T> StageT<T>::forward(int mb, const StageInput<T>& in) {
  const size_t BT = BT_, C = cfg_.dim, V = cfg_.vocab;
  const int Tn = cfg_.seq;
  if (is_first() && in.tokens.size() != BT) {
    throw std::invalid_argument("stage forward: first stage expects B*T token ids");
  }
  if (!is_first() && in.acts.size() != BT * C) {
    throw std::invalid_argument("stage forward: expects (B,T,C) input activations");
  }
  if (is_last() && in.targets.size() != BT) {
    throw std::invalid_argument("stage forward: last stage expects B*T targets");
  }
  for (int32_t t : in.tokens)
    if (t < 0 || t >= cfg_.vocab) throw std::invalid_argument("stage forward: token out of range");
  for (int32_t t : in.targets)
    if (t < 0 || t >= cfg_.vocab) throw std::invalid_argument("stage forward: target out of range");
  Micro& m = start(mb);
  // Every buffer of the pass first (the pool is not thread-safe), then the compute.
  m.layers[0].x_in = pool_.acquire(BT * C);
  for (int l = 0; l < nL_; ++l) {
    Layer& L = m.layers[l];
    L.rstd1 = pool_.acquire(BT);
    L.ln1 = pool_.acquire(BT * C);
    L.qkv = pool_.acquire(BT * Cql_);
    L.probs = pool_.acquire(size_t(B_) * Hl_ * Tn * Tn);
    L.att = pool_.acquire(BT * Cl_);
    L.x_mid = pool_.acquire(BT * C);
    L.rstd2 = pool_.acquire(BT);
    L.ln2 = pool_.acquire(BT * C);
    L.h13 = pool_.acquire(BT * 2 * Fl_);
    L.g = pool_.acquire(BT * Fl_);
    if (l + 1 < nL_) m.layers[l + 1].x_in = pool_.acquire(BT * C);
  }
  m.x_out = pool_.acquire(BT * C);
  if (is_first()) m.tokens.assign(in.tokens.begin(), in.tokens.end());
  if (is_last()) {
    m.targets.assign(in.targets.begin(), in.targets.end());
    m.rstdf = pool_.acquire(BT);
    m.lnf = pool_.acquire(BT * C);
    m.probs = pool_.acquire(BT * V);
  }
  const int units = work_units();
  ws_part_.assign(units, 0.0);
  auto block_out = [&](int l) {
    return l + 1 < nL_ ? m.layers[l + 1].x_in.data() : m.x_out.data();
  };
  auto input = [&](int64_t b0, int64_t b1) {
    const int64_t r0 = b0 * Tn;
    const int n = int(b1 - b0) * Tn;
    T* x0 = m.layers[0].x_in.data() + r0 * C;
    if (is_first()) {
      embedding_forward(x0, m.tokens.data() + r0, w_->embedding, n, int(C));
    } else {
      copy(x0, in.acts.data() + r0 * C, size_t(n) * C);
    }
  };
  auto head = [&](int u, int64_t b0, int64_t b1) {
    if (!is_last()) return;
    const int64_t r0 = b0 * Tn;
    const int n = int(b1 - b0) * Tn;
    T* lnf = m.lnf.data() + r0 * C;
    T* probs = m.probs.data() + r0 * V;
    rmsnorm_forward(lnf, m.rstdf.data() + r0, m.x_out.data() + r0 * C, w_->final_norm, n, int(C),
                    T(cfg_.norm_eps));
    linear_forward(probs, lnf, w_->lm_head, n, int(C), int(V));
    ws_part_[u] = crossentropy_forward(probs, m.targets.data() + r0, n, int(V)) * n;
  };
  // Runs fn(u, b0, b1) on every non-empty piece of the microbatch.
  auto pieces = [&](auto&& fn) {
    parallel_tasks(units, [&](int u, int) {
      const auto [b0, b1] = split_range(B_, u, units);
      if (b0 < b1) fn(u, b0, b1);
    });
  };
  if (tp_.size == 1) {  // no communication: each piece goes through every block at once
    pieces([&](int u, int64_t b0, int64_t b1) {
      input(b0, b1);
      for (int l = 0; l < nL_; ++l) layer_forward(l, m, block_out(l), int(b0), int(b1));
      head(u, b0, b1);
    });
  } else {  // block by block: the all-reduces need the whole microbatch's share
    pieces([&](int, int64_t b0, int64_t b1) { input(b0, b1); });
    for (int l = 0; l < nL_; ++l) {
      for (int part = 0; part < 2; ++part) {
        pieces([&](int, int64_t b0, int64_t b1) {
          layer_forward(l, m, block_out(l), int(b0), int(b1), part);
        });
        tp_sum(part == 0 ? m.layers[l].x_mid.data() : block_out(l), BT * C);
      }
    }
    pieces(head);
  }
  m.phase = 1;
  StageOutput<T> res;
  if (!is_last()) {
    res.acts = std::span<const T>(m.x_out.data(), BT * C);
    return res;
  }
  double sum = 0;
  for (double p : ws_part_) sum += p;
  m.loss = sum / double(BT);
  res.loss = m.loss;
  return res;
}

// dres[l+1] -> dres[l] on sequences [b0, b1), keeping each linear's dY for the W pass.
// Part 0: MLP down to dln2; part 1: through the norm and attention down to dln1; part 2:
// the attention norm into dres. With TP, dln2 and dln1 (input gradients of the
// column-parallel w13 and wqkv) are this rank's share until the all-reduce after the part.
template <typename T>
void StageT<T>::layer_backward_input(int l, Micro& m, int b0, int b1, T* scratch, int part) {
  const int C = cfg_.dim, Cl = Cl_, Cq = Cql_, F = Fl_, H = Hl_, KVH = KVHl_, hd = cfg_.head_dim(),
            Tn = cfg_.seq;
  const int Bc = b1 - b0, n = Bc * Tn;
  const int64_t r0 = int64_t(b0) * Tn;
  const auto& w = w_->blocks[l];
  Layer& L = m.layers[l];
  const T* dout = m.dres[l + 1].data() + r0 * C;
  T* dln2 = L.dln2.data() + r0 * C;
  T* dx_mid = L.dx_mid.data() + r0 * C;
  T* dln1 = L.dln1.data() + r0 * C;
  if (part < 0 || part == 0) {
    T* dh13 = L.dh13.data() + r0 * 2 * F;
    T* dg = ws_dg_.data() + r0 * F;
    // MLP: out = x_mid + swiglu(ln2 w13^T) w2^T
    linear_backward_input(dg, dout, w.w2, n, F, C, false);
    swiglu_backward(dh13, dg, L.h13.data() + r0 * 2 * F, n, F);
    linear_backward_input(dln2, dh13, w.w13, n, C, 2 * F, false);
  }
  if (part < 0 || part == 1) {
    T* dqkv = L.dqkv.data() + r0 * Cq;
    T* datt = ws_datt_.data() + r0 * Cl;
    // dx_mid = dout (residual) + RMSNorm input gradient, one pass
    rmsnorm_backward_input(dx_mid, dln2, L.x_mid.data() + r0 * C, L.rstd2.data() + r0, w.mlp_norm,
                           n, C, dout);
    // Attention: x_mid = x_in + attention(rope(ln1 wqkv^T)) wo^T
    linear_backward_input(datt, dx_mid, w.wo, n, Cl, C, false);
    attention_backward(dqkv, scratch, datt, L.probs.data() + int64_t(b0) * H * Tn * Tn,
                       L.qkv.data() + r0 * Cq, Bc, Tn, H, KVH, hd);
    rope_apply(dqkv, Cq, 0, H + KVH, rope_cos_.data(), rope_sin_.data(), Bc, Tn, hd, T(-1));
    linear_backward_input(dln1, dqkv, w.wqkv, n, C, Cq, false);
  }
  if (part < 0 || part == 2) {
    T* dres = m.dres[l].data() + r0 * C;
    rmsnorm_backward_input(dres, dln1, L.x_in.data() + r0 * C, L.rstd1.data() + r0, w.attn_norm, n,
                           C, dx_mid);
  }
}

template <typename T>
std::span<const T> StageT<T>::backward_input(int mb, std::span<const T> grad_out) {
  Micro& m = find(mb, 1, "backward_input");
  const size_t BT = BT_, C = cfg_.dim, Cq = Cql_, F = Fl_;
  const int Tn = cfg_.seq, V = cfg_.vocab;
  if (!is_last() && grad_out.size() != BT * C) {
    throw std::invalid_argument("stage backward_input: expects (B,T,C) output gradients");
  }
  // Layer by layer, so that what only B needed (scores, qkv, gate/up) is released as soon as
  // its layer is done: the transient peak of a B is one layer's worth above the held sets.
  const int nt = compute_threads();
  if (ws_dp_.size() < size_t(nt) * Tn * Tn) ws_dp_.resize(size_t(nt) * Tn * Tn);
  const int units = work_units();
  m.dres[nL_] = pool_.acquire(BT * C);
  if (is_last()) m.dlnf = pool_.acquire(BT * C);
  parallel_tasks(units, [&](int u, int) {
    const auto [b0, b1] = split_range(B_, u, units);
    if (b0 == b1) return;
    const int64_t r0 = b0 * Tn;
    const int n = int(b1 - b0) * Tn;
    T* dtop = m.dres[nL_].data() + r0 * C;
    if (is_last()) {
      T* dlogits = m.probs.data() + r0 * V;  // probabilities become dlogits in place
      T* dlnf = m.dlnf.data() + r0 * C;
      crossentropy_backward(dlogits, m.targets.data() + r0, n, V, loss_scale_);
      linear_backward_input(dlnf, dlogits, w_->lm_head, n, int(C), V, false);
      std::fill_n(dtop, size_t(n) * C, T(0));
      rmsnorm_backward_input(dtop, dlnf, m.x_out.data() + r0 * C, m.rstdf.data() + r0,
                             w_->final_norm, n, int(C));
    } else {
      copy(dtop, grad_out.data() + r0 * C, size_t(n) * C);
    }
  });
  if (!is_last()) m.x_out.reset();  // sent to the next stage already; no gradient needs it
  for (int l = nL_ - 1; l >= 0; --l) {
    Layer& L = m.layers[l];
    L.dh13 = pool_.acquire(BT * 2 * F);
    L.dln2 = pool_.acquire(BT * C);
    L.dx_mid = pool_.acquire(BT * C);
    L.dqkv = pool_.acquire(BT * Cq);
    L.dln1 = pool_.acquire(BT * C);
    m.dres[l] = pool_.acquire(BT * C);
    // TP 1: the three parts at once; else part by part, each followed by its all-reduce.
    for (int part = tp_.size == 1 ? -1 : 0; part < (tp_.size == 1 ? 0 : 3); ++part) {
      parallel_tasks(units, [&](int u, int t) {
        const auto [b0, b1] = split_range(B_, u, units);
        if (b0 < b1) {
          layer_backward_input(l, m, int(b0), int(b1), ws_dp_.data() + size_t(t) * Tn * Tn, part);
        }
      });
      if (part == 0 || part == 1) tp_sum(part == 0 ? L.dln2.data() : L.dln1.data(), BT * C);
    }
    L.qkv.reset();  // only the B pass needed these
    L.probs.reset();
    L.h13.reset();
  }
  m.phase = 2;
  if (is_first()) return {};
  return std::span<const T>(m.dres[0].data(), BT * C);
}

template <typename T>
void StageT<T>::layer_backward_weight(int l, Micro& m, int t, int nt) {
  const int C = cfg_.dim, Cl = Cl_, Cq = Cql_, F = Fl_;
  const auto& dw = dw_->blocks[l];
  const Layer& L = m.layers[l];
  auto part = [&](int total) { return split_range(total, t, nt); };
  auto [a0, a1] = part(C);
  linear_backward_weight(dw.w2, m.dres[l + 1].data(), L.g.data(), BT_, F, C, int(a0), int(a1));
  auto [b0, b1] = part(2 * F);
  linear_backward_weight(dw.w13, L.dh13.data(), L.ln2.data(), BT_, C, 2 * F, int(b0), int(b1));
  rmsnorm_backward_weight(dw.mlp_norm, L.dln2.data(), L.x_mid.data(), L.rstd2.data(), BT_, C,
                          int(a0), int(a1));
  linear_backward_weight(dw.wo, L.dx_mid.data(), L.att.data(), BT_, Cl, C, int(a0), int(a1));
  auto [q0, q1] = part(Cq);
  linear_backward_weight(dw.wqkv, L.dqkv.data(), L.ln1.data(), BT_, C, Cq, int(q0), int(q1));
  rmsnorm_backward_weight(dw.attn_norm, L.dln1.data(), L.x_in.data(), L.rstd1.data(), BT_, C,
                          int(a0), int(a1));
}

template <typename T>
void StageT<T>::backward_weight(int mb) {
  Micro& m = find(mb, 2, "backward_weight");
  grads_zero_ = false;
  const int C = cfg_.dim, V = cfg_.vocab;
  // Tasks: (layer, part) for every layer, then (head and embedding, part).
  const int parts = compute_threads() == 1 ? 1 : 2 * compute_threads();
  parallel_tasks((nL_ + 1) * parts, [&](int task, int) {
    const int g = task / parts, p = task % parts;
    if (g < nL_) {
      layer_backward_weight(nL_ - 1 - g, m, p, parts);
      return;
    }
    const auto [c0, c1] = split_range(C, p, parts);
    if (is_last()) {
      const auto [v0, v1] = split_range(V, p, parts);
      linear_backward_weight(dw_->lm_head, m.probs.data(), m.lnf.data(), BT_, C, V, int(v0),
                             int(v1));
      rmsnorm_backward_weight(dw_->final_norm, m.dlnf.data(), m.x_out.data(), m.rstdf.data(), BT_,
                              C, int(c0), int(c1));
    }
    if (is_first()) {
      embedding_backward_weight(dw_->embedding, m.dres[0].data(), m.tokens.data(), BT_, C, int(c0),
                                int(c1));
    }
  });
  finish(mb);
}

template <typename T>
std::span<const T> StageT<T>::backward(int mb, std::span<const T> grad_out) {
  // The input gradient lives until W; copy it out so it survives the W pass.
  std::span<const T> din = backward_input(mb, grad_out);
  if (!din.empty()) {
    ws_bw_out_.assign(din.begin(), din.end());
    din = ws_bw_out_;
  }
  backward_weight(mb);
  return din;
}

template <typename T>
void StageT<T>::zero_grad() {
  if (grads_zero_) return;
  grads_zero_ = true;
  parallel_run([&](int t, int nt) {
    const auto [i0, i1] = split_range(int64_t(grads_.size()), t, nt);
    std::fill(grads_.begin() + i0, grads_.begin() + i1, T(0));
  });
}

template <typename T>
double StageT<T>::grad_sq_norm() const {
  if (tp_.size > 1) {  // this rank's share: replicated tensors count 1/TP
    double s = 0;
    for (const auto& t : tensors_)
      s += sq_norm(t.offset, t.offset + t.size) / (t.sharded ? 1 : tp_.size);
    return s;
  }
  return sq_norm(0, int64_t(grads_.size()));
}

template <typename T>
double StageT<T>::sq_norm(int64_t begin, int64_t end) const {
  std::vector<double>& part = ws_norm_;
  part.assign(compute_threads(), 0.0);
  parallel_run([&](int t, int nt) {
    auto [i0, i1] = split_range(end - begin, t, nt);
    i0 += begin, i1 += begin;
    double s = 0;
    for (int64_t i = i0; i < i1; i += 4096) {  // vectorised blocks in T, summed in double
      T blk = 0;
      const int64_t e = std::min(i1, i + 4096);
#pragma omp simd reduction(+ : blk)
      for (int64_t j = i; j < e; ++j) blk += grads_[j] * grads_[j];
      s += double(blk);
    }
    part[t] = s;
  });
  double s = 0;
  for (double p : part) s += p;
  return s;
}

template <typename T>
void StageT<T>::optimizer_step(const AdamWConfig& opt, double lr, double grad_scale) {
  adam_.begin_step();
  parallel_run([&](int t, int nt) {
    const auto [i0, i1] = split_range(int64_t(params_.size()), t, nt);
    adam_.update(params_.data(), grads_.data(), opt, lr, grad_scale, i0, i1);
  });
  grads_zero_ = true;
}

template <typename T>
void AdamW<T>::save(std::ostream& out) const {
  out.write(reinterpret_cast<const char*>(&t_), sizeof t_);
  out.write(reinterpret_cast<const char*>(m_.data()), std::streamsize(m_.size() * sizeof(T)));
  out.write(reinterpret_cast<const char*>(v_.data()), std::streamsize(v_.size() * sizeof(T)));
}

template <typename T>
void AdamW<T>::load(std::istream& in) {
  in.read(reinterpret_cast<char*>(&t_), sizeof t_);
  in.read(reinterpret_cast<char*>(m_.data()), std::streamsize(m_.size() * sizeof(T)));
  in.read(reinterpret_cast<char*>(v_.data()), std::streamsize(v_.size() * sizeof(T)));
}

namespace {
struct CkptHeader {
  char magic[8];
  int32_t scalar_bytes, vocab, dim, layers, heads, kv_heads, ffn, seq, begin, end, tp_size, tp_rank;
  double rope_theta, norm_eps;
  int64_t count;
};
}  // namespace

template <typename T>
void save_checkpoint(const std::string& path, const ModelConfig& cfg, StageRange range,
                     std::span<const T> params, const AdamW<T>& adam, TensorParallel tp) {
  CkptHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.scalar_bytes = sizeof(T);
  h.vocab = cfg.vocab, h.dim = cfg.dim, h.layers = cfg.layers, h.heads = cfg.heads;
  h.kv_heads = cfg.kv_heads, h.ffn = cfg.ffn, h.seq = cfg.seq;
  h.begin = range.begin, h.end = range.end;
  h.tp_size = tp.size, h.tp_rank = tp.rank;
  h.rope_theta = cfg.rope_theta, h.norm_eps = cfg.norm_eps;
  h.count = int64_t(params.size());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("checkpoint: cannot write " + tmp);
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out.write(reinterpret_cast<const char*>(params.data()),
              std::streamsize(params.size() * sizeof(T)));
    adam.save(out);
    if (!out) throw std::runtime_error("checkpoint: write failed on " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("checkpoint: cannot rename " + tmp + " to " + path);
  }
}

template <typename T>
void load_checkpoint(const std::string& path, const ModelConfig& cfg, StageRange range,
                     std::span<T> params, AdamW<T>& adam, TensorParallel tp) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("checkpoint: cannot read " + path);
  CkptHeader h{};
  in.read(reinterpret_cast<char*>(&h), sizeof h);
  const bool same = in && std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 &&
                    h.scalar_bytes == int32_t(sizeof(T)) && h.vocab == cfg.vocab &&
                    h.dim == cfg.dim && h.layers == cfg.layers && h.heads == cfg.heads &&
                    h.kv_heads == cfg.kv_heads && h.ffn == cfg.ffn && h.seq == cfg.seq &&
                    h.begin == range.begin && h.end == range.end && h.tp_size == tp.size &&
                    h.tp_rank == tp.rank && h.count == int64_t(params.size());
  if (!same) {
    throw std::runtime_error("checkpoint: " + path +
                             " was saved from another model config, stage range or TP shard");
  }
  in.read(reinterpret_cast<char*>(params.data()), std::streamsize(params.size() * sizeof(T)));
  adam.load(in);
  if (!in) throw std::runtime_error("checkpoint: " + path + " is truncated");
}

template <typename T>
void StageT<T>::save(const std::string& path) const {
  save_checkpoint<T>(path, cfg_, range_, params_, adam_, tp_);
}

template <typename T>
void StageT<T>::load(const std::string& path) {
  load_checkpoint<T>(path, cfg_, range_, params_, adam_, tp_);
}

template void save_checkpoint<float>(const std::string&, const ModelConfig&, StageRange,
                                     std::span<const float>, const AdamW<float>&, TensorParallel);
template void save_checkpoint<double>(const std::string&, const ModelConfig&, StageRange,
                                      std::span<const double>, const AdamW<double>&,
                                      TensorParallel);
template void load_checkpoint<float>(const std::string&, const ModelConfig&, StageRange,
                                     std::span<float>, AdamW<float>&, TensorParallel);
template void load_checkpoint<double>(const std::string&, const ModelConfig&, StageRange,
                                      std::span<double>, AdamW<double>&, TensorParallel);
template class AdamW<float>;
template class AdamW<double>;
template class StageT<float>;
template class StageT<double>;

}  // namespace xdc::model
