#include "workloads/worker/comm.h"

#include <algorithm>
#include <climits>

#include "workloads/worker/arbiter.h"
#include "workloads/worker/stripes.h"

namespace xdc::worker {

namespace {
// MPI counts are int: larger messages go as several requests (same tag, matched in order).
constexpr int64_t kMaxPart = int64_t{1} << 30;
}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Comm::Comm(Progress progress, int poll_us)
    : progress_(progress),
      poll_(std::max(poll_us, 1)),
      interval_(poll_),
      thread_([this] { run(); }) {}

Comm::~Comm() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Comm::Request* Comm::submit(Request::Op op, void* buf, int64_t count, int peer, int tag,
                            MPI_Comm comm, SendOrder order, ReduceUnits units) {
  Request* r;
  {
    std::lock_guard lk(mu_);
    if (free_.empty()) {
      slots_.push_back(std::make_unique<Request>());
      r = slots_.back().get();
    } else {
      r = free_.back();
      free_.pop_back();
    }
    r->op = op;
    r->buf = buf;
    r->count = count;
    r->peer = peer;
    r->tag = tag;
    r->comm = comm;
    r->unit = units.unit;
    r->reduce = units.reduce;
    r->unit_bytes = units.bytes;
    r->submit_ns = now_ns();
    r->complete_ns = 0;
    r->done.store(false, std::memory_order_relaxed);
    r->order_iteration = order.iteration;
    r->order_key = order.key;
    r->wan_ticket = -1;
    r->wan_dc = -1;
    r->wan_release = false;
    queue_.push_back(r);
  }
  wake_.notify_one();
  return r;
}

Comm::Request* Comm::isend(const void* buf, int64_t bytes, int peer, int tag, MPI_Comm comm,
                           SendOrder order) {
  return submit(Request::Op::kSend, const_cast<void*>(buf), bytes, peer, tag, comm, order);
}
Comm::Request* Comm::irecv(void* buf, int64_t bytes, int peer, int tag, MPI_Comm comm) {
  return submit(Request::Op::kRecv, buf, bytes, peer, tag, comm);
}
Comm::Request* Comm::iallreduce_sum(float* buf, int64_t n, MPI_Comm comm) {
  return submit(Request::Op::kAllreduceFloat, buf, n, -1, 0, comm);
}
Comm::Request* Comm::iallreduce_sum(double* buf, int64_t n, MPI_Comm comm) {
  return submit(Request::Op::kAllreduceDouble, buf, n, -1, 0, comm);
}
Comm::Request* Comm::iallreduce_units(void* buf, int64_t n, MPI_Datatype unit, int64_t unit_bytes,
                                      MPI_Op reduce, MPI_Comm comm) {
  return submit(Request::Op::kAllreduceUnits, buf, n, -1, 0, comm, {},
                ReduceUnits{unit, reduce, unit_bytes});
}
Comm::Request* Comm::ibarrier(MPI_Comm comm) {
  return submit(Request::Op::kBarrier, nullptr, 0, -1, 0, comm);
}

bool Comm::wait(Request* r, std::chrono::steady_clock::time_point deadline) {
  if (test(r)) return true;
  std::unique_lock lk(mu_);
  ++waiting_;
  wake_.notify_one();  // Progress::kNone polls only while someone waits
  const bool ok = completed_.wait_until(lk, deadline, [r] { return test(r); });
  --waiting_;
  return ok;
}

void Comm::release(Request* r) {
  std::lock_guard lk(mu_);
  free_.push_back(r);
}

void Comm::attach_stripes(Stripes* s, MPI_Comm comm) {
  stripes_ = s;
  stripes_comm_ = comm;
}

void Comm::complete_external(Request* r) {
  bool release = false;
  {
    std::lock_guard lk(mu_);  // a waiter between its check and its sleep holds mu_
    if (r->wan_release) {     // the comm thread frees the WAN direction it came over
      released_.push_back(r->wan_dc);
      release = true;
    }
    r->done.store(true, std::memory_order_release);
  }
  completed_.notify_all();
  if (release) wake_.notify_one();
}

void Comm::attach_arbiter(WanArbiter* a, MPI_Comm comm) {
  arbiter_ = a;
  arbiter_comm_ = comm;
}

void Comm::detach_arbiter() {
  std::unique_lock lk(mu_);
  if (!arbiter_) return;
  detach_ = true;
  wake_.notify_one();
  detached_.wait(lk, [this] { return !detach_; });
}

void Comm::release_wan_from(int peer) {
  {
    std::lock_guard lk(mu_);
    released_.push_back(arbiter_->dc_of(peer));
  }
  wake_.notify_one();
}

bool Comm::arbiter_pending() const {
  return arbiter_ && (arbiter_->pending() || !held_.empty());
}

void Comm::poll_arbiter() {
  if (!arbiter_) return;
  std::vector<int> released;
  {
    std::lock_guard lk(mu_);
    released.swap(released_);
  }
  for (int dc : released) arbiter_->release(dc);
  for (int64_t ticket : arbiter_->poll()) {
    const auto it = held_.find(ticket);
    if (it == held_.end()) continue;
    Request* r = it->second;
    held_.erase(it);
    issue_now(r);
  }
}

void Comm::issue(Request* r) {
  if (arbiter_ && r->comm == arbiter_comm_ && r->peer >= 0 && arbiter_->crosses_wan(r->peer)) {
    if (r->op == Request::Op::kSend && r->order_key >= 0) {  // wait for the direction's grant
      r->wan_ticket = arbiter_->request(r->peer, r->order_iteration, r->order_key);
      held_[r->wan_ticket] = r;
      return;
    }
    // Its arrival frees the direction it came over; over the stripes, they release it
    // a round trip of bytes earlier (release_wan_from).
    if (r->op == Request::Op::kRecv && !(stripes_ && stripes_->connections(r->peer) > 0)) {
      r->wan_dc = arbiter_->dc_of(r->peer);
      r->wan_release = true;
    }
  }
  issue_now(r);
}

void Comm::issue_now(Request* r) {
  if (stripes_ && r->comm == stripes_comm_ &&
      (r->op == Request::Op::kSend || r->op == Request::Op::kRecv) &&
      stripes_->connections(r->peer) > 0) {
    r->op == Request::Op::kSend ? stripes_->send(r) : stripes_->recv(r);
    return;
  }
  const size_t elem = r->op == Request::Op::kAllreduceFloat    ? sizeof(float)
                      : r->op == Request::Op::kAllreduceDouble ? sizeof(double)
                      : r->op == Request::Op::kAllreduceUnits  ? static_cast<size_t>(r->unit_bytes)
                                                               : 1;
  auto* base = static_cast<char*>(r->buf);
  int64_t left = r->count;
  r->parts_left = 0;
  do {
    const int part = static_cast<int>(std::min(left, kMaxPart));
    MPI_Request q = MPI_REQUEST_NULL;
    switch (r->op) {
      case Request::Op::kSend:
        MPI_Isend(base, part, MPI_BYTE, r->peer, r->tag, r->comm, &q);
        break;
      case Request::Op::kRecv:
        MPI_Irecv(base, part, MPI_BYTE, r->peer, r->tag, r->comm, &q);
        break;
      case Request::Op::kAllreduceFloat:
        MPI_Iallreduce(MPI_IN_PLACE, base, part, MPI_FLOAT, MPI_SUM, r->comm, &q);
        break;
      case Request::Op::kAllreduceDouble:
        MPI_Iallreduce(MPI_IN_PLACE, base, part, MPI_DOUBLE, MPI_SUM, r->comm, &q);
        break;
      case Request::Op::kAllreduceUnits:
        MPI_Iallreduce(MPI_IN_PLACE, base, part, r->unit, r->reduce, r->comm, &q);
        break;
      case Request::Op::kBarrier:
        MPI_Ibarrier(r->comm, &q);
        break;
    }
    mpi_reqs_.push_back(q);
    owners_.push_back(r);
    ++r->parts_left;
    base += part * elem;
    left -= part;
  } while (left > 0);
  if (r->op == Request::Op::kSend) sends_pending_.fetch_add(1, std::memory_order_relaxed);
}

void Comm::poll_once() {
  const int n = static_cast<int>(mpi_reqs_.size());
  if (n == 0) return;
  done_idx_.resize(n);
  int outcount = 0;
  MPI_Testsome(n, mpi_reqs_.data(), &outcount, done_idx_.data(), MPI_STATUSES_IGNORE);
  if (outcount <= 0) {
    interval_ = std::min(interval_ * 2, poll_ * kPollBackoff);
    return;
  }
  interval_ = poll_;
  const int64_t t = now_ns();
  bool any = false;
  for (int k = 0; k < outcount; ++k) {
    Request* r = owners_[done_idx_[k]];
    if (--r->parts_left == 0) {
      if (r->op == Request::Op::kSend) sends_pending_.fetch_sub(1, std::memory_order_relaxed);
      if (r->wan_release) arbiter_->release(r->wan_dc);
      r->complete_ns = t;
      r->done.store(true, std::memory_order_release);
      any = true;
    }
    owners_[done_idx_[k]] = nullptr;
  }
  size_t w = 0;
  for (size_t i = 0; i < owners_.size(); ++i) {
    if (owners_[i] == nullptr) continue;
    owners_[w] = owners_[i];
    mpi_reqs_[w] = mpi_reqs_[i];
    ++w;
  }
  owners_.resize(w);
  mpi_reqs_.resize(w);
  if (any) {
    { std::lock_guard lk(mu_); }  // a waiter between its check and its sleep holds mu_
    completed_.notify_all();
  }
}

void Comm::run() {
  std::vector<Request*> batch;
  for (;;) {
    {
      std::unique_lock lk(mu_);
      for (;;) {
        if (!queue_.empty() || !released_.empty() || detach_) break;
        if (stop_) return;
        const bool poll =
            (!owners_.empty() || arbiter_pending()) &&
            (progress_ == Progress::kThread || waiting_ > 0 || sends_pending_.load() > 0);
        if (poll) break;
        wake_.wait(lk);
      }
      batch.swap(queue_);
      if (detach_) {  // every rank is past its last ordered send (the caller's barrier)
        arbiter_->shutdown();
        arbiter_ = nullptr;
        detach_ = false;
        detached_.notify_all();
      }
    }
    if (!batch.empty()) interval_ = poll_;
    for (Request* r : batch) issue(r);
    batch.clear();
    poll_arbiter();
    poll_once();
    if (!owners_.empty() || arbiter_pending()) {
      std::unique_lock lk(mu_);
      const auto period = poll_period(waiting_ > 0, sends_pending_.load() > 0, poll_, interval_);
      const int waiters = waiting_;  // a new waiter ends a long quiet period at once
      wake_.wait_for(lk, period, [&] {
        return !queue_.empty() || stop_ || waiting_ > waiters || !released_.empty() || detach_;
      });
    }
  }
}

}  // namespace xdc::worker
