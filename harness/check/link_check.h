#pragma once
// `xdc check`: every WAN direction of an emulated network measured against its
// configuration. RTT is probed host to host across the link (both directions' delay
// add up in it); loss one way with a UDP stream; goodput with one TCP flow, and with
// `flows` parallel TCP flows (iperf3 -P, beside it; the rate is judged by it): over a WAN one
// flow is window-limited by the hosts' socket buffers (about 0.68 x wmem_max per round
// trip, harness/sim/tcp_model.h), several flows show what the link itself carries, as
// several connections per transfer (experiment key mpi.connections) would.
// The machine's own floor is measured in the same check: the RTT spread of the unshaped
// path (each host to its gateway) and the delay lines' release lateness (actual minus
// scheduled release, both directions, over the RTT probe's packets). A busy machine wakes
// a delay line late; that spread adds to the configured jitter in quadrature and its mean
// to the round trip, and the verdicts below judge against configured plus floor.
// Acceptance per metric (DESIGN/REFERENCE): median RTT - base within max(0.2 ms, 2%) plus
// the floor's spread of the configured round trip plus the lines' mean lateness; RTT
// stdev within 15% of hypot(configured jitter, floor); TCP
// goodput (of the `flows` flows where measured, else of one) within 92-101% of the rate (or
// of the hosts' intra-DC rate where that is lower: the probe runs between two hosts); loss
// within 3 sigma of the configured rate.
//
// A network built under time dilation k (NetworkState::time_dilation) runs k times
// slower than its topology: the probes are paced for the links as built, and every
// figure is reported undilated (times / k, goodput x k) against the topology's values,
// so that `xdc check` of a 10 Gbit/s, 5 ms link at k = 20 (500 Mbit/s, 100 ms as built)
// reads 10 Gbit/s and 10 ms. TCP ramp-up is omitted for at least 30 round trips as
// built (slow start takes as many round trips at any k).
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "harness/network/state.h"

namespace xdc::check {

struct CheckOptions {
  int ping_count = 200;
  long udp_packets = 20000;
  double tcp_seconds = 5, tcp_omit_seconds = 2;
  bool throughput = true;  // run the TCP goodput probe
  int flows = 8;           // parallel flows of the multi-flow probe; <= 1: not run
  std::string congestion;  // TCP probe's congestion control (iperf3 -C); "" = host default
  // Only the WAN links between these pairs of DCs (both directions); empty: every link.
  // A pair without a WAN link between its DCs is an InputError naming the ones there are.
  std::vector<std::pair<std::string, std::string>> links;
};

struct Verdict {
  std::string metric;  // "delay", "jitter", "rate", "loss"
  double expected = 0, measured = 0, tolerance = 0;
  bool ok = true;
};

struct LinkCheck {
  std::string from, to;  // DCs
  std::string src, dst;  // hosts used
  std::string backend;
  netem::LinkParams configured, reverse;  // this direction and the way back (undilated)
  // The hosts' intra-DC rate (undilated; 0: unshaped): the probes' flows start and end on
  // one host each, so they carry at most this, and the rate is judged against the lower
  // of it and the link's.
  uint64_t host_rate_bps = 0;
  double time_dilation = 1;  // k of the network; figures below are undilated
  std::string congestion;    // of the TCP probe, "" = host default
  double base_rtt_ms = 0;
  double base_rtt_stdev_ms = 0;  // the unshaped path's spread (both hosts' gateway pings)
  // Delay lines' release lateness over the RTT probe, this direction and back (userspace
  // backend; packets 0 where there is no delay line or it was not read).
  double late_mean_ms[2] = {0, 0}, late_stdev_ms[2] = {0, 0};
  long late_packets[2] = {0, 0};
  double floor_stdev_ms() const;  // the machine's own RTT spread: base and lateness
  double rtt_median_ms = 0, rtt_min_ms = 0, rtt_p99_ms = 0, rtt_stdev_ms = 0;
  int rtt_samples = 0;             // pings answered (the jitter verdict's tolerance depends on it)
  double goodput_mbit = -1;        // -1 when not measured
  int flows = 0;                   // of the multi-flow probe; 0 when not run
  double multi_goodput_mbit = -1;  // all `flows` together; -1 when not measured
  double loss_pct = 0;
  long loss_packets = 0;
  std::vector<Verdict> verdicts;
  bool ok() const;
};

// Expected RTT standard deviation (ms) when both directions jitter independently.
double expected_rtt_stdev_ms(const netem::LinkParams& there, const netem::LinkParams& back);

// Measures every WAN direction of `state`, one at a time; `progress` gets a line each.
// The network's WAN links as DC pairs, each link once, in the state's order.
std::vector<std::pair<std::string, std::string>> wan_links(const net::NetworkState& s);
// `n` of wan_links(s), drawn without replacement by a generator seeded with `seed` (the
// same seed draws the same links), in the state's order; all of them when n >= their
// number. For a bounded `xdc check` of a large network.
std::vector<std::pair<std::string, std::string>> sample_links(const net::NetworkState& s, int n,
                                                              uint64_t seed);

std::vector<LinkCheck> check_network(const net::NetworkState& state, const CheckOptions& opts,
                                     const std::function<void(const std::string&)>& progress);

// Judges the measured figures against the configuration (fills `verdicts`). TCP goodput is
// judged against the rate only where neither direction loses packets: with loss, one flow
// is loss-limited as on a real WAN (reported, "(loss)" in the table, not judged). The
// multi-flow goodput, where measured, is what is judged (one flow may be window-limited
// by the hosts' buffers); else the single flow's.
void judge(LinkCheck& c);
bool lossy(const LinkCheck& c);  // either direction configured with loss

nlohmann::json to_json(const std::vector<LinkCheck>& checks);
std::string to_table(const std::vector<LinkCheck>& checks);

}  // namespace xdc::check
