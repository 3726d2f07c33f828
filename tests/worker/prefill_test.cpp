// The placement rule of prefill in bubbles (workloads/worker/prefill.h), worked numbers:
// a job starts only when it ends by the predicted start of the next training action minus
// the guard and by its own deadline; the oldest such request goes first; a request that
// can no longer end by its deadline is rejected.
#include "workloads/worker/prefill.h"

#include <gtest/gtest.h>

#include <deque>

namespace {

using xdc::worker::place;
using xdc::worker::PrefillRequest;

constexpr int64_t kMs = 1000000;

PrefillRequest req(int id, int64_t arrival_ms, int64_t duration_ms) {
  PrefillRequest r;
  r.id = id;
  r.arrival_ns = arrival_ms * kMs;
  r.tokens = static_cast<int>(duration_ms * 200);  // 5 us per token
  r.duration_ns = duration_ms * kMs;
  return r;
}

TEST(PrefillPlacement, AJobThatDoesNotFitTheGapIsNotStarted) {
  // Now 100 ms, next training action predicted at 110 ms, guard 1 ms: 9 ms of room.
  const std::deque<PrefillRequest> q = {req(0, 90, 10)};  // would end at 110 > 109
  const auto p = place(q, 100 * kMs, 110 * kMs, 1 * kMs, 2000 * kMs);
  EXPECT_EQ(p.start, -1);
  EXPECT_TRUE(p.expired.empty());
}

TEST(PrefillPlacement, AJobEndingExactlyAtReadyMinusGuardStarts) {
  const std::deque<PrefillRequest> q = {req(0, 90, 9)};  // ends at 109 = 110 - 1
  EXPECT_EQ(place(q, 100 * kMs, 110 * kMs, 1 * kMs, 2000 * kMs).start, 0);
}

TEST(PrefillPlacement, TheOldestRequestThatFitsGoesFirst) {
  // Room: 100 -> 129 (ready 130, guard 1): 29 ms. Request 0 (40 ms) does not fit; 1 and 2
  // (20 ms each) do: the older, 1, starts; 0 waits for a bigger bubble.
  const std::deque<PrefillRequest> q = {req(0, 10, 40), req(1, 20, 20), req(2, 30, 20)};
  const auto p = place(q, 100 * kMs, 130 * kMs, 1 * kMs, 2000 * kMs);
  EXPECT_EQ(p.start, 1);
  EXPECT_TRUE(p.expired.empty());
}

TEST(PrefillPlacement, RequestsThatCannotMeetTheirDeadlineAreRejected) {
  // Deadline 2 s. At 2050 ms request 0 (arrived at 0, 10 ms) would end at 2060 > 2000:
  // rejected. Request 1 (arrived 45, 5 ms) ends at 2055 > 2045: rejected too. Request 2
  // (arrived 60, 5 ms) ends at 2055 <= 2060 and fits the gap (ready 3000): it starts.
  const std::deque<PrefillRequest> q = {req(0, 0, 10), req(1, 45, 5), req(2, 60, 5)};
  const auto p = place(q, 2050 * kMs, 3000 * kMs, 1 * kMs, 2000 * kMs);
  EXPECT_EQ(p.start, 2);
  EXPECT_EQ(p.expired, (std::vector<int>{0, 1}));
}

TEST(PrefillPlacement, NoRoomAtAllStartsNothing) {
  // The next action is predicted already due (ready <= now + guard): nothing starts,
  // however small.
  const std::deque<PrefillRequest> q = {req(0, 99, 0), req(1, 99, 1)};
  EXPECT_EQ(place(q, 100 * kMs, 100 * kMs, 1 * kMs, 2000 * kMs).start, -1);
  EXPECT_EQ(place(q, 100 * kMs, 101 * kMs, 1 * kMs, 2000 * kMs).start, 0);  // 0 ns job
}

}  // namespace
