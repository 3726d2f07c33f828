#include "workloads/worker/clock_sync.h"

#include <limits>

#include "workloads/worker/comm.h"

namespace xdc::worker {

ClockSample measure_clock_offset(MPI_Comm world, int rounds) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  constexpr int kTag = 32000;
  ClockSample s;
  if (rank == 0) {
    for (int peer = 1; peer < size; ++peer) {
      for (int k = 0; k < rounds; ++k) {
        int64_t t = 0;
        MPI_Recv(&t, 1, MPI_INT64_T, peer, kTag, world, MPI_STATUS_IGNORE);
        t = now_ns();
        MPI_Send(&t, 1, MPI_INT64_T, peer, kTag, world);
      }
    }
    s.local_ns = now_ns();
    return s;
  }
  int64_t best_rtt = std::numeric_limits<int64_t>::max();
  for (int k = 0; k < rounds; ++k) {
    const int64_t t0 = now_ns();
    int64_t t1 = t0;
    MPI_Send(&t1, 1, MPI_INT64_T, 0, kTag, world);
    MPI_Recv(&t1, 1, MPI_INT64_T, 0, kTag, world, MPI_STATUS_IGNORE);
    const int64_t t2 = now_ns();
    if (t2 - t0 < best_rtt) {
      best_rtt = t2 - t0;
      s.offset_ns = t1 - (t0 + (t2 - t0) / 2);
      s.local_ns = t2;
    }
  }
  s.rtt_ns = best_rtt;
  return s;
}

int64_t offset_at(const ClockSample& start, const ClockSample& end, int64_t t_ns) {
  const int64_t span = end.local_ns - start.local_ns;
  if (span <= 0) return start.offset_ns;
  const double f = static_cast<double>(t_ns - start.local_ns) / static_cast<double>(span);
  return start.offset_ns +
         static_cast<int64_t>(f * static_cast<double>(end.offset_ns - start.offset_ns));
}

}  // namespace xdc::worker
