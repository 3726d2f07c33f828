#pragma once
// TCP of the emulated hosts (the topology's `tcp:` blocks, topology.h): the builder writes
// each host namespace's sysctls and reads them back, so that state.json, `xdc up` and
// environment.json record what the kernel really has; the root namespace's own values
// are recorded beside them for reference. Gateways route and get no TCP settings.
//
// Per namespace on Linux: tcp_congestion_control, tcp_rmem, tcp_wmem,
// tcp_slow_start_after_idle, tcp_ecn. Not: net.core.rmem_max/wmem_max (machine-wide,
// read-only inside a namespace), which xdc records and never changes.
//
// A namespace may only choose a congestion control listed in the root namespace's
// net.ipv4.tcp_allowed_congestion_control (EPERM otherwise, though the kernel has it).
// xdc then adds it to that list -- which permits it, the root's own default does not
// change --, says so, records it in the network's state, and keeps the list as it was
// before xdc's first change in kAllowedFile, once for all networks. The last xdc network
// to go (`xdc down`, `xdc clean`) takes xdc's additions out again. Callers hold the
// StateLock (state.h), so concurrent `xdc up`/`down` never fight over the list.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/network/state.h"
#include "harness/topology/topology.h"

namespace xdc::net {

// {"original": "reno bbr", "added": ["cubic"]} while xdc has widened the root's list.
inline constexpr const char* kAllowedFile = "/run/xdc/tcp_allowed.json";

// Applies `want` to host namespace `ns` and returns what it has afterwards. A value the
// kernel refuses, or one that does not read back as written, throws InputError naming the
// setting, `host` and the kernel's reason, at want.congestion_pos for the congestion
// control when known, else at `where` (the topology file). Congestion controls added
// to the root's allowed list are appended to `*allowed_added`.
HostTcp apply_host_tcp(const std::string& ns, const std::string& host,
                       const topo::TcpSettings& want, const SourcePos& where,
                       std::vector<std::string>* allowed_added);

// What namespace `ns` has now ("" = this thread's, the root for xdc).
HostTcp read_tcp(const std::string& ns);
RootTcp read_root_tcp();

// What `want` reads back as (the sysctls apply_host_tcp writes), to compare with HostTcp.
HostTcp expected_tcp(const topo::TcpSettings& want);

// "cubic, tcp_rmem 4096 131072 6291456, tcp_wmem 4096 16384 4194304, slow start after idle
// on, ecn server" -- the sysctls' own values, as `xdc up` and reports show them.
std::string describe(const HostTcp& t);
// The network's hosts grouped by identical TCP, groups in order of their first host.
struct TcpGroup {
  HostTcp tcp;
  std::vector<std::string> hosts;
};
std::vector<TcpGroup> tcp_groups(const NetworkState& s);

// What a host's TCP did, from its namespace's /proc/net/snmp (Tcp) and /proc/net/netstat
// (TcpExt): the kernel's counters since the namespace was made; a run keeps the difference
// over its job (TcpCounters::since). Retransmission timeouts stall a connection for at
// least TCP_RTO_MIN (200 ms), whatever its round trip; the kernel counts an episode's
// first timeout under the state it fired in (tcp_retransmit_timer: TCPTimeouts when no
// loss was being repaired, TCPSackFailures / TCPRenoFailures during fast recovery,
// TCPLossFailures after an earlier timeout), its backoffs not at all.
struct TcpCounters {
  int64_t sent_segments = 0;           // Tcp OutSegs (retransmissions excluded)
  int64_t retransmitted_segments = 0;  // Tcp RetransSegs
  int64_t fast_recoveries = 0;         // TCPSackRecovery + TCPRenoRecovery
  int64_t loss_probes = 0;             // TCPLossProbes: tail loss probes sent
  int64_t timeouts = 0;  // TCPTimeouts + TCPSackFailures + TCPRenoFailures + TCPLossFailures
  TcpCounters since(const TcpCounters& before) const;
  TcpCounters& operator+=(const TcpCounters& o);
  // {"sent_segments", "retransmitted_segments", "fast_recoveries", "loss_probes", "timeouts"}
  nlohmann::json to_json() const;
};
// Namespace `ns`'s counters now ("" = this thread's). Throws std::system_error when they
// cannot be read.
TcpCounters read_tcp_counters(const std::string& ns);

// When no xdc network is left (`present`: networks_present()'s answer), takes xdc's
// additions out of the root's allowed list and removes kAllowedFile. Returns what it did
// in words ("" = nothing to do).
std::string restore_root_allowed_if_last(const std::vector<std::string>& present);

}  // namespace xdc::net
