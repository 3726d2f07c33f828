#pragma once
// The layers of the mini Llama, each a forward/backward pair side by side (llm.c style).
// Every function is templated on the scalar so the gradient checks run in double; the
// model runs in float. Shapes open each function: B batch, T sequence, C model width,
// BT = B*T rows, V vocab, F SwiGLU hidden, H heads, KVH key/value heads, hd head dim.
//
// Zero-bubble split: a layer's backward is cut into *_backward_input (the B pass: every
// dX) and *_backward_weight (the W pass: every dW). Linear layers keep their input X and
// output gradient dY between the two. Backward functions ACCUMULATE (+=) into their
// outputs unless stated, because residual streams and gradients over microbatches add.
#include <cblas.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace xdc::model {

// ----------------------------------------------------------------------------
// exp that vectorises: float uses a Cephes-style polynomial (about 2 ulp, inputs clamped to
// [-86.5, 88], so that no result is denormal: denormals are slow); double (gradient checks)
// uses std::exp.
inline float vexp(float x) {
  x = x < -86.5f ? -86.5f : x;
  x = x > 88.0f ? 88.0f : x;
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (std::floor does not vectorise without
  // -ffast-math); then exp(x) = 2^n * exp(r) with r = x - n ln 2 in [-ln2/2, ln2/2].
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return p * std::bit_cast<float>((int32_t(n) + 127) << 23);
}
inline double vexp(double x) {
  return std::exp(x);
}

// ----------------------------------------------------------------------------
// GEMM, row-major: C (M,N) = alpha * op(A) * op(B) + beta * C; op(X) = X or X^T.
inline void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                 const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, lda, B, ldb, beta, C, ldc);
}
inline void gemm(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda,
                 const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// ----------------------------------------------------------------------------
// Embedding. tokens (BT), wte (V,C) -> out (BT,C)
template <typename T>
void embedding_forward(T* out, const int32_t* tokens, const T* wte, int BT, int C) {
  for (int i = 0; i < BT; ++i) std::copy_n(wte + int64_t(tokens[i]) * C, C, out + int64_t(i) * C);
}
// W pass only (the embedding has no input gradient). dout (BT,C) -> dwte (V,C) +=
// Columns [c0, c1) only (threads split the columns; rows collide on repeated tokens).
template <typename T>
void embedding_backward_weight(T* dwte, const T* dout, const int32_t* tokens, int BT, int C,
                               int c0 = 0, int c1 = -1) {
  if (c1 < 0) c1 = C;
  for (int i = 0; i < BT; ++i) {
    T* d = dwte + int64_t(tokens[i]) * C;
    const T* g = dout + int64_t(i) * C;
#pragma omp simd
    for (int c = c0; c < c1; ++c) d[c] += g[c];
  }
}

// ----------------------------------------------------------------------------
// Linear without bias. inp (M,K), w (N,K) -> out (M,N) = inp w^T
template <typename T>
void linear_forward(T* out, const T* inp, const T* w, int M, int K, int N) {
  gemm(false, true, M, N, K, T(1), inp, K, w, K, T(0), out, N);
}
// B pass: dinp (M,K) = dout (M,N) w (N,K); accumulate into dinp if `accumulate`.
template <typename T>
void linear_backward_input(T* dinp, const T* dout, const T* w, int M, int K, int N,
                           bool accumulate) {
  gemm(false, false, M, K, N, T(1), dout, N, w, K, accumulate ? T(1) : T(0), dinp, K);
}
// W pass: dw (N,K) += dout^T (N,M) inp (M,K). Rows [n0, n1) of dw only, if given.
template <typename T>
void linear_backward_weight(T* dw, const T* dout, const T* inp, int M, int K, int N, int n0 = 0,
                            int n1 = -1) {
  if (n1 < 0) n1 = N;
  if (n1 <= n0) return;
  gemm(true, false, n1 - n0, K, M, T(1), dout + n0, N, inp, K, T(1), dw + int64_t(n0) * K, K);
}

// ----------------------------------------------------------------------------
// RMSNorm. inp (BT,C), w (C) -> out (BT,C) = inp * rstd * w, rstd (BT) kept for backward.
template <typename T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, const T* w, int BT, int C, T eps) {
  for (int i = 0; i < BT; ++i) {
    const T* x = inp + int64_t(i) * C;
    T* o = out + int64_t(i) * C;
    T ss = 0;
#pragma omp simd reduction(+ : ss)
    for (int c = 0; c < C; ++c) ss += x[c] * x[c];
    const T r = T(1) / std::sqrt(ss / T(C) + eps);
    rstd[i] = r;
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = x[c] * r * w[c];
  }
}
// B pass: with n = inp*rstd, dn = dout*w: dinp += (dn - n*mean(dn*n)) * rstd.
// With `residual` given, dinp = residual + (...) instead (the residual stream's gradient
// joins in the same pass, saving a copy).
template <typename T>
void rmsnorm_backward_input(T* dinp, const T* dout, const T* inp, const T* rstd, const T* w, int BT,
                            int C, const T* residual = nullptr) {
  for (int i = 0; i < BT; ++i) {
    const T* x = inp + int64_t(i) * C;
    const T* g = dout + int64_t(i) * C;
    T* d = dinp + int64_t(i) * C;
    const T* res = residual ? residual + int64_t(i) * C : d;
    const T r = rstd[i];
    T dot = 0;  // sum dn * n
#pragma omp simd reduction(+ : dot)
    for (int c = 0; c < C; ++c) dot += g[c] * w[c] * x[c];
    const T k = dot * r / T(C);  // mean(dn * n)
#pragma omp simd
    for (int c = 0; c < C; ++c) d[c] = res[c] + (g[c] * w[c] - x[c] * r * k) * r;
  }
}
// W pass: dw (C) += sum over rows of dout * inp * rstd. Columns [c0, c1) only, if given.
template <typename T>
void rmsnorm_backward_weight(T* dw, const T* dout, const T* inp, const T* rstd, int BT, int C,
                             int c0 = 0, int c1 = -1) {
  if (c1 < 0) c1 = C;
  for (int i = 0; i < BT; ++i) {
    const T* x = inp + int64_t(i) * C;
    const T* g = dout + int64_t(i) * C;
    const T r = rstd[i];
#pragma omp simd
    for (int c = c0; c < c1; ++c) dw[c] += g[c] * x[c] * r;
  }
}

// ----------------------------------------------------------------------------
// RoPE, interleaved pairs (x[2i], x[2i+1]) of each head rotated by pos * theta^(-2i/hd).
// cos/sin tables (T, hd/2). Applied in place to the q and k heads of a fused qkv row.
// qkv (BT, ld): the first n_heads*hd columns starting at col0 are rotated.
// sign = +1 forward; -1 backward (rotation by the negative angle is the transpose).
template <typename T>
void rope_apply(T* qkv, int ld, int col0, int n_heads, const T* cos_t, const T* sin_t, int B,
                int Tn, int hd, T sign) {
  const int half = hd / 2;
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < Tn; ++t) {
      T* row = qkv + (int64_t(b) * Tn + t) * ld + col0;
      const T* cs = cos_t + int64_t(t) * half;
      const T* sn = sin_t + int64_t(t) * half;
      for (int h = 0; h < n_heads; ++h) {
        T* x = row + h * hd;
#pragma omp simd
        for (int i = 0; i < half; ++i) {
          const T x0 = x[2 * i], x1 = x[2 * i + 1];
          const T c = cs[i], s = sign * sn[i];
          x[2 * i] = x0 * c - x1 * s;
          x[2 * i + 1] = x0 * s + x1 * c;
        }
      }
    }
  }
}
// Tables for rope_apply: cos_t, sin_t (T, hd/2).
template <typename T>
void rope_tables(T* cos_t, T* sin_t, int Tn, int hd, double theta) {
  const int half = hd / 2;
  for (int t = 0; t < Tn; ++t) {
    for (int i = 0; i < half; ++i) {
      const double freq = std::pow(theta, -2.0 * i / hd);
      cos_t[t * half + i] = T(std::cos(t * freq));
      sin_t[t * half + i] = T(std::sin(t * freq));
    }
  }
}

// ----------------------------------------------------------------------------
// Causal multi-head attention with grouped KV heads, as batched GEMMs per (b, h).
// qkv (BT, Cq) with Cq = (H + 2 KVH) hd, columns [q heads | k heads | v heads], RoPE
// already applied -> out (BT, H hd), probs (B,H,T,T) kept for backward.
// Causality by row blocks: queries [r0, r1) only meet keys [0, r1), so the GEMMs skip the
// upper blocks (with 4 blocks, 10/16 of the full work). Entries of probs right of a row's
// block are never read; entries in the block past the diagonal are 0.
inline constexpr int kAttentionBlock = 32;

template <typename T>
void attention_forward(T* out, T* probs, const T* qkv, int B, int Tn, int H, int KVH, int hd,
                       int block = kAttentionBlock) {
  const int Cq = (H + 2 * KVH) * hd, C = H * hd, group = H / KVH;
  const T scale = T(1) / std::sqrt(T(hd));
  for (int b = 0; b < B; ++b) {
    const T* base = qkv + int64_t(b) * Tn * Cq;
    for (int h = 0; h < H; ++h) {
      const int kh = h / group;
      const T* q = base + h * hd;
      const T* k = base + C + kh * hd;
      const T* v = base + C + KVH * hd + kh * hd;
      T* P = probs + (int64_t(b) * H + h) * Tn * Tn;
      T* o = out + int64_t(b) * Tn * C + h * hd;
      for (int r0 = 0; r0 < Tn; r0 += block) {
        const int r1 = std::min(Tn, r0 + block), m = r1 - r0;
        T* Pb = P + int64_t(r0) * Tn;
        // S (m, r1) = scale * q[r0:r1] k[0:r1]^T
        gemm(false, true, m, r1, hd, scale, q + int64_t(r0) * Cq, Cq, k, Cq, T(0), Pb, Tn);
        // Causal softmax of each row in place. The loops run over the whole block width r1
        // with the mask as a select: full vectors, no scalar tails on short rows.
        for (int t = r0; t < r1; ++t) {
          T* p = P + int64_t(t) * Tn;
          T mx = p[0];
#pragma omp simd reduction(max : mx)
          for (int j = 0; j < r1; ++j) mx = (j <= t && p[j] > mx) ? p[j] : mx;
          T sum = 0;
#pragma omp simd reduction(+ : sum)
          for (int j = 0; j < r1; ++j) {
            const T e = j <= t ? vexp(p[j] - mx) : T(0);  // masked lanes: 0, whatever p[j]
            p[j] = e;
            sum += e;
          }
          const T inv = T(1) / sum;
#pragma omp simd
          for (int j = 0; j < r1; ++j) p[j] *= inv;
        }
        // out[r0:r1] (m, hd) = P[r0:r1, 0:r1] v[0:r1]
        gemm(false, false, m, hd, r1, T(1), Pb, Tn, v, Cq, T(0), o + int64_t(r0) * C, C);
      }
    }
  }
}
// B pass (attention has no weights). dout (BT, C), probs, qkv -> dqkv (BT, Cq), overwritten
// (q, k and v columns all written). scratch (T,T).
template <typename T>
void attention_backward(T* dqkv, T* scratch, const T* dout, const T* probs, const T* qkv, int B,
                        int Tn, int H, int KVH, int hd, int block = kAttentionBlock) {
  const int Cq = (H + 2 * KVH) * hd, C = H * hd, group = H / KVH;
  const T scale = T(1) / std::sqrt(T(hd));
  const int last0 = (Tn - 1) / block * block;  // first row of the last block
  for (int b = 0; b < B; ++b) {
    const T* base = qkv + int64_t(b) * Tn * Cq;
    T* dbase = dqkv + int64_t(b) * Tn * Cq;
    for (int h = 0; h < H; ++h) {
      const int kh = h / group;
      const T* q = base + h * hd;
      const T* k = base + C + kh * hd;
      const T* v = base + C + KVH * hd + kh * hd;
      T* dq = dbase + h * hd;
      T* dk = dbase + C + kh * hd;
      T* dv = dbase + C + KVH * hd + kh * hd;
      const T* P = probs + (int64_t(b) * H + h) * Tn * Tn;
      const T* dO = dout + int64_t(b) * Tn * C + h * hd;
      // Last block first: it covers every key, so it initialises dk, dv (unless another
      // head of the group already did); the earlier blocks add to their prefix.
      for (int r0 = last0; r0 >= 0; r0 -= block) {
        const int r1 = std::min(Tn, r0 + block), m = r1 - r0;
        const T beta = (r0 == last0 && h % group == 0) ? T(0) : T(1);
        const T* Pb = P + int64_t(r0) * Tn;
        const T* dOb = dO + int64_t(r0) * C;
        T* dP = scratch + int64_t(r0) * Tn;
        // dv[0:r1] (+)= P[r0:r1, 0:r1]^T dO[r0:r1] ; dP (m, r1) = dO[r0:r1] v[0:r1]^T
        gemm(true, false, r1, hd, m, T(1), Pb, Tn, dOb, C, beta, dv, Cq);
        gemm(false, true, m, r1, hd, T(1), dOb, C, v, Cq, T(0), dP, Tn);
        // softmax backward: dS = P * (dP - dot(P, dP)) * scale. Past the diagonal P is 0,
        // so running over the block width gives those entries 0 (and full vectors).
        for (int t = r0; t < r1; ++t) {
          const T* p = P + int64_t(t) * Tn;
          T* d = scratch + int64_t(t) * Tn;
          T dot = 0;
#pragma omp simd reduction(+ : dot)
          for (int j = 0; j < r1; ++j) dot += p[j] * d[j];
#pragma omp simd
          for (int j = 0; j < r1; ++j) d[j] = p[j] * (d[j] - dot) * scale;
        }
        // dq[r0:r1] = dS k[0:r1] ; dk[0:r1] (+)= dS^T q[r0:r1]
        gemm(false, false, m, hd, r1, T(1), dP, Tn, k, Cq, T(0), dq + int64_t(r0) * Cq, Cq);
        gemm(true, false, r1, hd, m, T(1), dP, Tn, q + int64_t(r0) * Cq, Cq, beta, dk, Cq);
      }
    }
  }
}

// ----------------------------------------------------------------------------
// SwiGLU. h13 (BT, 2F) = [a | b] (gate | up) -> out (BT, F) = silu(a) * b
template <typename T>
void swiglu_forward(T* out, const T* h13, int BT, int F) {
  for (int i = 0; i < BT; ++i) {
    const T* a = h13 + int64_t(i) * 2 * F;
    const T* b = a + F;
    T* o = out + int64_t(i) * F;
#pragma omp simd
    for (int j = 0; j < F; ++j) o[j] = a[j] / (T(1) + vexp(-a[j])) * b[j];
  }
}
// B pass: dout (BT,F) -> dh13 (BT,2F), overwritten. With s = sigmoid(a):
// da = dout*b*s*(1 + a(1-s)), db = dout*a*s.
template <typename T>
void swiglu_backward(T* dh13, const T* dout, const T* h13, int BT, int F) {
  for (int i = 0; i < BT; ++i) {
    const T* a = h13 + int64_t(i) * 2 * F;
    const T* b = a + F;
    const T* g = dout + int64_t(i) * F;
    T* da = dh13 + int64_t(i) * 2 * F;
    T* db = da + F;
#pragma omp simd
    for (int j = 0; j < F; ++j) {
      const T s = T(1) / (T(1) + vexp(-a[j]));
      da[j] = g[j] * b[j] * s * (T(1) + a[j] * (T(1) - s));
      db[j] = g[j] * a[j] * s;
    }
  }
}

// ----------------------------------------------------------------------------
// Softmax cross-entropy. logits (BT,V) are overwritten with the probabilities; returns the
// mean loss over the BT rows (accumulated in double).
template <typename T>
double crossentropy_forward(T* logits, const int32_t* targets, int BT, int V) {
  double loss = 0;
  for (int i = 0; i < BT; ++i) {
    T* p = logits + int64_t(i) * V;
    T mx = p[0];
#pragma omp simd reduction(max : mx)
    for (int j = 1; j < V; ++j) mx = mx > p[j] ? mx : p[j];
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < V; ++j) {
      p[j] = vexp(p[j] - mx);
      sum += p[j];
    }
    const T inv = T(1) / sum;
#pragma omp simd
    for (int j = 0; j < V; ++j) p[j] *= inv;
    loss -= std::log(std::max(double(p[targets[i]]), 1e-300));
  }
  return loss / BT;
}
// B pass: probs (BT,V) become dlogits = (probs - onehot) * scale in place.
template <typename T>
void crossentropy_backward(T* probs, const int32_t* targets, int BT, int V, T scale) {
  for (int i = 0; i < BT; ++i) {
    T* p = probs + int64_t(i) * V;
    p[targets[i]] -= T(1);
#pragma omp simd
    for (int j = 0; j < V; ++j) p[j] *= scale;
  }
}

}  // namespace xdc::model
