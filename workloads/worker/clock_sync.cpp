#include "workloads/worker/clock_sync.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "workloads/worker/comm.h"

namespace xdc::worker {

namespace {
// The running kernel's boot id, the identity of its clocks ("" if unreadable).
std::array<char, 64> boot_id() {
  std::array<char, 64> id{};
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string line;
  std::getline(in, line);
  std::copy_n(line.begin(), std::min(line.size(), id.size() - 1), id.begin());
  return id;
}
}  // namespace

ClockSample measure_clock_offset(MPI_Comm world, int rounds) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  constexpr int kTag = 32000;
  ClockSample s;
  // Ranks on rank 0's kernel read its CLOCK_MONOTONIC (network namespaces do not have
  // clocks of their own): their offset is 0, not an estimate.
  const std::array<char, 64> mine = boot_id();
  std::array<char, 64> root = mine;
  MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_CHAR, 0, world);
  int same = mine[0] != 0 && mine == root ? 1 : 0;
  std::vector<int> shares(rank == 0 ? size : 0);
  MPI_Gather(&same, 1, MPI_INT, shares.data(), 1, MPI_INT, 0, world);
  if (rank == 0) {
    for (int peer = 1; peer < size; ++peer) {
      if (shares[static_cast<size_t>(peer)]) continue;
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
  if (same) {
    s.local_ns = now_ns();
    return s;
  }
  std::vector<ClockRound> measured;
  for (int k = 0; k < rounds; ++k) {
    ClockRound r;
    r.t0 = now_ns();
    int64_t t1 = r.t0;
    MPI_Send(&t1, 1, MPI_INT64_T, 0, kTag, world);
    MPI_Recv(&t1, 1, MPI_INT64_T, 0, kTag, world, MPI_STATUS_IGNORE);
    r.t2 = now_ns();
    r.t1 = t1;
    measured.push_back(r);
  }
  return offset_from_rounds(measured);
}

ClockSample offset_from_rounds(const std::vector<ClockRound>& rounds) {
  int64_t lower = std::numeric_limits<int64_t>::min(), upper = std::numeric_limits<int64_t>::max();
  ClockSample s;
  s.rtt_ns = std::numeric_limits<int64_t>::max();
  for (const ClockRound& r : rounds) {
    lower = std::max(lower, r.t1 - r.t2);
    upper = std::min(upper, r.t1 - r.t0);
    s.rtt_ns = std::min(s.rtt_ns, r.t2 - r.t0);
    s.local_ns = r.t2;
  }
  s.offset_ns = lower + (upper - lower) / 2;
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
