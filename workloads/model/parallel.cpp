#include "workloads/model/parallel.h"

#include <cblas.h>
#include <immintrin.h>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace xdc::model {

namespace {

// Workers spin briefly for the next phase (they follow each other within microseconds
// inside a step), then sleep on the generation counter so an idle rank costs nothing.
class Pool {
 public:
  explicit Pool(int n) : n_(n) {
    for (int t = 1; t < n; ++t) workers_.emplace_back([this, t] { loop(t); });
  }
  ~Pool() {
    stop_.store(true);
    gen_.fetch_add(1, std::memory_order_release);
    gen_.notify_all();
    for (auto& w : workers_) w.join();
  }
  int size() const { return n_; }

  void run(TaskRef fn) {
    task_ = &fn;
    pending_.store(n_ - 1, std::memory_order_relaxed);
    gen_.fetch_add(1, std::memory_order_release);
    gen_.notify_all();
    fn(0, n_);
    for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins < 2000) {
        _mm_pause();
      } else {
        std::this_thread::yield();
      }
    }
  }

 private:
  void loop(int t) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t g;
      for (int spins = 0; (g = gen_.load(std::memory_order_acquire)) == seen; ++spins) {
        if (spins < 4000) {
          _mm_pause();
        } else {
          gen_.wait(seen, std::memory_order_acquire);
        }
      }
      seen = g;
      if (stop_.load()) return;
      (*task_)(t, n_);
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  int n_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> gen_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  const TaskRef* task_ = nullptr;
};

int g_threads = 1;
std::unique_ptr<Pool> g_pool;

}  // namespace

void set_compute_threads(int n) {
  n = n < 1 ? 1 : n;
  openblas_set_num_threads(1);
  if (n == g_threads && (n == 1 || g_pool)) return;
  g_pool.reset();
  g_threads = n;
  if (n > 1) g_pool = std::make_unique<Pool>(n);
}

int compute_threads() {
  return g_threads;
}

void parallel_run(TaskRef fn) {
  if (!g_pool) {
    fn(0, 1);
    return;
  }
  g_pool->run(fn);
}

void parallel_tasks(int tasks, TaskRef fn) {
  if (!g_pool || tasks <= 1) {
    for (int i = 0; i < tasks; ++i) fn(i, 0);
    return;
  }
  std::atomic<int> next{0};
  g_pool->run([&](int t, int) {
    for (int i; (i = next.fetch_add(1, std::memory_order_relaxed)) < tasks;) fn(i, t);
  });
}

}  // namespace xdc::model
