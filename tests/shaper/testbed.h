#pragma once
// Test bed for shaping fidelity: a line of three namespaces A — GW — B joined by veths,
// GW forwarding (a gateway, as in an xdc network), and the probes that measure it
// (ping, iperf3). Traffic never leaves these namespaces. Names start with "xdct-" and
// carry the test process's pid; the destructor deletes them even when a test fails,
// and the constructor deletes leftovers of test processes that no longer run.
// Fixture set-up uses iproute2's `ip` through argv vectors (tests only).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace xdc::testbed {

class Line {
 public:
  explicit Line(const std::string& label);  // label: a few [a-z0-9] characters
  ~Line();
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;

  std::string a, gw, b;                          // namespace names
  static constexpr const char* kGwToB = "to-b";  // GW's egress towards B (the one shaped)
  static constexpr const char* kGwToA = "to-a";
  std::string a_ip = "10.201.1.2", b_ip = "10.201.2.2";
};

// Runs `ip ARGS...` (or any argv) and throws std::runtime_error with its output on failure.
void must_run(const std::vector<std::string>& argv, const std::string& netns = "");

// Namespaces whose name starts with `prefix` (from `ip netns list`).
std::vector<std::string> netns_with_prefix(const std::string& prefix);

struct PingResult {
  int sent = 0, received = 0;
  std::vector<double> rtt_ms;  // one per reply
  std::string output;          // ping's own words, for failure messages
  std::vector<bool> replied;   // udp_probe: per probe, in sending order
  int duplicates = 0;          // udp_probe: replies beyond the first for a probe
  double loss() const { return sent ? 1.0 - double(received) / sent : 0; }
};
// ping from `netns` to `ip`: exactly `count` echo requests every `interval_s`; the run
// is cut at `deadline_s` seconds (then nothing is reported: set it generously).
PingResult ping(const std::string& netns, const std::string& ip, int count, double interval_s,
                double deadline_s, int payload_bytes = 56);

// UDP echo probes A -> B -> A with ns timestamps (ping prints only 3 significant digits:
// "time=10.1 ms"). An echo server runs in `server_ns` for the call; `count` probes leave
// every `interval_s`; replies are awaited `linger_s` after the last probe.
PingResult udp_probe(const std::string& client_ns, const std::string& server_ns,
                     const std::string& server_ip, int count, double interval_s,
                     double linger_s = 1.0, int payload_bytes = 32);

// A one-way UDP stream A -> B: `count` datagrams of `payload_bytes` every `interval_s`,
// each carrying its sequence number. Send (the kernel's stamp as the datagram enters the
// sender's interface queue) and arrival (the kernel's receive stamp) are CLOCK_REALTIME,
// the clock reshape_egress answers in; both ends run on this machine, so one-way delay =
// arrival - send. The receiver waits `linger_s` after the last one.
// `batch_s` > 0: the sender wakes every batch_s and sends what is due in one call
// (sendmmsg): for a load whose rate matters
// more than each packet's moment (a kernel with few system calls to spare, a UML guest,
// cannot send 50 Mbit/s of 1400-byte datagrams one call each).
struct OneWayPacket {
  int64_t sent_ns = 0, arrived_ns = -1;  // -1: lost
  uint32_t bytes = 0;                    // UDP payload
};
struct OneWayResult {
  std::vector<OneWayPacket> packets;    // by sequence number
  std::vector<uint32_t> arrival_order;  // sequence numbers as they arrived
  int kernel_send_stamps = 0;           // packets whose send time is the kernel's
  int lost() const;
  int reorders() const;  // arrivals with a smaller sequence number than one before them
};
OneWayResult one_way_stream(const std::string& client_ns, const std::string& server_ns,
                            const std::string& server_ip, int count, double interval_s,
                            int payload_bytes = 32, double linger_s = 0.5, double batch_s = 0);
int64_t realtime_ns();

struct IperfResult {
  double goodput_bps = 0;  // received by the server, after the omitted warm-up
  double sent_bps = 0;
  double received_bytes = 0;  // the payload the server read, warm-up excluded
  long retransmits = 0;
  std::string error;
};
// One TCP flow A -> B for `seconds` after `omit_s` of warm-up (iperf3 in both ends).
IperfResult iperf_tcp(const std::string& client_ns, const std::string& server_ns,
                      const std::string& server_ip, double seconds, double omit_s);

// Socket buffers >= BDP for TCP in `netns` (net.ipv4.tcp_rmem / tcp_wmem, 64 MiB max).
void big_tcp_buffers(const std::string& netns);

// The period of a rate test's testing::StallMeter: 1 ms, or 10 ms in a User-Mode Linux
// guest (XDC_UML_GUEST), whose timer wake-ups are host signals: at 1 ms the meter took
// what it measured from the guest's forwarding (1 Gbit/s: 695-716 Mbit/s with it, 928
// without).
std::chrono::milliseconds stall_meter_period();

double median(std::vector<double> v);
double mean(const std::vector<double>& v);
double stdev(const std::vector<double>& v);

}  // namespace xdc::testbed
