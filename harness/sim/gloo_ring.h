#pragma once
// gloo's ring all-reduce, the one PyTorch's ProcessGroupGloo runs for CPU tensors (DDP's
// gradient buckets), over gloo's TCP transport:
// - the buffer is cut into segments of min(ceil(bytes / 2n), 1 MiB) (a multiple of the
//   element size), their count rounded up to a multiple of the n ranks and at least 2n;
// - a reduce-scatter, then an allgather, each a loop i = 0 .. S-1 in which rank r first
//   waits for its receive and its send of step i - 2, then (i < S - 2) posts step i: a
//   receive from r + 1 and a send to r - 1, so two segments are in flight each way;
// - a receive posted sends the peer a NOTIFY_RECV_READY, and a send's data leaves only
//   once that notice has arrived (transport/tcp/pair.cc: a send with no remote pending
//   receive waits in localPendingSend_), so a step's data leaves at the later of its send
//   being posted and the receiver's notice arriving: a round trip per step when both post
//   at once, where OpenMPI's eager messages take one way;
// - every message carries gloo's 48-byte preamble (six size_t); a send also announces
//   itself with a NOTIFY_SEND_READY, which gates nothing.
// The reductions' memory traffic is not modelled (microseconds for DDP's buckets).
#include <cstdint>
#include <vector>

#include "workloads/schedule/engine.h"

namespace xdc::sim {

inline constexpr int64_t kGlooMaxSegmentBytes = int64_t{1} << 20;  // kMaxSegmentSize
inline constexpr int64_t kGlooPreambleBytes = 48;

struct GlooRingShape {
  int64_t segment_bytes = 0;
  int64_t segments = 0;  // S: a multiple of the ranks, at least twice them
};
GlooRingShape gloo_ring_shape(int64_t bytes, int ranks, int64_t element_bytes);

// One all-reduce: its members' ranks on `wire` (comm rank order), when each enters, and
// the bytes of the buffer (fp32 elements).
struct GlooCollective {
  std::vector<int> ranks;
  std::vector<int64_t> enter;
  int64_t bytes = 0;
};

// When each member of each collective leaves it (its allgather's last wait), the messages
// sent on `wire` in time order (MessageTiming's contract), every collective at once, so
// that collectives on the same connections share them.
std::vector<std::vector<int64_t>> gloo_ring_allreduce(const std::vector<GlooCollective>& colls,
                                                      sched::MessageTiming& wire);

}  // namespace xdc::sim
