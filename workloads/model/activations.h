#pragma once
// Activation memory of a stage: every buffer a microbatch keeps between its F, B and W
// comes from an ActivationPool, which counts live bytes (and their peak) exactly. A buffer
// released goes back to the pool for the next microbatch of the same shape, so steady-state
// training allocates nothing, and the process's memory high-water mark is the schedule's
// peak of live activations (a 1F1B run really holds less than a GPipe run).
#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace xdc::model {

template <typename T>
class ActivationPool;

// A pooled buffer of n elements, 64-byte aligned, uninitialised. Move-only; returns its
// memory to the pool when reset or destroyed.
template <typename T>
class Buf {
 public:
  Buf() = default;
  Buf(Buf&& o) noexcept { *this = std::move(o); }
  Buf& operator=(Buf&& o) noexcept {
    if (this != &o) {
      reset();
      std::swap(pool_, o.pool_);
      std::swap(data_, o.data_);
      std::swap(n_, o.n_);
    }
    return *this;
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  ~Buf() { reset(); }

  T* data() const { return data_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }
  explicit operator bool() const { return data_ != nullptr; }
  void reset();

 private:
  friend class ActivationPool<T>;
  ActivationPool<T>* pool_ = nullptr;
  T* data_ = nullptr;
  size_t n_ = 0;
};

template <typename T>
class ActivationPool {
 public:
  ActivationPool() = default;
  ActivationPool(const ActivationPool&) = delete;
  ActivationPool& operator=(const ActivationPool&) = delete;
  ~ActivationPool() {
    for (auto& [n, ptrs] : free_)
      for (T* p : ptrs) std::free(p);
  }

  Buf<T> acquire(size_t n) {
    Buf<T> b;
    auto it = free_.find(n);
    if (it != free_.end() && !it->second.empty()) {
      b.data_ = it->second.back();
      it->second.pop_back();
    } else {
      const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
      b.data_ = static_cast<T*>(std::aligned_alloc(64, bytes ? bytes : 64));
      if (!b.data_) throw std::bad_alloc();
    }
    b.pool_ = this;
    b.n_ = n;
    live_bytes_ += n * sizeof(T);
    if (live_bytes_ > peak_bytes_) peak_bytes_ = live_bytes_;
    return b;
  }

  size_t live_bytes() const { return live_bytes_; }  // held by microbatches now
  size_t peak_bytes() const { return peak_bytes_; }  // high-water mark of live_bytes
  void reset_peak() { peak_bytes_ = live_bytes_; }

 private:
  friend class Buf<T>;
  void give_back(T* p, size_t n) {
    live_bytes_ -= n * sizeof(T);
    free_[n].push_back(p);
  }
  std::map<size_t, std::vector<T*>> free_;
  size_t live_bytes_ = 0, peak_bytes_ = 0;
};

template <typename T>
void Buf<T>::reset() {
  if (data_) pool_->give_back(data_, n_);
  pool_ = nullptr;
  data_ = nullptr;
  n_ = 0;
}

}  // namespace xdc::model
