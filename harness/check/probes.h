#pragma once
// Measurements between emulated hosts, with the standard tools run inside the hosts:
// ping for RTT, iperf3 TCP for goodput, iperf3 UDP for one-way loss. Each probe is
// bounded in packets and time and sends only inside the emulated network.
#include <string>
#include <vector>

namespace xdc::check {

struct RttStats {
  int sent = 0, received = 0;
  double min_ms = 0, median_ms = 0, p99_ms = 0, mean_ms = 0, stdev_ms = 0;
};
// Summary of a set of RTT samples (ms); `sent` counts probes including the lost ones.
RttStats summarize_rtts(std::vector<double> samples_ms, int sent);
// Per-packet RTTs from ping's output ("... time=20.3 ms").
std::vector<double> parse_ping_rtts(const std::string& ping_output);

// `count` pings every `interval_ms` from `from` to `to_ip` (network `net`).
RttStats ping(const std::string& net, const std::string& from, const std::string& to_ip, int count,
              double interval_ms);
// The same pings' round trips (ms), one per reply, in the order they came.
std::vector<double> ping_rtts(const std::string& net, const std::string& from,
                              const std::string& to_ip, int count, double interval_ms);

struct TcpResult {
  double goodput_mbit = 0;  // receiver side, after the omitted slow-start seconds
  int retransmits = 0;      // segments the sender retransmitted
  double bytes_sent = 0;    // by the sender, retransmissions not counted
};
// `flows` parallel TCP flows (1: one; iperf3 -P) from `from` to `to` (iperf3 server
// started in `to`), `seconds` measured after `omit_s` seconds of ramp-up; `congestion`
// (iperf3 -C) picks the sender's congestion control, "" = the host's default. The result
// sums the flows.
TcpResult tcp_goodput(const std::string& net, const std::string& from, const std::string& to,
                      const std::string& to_ip, double seconds, double omit_s,
                      const std::string& congestion = "", int flows = 1);

struct UdpLoss {
  long sent = 0, lost = 0;
  double loss_pct() const { return sent ? 100.0 * lost / sent : 0; }
};
// A paced UDP stream of `packets` datagrams of 200 bytes from `from` to `to`.
UdpLoss udp_loss(const std::string& net, const std::string& from, const std::string& to,
                 const std::string& to_ip, long packets, double rate_mbit);

}  // namespace xdc::check
