// Steady-state training allocates nothing: every activation comes back from the pool, every
// scratch buffer is kept. Counted by replacing the global operator new in this binary
// (C++ allocations; OpenBLAS's own buffers are allocated once at its first call).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "workloads/model/local_model.h"

namespace {
std::atomic<long> g_news{0};
}

void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace xdc::model {
namespace {

void steady_state_allocations(int threads) {
  set_compute_threads(threads);
  ModelConfig cfg;
  cfg.layers = 2;
  cfg.seq = 32;
  const int B = 4, m = 2;
  LocalModel model(cfg, 2, B);
  std::vector<int32_t> tok(size_t(m) * B * cfg.seq), tgt(tok.size());
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = int32_t(i * 13 % 256), tgt[i] = int32_t(i % 256);
  AdamWConfig opt;
  for (int i = 0; i < 2; ++i) model.train_step(tok, tgt, m, opt, 1e-3);  // warm-up
  const long before = g_news.load();
  for (int i = 0; i < 3; ++i) model.train_step(tok, tgt, m, opt, 1e-3);
  EXPECT_EQ(g_news.load() - before, 0) << threads << " threads";
  set_compute_threads(1);
}

TEST(Allocation, SteadyStateTrainingStepAllocatesNothing) {
  steady_state_allocations(1);
  steady_state_allocations(2);
}

}  // namespace
}  // namespace xdc::model
