#pragma once
// Fork-join over the compute threads of a rank. A stage parallelises its own work rather
// than each GEMM's: F and B split the microbatch's sequences (every op but the weight
// gradients is independent per sequence), W splits each weight gradient's rows. So a
// phase costs one fork-join, the BLAS runs single-threaded inside, and no two thread
// pools compete for the cores. Work is handed out in more pieces than threads, so that
// on a shared machine a descheduled thread does not hold the others up.
#include <cstdint>
#include <type_traits>
#include <utility>

namespace xdc::model {

// Threads of the model (the caller plus workers), per process. Default 1: two ranks x one
// thread beat one rank x two threads, and oversubscription collapses throughput. The BLAS
// itself is always kept at one thread. Set it before training, not during a pass.
void set_compute_threads(int n);
int compute_threads();

// A non-owning reference to a callable void(int, int): no allocation per parallel call.
// Valid for the full expression it is created in, which is all a fork-join needs.
class TaskRef {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, TaskRef>>>
  TaskRef(F&& f)  // NOLINT: implicit from any callable, like std::function
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, int a, int b) { (*static_cast<std::remove_reference_t<F>*>(o))(a, b); }) {
  }
  void operator()(int a, int b) const { call_(obj_, a, b); }

 private:
  void* obj_;
  void (*call_)(void*, int, int);
};

// Runs fn(t, n) for t in [0, n) concurrently, n = compute_threads(); t = 0 on the caller.
// Returns when every part is done. Not reentrant: one calling thread at a time (the
// executor's compute thread), never from inside fn.
void parallel_run(TaskRef fn);  // fn(int t, int n)

// Runs fn(task, t) for every task in [0, tasks), handed out dynamically to the threads
// (t = the thread running it): a thread that another process delays gets fewer tasks.
void parallel_tasks(int tasks, TaskRef fn);  // fn(int task, int t)

// The t-th of n near-equal contiguous parts of [0, total).
inline std::pair<int64_t, int64_t> split_range(int64_t total, int t, int n) {
  const int64_t q = total / n, r = total % n;
  const int64_t begin = t * q + (t < r ? t : r);
  return {begin, begin + q + (t < r ? 1 : 0)};
}

}  // namespace xdc::model
