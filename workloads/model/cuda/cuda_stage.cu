// CUDA stage: see cuda_stage.h. Row-major tensors as on the CPU; cuBLAS is column-major,
// so a row-major C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T.
// Attention is full (T x T) per head with the causal mask applied in the softmax; the
// CPU stage's block skipping is a CPU-side economy.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <vector>

#include "workloads/model/cuda/cuda_stage.h"

namespace xdc::model {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cublas: ") + what + ": status " + std::to_string(int(s)));
  }
}
#define CK(x) check((x), #x)

constexpr int kThreads = 256;
int blocks_for(int64_t n) {
  return int((n + kThreads - 1) / kThreads);
}

// ---------------------------------------------------------------------------- reductions
// A reduction's operation and its identity (what a lane without a value contributes).
struct SumOp {
  __device__ static float identity() { return 0.f; }
  __device__ static float apply(float a, float b) { return a + b; }
};
struct MaxOp {
  __device__ static float identity() { return -INFINITY; }
  __device__ static float apply(float a, float b) { return fmaxf(a, b); }
};
template <class Op>
__device__ float warp_reduce(float v) {
  for (int o = 16; o > 0; o >>= 1) v = Op::apply(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// blockDim.x a multiple of 32; every thread gets the result.
template <class Op>
__device__ float block_reduce(float v) {
  __shared__ float part[32];
  __shared__ float total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = warp_reduce<Op>(v);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < nw ? part[lane] : Op::identity();
    w = warp_reduce<Op>(w);
    if (lane == 0) total = w;
  }
  __syncthreads();
  const float r = total;
  __syncthreads();
  return r;
}
__device__ float block_sum(float v) {
  return block_reduce<SumOp>(v);
}
__device__ float block_max(float v) {
  return block_reduce<MaxOp>(v);
}

// ---------------------------------------------------------------------------- kernels
// One block per row unless stated. Shapes as in ops.h.
__global__ void embedding_forward_k(float* out, const int* tok, const float* wte, int C) {
  const int i = blockIdx.x;
  for (int c = threadIdx.x; c < C; c += blockDim.x)
    out[size_t(i) * C + c] = wte[size_t(tok[i]) * C + c];
}
__global__ void embedding_backward_weight_k(float* dwte, const float* dout, const int* tok, int C) {
  const int i = blockIdx.x;
  for (int c = threadIdx.x; c < C; c += blockDim.x)
    atomicAdd(&dwte[size_t(tok[i]) * C + c], dout[size_t(i) * C + c]);
}
__global__ void rmsnorm_forward_k(float* out, float* rstd, const float* inp, const float* w, int C,
                                  float eps) {
  const float* x = inp + size_t(blockIdx.x) * C;
  float ss = 0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) ss += x[c] * x[c];
  const float r = rsqrtf(block_sum(ss) / C + eps);
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
  float* o = out + size_t(blockIdx.x) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = x[c] * r * w[c];
}
__global__ void rmsnorm_backward_input_k(float* dinp, const float* dout, const float* inp,
                                         const float* rstd, const float* w, int C) {
  const size_t off = size_t(blockIdx.x) * C;
  const float r = rstd[blockIdx.x];
  float dot = 0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) dot += dout[off + c] * w[c] * inp[off + c];
  const float k = block_sum(dot) * r / C;
  for (int c = threadIdx.x; c < C; c += blockDim.x)
    dinp[off + c] += (dout[off + c] * w[c] - inp[off + c] * r * k) * r;
}
// dw[c] += sum_i dout[i,c] inp[i,c] rstd[i]: blocks of 32 columns x 8 row lanes, each
// block a slice of the rows (gridDim.y slices), lanes summed in shared memory, slices
// added atomically. (One thread per column would leave most of the GPU idle.)
__global__ void rmsnorm_backward_weight_k(float* dw, const float* dout, const float* inp,
                                          const float* rstd, int BT, int C) {
  __shared__ float part[8][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  float s = 0;
  if (c < C) {
    for (int i = blockIdx.y * 8 + threadIdx.y; i < BT; i += gridDim.y * 8)
      s += dout[size_t(i) * C + c] * inp[size_t(i) * C + c] * rstd[i];
  }
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int y = 1; y < 8; ++y) s += part[y][threadIdx.x];
    atomicAdd(&dw[c], s);
  }
}
// One block per row of qkv: rotate the first n_heads heads (q then k).
__global__ void rope_k(float* qkv, int ld, int n_heads, const float* cos_t, const float* sin_t,
                       int T, int hd, float sign) {
  const int row = blockIdx.x, t = row % T, half = hd / 2;
  float* x = qkv + size_t(row) * ld;
  for (int idx = threadIdx.x; idx < n_heads * half; idx += blockDim.x) {
    const int h = idx / half, i = idx % half;
    float* p = x + h * hd + 2 * i;
    const float c = cos_t[t * half + i], s = sign * sin_t[t * half + i];
    const float x0 = p[0], x1 = p[1];
    p[0] = x0 * c - x1 * s;
    p[1] = x0 * s + x1 * c;
  }
}
// Rows of (B*H*T, T) score matrices: causal softmax in place.
__global__ void softmax_causal_k(float* P, int T) {
  float* p = P + size_t(blockIdx.x) * T;
  const int t = blockIdx.x % T;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j <= t; j += blockDim.x) mx = fmaxf(mx, p[j]);
  mx = block_max(mx);
  float sum = 0;
  for (int j = threadIdx.x; j <= t; j += blockDim.x) {
    const float e = __expf(p[j] - mx);
    p[j] = e;
    sum += e;
  }
  const float inv = 1.f / block_sum(sum);
  for (int j = threadIdx.x; j < T; j += blockDim.x) p[j] = j <= t ? p[j] * inv : 0.f;
}
__global__ void softmax_backward_k(float* dP, const float* P, int T, float scale) {
  const size_t off = size_t(blockIdx.x) * T;
  const int t = blockIdx.x % T;
  float dot = 0;
  for (int j = threadIdx.x; j <= t; j += blockDim.x) dot += P[off + j] * dP[off + j];
  dot = block_sum(dot);
  for (int j = threadIdx.x; j < T; j += blockDim.x)
    dP[off + j] = j <= t ? P[off + j] * (dP[off + j] - dot) * scale : 0.f;
}
// Element-wise over BT*F.
__global__ void swiglu_forward_k(float* out, const float* h13, int64_t n, int F) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n) return;
  const int64_t i = idx / F, j = idx % F;
  const float a = h13[i * 2 * F + j], b = h13[i * 2 * F + F + j];
  out[idx] = a / (1.f + __expf(-a)) * b;
}
__global__ void swiglu_backward_k(float* dh13, const float* dout, const float* h13, int64_t n,
                                  int F) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n) return;
  const int64_t i = idx / F, j = idx % F;
  const float a = h13[i * 2 * F + j], b = h13[i * 2 * F + F + j], g = dout[idx];
  const float s = 1.f / (1.f + __expf(-a));
  dh13[i * 2 * F + j] = g * b * s * (1.f + a * (1.f - s));
  dh13[i * 2 * F + F + j] = g * a * s;
}
// One block per row: logits -> probabilities, loss of the row.
__global__ void crossentropy_forward_k(float* logits, const int* targets, float* row_loss, int V) {
  float* p = logits + size_t(blockIdx.x) * V;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < V; j += blockDim.x) mx = fmaxf(mx, p[j]);
  mx = block_max(mx);
  float sum = 0;
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    const float e = __expf(p[j] - mx);
    p[j] = e;
    sum += e;
  }
  const float inv = 1.f / block_sum(sum);
  for (int j = threadIdx.x; j < V; j += blockDim.x) p[j] *= inv;
  __syncthreads();
  if (threadIdx.x == 0) row_loss[blockIdx.x] = -logf(fmaxf(p[targets[blockIdx.x]], 1e-30f));
}
__global__ void crossentropy_backward_k(float* probs, const int* targets, int64_t n, int V,
                                        float scale) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n) return;
  const int64_t i = idx / V, j = idx % V;
  probs[idx] = (probs[idx] - (j == targets[i] ? 1.f : 0.f)) * scale;
}
__global__ void adamw_k(float* p, float* g, float* m, float* v, const unsigned char* decay,
                        int64_t n, float b1, float b2, float bc1, float bc2, float lr, float eps,
                        float wd, float gs) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float gi = g[i] * gs;
  m[i] = b1 * m[i] + (1.f - b1) * gi;
  v[i] = b2 * v[i] + (1.f - b2) * gi * gi;
  const float upd = (m[i] * bc1) / (sqrtf(v[i] * bc2) + eps);
  p[i] -= lr * upd + (decay[i] ? wd * p[i] : 0.f);
  g[i] = 0.f;
}
__global__ void to_bf16_k(__nv_bfloat16* out, const float* in, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(in[i]);
}
__global__ void sq_norm_k(const float* g, int64_t n, double* out) {
  float s = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    s += g[i] * g[i];
  s = block_sum(s);
  if (threadIdx.x == 0) atomicAdd(out, double(s));
}

// ---------------------------------------------------------------------------- memory
// Device buffers with the CPU pool's accounting: exact live/peak bytes, reuse by size.
class DevicePool {
 public:
  ~DevicePool() {
    for (auto& [n, ptrs] : free_)
      for (float* p : ptrs) cudaFree(p);
  }
  float* acquire(size_t n) {
    float* p = nullptr;
    auto it = free_.find(n);
    if (it != free_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
    } else {
      CK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(float)));
    }
    live_ += n * sizeof(float);
    peak_ = std::max(peak_, live_);
    return p;
  }
  void release(float* p, size_t n) {
    live_ -= n * sizeof(float);
    free_[n].push_back(p);
  }
  size_t live() const { return live_; }
  size_t peak() const { return peak_; }

 private:
  std::map<size_t, std::vector<float*>> free_;
  size_t live_ = 0, peak_ = 0;
};

struct DBuf {
  DevicePool* pool = nullptr;
  float* p = nullptr;
  size_t n = 0;
  DBuf() = default;
  DBuf(DevicePool& pl, size_t count) : pool(&pl), p(pl.acquire(count)), n(count) {}
  DBuf(DBuf&& o) noexcept { *this = std::move(o); }
  DBuf& operator=(DBuf&& o) noexcept {
    if (this != &o) {
      reset();
      std::swap(pool, o.pool);
      std::swap(p, o.p);
      std::swap(n, o.n);
    }
    return *this;
  }
  ~DBuf() { reset(); }
  void reset() {
    if (p) pool->release(p, n);
    p = nullptr;
    n = 0;
  }
};

template <typename T>
T* device_alloc(size_t n) {
  T* p = nullptr;
  CK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
  return p;
}

// ---------------------------------------------------------------------------- the stage
class CudaStage final : public StageApi {
 public:
  CudaStage(const ModelConfig& cfg, StageRange range, int b, const std::string& name)
      : cfg_(cfg),
        range_(range),
        B_(b),
        BT_(b * cfg.seq),
        nL_(range.end - range.begin),
        name_(name) {
    cfg_.validate();
    CK(cublasCreate(&blas_));
    tensors_ = stage_tensors(cfg_, range_);
    count_ = tensors_.back().offset + tensors_.back().size;
    std::vector<double> init(count_);
    init_params(cfg_, tensors_, init.data());
    host_params_.assign(init.begin(), init.end());
    host_grads_.assign(count_, 0.f);
    std::vector<uint8_t> decay(count_, 0);
    for (const auto& t : tensors_)
      std::fill(decay.begin() + t.offset, decay.begin() + t.offset + t.size, t.decay ? 1 : 0);
    host_adam_ = AdamW<float>(decay);
    params_ = device_alloc<float>(count_);
    grads_ = device_alloc<float>(count_);
    m_ = device_alloc<float>(count_);
    v_ = device_alloc<float>(count_);
    decay_ = device_alloc<unsigned char>(count_);
    norm_ = device_alloc<double>(1);
    CK(cudaMemcpy(params_, host_params_.data(), count_ * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemset(grads_, 0, count_ * sizeof(float)));
    CK(cudaMemset(m_, 0, count_ * sizeof(float)));
    CK(cudaMemset(v_, 0, count_ * sizeof(float)));
    CK(cudaMemcpy(decay_, decay.data(), count_, cudaMemcpyHostToDevice));
    const int hd = cfg_.head_dim();
    std::vector<float> cs(size_t(cfg_.seq) * hd / 2), sn(cs.size());
    for (int t = 0; t < cfg_.seq; ++t) {  // as rope_tables() in ops.h
      for (int i = 0; i < hd / 2; ++i) {
        const double freq = std::pow(cfg_.rope_theta, -2.0 * i / hd);
        cs[size_t(t) * (hd / 2) + i] = float(std::cos(t * freq));
        sn[size_t(t) * (hd / 2) + i] = float(std::sin(t * freq));
      }
    }
    cos_ = device_alloc<float>(cs.size());
    sin_ = device_alloc<float>(sn.size());
    CK(cudaMemcpy(cos_, cs.data(), cs.size() * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(sin_, sn.data(), sn.size() * sizeof(float), cudaMemcpyHostToDevice));
    ws_dg_ = device_alloc<float>(size_t(BT_) * cfg_.ffn);
    ws_datt_ = device_alloc<float>(size_t(BT_) * cfg_.dim);
    ws_dp_ = device_alloc<float>(size_t(B_) * cfg_.heads * cfg_.seq * cfg_.seq);
    ws_loss_ = device_alloc<float>(BT_);
    if (cfg_.precision == "bf16") {
      // GEMM operands rounded to bf16 (config.h): scratch for the two operands of a
      // linear-layer GEMM, and for attention q|k|v, the score matrices and dO.
      const size_t C = cfg_.dim, Cq = cfg_.qkv_dim(), F2 = 2 * size_t(cfg_.ffn), V = cfg_.vocab;
      const size_t lin = std::max({size_t(BT_) * std::max({C, Cq, F2, V}), Cq * C, F2 * C, V * C});
      n16a_ = std::max(lin, size_t(B_) * cfg_.heads * cfg_.seq * cfg_.seq);
      n16b_ = lin;
      n16c_ = size_t(BT_) * C;
      s16a_ = device_alloc<__nv_bfloat16>(n16a_);
      s16b_ = device_alloc<__nv_bfloat16>(n16b_);
      s16c_ = device_alloc<__nv_bfloat16>(n16c_);
    } else if (cfg_.precision != "fp32") {
      throw std::invalid_argument("cuda stage: precision expected fp32 or bf16, got " +
                                  cfg_.precision);
    }
    rows_.assign(BT_, 0.f);
    loss_scale_ = 1.f / float(BT_);
  }
  ~CudaStage() override {
    active_.clear();
    for (void* p :
         std::initializer_list<void*>{params_, grads_, m_, v_, decay_, norm_, cos_, sin_, ws_dg_,
                                      ws_datt_, ws_dp_, ws_loss_, s16a_, s16b_, s16c_})
      cudaFree(p);
    cublasDestroy(blas_);
  }

  std::string device() const override { return name_; }
  const ModelConfig& config() const override { return cfg_; }
  StageRange range() const override { return range_; }
  int microbatch_size() const override { return B_; }
  int64_t param_count() const override { return count_; }
  size_t boundary_bytes() const override { return size_t(BT_) * cfg_.dim * sizeof(float); }
  double flops_per_token() const override {
    double n = 0;
    for (const auto& t : tensors_)
      if (t.name != "embedding") n += double(t.size);
    return 6.0 * n + 12.0 * nL_ * cfg_.dim * double(cfg_.seq);
  }
  size_t activation_bytes_after_forward() const override {
    return model::activation_bytes_after_forward(cfg_, range_, B_, sizeof(float));
  }
  size_t activation_bytes_after_backward_input() const override {
    return model::activation_bytes_after_backward_input(cfg_, range_, B_, sizeof(float));
  }
  size_t live_activation_bytes() const override { return pool_.live(); }
  size_t peak_activation_bytes() const override { return pool_.peak(); }
  void set_microbatches(int m) override {
    if (m < 1) throw std::invalid_argument("microbatches: expected >= 1");
    loss_scale_ = float(1.0 / (double(BT_) * m));
  }

  StageOutput<float> forward(int mb, const StageInput<float>& in) override;
  std::span<const float> backward_input(int mb, std::span<const float> grad_out) override;
  void backward_weight(int mb) override;
  std::span<const float> backward(int mb, std::span<const float> grad_out) override {
    std::span<const float> din = backward_input(mb, grad_out);
    if (!din.empty()) {
      bw_out_.assign(din.begin(), din.end());
      din = bw_out_;
    }
    backward_weight(mb);
    return din;
  }
  void discard(int mb) override { active_.erase(mb); }

  std::span<float> params() override {
    sync_host_to_device();
    CK(cudaMemcpy(host_params_.data(), params_, count_ * sizeof(float), cudaMemcpyDeviceToHost));
    params_out_ = true;  // the caller may write: uploaded before the next use
    return host_params_;
  }
  std::span<float> grads() override {
    sync_host_to_device();
    CK(cudaMemcpy(host_grads_.data(), grads_, count_ * sizeof(float), cudaMemcpyDeviceToHost));
    grads_out_ = true;
    return host_grads_;
  }
  void zero_grad() override {
    grads_out_ = false;
    CK(cudaMemset(grads_, 0, count_ * sizeof(float)));
  }
  double grad_sq_norm() override {
    sync_host_to_device();
    CK(cudaMemset(norm_, 0, sizeof(double)));
    sq_norm_k<<<256, kThreads>>>(grads_, count_, norm_);
    CK(cudaGetLastError());
    double s = 0;
    CK(cudaMemcpy(&s, norm_, sizeof(double), cudaMemcpyDeviceToHost));
    return s;
  }
  void optimizer_step(const AdamWConfig& c, double lr, double grad_scale) override {
    sync_host_to_device();
    const int64_t t = host_adam_.steps() + 1;
    host_adam_.set_steps(t);
    adamw_k<<<blocks_for(count_), kThreads>>>(
        params_, grads_, m_, v_, decay_, count_, float(c.beta1), float(c.beta2),
        float(1.0 / (1.0 - std::pow(c.beta1, double(t)))),
        float(1.0 / (1.0 - std::pow(c.beta2, double(t)))), float(lr), float(c.eps),
        float(lr * c.weight_decay), float(grad_scale));
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
  }
  void save(const std::string& path) override {
    params();
    params_out_ = false;
    CK(cudaMemcpy(host_adam_.first_moment().data(), m_, count_ * sizeof(float),
                  cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(host_adam_.second_moment().data(), v_, count_ * sizeof(float),
                  cudaMemcpyDeviceToHost));
    save_checkpoint<float>(path, cfg_, range_, host_params_, host_adam_);
  }
  void load(const std::string& path) override {
    load_checkpoint<float>(path, cfg_, range_, std::span<float>(host_params_), host_adam_);
    CK(cudaMemcpy(params_, host_params_.data(), count_ * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(m_, host_adam_.first_moment().data(), count_ * sizeof(float),
                  cudaMemcpyHostToDevice));
    CK(cudaMemcpy(v_, host_adam_.second_moment().data(), count_ * sizeof(float),
                  cudaMemcpyHostToDevice));
    params_out_ = false;
  }

 private:
  struct Layer {
    DBuf x_in, rstd1, ln1, qkv, probs, att, x_mid, rstd2, ln2, h13, g;
    DBuf dqkv, dx_mid, dh13, dln1, dln2;
  };
  struct Micro {
    int phase = 0;
    DBuf tokens, targets;  // int32 in float-sized slots (counted: 4 B a token more than CPU)
    std::vector<Layer> layers;
    std::vector<DBuf> dres;
    DBuf x_out, rstdf, lnf, probs, dlnf;
    std::vector<float> host_out, host_din;
  };

  // fp32 -> bf16 copy of n elements into a scratch buffer of cap elements.
  const __nv_bfloat16* to16(const float* p, size_t n, __nv_bfloat16* dst, size_t cap) {
    if (n > cap) throw std::logic_error("cuda stage: bf16 scratch too small");
    to_bf16_k<<<int(std::min<int64_t>(blocks_for(int64_t(n)), 4096)), kThreads>>>(dst, p,
                                                                                  int64_t(n));
    return dst;
  }
  // Row-major GEMM through column-major cuBLAS; with bf16 the operands are rounded first
  // (every operand of a gemm() call is a whole buffer or weight, so rows x ld elements).
  void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
            const float* B, int ldb, float beta, float* C, int ldc) {
    if (bf16_()) {
      const auto* a16 = to16(A, size_t(ta ? K : M) * lda, s16a_, n16a_);
      const auto* b16 = to16(B, size_t(tb ? N : K) * ldb, s16b_, n16b_);
      CK(cublasGemmEx(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M,
                      K, &alpha, b16, CUDA_R_16BF, ldb, a16, CUDA_R_16BF, lda, &beta, C, CUDA_R_32F,
                      ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      return;
    }
    CK(cublasSgemm(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K,
                   &alpha, B, ldb, A, lda, &beta, C, ldc));
  }
  // Operands already in bf16 (attention: cast once per layer, read by every head).
  void gemm_batched16(bool ta, bool tb, int M, int N, int K, float alpha, const __nv_bfloat16* A,
                      int lda, long long sA, const __nv_bfloat16* B, int ldb, long long sB,
                      float beta, float* C, int ldc, long long sC, int batch) {
    CK(cublasGemmStridedBatchedEx(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                  ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_16BF,
                                  ldb, sB, A, CUDA_R_16BF, lda, sA, &beta, C, CUDA_R_32F, ldc, sC,
                                  batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  bool bf16_() const { return s16a_ != nullptr; }
  // An attention operand: fp32, or its bf16 copy (op() makes it once per layer and pass).
  struct Op {
    const float* f = nullptr;
    const __nv_bfloat16* h = nullptr;
    Op at(size_t off) const { return {f ? f + off : nullptr, h ? h + off : nullptr}; }
  };
  Op op(const float* p, size_t n, __nv_bfloat16* dst, size_t cap) {
    if (!bf16_()) return {p, nullptr};
    return {nullptr, to16(p, n, dst, cap)};
  }
  void bgemm(bool ta, bool tb, int M, int N, int K, float alpha, Op A, int lda, long long sA, Op B,
             int ldb, long long sB, float beta, float* C, int ldc, long long sC, int batch) {
    if (A.h) {
      gemm_batched16(ta, tb, M, N, K, alpha, A.h, lda, sA, B.h, ldb, sB, beta, C, ldc, sC, batch);
    } else {
      gemm_batched(ta, tb, M, N, K, alpha, A.f, lda, sA, B.f, ldb, sB, beta, C, ldc, sC, batch);
    }
  }
  void gemm_batched(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                    long long sA, const float* B, int ldb, long long sB, float beta, float* C,
                    int ldc, long long sC, int batch) {
    CK(cublasSgemmStridedBatched(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, ldb, sB, A,
                                 lda, sA, &beta, C, ldc, sC, batch));
  }
  // Weight pointers of layer l inside a flat buffer.
  float* tensor(float* base, const std::string& name) const {
    for (const auto& t : tensors_)
      if (t.name == name) return base + t.offset;
    throw std::logic_error("cuda stage: no tensor " + name);
  }
  float* lw(float* base, int l, const char* what) const {
    return tensor(base, "layers." + std::to_string(range_.begin + l) + "." + what);
  }
  void sync_host_to_device() {
    if (params_out_) {
      CK(cudaMemcpy(params_, host_params_.data(), count_ * sizeof(float), cudaMemcpyHostToDevice));
      params_out_ = false;
    }
    if (grads_out_) {  // e.g. allreduced by the executor
      CK(cudaMemcpy(grads_, host_grads_.data(), count_ * sizeof(float), cudaMemcpyHostToDevice));
      grads_out_ = false;
    }
  }
  Micro& find(int mb, int phase, const char* what) {
    auto it = active_.find(mb);
    if (it == active_.end() || it->second.phase != phase) {
      throw std::logic_error(std::string("cuda stage: ") + what + " of microbatch " +
                             std::to_string(mb) + " out of order or not in flight");
    }
    return it->second;
  }
  void attention_forward(Layer& L);
  void attention_backward(Layer& L, float* datt);

  ModelConfig cfg_;
  StageRange range_;
  int B_, BT_, nL_;
  std::string name_;
  float loss_scale_;
  cublasHandle_t blas_ = nullptr;
  std::vector<ParamTensor> tensors_;
  int64_t count_ = 0;
  std::vector<float> host_params_, host_grads_, bw_out_, rows_;
  AdamW<float> host_adam_;  // step count; moments only as checkpoint carriers
  bool params_out_ = false, grads_out_ = false;
  float *params_ = nullptr, *grads_ = nullptr, *m_ = nullptr, *v_ = nullptr;
  unsigned char* decay_ = nullptr;
  double* norm_ = nullptr;
  float *cos_ = nullptr, *sin_ = nullptr;
  float *ws_dg_ = nullptr, *ws_datt_ = nullptr, *ws_dp_ = nullptr, *ws_loss_ = nullptr;
  __nv_bfloat16 *s16a_ = nullptr, *s16b_ = nullptr, *s16c_ = nullptr;  // bf16 only
  size_t n16a_ = 0, n16b_ = 0, n16c_ = 0;
  DevicePool pool_;
  std::map<int, Micro> active_;
};

void CudaStage::attention_forward(Layer& L) {
  const int H = cfg_.heads, KVH = cfg_.kv_heads, hd = cfg_.head_dim(), T = cfg_.seq, C = cfg_.dim,
            Cq = cfg_.qkv_dim(), group = H / KVH;
  const float scale = 1.f / std::sqrt(float(hd));
  const long long sq = (long long)T * Cq, sp = (long long)H * T * T, so = (long long)T * C;
  const Op qkv = op(L.qkv.p, size_t(BT_) * Cq, s16b_, n16b_);
  for (int h = 0; h < H; ++h) {  // batched over the B sequences
    const int kh = h / group;
    bgemm(false, true, T, T, hd, scale, qkv.at(h * hd), Cq, sq, qkv.at(C + kh * hd), Cq, sq, 0.f,
          L.probs.p + size_t(h) * T * T, T, sp, B_);
  }
  softmax_causal_k<<<B_ * H * T, 128>>>(L.probs.p, T);
  CK(cudaGetLastError());
  const Op P = op(L.probs.p, size_t(B_) * H * T * T, s16a_, n16a_);
  for (int h = 0; h < H; ++h) {
    const int kh = h / group;
    bgemm(false, false, T, hd, T, 1.f, P.at(size_t(h) * T * T), T, sp,
          qkv.at(C + KVH * hd + kh * hd), Cq, sq, 0.f, L.att.p + h * hd, C, so, B_);
  }
}

void CudaStage::attention_backward(Layer& L, float* datt) {
  const int H = cfg_.heads, KVH = cfg_.kv_heads, hd = cfg_.head_dim(), T = cfg_.seq, C = cfg_.dim,
            Cq = cfg_.qkv_dim(), group = H / KVH;
  const float scale = 1.f / std::sqrt(float(hd));
  const long long sq = (long long)T * Cq, sp = (long long)H * T * T, so = (long long)T * C;
  const Op qkv = op(L.qkv.p, size_t(BT_) * Cq, s16b_, n16b_);
  const Op P = op(L.probs.p, size_t(B_) * H * T * T, s16a_, n16a_);
  const Op dO = op(datt, size_t(BT_) * C, s16c_, n16c_);
  for (int h = 0; h < H; ++h) {
    const int kh = h / group;
    const float beta = (h % group == 0) ? 0.f : 1.f;
    float* dv = L.dqkv.p + C + KVH * hd + kh * hd;
    bgemm(true, false, T, hd, T, 1.f, P.at(size_t(h) * T * T), T, sp, dO.at(h * hd), C, so, beta,
          dv, Cq, sq, B_);
    bgemm(false, true, T, T, hd, 1.f, dO.at(h * hd), C, so, qkv.at(C + KVH * hd + kh * hd), Cq, sq,
          0.f, ws_dp_ + size_t(h) * T * T, T, sp, B_);
  }
  softmax_backward_k<<<B_ * H * T, 128>>>(ws_dp_, L.probs.p, T, scale);
  CK(cudaGetLastError());
  const Op dP = op(ws_dp_, size_t(B_) * H * T * T, s16a_, n16a_);  // P's bf16 copy is done with
  for (int h = 0; h < H; ++h) {
    const int kh = h / group;
    const float beta = (h % group == 0) ? 0.f : 1.f;
    float* dq = L.dqkv.p + h * hd;
    float* dk = L.dqkv.p + C + kh * hd;
    bgemm(false, false, T, hd, T, 1.f, dP.at(size_t(h) * T * T), T, sp, qkv.at(C + kh * hd), Cq, sq,
          0.f, dq, Cq, sq, B_);
    bgemm(true, false, T, hd, T, 1.f, dP.at(size_t(h) * T * T), T, sp, qkv.at(h * hd), Cq, sq, beta,
          dk, Cq, sq, B_);
  }
}

StageOutput<float> CudaStage::forward(int mb, const StageInput<float>& in) {
  const size_t BT = BT_, C = cfg_.dim, Cq = cfg_.qkv_dim(), F = cfg_.ffn, V = cfg_.vocab;
  const int T = cfg_.seq, H = cfg_.heads, KVH = cfg_.kv_heads, hd = cfg_.head_dim();
  if (is_first() && in.tokens.size() != BT) throw std::invalid_argument("expects B*T tokens");
  if (!is_first() && in.acts.size() != BT * C) throw std::invalid_argument("expects (B,T,C)");
  if (is_last() && in.targets.size() != BT) throw std::invalid_argument("expects B*T targets");
  if (active_.count(mb)) throw std::logic_error("cuda stage: microbatch already in flight");
  sync_host_to_device();
  Micro& m = active_[mb];
  m.layers.resize(nL_);
  m.dres.resize(nL_ + 1);
  m.layers[0].x_in = DBuf(pool_, BT * C);
  if (is_first()) {
    m.tokens = DBuf(pool_, BT);
    CK(cudaMemcpy(m.tokens.p, in.tokens.data(), BT * sizeof(int32_t), cudaMemcpyHostToDevice));
    embedding_forward_k<<<BT_, kThreads>>>(m.layers[0].x_in.p, reinterpret_cast<int*>(m.tokens.p),
                                           tensor(params_, "embedding"), int(C));
  } else {
    CK(cudaMemcpy(m.layers[0].x_in.p, in.acts.data(), BT * C * sizeof(float),
                  cudaMemcpyHostToDevice));
  }
  const float eps = float(cfg_.norm_eps);
  for (int l = 0; l < nL_; ++l) {
    Layer& L = m.layers[l];
    L.rstd1 = DBuf(pool_, BT);
    L.ln1 = DBuf(pool_, BT * C);
    rmsnorm_forward_k<<<BT_, kThreads>>>(L.ln1.p, L.rstd1.p, L.x_in.p, lw(params_, l, "attn_norm"),
                                         int(C), eps);
    L.qkv = DBuf(pool_, BT * Cq);
    gemm(false, true, BT_, int(Cq), int(C), 1.f, L.ln1.p, int(C), lw(params_, l, "wqkv"), int(C),
         0.f, L.qkv.p, int(Cq));
    rope_k<<<BT_, kThreads>>>(L.qkv.p, int(Cq), H + KVH, cos_, sin_, T, hd, 1.f);
    L.probs = DBuf(pool_, size_t(B_) * H * T * T);
    L.att = DBuf(pool_, BT * C);
    attention_forward(L);
    L.x_mid = DBuf(pool_, BT * C);
    CK(cudaMemcpy(L.x_mid.p, L.x_in.p, BT * C * sizeof(float), cudaMemcpyDeviceToDevice));
    gemm(false, true, BT_, int(C), int(C), 1.f, L.att.p, int(C), lw(params_, l, "wo"), int(C), 1.f,
         L.x_mid.p, int(C));
    L.rstd2 = DBuf(pool_, BT);
    L.ln2 = DBuf(pool_, BT * C);
    rmsnorm_forward_k<<<BT_, kThreads>>>(L.ln2.p, L.rstd2.p, L.x_mid.p, lw(params_, l, "mlp_norm"),
                                         int(C), eps);
    L.h13 = DBuf(pool_, BT * 2 * F);
    gemm(false, true, BT_, int(2 * F), int(C), 1.f, L.ln2.p, int(C), lw(params_, l, "w13"), int(C),
         0.f, L.h13.p, int(2 * F));
    L.g = DBuf(pool_, BT * F);
    swiglu_forward_k<<<blocks_for(int64_t(BT) * F), kThreads>>>(L.g.p, L.h13.p, int64_t(BT) * F,
                                                                int(F));
    DBuf out(pool_, BT * C);
    CK(cudaMemcpy(out.p, L.x_mid.p, BT * C * sizeof(float), cudaMemcpyDeviceToDevice));
    gemm(false, true, BT_, int(C), int(F), 1.f, L.g.p, int(F), lw(params_, l, "w2"), int(F), 1.f,
         out.p, int(C));
    if (l + 1 < nL_) {
      m.layers[l + 1].x_in = std::move(out);
    } else {
      m.x_out = std::move(out);
    }
  }
  CK(cudaGetLastError());
  m.phase = 1;
  StageOutput<float> res;
  if (!is_last()) {
    m.host_out.resize(BT * C);
    CK(cudaMemcpy(m.host_out.data(), m.x_out.p, BT * C * sizeof(float), cudaMemcpyDeviceToHost));
    res.acts = m.host_out;
    return res;
  }
  m.targets = DBuf(pool_, BT);
  CK(cudaMemcpy(m.targets.p, in.targets.data(), BT * sizeof(int32_t), cudaMemcpyHostToDevice));
  m.rstdf = DBuf(pool_, BT);
  m.lnf = DBuf(pool_, BT * C);
  rmsnorm_forward_k<<<BT_, kThreads>>>(m.lnf.p, m.rstdf.p, m.x_out.p, tensor(params_, "final_norm"),
                                       int(C), eps);
  m.probs = DBuf(pool_, BT * V);
  gemm(false, true, BT_, int(V), int(C), 1.f, m.lnf.p, int(C), tensor(params_, "lm_head"), int(C),
       0.f, m.probs.p, int(V));
  crossentropy_forward_k<<<BT_, kThreads>>>(m.probs.p, reinterpret_cast<int*>(m.targets.p),
                                            ws_loss_, int(V));
  CK(cudaGetLastError());
  CK(cudaMemcpy(rows_.data(), ws_loss_, BT * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (float r : rows_) sum += r;
  res.loss = sum / double(BT);
  return res;
}

std::span<const float> CudaStage::backward_input(int mb, std::span<const float> grad_out) {
  Micro& m = find(mb, 1, "backward_input");
  const size_t BT = BT_, C = cfg_.dim, Cq = cfg_.qkv_dim(), F = cfg_.ffn, V = cfg_.vocab;
  const int T = cfg_.seq, H = cfg_.heads, KVH = cfg_.kv_heads, hd = cfg_.head_dim();
  if (!is_last() && grad_out.size() != BT * C) throw std::invalid_argument("expects (B,T,C)");
  sync_host_to_device();
  m.dres[nL_] = DBuf(pool_, BT * C);
  if (is_last()) {
    crossentropy_backward_k<<<blocks_for(int64_t(BT) * V), kThreads>>>(
        m.probs.p, reinterpret_cast<int*>(m.targets.p), int64_t(BT) * V, int(V), loss_scale_);
    m.dlnf = DBuf(pool_, BT * C);
    gemm(false, false, BT_, int(C), int(V), 1.f, m.probs.p, int(V), tensor(params_, "lm_head"),
         int(C), 0.f, m.dlnf.p, int(C));
    CK(cudaMemset(m.dres[nL_].p, 0, BT * C * sizeof(float)));
    rmsnorm_backward_input_k<<<BT_, kThreads>>>(m.dres[nL_].p, m.dlnf.p, m.x_out.p, m.rstdf.p,
                                                tensor(params_, "final_norm"), int(C));
  } else {
    CK(cudaMemcpy(m.dres[nL_].p, grad_out.data(), BT * C * sizeof(float), cudaMemcpyHostToDevice));
    m.x_out.reset();
    m.host_out = {};
  }
  for (int l = nL_ - 1; l >= 0; --l) {
    Layer& L = m.layers[l];
    const float* dout = m.dres[l + 1].p;
    gemm(false, false, BT_, int(F), int(C), 1.f, dout, int(C), lw(params_, l, "w2"), int(F), 0.f,
         ws_dg_, int(F));
    L.dh13 = DBuf(pool_, BT * 2 * F);
    swiglu_backward_k<<<blocks_for(int64_t(BT) * F), kThreads>>>(L.dh13.p, ws_dg_, L.h13.p,
                                                                 int64_t(BT) * F, int(F));
    L.h13.reset();
    L.dln2 = DBuf(pool_, BT * C);
    gemm(false, false, BT_, int(C), int(2 * F), 1.f, L.dh13.p, int(2 * F), lw(params_, l, "w13"),
         int(C), 0.f, L.dln2.p, int(C));
    L.dx_mid = DBuf(pool_, BT * C);
    CK(cudaMemcpy(L.dx_mid.p, dout, BT * C * sizeof(float), cudaMemcpyDeviceToDevice));
    rmsnorm_backward_input_k<<<BT_, kThreads>>>(L.dx_mid.p, L.dln2.p, L.x_mid.p, L.rstd2.p,
                                                lw(params_, l, "mlp_norm"), int(C));
    gemm(false, false, BT_, int(C), int(C), 1.f, L.dx_mid.p, int(C), lw(params_, l, "wo"), int(C),
         0.f, ws_datt_, int(C));
    L.dqkv = DBuf(pool_, BT * Cq);
    attention_backward(L, ws_datt_);
    L.probs.reset();
    L.qkv.reset();
    rope_k<<<BT_, kThreads>>>(L.dqkv.p, int(Cq), H + KVH, cos_, sin_, T, hd, -1.f);
    L.dln1 = DBuf(pool_, BT * C);
    gemm(false, false, BT_, int(C), int(Cq), 1.f, L.dqkv.p, int(Cq), lw(params_, l, "wqkv"), int(C),
         0.f, L.dln1.p, int(C));
    m.dres[l] = DBuf(pool_, BT * C);
    CK(cudaMemcpy(m.dres[l].p, L.dx_mid.p, BT * C * sizeof(float), cudaMemcpyDeviceToDevice));
    rmsnorm_backward_input_k<<<BT_, kThreads>>>(m.dres[l].p, L.dln1.p, L.x_in.p, L.rstd1.p,
                                                lw(params_, l, "attn_norm"), int(C));
  }
  CK(cudaGetLastError());
  m.phase = 2;
  if (is_first()) {
    CK(cudaDeviceSynchronize());  // every call returns with its work done (stage_api.h)
    return {};
  }
  m.host_din.resize(BT * C);
  CK(cudaMemcpy(m.host_din.data(), m.dres[0].p, BT * C * sizeof(float), cudaMemcpyDeviceToHost));
  return m.host_din;
}

void CudaStage::backward_weight(int mb) {
  Micro& m = find(mb, 2, "backward_weight");
  const int C = cfg_.dim, Cq = cfg_.qkv_dim(), F = cfg_.ffn, V = cfg_.vocab;
  sync_host_to_device();
  auto dW = [&](float* dw, const float* dy, const float* x, int K, int N) {
    gemm(true, false, N, K, BT_, 1.f, dy, N, x, K, 1.f, dw, K);  // dw (N,K) += dy^T x
  };
  const dim3 nb((C + 31) / 32, std::min(64, (BT_ + 7) / 8)), nt(32, 8);
  if (is_last()) {
    dW(tensor(grads_, "lm_head"), m.probs.p, m.lnf.p, C, V);
    rmsnorm_backward_weight_k<<<nb, nt>>>(tensor(grads_, "final_norm"), m.dlnf.p, m.x_out.p,
                                          m.rstdf.p, BT_, C);
  }
  for (int l = nL_ - 1; l >= 0; --l) {
    Layer& L = m.layers[l];
    dW(lw(grads_, l, "w2"), m.dres[l + 1].p, L.g.p, F, C);
    dW(lw(grads_, l, "w13"), L.dh13.p, L.ln2.p, C, 2 * F);
    rmsnorm_backward_weight_k<<<nb, nt>>>(lw(grads_, l, "mlp_norm"), L.dln2.p, L.x_mid.p, L.rstd2.p,
                                          BT_, C);
    dW(lw(grads_, l, "wo"), L.dx_mid.p, L.att.p, C, C);
    dW(lw(grads_, l, "wqkv"), L.dqkv.p, L.ln1.p, C, Cq);
    rmsnorm_backward_weight_k<<<nb, nt>>>(lw(grads_, l, "attn_norm"), L.dln1.p, L.x_in.p, L.rstd1.p,
                                          BT_, C);
  }
  if (is_first()) {
    embedding_backward_weight_k<<<BT_, kThreads>>>(tensor(grads_, "embedding"), m.dres[0].p,
                                                   reinterpret_cast<int*>(m.tokens.p), C);
  }
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());  // buffers go back to the pool for the next microbatch
  active_.erase(mb);
}

}  // namespace

int cuda_gpu_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) {
      *why = e != cudaSuccess ? std::string("no usable GPU (") + cudaGetErrorString(e) + ")"
                              : std::string("no GPU found");
    }
    cudaGetLastError();  // clear the sticky error for later callers
    return 0;
  }
  return n;
}

std::string cuda_gpu_name(int gpu) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, gpu) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return prop.name;
}

std::unique_ptr<StageApi> make_cuda_stage(const ModelConfig& cfg, StageRange range,
                                          int microbatch_size, int gpu, std::string* why) {
  const int n = cuda_gpu_count(why);
  if (n == 0) return nullptr;
  if (gpu < 0 || gpu >= n) {
    if (why) *why = "GPU " + std::to_string(gpu) + " asked, " + std::to_string(n) + " present";
    return nullptr;
  }
  const std::string name = cuda_gpu_name(gpu);
  if (name.empty() || cudaSetDevice(gpu) != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = "GPU " + std::to_string(gpu) + " refused a context";
    return nullptr;
  }
  try {
    return std::make_unique<CudaStage>(cfg, range, microbatch_size,
                                       "cuda:" + std::to_string(gpu) + " (" + name + ")");
  } catch (const std::exception& ex) {
    if (why) *why = ex.what();
    return nullptr;
  }
}

}  // namespace xdc::model

extern "C" __attribute__((visibility("default"))) const xdc::model::CudaModule*
xdc_model_cuda_module() {
  static const xdc::model::CudaModule module{xdc::model::cuda_gpu_count,
                                             xdc::model::cuda_gpu_name,
                                             xdc::model::make_cuda_stage};
  return &module;
}
