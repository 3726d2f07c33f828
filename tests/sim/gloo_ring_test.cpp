// gloo's ring all-reduce as the simulator times it (harness/sim/gloo_ring.h): its segments
// as gloo/allreduce.cc cuts them, and a step's data waiting for the receiver's notice.
#include "harness/sim/gloo_ring.h"

#include <gtest/gtest.h>

#include <vector>

namespace xdc::sim {
namespace {

constexpr int64_t kMs = 1'000'000;

// Every ordered pair a FIFO channel of one latency and rate (0: infinite).
class Fifo : public sched::MessageTiming {
 public:
  Fifo(int ranks, int64_t latency_ns, double bytes_per_ns)
      : ranks_(ranks), latency_(latency_ns), rate_(bytes_per_ns), free_(ranks * ranks, 0) {}
  sched::Transfer send(int from, int to, int64_t bytes, double ready,
                       const sched::Action&) override {
    double& f = free_[static_cast<size_t>(from) * ranks_ + to];
    const double start = std::max(ready, f);
    const double end = start + (rate_ > 0 ? static_cast<double>(bytes) / rate_ : 0);
    f = end;
    ++sends;
    return {start, end, end + static_cast<double>(latency_)};
  }
  int sends = 0;

 private:
  int ranks_;
  int64_t latency_;
  double rate_;
  std::vector<double> free_;
};

TEST(GlooRing, SegmentsAsAllreduceCcCutsThem) {
  // DDP's one bucket of the byo example: 4 segments of a quarter, two per rank.
  GlooRingShape s = gloo_ring_shape(548352, 2, 4);
  EXPECT_EQ(s.segment_bytes, 137088);
  EXPECT_EQ(s.segments, 4);
  // Large buffers: 1 MiB segments, their count a multiple of the ranks.
  s = gloo_ring_shape(int64_t{64} << 20, 3, 4);
  EXPECT_EQ(s.segment_bytes, int64_t{1} << 20);
  EXPECT_EQ(s.segments, 66);
  // Small ones: at least two segments per rank, rounded up to whole elements.
  s = gloo_ring_shape(10, 3, 4);
  EXPECT_EQ(s.segment_bytes, 4);
  EXPECT_EQ(s.segments, 6);
}

TEST(GlooRing, EachPhaseTakesARoundTripWhenBothRanksPostAtOnce) {
  // The receiver's NOTIFY_RECV_READY crosses before the data can: reduce-scatter and
  // allgather a round trip each, where eager messages would take one way each.
  Fifo wire(2, 20 * kMs, 0);
  const auto done = gloo_ring_allreduce({{{0, 1}, {0, 0}, 548352}}, wire);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], (std::vector<int64_t>{80 * kMs, 80 * kMs}));
  // Per rank and phase: two steps, each a notice, a send notice and the data.
  EXPECT_EQ(wire.sends, 2 * 2 * 2 * 3);
}

TEST(GlooRing, ALateRankDelaysOnlyWhatWaitsForItsNotice) {
  // Rank 1 enters 5 ms late: rank 0's data waits for rank 1's notice (5 + 20 ms), rank 1's
  // only for rank 0's (20 ms), so rank 1 ends 5 ms after rank 0.
  Fifo wire(2, 20 * kMs, 0);
  const auto done = gloo_ring_allreduce({{{0, 1}, {0, 5 * kMs}, 548352}}, wire);
  EXPECT_EQ(done[0], (std::vector<int64_t>{80 * kMs, 85 * kMs}));
}

TEST(GlooRing, TwoSegmentsInFlightSerialiseBackToBack) {
  // 1 byte/ns: each phase is the notice, then two segments (and their preambles) in a row.
  Fifo wire(2, 20 * kMs, 1.0);
  const int64_t bytes = 4 * kMs;  // segments of 1 ms each (under gloo's 1 MiB)
  const auto done = gloo_ring_allreduce({{{0, 1}, {0, 0}, bytes}}, wire);
  const int64_t segment = bytes / 4 + kGlooPreambleBytes;
  const int64_t ideal = 2 * (2 * 20 * kMs + 2 * segment);
  for (int64_t d : done[0]) {
    EXPECT_GE(d, ideal);
    EXPECT_LE(d, ideal + 8 * kGlooPreambleBytes);  // the notices ahead of the data
  }
}

TEST(GlooRing, ThreeRanksTakeTwoRoundTripsPerPhase) {
  // 6 segments, 4 steps a phase, two in flight: steps 2 and 3 wait for steps 0 and 1.
  Fifo wire(3, 10 * kMs, 0);
  const auto done = gloo_ring_allreduce({{{0, 1, 2}, {0, 0, 0}, 600}}, wire);
  EXPECT_EQ(done[0], (std::vector<int64_t>{80 * kMs, 80 * kMs, 80 * kMs}));
}

TEST(GlooRing, OneRankOrNoBytesIsNoCollective) {
  Fifo wire(2, 20 * kMs, 0);
  const auto done = gloo_ring_allreduce({{{0}, {7}, 100}, {{0, 1}, {3, 4}, 0}}, wire);
  EXPECT_EQ(done[0], (std::vector<int64_t>{7}));
  EXPECT_EQ(done[1], (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(wire.sends, 0);
}

}  // namespace
}  // namespace xdc::sim
