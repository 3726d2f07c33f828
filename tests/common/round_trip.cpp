#include "tests/common/round_trip.h"

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

namespace xdc::testing {

RoundTrips::RoundTrips(std::vector<double> samples_ms) : samples_(std::move(samples_ms)) {
  if (samples_.empty()) throw std::invalid_argument("no round trips were measured");
  std::sort(samples_.begin(), samples_.end());
}

RoundTrips zero_delay_base(const std::vector<ShapedDirection>& dirs,
                           const std::function<std::vector<double>()>& probe) {
  std::vector<ShapedDirection> active;
  for (const auto& d : dirs)
    if (d.record.active) active.push_back(d);
  auto zeroed = [](netem::LinkParams p) {
    p.delay_us = p.jitter_us = 0;
    return p;
  };
  size_t changed = 0;
  auto restore = [&] {
    for (size_t i = 0; i < changed; ++i)
      netem::reshape_egress(active[i].record, zeroed(active[i].params), active[i].params);
  };
  try {
    for (; changed < active.size(); ++changed)
      netem::reshape_egress(active[changed].record, active[changed].params,
                            zeroed(active[changed].params));
    RoundTrips base(probe());
    restore();
    return base;
  } catch (...) {
    restore();
    throw;
  }
}

ProbedRoundTrips probe_with_lateness(const std::vector<ShapedDirection>& dirs,
                                     const std::function<std::vector<double>()>& probe) {
  auto read = [&] {
    std::vector<std::pair<double, double>> out;  // released, late_sum_us
    for (const auto& d : dirs) {
      const nlohmann::json st = netem::delayline_stats(d.record);
      out.emplace_back(st.value("released", 0.0), st.value("late_sum_us", 0.0));
    }
    return out;
  };
  const auto before = read();
  ProbedRoundTrips p{RoundTrips(probe()), 0};
  const auto after = read();
  for (size_t i = 0; i < dirs.size(); ++i) {
    const double n = after[i].first - before[i].first;
    if (n > 0) p.late_ms += (after[i].second - before[i].second) / n / 1e3;
  }
  return p;
}

double timer_lateness_ms(const std::vector<double>& waits_ms, int n) {
  double sum = 0;
  std::thread t([&] {
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // as the delay line's (netem/delayline/main.cpp)
    for (double wait_ms : waits_ms) {
      const auto wait = std::chrono::duration<double, std::milli>(wait_ms);
      std::vector<double> late;
      for (int i = 0; i < n; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        std::this_thread::sleep_until(
            t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait));
        late.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0 - wait)
                .count());
      }
      sum += RoundTrips(late).median();
    }
  });
  t.join();
  return sum;
}

namespace {

RoundTripBounds bounds(const std::vector<double>& waits_ms, const RoundTrips& base,
                       std::optional<double> late_ms = std::nullopt) {
  RoundTripBounds b;
  for (double w : waits_ms) b.configured_ms += w;
  b.accept_ms = std::max(0.2, 0.02 * b.configured_ms);
  b.base_median_ms = base.median();
  b.late_ms = late_ms ? *late_ms : timer_lateness_ms(waits_ms);
  b.low_ms = b.configured_ms - b.accept_ms;
  b.high_ms = b.configured_ms + b.base_median_ms + b.accept_ms + b.late_ms;
  return b;
}

}  // namespace

RoundTripBounds least_bounds(const std::vector<double>& waits_ms, const RoundTrips& base) {
  return bounds(waits_ms, base);
}

RoundTripBounds least_bounds(const std::vector<double>& waits_ms, const RoundTrips& base,
                             double late_ms) {
  return bounds(waits_ms, base, late_ms);
}

::testing::AssertionResult within(const std::string& what, double measured_ms,
                                  const RoundTripBounds& b) {
  char line[512];
  std::snprintf(line, sizeof line,
                "%s: %.3f ms, bounds [%.3f, %.3f] = configured %.3f -/+ accept %.3f, + base "
                "median %.3f + timer lateness %.3f",
                what.c_str(), measured_ms, b.low_ms, b.high_ms, b.configured_ms, b.accept_ms,
                b.base_median_ms, b.late_ms);
  std::printf("%s\n", line);
  if (measured_ms >= b.low_ms && measured_ms <= b.high_ms) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << line;
}

}  // namespace xdc::testing
