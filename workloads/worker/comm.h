#pragma once
// The worker's MPI traffic, owned by one communication thread. The executor (compute
// thread) submits non-blocking operations and later waits for them; the comm thread
// issues every MPI call and, while any request is pending, calls MPI_Testsome, so that a
// rendezvous message (over OpenMPI's 64 KiB eager limit) progresses while the compute
// thread is busy in a layer. Without it a 4 MiB Isend to a computing rank completes only
// when that rank next enters MPI: OpenMPI's btl/tcp progresses only inside MPI calls.
//
// Poll period (poll_period): `poll_us` while the executor waits or a send is pending, and
// right after any submission or completion; each quiet poll after that doubles it, up to
// kPollBackoff x poll_us (poll.h, which the simulator times answers with), so that a rank computing
// with only far-off receives posted costs little CPU (each poll is a futex wait plus an epoll in
// OpenMPI; at 100 us that was ~5% of a core per rank). A pending send is moved on only by polls
// (the rendezvous answer is read, the socket refilled), and a poll that moves it completes nothing,
// so a backed-off period held a 256 KiB send to a LAN neighbour for ~1 ms while its sender
// computed.
//
// Progress::kNone keeps the same code path but polls only while the executor is blocked
// in wait() or one of its Isends is pending: a rank that computes with only receives
// outstanding does not answer a rendezvous: the stalled receiver (a 4 MiB Isend to a rank
// computing 300 ms completes after ~302 ms). It exists to measure what the comm thread
// buys.
//
// Requests are reusable slots: submit -> wait/test -> release. Sizes may exceed INT_MAX
// (split into several MPI requests). Times are steady_clock ns of this process.
//
// With stripes attached (attach_stripes), sends and receives on that communicator to a
// peer the stripes connect go over the worker's own sockets (stripes.h) instead of
// OpenMPI; the comm thread hands them over and the stripes' I/O thread completes them.
//
// With a WAN arbiter attached (attach_arbiter; mpi.wan_sharing: temporal, arbiter.h), a
// send submitted with an order key (isend's `order`) to a peer in another DC is issued only
// once the arbiter grants its direction, and the receiver's comm thread releases the
// direction when the message has arrived (a receive from a peer in another DC), or, over
// the stripes, when its last round trip of bytes is on the way (release_wan_from).
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "workloads/worker/poll.h"

namespace xdc::worker {

class Stripes;
class WanArbiter;

enum class Progress { kThread, kNone };

struct SendOrder {  // a send's place in temporal WAN sharing (arbiter.h); key < 0: none
  int64_t iteration = 0, key = -1;
};

struct ReduceUnits {  // Comm::iallreduce_units' datatype and op
  MPI_Datatype unit = MPI_DATATYPE_NULL;
  MPI_Op reduce = MPI_OP_NULL;
  int64_t bytes = 0;
};

class Comm {
 public:
  struct Request {
    enum class Op { kSend, kRecv, kAllreduceFloat, kAllreduceDouble, kAllreduceUnits, kBarrier };
    Op op = Op::kSend;
    void* buf = nullptr;
    int64_t count = 0;  // bytes (send/recv) or elements (allreduce)
    int peer = -1;
    int tag = 0;
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Datatype unit = MPI_DATATYPE_NULL;  // kAllreduceUnits: one unit of unit_bytes
    MPI_Op reduce = MPI_OP_NULL;            // and the user op that sums two of them
    int64_t unit_bytes = 0;
    int64_t submit_ns = 0;    // when the executor handed it over
    int64_t complete_ns = 0;  // when the comm thread saw it complete
    std::atomic<bool> done{false};
    int parts_left = 0;  // comm thread only
    // Temporal WAN sharing (attach_arbiter): a send's order (iteration, key; key < 0: not
    // ordered) and, once requested, its ticket; a receive over the WAN on OpenMPI frees
    // the direction from its source's DC when it completes.
    int64_t order_iteration = 0, order_key = -1, wan_ticket = -1;
    int wan_dc = -1;
    bool wan_release = false;
  };

  Comm(Progress progress, int poll_us);
  ~Comm();  // finishes pending requests' bookkeeping and joins the thread
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  Request* isend(const void* buf, int64_t bytes, int peer, int tag, MPI_Comm comm,
                 SendOrder order = {});
  Request* irecv(void* buf, int64_t bytes, int peer, int tag, MPI_Comm comm);
  Request* iallreduce_sum(float* buf, int64_t n, MPI_Comm comm);  // in place
  Request* iallreduce_sum(double* buf, int64_t n, MPI_Comm comm);
  // In place over `n` units of a committed datatype `unit` (unit_bytes each) with the
  // user op `reduce` (outer_sync.h: encoded payloads).
  Request* iallreduce_units(void* buf, int64_t n, MPI_Datatype unit, int64_t unit_bytes,
                            MPI_Op reduce, MPI_Comm comm);
  Request* ibarrier(MPI_Comm comm);

  static bool test(const Request* r) { return r->done.load(std::memory_order_acquire); }
  // Blocks (no spinning) until r completes or the deadline passes; false on timeout.
  bool wait(Request* r, std::chrono::steady_clock::time_point deadline);
  void release(Request* r);  // r must be complete

  // Point-to-point requests on `comm` to peers `s` connects go through `s` from now on.
  // Call before the first submission; `s` outlives this Comm's use of it.
  void attach_stripes(Stripes* s, MPI_Comm comm);
  // Completion of a request finished outside MPI (the stripes' I/O thread); complete_ns set.
  void complete_external(Request* r);
  // Ordered sends on `comm` (the world `a` was built on) to peers in other DCs wait for
  // `a`'s grant from now on, receives from them release it (call before the
  // first submission; `a` outlives this Comm's use of it). detach_arbiter() (the executor's
  // thread, every send complete) has the comm thread shut `a` down and stop using it.
  void attach_arbiter(WanArbiter* a, MPI_Comm comm);
  // A message from world rank `peer` (another DC) has nearly arrived over the stripes: its
  // direction goes to the next transfer (any thread; the stripes' nearly_arrived).
  void release_wan_from(int peer);
  void detach_arbiter();

 private:
  Request* submit(Request::Op op, void* buf, int64_t count, int peer, int tag, MPI_Comm comm,
                  SendOrder order = {}, ReduceUnits units = {});
  void run();
  void issue(Request* r);
  void issue_now(Request* r);  // past the arbiter
  void poll_once();
  void poll_arbiter();
  bool arbiter_pending() const;

  const Progress progress_;
  const std::chrono::microseconds poll_;
  std::chrono::microseconds interval_;  // comm thread only

  std::mutex mu_;                      // guards queue_, free_, waiting_, stop_
  std::condition_variable wake_;       // comm thread: new work, a waiter, stop
  std::condition_variable completed_;  // executor: some request completed
  std::vector<Request*> queue_;
  std::vector<Request*> free_;
  std::deque<std::unique_ptr<Request>> slots_;
  int waiting_ = 0;
  bool stop_ = false;
  std::atomic<int> sends_pending_{0};
  Stripes* stripes_ = nullptr;
  MPI_Comm stripes_comm_ = MPI_COMM_NULL;
  WanArbiter* arbiter_ = nullptr;
  MPI_Comm arbiter_comm_ = MPI_COMM_NULL;
  bool detach_ = false;  // guarded by mu_: the comm thread shuts the arbiter down
  std::condition_variable detached_;
  // Guarded by mu_: source DCs of WAN receives the stripes completed, to release.
  std::vector<int> released_;

  // Comm thread only.
  std::vector<MPI_Request> mpi_reqs_;
  std::vector<Request*> owners_;
  std::vector<int> done_idx_;
  std::map<int64_t, Request*> held_;  // ordered sends awaiting their grant, by ticket

  std::thread thread_;
};

int64_t now_ns();  // steady clock

}  // namespace xdc::worker
