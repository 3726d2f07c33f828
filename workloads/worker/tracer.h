#pragma once
// Per-rank timeline of the measured iterations in the trace::Event form (harness/trace).
// record() is a push into a reserved vector (a few tens of ns); times are this process's
// steady clock until written, then shifted onto world rank 0's clock.
//
// What an event covers (trace.h): compute = the compute; RECV_F/RECV_B/ALLREDUCE = the
// time the executor waited at that action (zero when the data was already there, the
// operation having been posted early); SEND = Isend post to completion as seen by the
// comm thread, started no earlier than the previous SEND to the same peer ended, so the
// sends of one direction do not overlap; OPT = the optimizer step (the gradient-norm
// exchange before the first OPT is idle time, reported as the GRAD_NORM wait).
//
// Files: flush_iteration() appends the events since the last flush (start offset only)
// so that a run that dies keeps the iterations it finished; write_final() rewrites the
// file with the offset interpolated between the start and end measurements.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "workloads/trace/trace.h"
#include "workloads/worker/clock_sync.h"

namespace xdc::worker {

class Tracer {
 public:
  Tracer(int world_rank, std::string path, size_t reserve_events);

  void set_measuring(bool on) { measuring_ = on; }
  bool measuring() const { return measuring_; }
  void record(sched::Kind kind, int stage, int mb, int64_t start_ns, int64_t end_ns,
              int64_t bytes = 0, int peer = -1) {
    if (!measuring_) return;
    events_.push_back(
        trace::Event{rank_, kind, stage, mb, start_ns, end_ns, bytes, peer, connections(peer)});
  }
  // Peers whose messages go over the worker's stripes, and over how many connections;
  // any other peer's messages take OpenMPI's one connection (trace.h: connections).
  void set_connections(std::map<int, int> per_peer) { connections_ = std::move(per_peer); }
  // SEND from post to completion, serialised per peer (see above). Recorded whatever
  // measuring() is now: the caller knows whether the send was posted while measuring.
  void record_send(sched::Kind kind, int stage, int mb, int64_t post_ns, int64_t done_ns,
                   int64_t bytes, int peer);

  void flush_iteration(int64_t offset_ns);
  void write_final(const ClockSample& start, const ClockSample& end) const;
  size_t events() const { return events_.size(); }

 private:
  int rank_;
  std::string path_;
  bool measuring_ = false;
  std::vector<trace::Event> events_;
  size_t flushed_ = 0;
  std::map<int, int64_t> last_send_end_;
  std::map<int, int> connections_;
  int connections(int peer) const {
    if (peer < 0) return 0;
    auto it = connections_.find(peer);
    return it == connections_.end() ? 1 : it->second;
  }
};

}  // namespace xdc::worker
