#include "tests/common/stall_meter.h"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>

namespace xdc::testing {

StallMeter::StallMeter(int fifo_priority, std::chrono::milliseconds period) {
  thread_ = std::thread([this, fifo_priority, period] {
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (fifo_priority > 0) {
      sched_param sp{};
      sp.sched_priority = fifo_priority;
      pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    }
    using Clock = std::chrono::steady_clock;
    using Ms = std::chrono::duration<double, std::milli>;
    const auto start = Clock::now();
    auto due = start;
    while (!stop_.load(std::memory_order_relaxed)) {
      due += period;
      std::this_thread::sleep_until(due);
      const auto now = Clock::now();
      const double late = Ms(now - due).count();
      if (late > kWakeLatencyMs) stalled_ms_ += late;
      if (now > due) due = now;  // the next period starts from the late wake-up
    }
    span_ms_ = Ms(Clock::now() - start).count();
  });
}

double StallMeter::stop() {
  if (thread_.joinable()) {
    stop_ = true;
    thread_.join();
  }
  return span_ms_ > 0 ? std::clamp(stalled_ms_ / span_ms_, 0.0, 1.0) : 0.0;
}

StallMeter::~StallMeter() {
  stop();
}

}  // namespace xdc::testing
