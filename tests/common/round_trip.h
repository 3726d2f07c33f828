#pragma once
// The one way a test bounds a shaped round trip: by its configured delays and what this
// machine adds to a round trip, measured in the same test rather than assumed.
//
// A shaped path's round trip is the sum of its delay stages' waits (configured) plus what
// the same path costs here with every delay at 0 (base: zero_delay_base, the delay lines
// still relaying every packet). A test holds the least of its round trips, not their
// median: a stall of the whole machine (another tenant or the hypervisor taking the CPUs)
// holds every process, the delay lines included, for up to tens of ms at random moments;
// it only adds to the round trips it meets, and moves a median with the machine's load,
// while the zero-delay base, a fraction of a ms per sample, rarely meets one. That every
// sample met a stall is what a path that adds delay shows, not a busy machine
// (scripts/busy.sh makes one, to check a test against). A delay stage never releases a
// packet early by more than xdc check's acceptance, and a late timer only adds, so the
// least round trip is held to
//   low  = configured - accept
//   high = configured + base median + accept + late
//   accept = max(0.2 ms, 2% of configured): xdc check's acceptance (harness/check/
//            link_check.cpp; a delay line may release a packet by its learnt wake-up
//            advance early);
//   late   = how late a timer with the delay line's 1 ns slack fires here after each of
//            the path's waits, summed (the base has no such waits).
// The low end holds no part of the base: a delay stage counts a packet's delay from the
// kernel's arrival stamp (netem's enqueue time, NFQA_TIMESTAMP for the delay line), so the
// time a busy machine takes to hand the packet to it, which the zero-delay base pays in
// full, is absorbed by any delay longer than that time. A shaped round trip can therefore
// cost less beyond its waits than the base's fastest one, never less than its waits.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "netem/shaper/link_params.h"
#include "netem/shaper/shaper.h"

namespace xdc::testing {

// Round trips (ms) measured on one path, sorted, and their order statistics.
class RoundTrips {
 public:
  explicit RoundTrips(std::vector<double> samples_ms);  // throws when empty
  double median() const { return at(0.5); }
  double min() const { return samples_.front(); }
  size_t size() const { return samples_.size(); }

 private:
  double at(double q) const { return samples_[size_t(q * (samples_.size() - 1) + 0.5)]; }
  std::vector<double> samples_;
};

// A shaped direction as it runs: what reaches it and the parameters it has now.
struct ShapedDirection {
  netem::ShapeRecord record;
  netem::LinkParams params;
};

// Runs `probe` with the delay and jitter of each of `dirs` set to 0 in place
// (netem::reshape_egress: a delay line stays and relays every packet, the rate and the rest
// stay), then sets each back to its `params`, also when `probe` throws. Returns `probe`'s
// round trips: the base. An inactive record is passed over.
RoundTrips zero_delay_base(const std::vector<ShapedDirection>& dirs,
                           const std::function<std::vector<double>()>& probe);

// `probe`'s round trips and what the delay lines of `dirs` added to them: the mean release
// lateness of each line over the probe (its stats' late_sum_us over released, read before
// and after; < 0 when it released early), summed over the directions. Measured in the same
// probe, it holds on a busy machine, where a timer estimated apart does not.
struct ProbedRoundTrips {
  RoundTrips rtt;
  double late_ms = 0;
};
ProbedRoundTrips probe_with_lateness(const std::vector<ShapedDirection>& dirs,
                                     const std::function<std::vector<double>()>& probe);

// The median lateness (ms) of a timer with the delay line's 1 ns slack after each of
// `waits_ms` of idle, `n` times each, summed over the waits.
double timer_lateness_ms(const std::vector<double>& waits_ms, int n = 11);

// low = configured - accept, high = configured + base median + accept + late.
struct RoundTripBounds {
  double configured_ms = 0, accept_ms = 0, late_ms = 0;
  double base_median_ms = 0;
  double low_ms = 0, high_ms = 0;
};
// For the least round trip of a path whose delay stages hold a packet `waits_ms` in turn
// (both directions); measures `late` here (timer_lateness_ms).
RoundTripBounds least_bounds(const std::vector<double>& waits_ms, const RoundTrips& base);
// The same with the lateness the path's delay lines had in the probe (probe_with_lateness).
RoundTripBounds least_bounds(const std::vector<double>& waits_ms, const RoundTrips& base,
                             double late_ms);

// Success when low <= measured_ms <= high. Prints `what`, the figure, the bounds and the
// measured figures behind them to standard output either way, and fails with the same line.
::testing::AssertionResult within(const std::string& what, double measured_ms,
                                  const RoundTripBounds& b);

}  // namespace xdc::testing
