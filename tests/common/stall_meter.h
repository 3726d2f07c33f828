#pragma once
// The share of a span in which this machine did not run a process when it was due: a
// stall of the whole machine (another tenant or a hypervisor taking the CPUs) stops the
// shaper, the TCP endpoints and this meter alike, and the link's time in it is lost for
// good. A rate carried over the span is at most the rate times the share that was left.
//
// A thread wakes every period (1 ms; timer slack 1 ns, as the delay line's) and counts how
// late it woke, beyond kWakeLatencyMs (a wake-up's own latency, not a stall), as stalled
// time; a stall's first part, before the wake-up it delays was due, is not counted (up to
// a period), so the share it gives is if anything low.
// It runs at the delay lines' SCHED_FIFO priority where it may (the priority a shaping
// path's progress is made at: TCP sends from the kernel's ACK processing, not from its
// endpoints' time slices), so that other processes' load is not counted as a stall.
#include <atomic>
#include <chrono>
#include <thread>

namespace xdc::testing {

class StallMeter {
 public:
  static constexpr double kWakeLatencyMs = 0.5;
  // Starts measuring, at SCHED_FIFO `fifo_priority` (0, or not permitted: normal).
  explicit StallMeter(int fifo_priority,
                      std::chrono::milliseconds period = std::chrono::milliseconds(1));
  ~StallMeter();  // stops
  StallMeter(const StallMeter&) = delete;
  StallMeter& operator=(const StallMeter&) = delete;
  // Stops, and returns the stalled share of the span since the start, 0..1.
  double stop();

 private:
  std::atomic<bool> stop_{false};
  double stalled_ms_ = 0, span_ms_ = 0;
  std::thread thread_;
};

}  // namespace xdc::testing
