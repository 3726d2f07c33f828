// Every layer's backward against central finite differences, in double precision.
// Loss = sum(out * R) for a fixed random R, so dout = R.
#include "workloads/model/ops.h"

#include <numeric>

#include "tests/model/gradcheck.h"

namespace xdc::model {
namespace {

using testing::expect_grad_close;
using testing::numeric_grad;
using testing::randn;

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

constexpr int B = 2, Tn = 5, C = 8, BT = B * Tn;

TEST(Ops, VectorisedExpIsAccurate) {
  double worst = 0;
  for (float x = -80.0f; x < 80.0f; x += 0.0137f) {
    const double ref = std::exp(double(x));
    worst = std::max(worst, std::abs(double(vexp(x)) - ref) / ref);
  }
  EXPECT_LT(worst, 5e-7);  // a few float ulps
  EXPECT_GE(vexp(-1000.0f), 0.0f);
  EXPECT_LT(vexp(-1000.0f), 1e-37f);
  EXPECT_TRUE(std::isfinite(vexp(1000.0f)));
}

TEST(Ops, LinearInputAndWeight) {
  const int K = 6, N = 7;
  auto x = randn(BT * K, 1), w = randn(N * K, 2), R = randn(BT * N, 3);
  std::vector<double> out(BT * N);
  auto f = [&] {
    linear_forward(out.data(), x.data(), w.data(), BT, K, N);
    return dot(out, R);
  };
  std::vector<double> dx(BT * K, 0.0), dw(N * K, 0.0);
  linear_backward_input(dx.data(), R.data(), w.data(), BT, K, N, false);
  linear_backward_weight(dw.data(), R.data(), x.data(), BT, K, N);
  expect_grad_close(dx, numeric_grad(x.data(), x.size(), f), "linear dx");
  expect_grad_close(dw, numeric_grad(w.data(), w.size(), f), "linear dw");
  // accumulate = true adds to what is there
  std::vector<double> acc(BT * K, 1.0);
  linear_backward_input(acc.data(), R.data(), w.data(), BT, K, N, true);
  for (size_t i = 0; i < acc.size(); ++i) EXPECT_NEAR(acc[i], dx[i] + 1.0, 1e-12);
}

TEST(Ops, RmsNorm) {
  auto x = randn(BT * C, 4), w = randn(C, 5), R = randn(BT * C, 6);
  for (auto& v : w) v += 1.0;
  std::vector<double> out(BT * C), rstd(BT);
  auto f = [&] {
    rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), BT, C, 1e-5);
    return dot(out, R);
  };
  f();
  std::vector<double> dx(BT * C, 0.0), dw(C, 0.0);
  rmsnorm_backward_input(dx.data(), R.data(), x.data(), rstd.data(), w.data(), BT, C);
  rmsnorm_backward_weight(dw.data(), R.data(), x.data(), rstd.data(), BT, C);
  expect_grad_close(dx, numeric_grad(x.data(), x.size(), f), "rmsnorm dx");
  expect_grad_close(dw, numeric_grad(w.data(), w.size(), f), "rmsnorm dw");
  // With a residual gradient: dinp = residual + dx in one pass, whatever dinp held.
  auto res = randn(BT * C, 16);
  std::vector<double> fused(BT * C, 99.0);
  f();
  rmsnorm_backward_input(fused.data(), R.data(), x.data(), rstd.data(), w.data(), BT, C,
                         res.data());
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_NEAR(fused[i], res[i] + dx[i], 1e-12);
}

TEST(Ops, RopeBackwardIsInverseRotation) {
  const int H = 3, hd = 4, ld = H * hd + 2;  // extra columns must be left alone
  std::vector<double> cs(Tn * hd / 2), sn(Tn * hd / 2);
  rope_tables(cs.data(), sn.data(), Tn, hd, 10000.0);
  auto x = randn(BT * ld, 7), R = randn(BT * ld, 8);
  std::vector<double> out;
  auto f = [&] {
    out = x;
    rope_apply(out.data(), ld, 0, H, cs.data(), sn.data(), B, Tn, hd, 1.0);
    return dot(out, R);
  };
  std::vector<double> dx = R;
  rope_apply(dx.data(), ld, 0, H, cs.data(), sn.data(), B, Tn, hd, -1.0);
  expect_grad_close(dx, numeric_grad(x.data(), x.size(), f), "rope dx");
  // position 0 is not rotated; the two trailing columns are untouched
  f();
  for (int c = 0; c < ld; ++c) EXPECT_DOUBLE_EQ(out[c], x[c]);
  EXPECT_DOUBLE_EQ(out[ld + H * hd], x[ld + H * hd]);
}

void check_attention(int H, int KVH) {
  const int hd = 4, Cq = (H + 2 * KVH) * hd, Co = H * hd;
  auto qkv = randn(BT * Cq, 9), R = randn(BT * Co, 10);
  std::vector<double> out(BT * Co), probs(B * H * Tn * Tn), scratch(Tn * Tn);
  auto f = [&] {
    attention_forward(out.data(), probs.data(), qkv.data(), B, Tn, H, KVH, hd);
    return dot(out, R);
  };
  f();
  std::vector<double> dqkv(BT * Cq, 7.0);  // overwritten, not accumulated
  attention_backward(dqkv.data(), scratch.data(), R.data(), probs.data(), qkv.data(), B, Tn, H, KVH,
                     hd);
  expect_grad_close(dqkv, numeric_grad(qkv.data(), qkv.size(), f),
                    "attention dqkv H=" + std::to_string(H) + " KVH=" + std::to_string(KVH));
  // causal: position t depends on nothing after t
  for (int h = 0; h < H; ++h)
    for (int t = 0; t < Tn; ++t)
      for (int j = t + 1; j < Tn; ++j) EXPECT_EQ(probs[(h * Tn + t) * Tn + j], 0.0);
}

TEST(Ops, AttentionMultiHead) {
  check_attention(2, 2);
}
TEST(Ops, AttentionGroupedQuery) {
  check_attention(4, 2);
}
TEST(Ops, AttentionMultiQuery) {
  check_attention(3, 1);
}

TEST(Ops, SwiGlu) {
  const int F = 6;
  auto h13 = randn(BT * 2 * F, 11, 2.0), R = randn(BT * F, 12);
  std::vector<double> out(BT * F);
  auto f = [&] {
    swiglu_forward(out.data(), h13.data(), BT, F);
    return dot(out, R);
  };
  std::vector<double> dh(BT * 2 * F);
  swiglu_backward(dh.data(), R.data(), h13.data(), BT, F);
  expect_grad_close(dh, numeric_grad(h13.data(), h13.size(), f), "swiglu dh13");
}

TEST(Ops, CrossEntropy) {
  const int V = 9;
  auto logits = randn(BT * V, 13, 3.0);
  std::vector<int32_t> targets(BT);
  for (int i = 0; i < BT; ++i) targets[i] = (i * 7) % V;
  std::vector<double> work;
  auto f = [&] {
    work = logits;
    return crossentropy_forward(work.data(), targets.data(), BT, V);
  };
  f();
  std::vector<double> d = work;
  crossentropy_backward(d.data(), targets.data(), BT, V, 1.0 / BT);
  expect_grad_close(d, numeric_grad(logits.data(), logits.size(), f), "crossentropy dlogits");
  // uniform logits give ln V
  std::vector<double> flat(BT * V, 0.5);
  EXPECT_NEAR(crossentropy_forward(flat.data(), targets.data(), BT, V), std::log(double(V)), 1e-12);
}

TEST(Ops, Embedding) {
  const int V = 5;
  auto wte = randn(V * C, 14), R = randn(BT * C, 15);
  std::vector<int32_t> tok(BT);
  for (int i = 0; i < BT; ++i) tok[i] = (i * 3) % V;
  std::vector<double> out(BT * C);
  auto f = [&] {
    embedding_forward(out.data(), tok.data(), wte.data(), BT, C);
    return dot(out, R);
  };
  std::vector<double> dw(V * C, 0.0);
  embedding_backward_weight(dw.data(), R.data(), tok.data(), BT, C);
  expect_grad_close(dw, numeric_grad(wte.data(), wte.size(), f), "embedding dwte");
}

}  // namespace
}  // namespace xdc::model
