#include "tests/shaper/reshape.h"

#include <chrono>
#include <thread>

namespace xdc::testbed {

ShapedDirection::ShapedDirection(netem::Backend backend, const Line& l, const netem::LinkParams& p)
    : was(p) {
  auto s = netem::shape_egress(backend, {l.gw, Line::kGwToB, "gw->b"}, p);
  s->detach();
  r = s->record();
  netem::prepare_reshape(r, ready);
}

ShapedDirection::~ShapedDirection() {
  netem::undo_shape(r);
}

std::pair<int64_t, int64_t> ShapedDirection::change(const netem::LinkParams& p) {
  const int64_t asked = realtime_ns();
  const int64_t done = netem::reshape_egress(r, was, p, netem::Backend::kAuto, {}, &ready);
  was = p;
  return {asked, done};
}

RateDecrease rate_decrease_under_tcp(netem::Backend backend, const Line& l) {
  netem::LinkParams p;
  p.delay_us = 10'000;
  p.rate_bps = 50'000'000;
  ShapedDirection s(backend, l, p);
  big_tcp_buffers(l.a);
  big_tcp_buffers(l.b);
  RateDecrease out;
  std::thread flow([&] { out.tcp = iperf_tcp(l.a, l.b, l.b_ip, 3, 0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  out.before = netem::shape_counters(s.r);
  netem::LinkParams slow = p;
  slow.rate_bps = 10'000'000;
  s.change(slow);
  flow.join();
  out.after = netem::shape_counters(s.r);
  return out;
}

}  // namespace xdc::testbed
