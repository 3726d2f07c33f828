// The Stage contract: whole-model gradients against finite differences, cut into 1, 2 and
// 4 stages = uncut, B then W = combined backward, m microbatches of b = one batch of m*b,
// several microbatches in flight, activation accounting, checkpoints.
#include "workloads/model/stage.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "tests/model/gradcheck.h"
#include "workloads/model/local_model.h"

namespace xdc::model {
namespace {

using testing::ids;

// Small enough for finite differences over every parameter; GQA on (4 heads, 2 KV heads).
ModelConfig check_config() {
  ModelConfig c;
  c.vocab = 11;
  c.dim = 16;
  c.layers = 4;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn = 12;
  c.seq = 6;
  c.seed = 7;
  return c;
}

// Gradients of every stage gathered by tensor name.
template <typename T>
std::map<std::string, std::vector<double>> by_name(LocalModelT<T>& m, bool grads) {
  std::map<std::string, std::vector<double>> out;
  for (int s = 0; s < m.num_stages(); ++s) {
    auto& st = m.stage(s);
    auto buf = grads ? st.grads() : st.params();
    for (const auto& t : st.tensors())
      out[t.name].assign(buf.begin() + t.offset, buf.begin() + t.offset + t.size);
  }
  return out;
}

TEST(Stage, WholeModelGradientMatchesFiniteDifferences) {
  const ModelConfig cfg = check_config();
  const int B = 2, m = 2;
  LocalModelT<double> model(cfg, 1, B);
  const size_t n = size_t(m) * B * cfg.seq;
  auto tok = ids(n, cfg.vocab, 1), tgt = ids(n, cfg.vocab, 2);
  model.forward_backward(tok, tgt, m);
  auto& st = model.stage(0);
  std::vector<double> analytic(st.grads().begin(), st.grads().end());
  // Every parameter (about 6k), tensor by tensor; the loss is over 2 microbatches of 2.
  auto f = [&] { return model.eval_loss(tok, tgt, m); };
  for (const auto& t : st.tensors()) {
    const std::vector<double> a(analytic.begin() + t.offset, analytic.begin() + t.offset + t.size);
    testing::expect_grad_close(a, testing::numeric_grad(st.params().data() + t.offset, t.size, f),
                               t.name, 1e-6);
  }
}

TEST(Stage, InitDoesNotDependOnTheCut) {
  const ModelConfig cfg = check_config();
  LocalModelT<float> one(cfg, 1, 1), four(cfg, 4, 1);
  EXPECT_EQ(by_name(one, false), by_name(four, false));
}

template <typename T>
void expect_cut_equivalent(int stages, bool split_bw) {
  ModelConfig cfg = check_config();
  cfg.dim = 32;
  cfg.ffn = 40;
  cfg.vocab = 29;
  cfg.seq = 16;
  const int B = 2, m = 3;
  const size_t n = size_t(m) * B * cfg.seq;
  auto tok = ids(n, cfg.vocab, 3), tgt = ids(n, cfg.vocab, 4);
  LocalModelT<T> ref(cfg, 1, B), cut(cfg, stages, B);
  const double l_ref = ref.forward_backward(tok, tgt, m, false);
  const double l_cut = cut.forward_backward(tok, tgt, m, split_bw);
  EXPECT_NEAR(l_cut, l_ref, 1e-6 * std::abs(l_ref));
  auto g_ref = by_name(ref, true), g_cut = by_name(cut, true);
  ASSERT_EQ(g_ref.size(), g_cut.size());
  for (const auto& [name, g] : g_ref) {
    const auto& h = g_cut.at(name);
    double scale = 0, err = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      scale = std::max(scale, std::abs(g[i]));
      err = std::max(err, std::abs(g[i] - h[i]));
    }
    EXPECT_GT(scale, 0.0) << name;
    EXPECT_LE(err, 1e-6 * scale) << name << " with " << stages << " stages";
  }
}

TEST(Stage, CutIntoTwoAndFourStagesEqualsUncutFloat) {
  for (int s : {1, 2, 4}) expect_cut_equivalent<float>(s, false);
  for (int s : {1, 2, 4}) expect_cut_equivalent<float>(s, true);
}
TEST(Stage, CutIntoTwoAndFourStagesEqualsUncutDouble) {
  for (int s : {2, 4}) expect_cut_equivalent<double>(s, true);
}

TEST(Stage, BackwardInputThenWeightIsExactlyBackward) {
  const ModelConfig cfg = check_config();
  const int B = 3, m = 2;
  const size_t n = size_t(m) * B * cfg.seq;
  auto tok = ids(n, cfg.vocab, 5), tgt = ids(n, cfg.vocab, 6);
  LocalModelT<float> a(cfg, 2, B), b(cfg, 2, B);
  EXPECT_EQ(a.forward_backward(tok, tgt, m, false), b.forward_backward(tok, tgt, m, true));
  EXPECT_EQ(by_name(a, true), by_name(b, true));  // bitwise
}

TEST(Stage, MicrobatchesAccumulateToTheFullBatchGradient) {
  const ModelConfig cfg = check_config();
  const int m = 4, b = 2;
  const size_t n = size_t(m) * b * cfg.seq;
  auto tok = ids(n, cfg.vocab, 7), tgt = ids(n, cfg.vocab, 8);
  LocalModelT<double> small(cfg, 2, b), big(cfg, 2, m * b);
  const double l_small = small.forward_backward(tok, tgt, m);
  const double l_big = big.forward_backward(tok, tgt, 1);
  EXPECT_NEAR(l_small, l_big, 1e-12);
  auto gs = by_name(small, true), gb = by_name(big, true);
  for (const auto& [name, g] : gs)
    for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], gb[name][i], 1e-12) << name;
}

// Several microbatches in flight, B and W interleaved as a zero-bubble schedule would:
// the same gradients as one after the other (up to float summation order: none here,
// since W of each microbatch adds into the gradients in microbatch order).
TEST(Stage, MicrobatchesInFlightAreIndependent) {
  const ModelConfig cfg = check_config();
  const int B = 2, m = 3;
  const size_t per = size_t(B) * cfg.seq;
  auto tok = ids(per * m, cfg.vocab, 9), tgt = ids(per * m, cfg.vocab, 10);
  LocalModelT<double> ref(cfg, 1, B);
  ref.forward_backward(tok, tgt, m);
  StageT<double> st(cfg, {0, cfg.layers}, B);
  st.set_microbatches(m);
  std::vector<double> losses(m);
  for (int mb = 0; mb < m; ++mb) {
    StageInput<double> in;
    in.tokens = std::span<const int32_t>(tok).subspan(mb * per, per);
    in.targets = std::span<const int32_t>(tgt).subspan(mb * per, per);
    losses[mb] = st.forward(mb, in).loss;
  }
  EXPECT_EQ(st.in_flight(), m);
  st.backward_input(2);
  st.backward_input(0);
  st.backward_weight(2);
  st.backward_input(1);
  st.backward_weight(0);
  st.backward_weight(1);
  EXPECT_EQ(st.in_flight(), 0);
  auto& r = ref.stage(0);
  for (size_t i = 0; i < st.grads().size(); ++i)
    ASSERT_NEAR(st.grads()[i], r.grads()[i], 1e-13 * (1 + std::abs(r.grads()[i])));
  EXPECT_THROW(st.backward_input(0), std::logic_error);  // not in flight any more
}

// Two compute threads split F and B by sequence (3 sequences: uneven) and W by gradient
// rows; the result equals one thread's.
TEST(Stage, TwoThreadsGiveTheSameGradients) {
  const ModelConfig cfg = check_config();
  const int B = 3, m = 2;
  const size_t n = size_t(m) * B * cfg.seq;
  auto tok = ids(n, cfg.vocab, 17), tgt = ids(n, cfg.vocab, 18);
  LocalModelT<float> one(cfg, 2, B), two(cfg, 2, B);
  AdamWConfig opt;
  set_compute_threads(1);
  const double l1 = one.train_step(tok, tgt, m, opt, 1e-2);
  const double l1b = one.forward_backward(tok, tgt, m, true);
  set_compute_threads(2);
  const double l2 = two.train_step(tok, tgt, m, opt, 1e-2);
  const double l2b = two.forward_backward(tok, tgt, m, true);
  set_compute_threads(1);
  EXPECT_NEAR(l1, l2, 1e-6 * l1);
  EXPECT_NEAR(l1b, l2b, 1e-6 * l1b);
  auto g1 = by_name(one, true), g2 = by_name(two, true);
  for (const auto& [name, g] : g1) {
    double scale = 0, err = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      scale = std::max(scale, double(std::abs(g[i])));
      err = std::max(err, double(std::abs(g[i] - g2[name][i])));
    }
    EXPECT_LE(err, 1e-5 * scale) << name;
  }
}

TEST(Stage, ActivationAccountingIsExactAndReleased) {
  ModelConfig cfg;  // reference config, 2 stages
  cfg.layers = 2;
  const int B = 2;
  LocalModelT<float> model(cfg, 2, B);
  const size_t n = size_t(B) * cfg.seq;
  auto tok = ids(n, cfg.vocab, 11), tgt = ids(n, cfg.vocab, 12);
  auto& s0 = model.stage(0);
  auto& s1 = model.stage(1);
  StageInput<float> in0;
  in0.tokens = tok;
  auto out0 = s0.forward(0, in0);
  EXPECT_EQ(s0.live_activation_bytes(), s0.activation_bytes_after_forward());
  EXPECT_EQ(out0.acts.size_bytes(), s0.boundary_bytes());
  StageInput<float> in1;
  in1.acts = out0.acts;
  in1.targets = tgt;
  s1.forward(0, in1);
  EXPECT_EQ(s1.live_activation_bytes(), s1.activation_bytes_after_forward());
  // A second microbatch in flight doubles it.
  s0.forward(1, in0);
  EXPECT_EQ(s0.live_activation_bytes(), 2 * s0.activation_bytes_after_forward());
  s0.discard(1);
  auto g = s1.backward_input(0);
  EXPECT_EQ(s1.live_activation_bytes(), s1.activation_bytes_after_backward_input());
  std::vector<float> gcopy(g.begin(), g.end());
  s1.backward_weight(0);
  EXPECT_EQ(s1.live_activation_bytes(), 0u);
  s0.backward_input(0, gcopy);
  EXPECT_EQ(s0.live_activation_bytes(), s0.activation_bytes_after_backward_input());
  s0.backward_weight(0);
  EXPECT_EQ(s0.live_activation_bytes(), 0u);
  EXPECT_GE(s0.peak_activation_bytes(), 2 * s0.activation_bytes_after_forward());
  // B releases layer by layer: one microbatch's peak is its held set plus at most one
  // layer's gradients, not the F set and the B set together.
  s1.reset_peak_activation_bytes();
  s1.forward(2, in1);
  s1.backward(2, {});
  const size_t BT = size_t(B) * cfg.seq;
  const size_t one_layer_b = BT * (2 * cfg.ffn + 4 * cfg.dim + cfg.qkv_dim()) * sizeof(float);
  EXPECT_LE(s1.peak_activation_bytes(),
            s1.activation_bytes_after_forward() + one_layer_b + 3 * BT * cfg.dim * sizeof(float));
  EXPECT_LT(s1.peak_activation_bytes(),
            s1.activation_bytes_after_forward() + s1.activation_bytes_after_backward_input());
}

TEST(Stage, SizesForTheExecutor) {
  const ModelConfig cfg;  // reference: vocab 256, dim 256, 4 layers, ffn 688, seq 128
  LocalModelT<float> whole(cfg, 1, 8), cut(cfg, 4, 8);
  EXPECT_EQ(whole.stage(0).param_count(), cfg.param_count());
  int64_t sum = 0;
  double flops = 0;
  for (int s = 0; s < 4; ++s) {
    sum += cut.stage(s).param_count();
    flops += cut.stage(s).flops_per_token();
  }
  EXPECT_EQ(sum, cfg.param_count());
  EXPECT_DOUBLE_EQ(flops, cfg.train_flops_per_token());
  EXPECT_DOUBLE_EQ(whole.stage(0).flops_per_token(), cfg.train_flops_per_token());
  EXPECT_EQ(cut.stage(1).boundary_bytes(), size_t(8) * 128 * 256 * 4);
  // 6N + 12 L d T with N = 4 blocks + final norm + head
  const double N =
      4 * (2 * 256 + 768 * 256 + 256 * 256 + 2 * 688 * 256 + 688 * 256) + 256 + 256 * 256;
  EXPECT_DOUBLE_EQ(cfg.train_flops_per_token(), 6 * N + 12.0 * 4 * 256 * 128);
}

TEST(Stage, CheckpointRoundTripsParametersAndOptimizer) {
  const ModelConfig cfg = check_config();
  const int B = 2;
  const size_t n = size_t(B) * cfg.seq;
  auto tok = ids(n, cfg.vocab, 13), tgt = ids(n, cfg.vocab, 14);
  AdamWConfig opt;
  LocalModelT<float> a(cfg, 2, B), b(cfg, 2, B);
  a.train_step(tok, tgt, 1, opt, 1e-2);
  const std::string dir = ::testing::TempDir();
  for (int s = 0; s < 2; ++s) a.stage(s).save(dir + "/ckpt" + std::to_string(s));
  for (int s = 0; s < 2; ++s) b.stage(s).load(dir + "/ckpt" + std::to_string(s));
  EXPECT_EQ(by_name(a, false), by_name(b, false));
  EXPECT_EQ(b.stage(0).optimizer_steps(), 1);
  // The optimizer state came along: the next steps are identical.
  const double la = a.train_step(tok, tgt, 1, opt, 1e-2);
  const double lb = b.train_step(tok, tgt, 1, opt, 1e-2);
  EXPECT_EQ(la, lb);
  EXPECT_EQ(by_name(a, false), by_name(b, false));
  // A checkpoint of another stage range is refused.
  EXPECT_THROW(b.stage(1).load(dir + "/ckpt0"), std::runtime_error);
  for (int s = 0; s < 2; ++s) std::remove((dir + "/ckpt" + std::to_string(s)).c_str());
}

TEST(Stage, ClippingUsesTheGlobalNorm) {
  const ModelConfig cfg = check_config();
  const int B = 2;
  const size_t n = size_t(B) * cfg.seq;
  auto tok = ids(n, cfg.vocab, 15), tgt = ids(n, cfg.vocab, 16);
  LocalModelT<double> one(cfg, 1, B), two(cfg, 2, B);
  one.forward_backward(tok, tgt, 1);
  two.forward_backward(tok, tgt, 1);
  EXPECT_NEAR(one.grad_norm(), two.grad_norm(), 1e-12);
  EXPECT_NEAR(one.stage(0).grad_sq_norm(),
              two.stage(0).grad_sq_norm() + two.stage(1).grad_sq_norm(),
              1e-12 * one.stage(0).grad_sq_norm());
  EXPECT_DOUBLE_EQ(clip_scale(4.0, 1.0), 1.0 / (2.0 + 1e-6));
  EXPECT_DOUBLE_EQ(clip_scale(0.25, 1.0), 1.0);
  // One AdamW step with clipping: cut and uncut models stay identical.
  AdamWConfig opt;
  opt.grad_clip = 0.01;
  one.optimizer_step(opt, 1e-2);
  two.optimizer_step(opt, 1e-2);
  auto p1 = by_name(one, false), p2 = by_name(two, false);
  for (const auto& [name, p] : p1)
    for (size_t i = 0; i < p.size(); ++i) ASSERT_NEAR(p[i], p2[name][i], 1e-14) << name;
  // Norm weights are not decayed: with zero gradients only matrices move.
  LocalModelT<double> wd(cfg, 1, B);
  wd.stage(0).zero_grad();
  const std::vector<double> before(wd.stage(0).params().begin(), wd.stage(0).params().end());
  opt.weight_decay = 0.5;
  wd.stage(0).optimizer_step(opt, 0.1);
  for (const auto& t : wd.stage(0).tensors()) {
    const double v = wd.stage(0).params()[t.offset], v0 = before[t.offset];
    EXPECT_DOUBLE_EQ(v, t.decay ? v0 * (1 - 0.1 * 0.5) : v0) << t.name;
  }
}

}  // namespace
}  // namespace xdc::model
