// Which members of the workers' in-place all-reduce copy their buffer first (sim::HostMemory,
// harness/sim/worker_model.h): OpenMPI's libnbc (binomial for in-place calls) copies it into
// a temporary it has just allocated when the algorithm has an odd number of rounds
// (ceil(log2 n) odd), and glibc maps a 64 MiB temporary anew at every call, so each copy
// faults every page of it. Checked on OpenMPI itself (tests/worker/nbc_probe.c under mpirun
// on loopback): the page faults of one call, per rank, at 2 ranks (one round: all copy)
// and at 4 (two rounds: the ranks that only send copy nothing).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

#include "harness/process/process.h"
#include "harness/sim/worker_model.h"

namespace {

constexpr int kMiB = 64;
constexpr long kPages = (kMiB << 20) / 4096;
// A copy into fresh pages faults at least once per 2 MiB, where transparent huge pages back
// them (THP `always`); once per 4 KiB page otherwise (here: `madvise`).
constexpr long kHugePages = (kMiB << 20) / (2 << 20);

// Each rank's page faults in the measured call.
std::map<int, long> faults(int ranks) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  const auto r = xdc::proc::run(
      {"mpirun", "-np", std::to_string(ranks), "--oversubscribe", "--bind-to", "none", "--mca",
       "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo", XDC_NBC_PROBE, std::to_string(kMiB)},
      std::chrono::minutes(2));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<int, long> out;
  std::istringstream in(r.out);
  std::string w1, w2, w3;
  int rank = 0, of = 0;
  long f = 0;
  while (in >> w1 >> rank >> w2 >> of >> w3 >> f)
    if (w1 == "rank" && of == ranks) out[rank] = f;
  return out;
}

TEST(LibnbcCopy, TwoRanksCopyTheirBufferFourRanksSendersDoNot) {
  const auto two = faults(2);
  const auto four = faults(4);
  ASSERT_EQ(two.size(), 2u);
  ASSERT_EQ(four.size(), 4u);
  for (const auto& [rank, f] : two)
    std::printf("2 ranks: rank %d faulted %ld pages (the buffer: %ld)\n", rank, f, kPages);
  for (const auto& [rank, f] : four) std::printf("4 ranks: rank %d faulted %ld pages\n", rank, f);
  // One round (odd): every member copies the whole buffer into fresh pages.
  for (const auto& [rank, f] : two) EXPECT_GE(f, kHugePages * 9 / 10) << "rank " << rank;
  // Two rounds (even): no copy; ranks 1 and 3 only send their buffer and receive the result
  // into it. (0 and 2 receive a partial sum into their fresh temporary: faults, no copy.)
  EXPECT_LT(four.at(1), kHugePages / 2);
  EXPECT_LT(four.at(3), kHugePages / 2);
  // The model's rule says the same.
  const xdc::sim::HostMemory m{1e9, 1e9, 1e9};
  EXPECT_GT(m.copy_ns(int64_t{kMiB} << 20, 2), 0);
  EXPECT_EQ(m.copy_ns(int64_t{kMiB} << 20, 4), 0);
  EXPECT_EQ(m.copy_ns(int64_t{kMiB} << 20, 3), 0);
  EXPECT_GT(m.copy_ns(int64_t{kMiB} << 20, 5), 0);
}

}  // namespace
