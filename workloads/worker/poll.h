#pragma once
// The comm thread's poll schedule (comm.h), without MPI, so that the simulator times
// what the workers do from the same rules (harness/sim/link_model.h: a rendezvous request
// is answered, and an answer acted on, at the rank's next poll).
//
// The comm thread polls OpenMPI every `poll` while its executor waits in wait() or one of
// its sends is pending (poll_period). Otherwise, after a completion the period restarts at
// `poll` and each quiet poll doubles it, up to kPollBackoff x `poll`: polls at since +
// poll, + 3 poll, + 7 poll, + 15 poll, then every 10 poll (after a submission it polls at
// once and then from 2 poll on: the same from the capped period on). A rendezvous request,
// or the answer to one, is acted on at the next poll after it arrives
// (tests/worker/comm_poll_mpi_test.cpp checks that against OpenMPI).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>

namespace xdc::worker {

inline constexpr int kPollBackoff = 10;  // the backed-off period's cap, in periods

// The comm thread's wait before its next poll: `poll` while the executor waits in wait()
// or one of its sends is pending, else `backed_off` (the doubling period above).
inline std::chrono::microseconds poll_period(bool executor_waits, bool sends_pending,
                                             std::chrono::microseconds poll,
                                             std::chrono::microseconds backed_off) {
  return executor_waits || sends_pending ? poll : backed_off;
}

// The process's timer slack (its main thread's: prctl PR_SET_TIMERSLACK; Linux's default 50 us for
// a normal thread, inherited by the processes and threads it starts): a timed wait of `d` ends
// about d + slack later (the kernel defers the timer within its slack), so the comm thread's period
// is `poll` + slack. 0 where /proc does not say.
inline int64_t timer_slack_ns() {
  std::ifstream in("/proc/self/timerslack_ns");
  int64_t ns = 0;
  return in >> ns ? ns : 0;
}

// How long after `at_ns` the comm thread of a rank next polls, expected, each of its waits
// lasting its period plus `slack_ns`: half a period when it polls every `poll_ns` (`fast`:
// its executor waits or a send is pending; the phase of its polls is not known); when
// backed off since the last submission or completion at `since_ns`, the next poll of the
// doubling schedule while it doubles, and half the capped period after (by then each
// poll's own cost has drifted the phase).
inline int64_t expected_poll_wait_ns(bool fast, int64_t since_ns, int64_t at_ns, int64_t poll_ns,
                                     int64_t slack_ns = 0) {
  if (poll_ns <= 0) return 0;
  if (fast || at_ns < since_ns) return (poll_ns + slack_ns) / 2;
  int64_t next = since_ns + poll_ns + slack_ns, period = poll_ns;
  while (period < kPollBackoff * poll_ns) {
    if (next >= at_ns) return next - at_ns;
    period = std::min(2 * period, kPollBackoff * poll_ns);
    next += period + slack_ns;
  }
  return (kPollBackoff * poll_ns + slack_ns) / 2;
}

}  // namespace xdc::worker
