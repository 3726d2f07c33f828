#pragma once
// Runtime link changes on the shaper testbed, shared by the reshape tests
// (reshape_test.cpp) and the benchmark (bench_dynamic.cpp): one shaped direction that
// follows its changes, and the rate-decrease-under-TCP scenario both measure.
#include <cstdint>
#include <utility>

#include "netem/shaper/shaper.h"
#include "tests/shaper/testbed.h"

namespace xdc::testbed {

// The direction gw -> b of a Line shaped by `backend`; its record follows every change;
// undone when it goes.
struct ShapedDirection {
  ShapedDirection(netem::Backend backend, const Line& l, const netem::LinkParams& p);
  ~ShapedDirection();
  ShapedDirection(const ShapedDirection&) = delete;
  ShapedDirection& operator=(const ShapedDirection&) = delete;
  // Changes to `p` in place; returns {asked at, in force at} (CLOCK_REALTIME ns).
  std::pair<int64_t, int64_t> change(const netem::LinkParams& p);

  netem::ShapeRecord r;
  netem::LinkParams was;
  netem::ReshapeHandle ready;  // the direction's socket and index, kept between changes
};

// One TCP flow for 3 s over 10 ms at 50 Mbit/s; after 1.5 s the rate drops to 10 Mbit/s.
// The counters before the change and after the flow, and the flow's result.
struct RateDecrease {
  netem::ShapeCounters before, after;
  IperfResult tcp;
};
RateDecrease rate_decrease_under_tcp(netem::Backend backend, const Line& l);

}  // namespace xdc::testbed
