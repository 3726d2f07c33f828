#pragma once
// Offset of this rank's steady clock to world rank 0's, by ping-pong (MPI_WTIME_IS_GLOBAL
// is 0, and ranks may sit on different machines): rank r sends its time t0, rank 0
// answers with its time t1, r reads t2. Each round bounds the offset: t1 - t2 <= offset <=
// t1 - t0 (the answer left rank 0 after r's send and arrived before r's read); the
// estimate is the middle of the tightest bounds over all rounds (offset_from_rounds), which
// takes each direction's fastest trip, possibly from different rounds: on a path whose
// delay varies (a busy machine, a virtual one) it is tighter than the single round with
// the smallest round trip. A rank on rank 0's kernel (the same boot id: the emulated
// hosts of one machine are network namespaces, which share its CLOCK_MONOTONIC) takes
// offset 0 and no rounds; an estimate there was off by up to a millisecond across a
// jittered WAN. Collective over `world` (blocking MPI, called while no comm thread
// runs). local_ns + offset_ns = rank 0's clock.
#include <mpi.h>

#include <cstdint>
#include <vector>

namespace xdc::worker {

struct ClockSample {
  int64_t local_ns = 0;   // when it was measured (this rank's clock)
  int64_t offset_ns = 0;  // rank 0 clock - local clock
  int64_t rtt_ns = 0;     // round trip of the best round (0 on rank 0)
};

ClockSample measure_clock_offset(MPI_Comm world, int rounds = 8);

// One ping-pong: r's send time t0, rank 0's answer time t1 (its clock), r's read time t2.
struct ClockRound {
  int64_t t0 = 0, t1 = 0, t2 = 0;
};
// The estimate from `rounds` (not empty): offset as above, rtt_ns the smallest round trip,
// local_ns the last round's t2.
ClockSample offset_from_rounds(const std::vector<ClockRound>& rounds);

// Offset at local time t, interpolated between a start and an end sample (drift).
int64_t offset_at(const ClockSample& start, const ClockSample& end, int64_t t_ns);

}  // namespace xdc::worker
