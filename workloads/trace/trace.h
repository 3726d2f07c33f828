#pragma once
// Per-rank timeline of one iteration, the one format both the emulator (measured) and
// the simulator (predicted) write. Times are ns on one monotonic clock (the emulator
// offset-corrects hosts). Compute events cover the compute; a SEND covers the
// message's serialisation on its link direction (from leaving the FIFO queue to its last
// byte; the latency after it shows as the flow arrow to the RECV), so SENDs on one
// direction never overlap; a RECV covers the time the rank waited for the data (zero
// length when it was already there). The emulator may instead record Isend post to
// completion; the analysis only uses compute events and SEND bytes. A co-executed pair
// (schedule.h) is its F over the pair's time and its partner B / BW of zero length at the
// F's end (pair_partners).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "workloads/schedule/schedule.h"

namespace xdc::trace {

using sched::Kind;

struct Event {
  int rank = 0;
  Kind kind = Kind::F;
  int stage = 0;
  int microbatch = 0;  // -1 for ALLREDUCE / OPT
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t bytes = 0;    // communication only
  int peer = -1;        // communication only
  int connections = 0;  // a message to/from a peer: the TCP connections it was striped
                        // over (1: OpenMPI's one connection; N: the worker's stripes,
                        // bytes / N each, workloads/worker/stripes.h); 0 otherwise
};

struct Trace {
  std::string name;  // schedule or run name
  int ranks = 0;
  int microbatches = 0;
  std::vector<Event> events;
};

// CSV: rank,kind,stage,microbatch,start_ns,end_ns,bytes,peer,connections (header line
// first); a file without the last column reads connections as 1 for a message with a
// peer, 0 otherwise.
std::string to_csv(const Trace& t);
Trace from_csv(const std::string& text);

// The partners of co-executed pairs: zero-length B / BW records, by (rank, end), the
// index of each in t.events; a paired F ends on the same rank at the same time.
std::map<std::pair<int, int64_t>, size_t> pair_partners(const Trace& t);

}  // namespace xdc::trace
