// Real training on the default corpus: validation loss falls from ln 256 ~ 5.55 to below
// 2.8 within 200 steps.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "workloads/model/data.h"
#include "workloads/model/local_model.h"

namespace xdc::model {
namespace {

double validation_loss(LocalModel& model, const BatchLoader& val, int batches) {
  const size_t n = model.tokens_per_microbatch();
  std::vector<int32_t> tok(n), tgt(n);
  double sum = 0;
  for (int i = 0; i < batches; ++i) {
    val.fixed(i, batches, tok.data(), tgt.data());
    sum += model.eval_loss(tok, tgt, 1);
  }
  return sum / batches;
}

TEST(Train, DefaultConfigLearnsTheDefaultCorpus) {
  set_compute_threads(2);
  const auto corpus = TextCorpus::load_default();
  ModelConfig cfg;  // the reference config
  const int B = 8, steps = 200, warmup = 20;
  LocalModel model(cfg, 2, B);  // cut in two: training must not care
  BatchLoader train(corpus.train(), B, cfg.seq, 1), val(corpus.validation(), B, cfg.seq, 0);
  const double before = validation_loss(model, val, 4);
  EXPECT_NEAR(before, std::log(256.0), 0.1);
  AdamWConfig opt;
  const double peak_lr = 3e-3;
  std::vector<int32_t> tok(size_t(B) * cfg.seq), tgt(tok.size());
  const auto t0 = std::chrono::steady_clock::now();
  double loss = 0;
  for (int step = 0; step < steps; ++step) {
    const double lr =
        step < warmup
            ? peak_lr * (step + 1) / warmup
            : peak_lr *
                  (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * (step - warmup) / (steps - warmup))));
    train.next(tok.data(), tgt.data());
    loss = model.train_step(tok, tgt, 1, opt, lr);
    ASSERT_TRUE(std::isfinite(loss)) << "step " << step;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double after = validation_loss(model, val, 4);
  std::printf(
      "validation loss %.3f -> %.3f after %d steps (last train loss %.3f), %.1f s, %.0f "
      "tokens/s\n",
      before, after, steps, loss, secs, steps * double(tok.size()) / secs);
  EXPECT_LT(after, 2.8);
}

}  // namespace
}  // namespace xdc::model
