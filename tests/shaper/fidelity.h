#pragma once
// Fidelity measurements of one shaped direction: each shapes GW's
// egress towards B of a testbed::Line with one backend, measures from A to B, and
// returns configured vs measured with the acceptance bounds. Used by the fidelity
// tests (which assert ok()) and by bench_shaping (which writes the figures as JSON).
#include <nlohmann/json.hpp>
#include <string>

#include "netem/shaper/link_params.h"
#include "tests/shaper/testbed.h"

namespace xdc::testbed {

struct Figure {
  std::string what;     // "delay" | "jitter" | "rate" | "loss"
  std::string backend;  // which backend realised it
  std::string unit;     // of configured / measured / low / high
  double configured = 0, measured = 0, low = 0, high = 0;
  nlohmann::json detail;  // raw numbers behind `measured`
  bool ok() const { return measured >= low && measured <= high; }
  std::string line() const;  // one printable line
  nlohmann::json to_json() const;
};

// Allowances for a kernel whose timer is coarser than a real machine's (a User-Mode
// Linux guest: its timer interrupts are host signals, late by the host's scheduling
// latency). From the environment; unset on a real kernel, where they are 0 and 0.92.
//   XDC_FIDELITY_TIMER_SLACK_MS  added to the upper delay bound (a late timer only adds)
//   XDC_FIDELITY_RATE_FLOOR      lowest accepted TCP goodput / rate
// The UML ctest entry sets them; fidelity_test.cpp gives the figures behind its values.
struct Allowances {
  double timer_slack_ms = 0;
  double rate_floor = 0.92;
};
Allowances allowances();  // read once from the environment

// One-way delay on A->B only: least RTT minus least base RTT vs delay, within max(0.2 ms,
// 2%) (+ timer slack above); the medians are in the detail.
Figure measure_delay(const Line& l, netem::Backend b, double delay_ms);
// delay + normal jitter: RTT stdev vs jitter, from 15% under it to 15% over its hypot with
// the RTT stdev of the same delay without jitter (what this machine adds).
Figure measure_jitter(const Line& l, netem::Backend b, double delay_ms, double jitter_ms);
// rate at `delay_ms`: single-flow TCP goodput from 92% (rate floor) of the rate, times the
// share of the time the machine was not stalled (testing::StallMeter), up to 100.5% of its
// payload rate (netem::tcp_payload_bps, which the simulator's links carry). On the kernel
// backend, a figure under that floor is judged again against what the line carries at the
// same delay without a rate (Linux's forwarding on this machine), when that is less.
Figure measure_rate(const Line& l, netem::Backend b, double rate_mbit, double delay_ms);
// random loss: measured loss within 3 sigma = 3 sqrt(p(1-p)/N).
Figure measure_loss(const Line& l, netem::Backend b, double loss_pct);
// random loss under one TCP flow (iperf3, hosts' offloads as created: TSO/GSO on):
// the shaper's drop decisions per wire packet within 3 sigma of the rate. Wire packets
// are counted in frames (kernel: netem's packet counter counts GSO segments, its drop
// counter skbs; userspace: the delay line's bytes / 1500 when more than its packets), so
// loss decided per GSO aggregate (~p / segments per aggregate) fails.
Figure measure_wire_loss(const Line& l, netem::Backend b, double loss_pct, double delay_ms);

}  // namespace xdc::testbed
