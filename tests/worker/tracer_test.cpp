// The tracer's bookkeeping, without MPI: per-peer SEND serialisation, partial flushes
// that a crashed run leaves behind, and the final rewrite on rank 0's clock.
#include "workloads/worker/tracer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "workloads/worker/clock_sync.h"

namespace xdc::worker {
namespace {

using sched::Kind;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(WorkerTracer, SendsToOnePeerDoNotOverlap) {
  const std::string path = std::filesystem::temp_directory_path() / "xdc-tracer-send.csv";
  Tracer t(3, path, 16);
  t.set_measuring(true);
  t.record_send(Kind::SEND_F, 1, 0, 100, 500, 64, 2);
  t.record_send(Kind::SEND_F, 1, 1, 200, 700, 64, 2);  // posted while the first was on the wire
  t.record_send(Kind::SEND_B, 1, 0, 300, 400, 64, 0);  // another peer: its own timeline
  t.write_final(ClockSample{0, 0, 0}, ClockSample{0, 0, 0});
  const trace::Trace tr = trace::from_csv(read(path));
  ASSERT_EQ(tr.events.size(), 3u);
  EXPECT_EQ(tr.events[0].start_ns, 100);
  EXPECT_EQ(tr.events[1].start_ns, 500);
  EXPECT_EQ(tr.events[1].end_ns, 700);
  EXPECT_EQ(tr.events[2].start_ns, 300);
  EXPECT_EQ(tr.events[0].rank, 3);
}

TEST(WorkerTracer, FlushesAppendAndTheFinalFileUsesTheInterpolatedOffset) {
  const std::string path = std::filesystem::temp_directory_path() / "xdc-tracer-flush.csv";
  Tracer t(0, path, 16);
  t.record(Kind::F, 0, 0, 0, 10);  // not measuring: dropped (warm-up)
  t.set_measuring(true);
  t.record(Kind::F, 0, 0, 1000, 1100);
  t.flush_iteration(7);
  t.record(Kind::BW, 0, 0, 2000, 2200);
  t.flush_iteration(7);
  trace::Trace partial = trace::from_csv(read(path));
  ASSERT_EQ(partial.events.size(), 2u);
  EXPECT_EQ(partial.events[0].start_ns, 1007);
  EXPECT_EQ(partial.events[1].end_ns, 2207);
  // Offset 0 at local 0, 1000 at local 10000: +100 at 1000, +200 at 2000.
  t.write_final(ClockSample{0, 0, 0}, ClockSample{10000, 1000, 0});
  const trace::Trace final = trace::from_csv(read(path));
  ASSERT_EQ(final.events.size(), 2u);
  EXPECT_EQ(final.events[0].start_ns, 1100);
  EXPECT_EQ(final.events[1].start_ns, 2200);
  EXPECT_EQ(final.events[1].end_ns, 2420);
}

TEST(WorkerClock, OffsetInterpolatesBetweenSamples) {
  const ClockSample a{1000, 50, 10}, b{3000, 150, 10};
  EXPECT_EQ(offset_at(a, b, 1000), 50);
  EXPECT_EQ(offset_at(a, b, 2000), 100);
  EXPECT_EQ(offset_at(a, b, 3000), 150);
  EXPECT_EQ(offset_at(a, a, 5000), 50);  // one sample: constant
}

// Rank 0's clock is 1000 ns ahead. Three rounds, one-way delays forward / back: 100 / 60,
// 50 / 90, 80 / 40. The fastest trip each way (50 forward, 40 back) bounds the offset to
// [960, 1050]: the estimate 1005 is off by 5 ns, where the round with the smallest round
// trip (the third, 80 / 40) alone would be off by 20.
TEST(WorkerClock, OffsetTakesEachDirectionsFastestTrip) {
  const int64_t offset = 1000;
  std::vector<ClockRound> rounds;
  int64_t t = 0;
  for (auto [f, b] : std::vector<std::pair<int64_t, int64_t>>{{100, 60}, {50, 90}, {80, 40}}) {
    rounds.push_back({t, t + f + offset, t + f + b});
    t += 1000;
  }
  const ClockSample s = offset_from_rounds(rounds);
  EXPECT_EQ(s.offset_ns, 1005);
  EXPECT_EQ(s.rtt_ns, 120);
  EXPECT_EQ(s.local_ns, 2000 + 120);
}

}  // namespace
}  // namespace xdc::worker
