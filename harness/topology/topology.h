#pragma once
// The validated model of an emulated multi-datacenter network (topologies/*.yaml).
// Loading checks everything a build could trip on, so that NetworkBuilder never
// fails on input: names (charset, length limits of interface names), units, ranges,
// WAN links naming known DCs, connectivity. Bad input throws xdc::InputError with
// file:line:col and what was expected.
//
//   name: two-dc                    # required; see the name rules below
//   description: free text          # optional
//   shaping: auto                   # auto | kernel | userspace (default auto)
//   network: {backend: native}      # native | mininet: what makes the namespaces, bridges
//                                   # and veths (NetworkBackend below; default native)
//   intra_dc: {rate: 10gbit, delay: 50us}      # optional; defaults 10gbit, 0us
//   dcs:                            # required, at least one
//     - {name: east, hosts: 2}      # a count generates east-h1, east-h2
//     - {name: west, hosts: [w1, w2]}
//   wan:                            # every DC must be reachable; one link per DC pair
//     - between: [east, west]
//       delay: 20ms                 # ONE-WAY, each direction (units: harness/common/units.h)
//       jitter: 1ms                 # or {value: 1ms, distribution: normal|uniform|pareto|
//                                   #     paretonormal, correlation: 25%}; default normal
//       loss: 0.1%                  # or {model: random, p: 1%, correlation: 25%}
//                                   # or {model: gemodel, p: 1%, r: 10%, h: 0%, k: 100%}
//       rate: 1gbit                 # absent = unlimited
//       queue: auto                 # packets (1..1000000) or auto (from the BDP)
//       duplicate: 0.1%             # also reorder: (needs a delay; not with userspace),
//       corrupt: 0.01%              # all percentages 0..100%
//       west_to_east: {delay: 25ms} # partial per-direction override, keys "<a>_to_<b>"
//       changes:                    # optional: the link changed in place while it runs
//         - {at: 30s, delay: 80ms}  #   (WanChange below); in "<a>_to_<b>" for one direction
//         - {at: 40s, down: 2s}
//       trace: traces/wan.csv       # or, instead of changes: a CSV of t_ms,delay_ms,
//                                   # rate_mbit,loss_pct rows ({file: F, compress: 20}:
//                                   # its time / 20); load_trace_csv below; also
//                                   # {file: F, format: mahimahi, window: 100ms} (rate from
//                                   # Mahimahi's packet-delivery trace) and loop: true
//   tcp:                            # optional: TCP of every host (TcpSettings below)
//     congestion: cubic             # a congestion control the kernel has (default cubic)
//     rmem_max: 6mib                # autotuning maxima: 3rd field of net.ipv4.tcp_rmem /
//     wmem_max: 4mib                #   tcp_wmem (defaults: stock Linux, 6 MiB / 4 MiB)
//     slow_start_after_idle: true   # net.ipv4.tcp_slow_start_after_idle (default true)
//     ecn: server                   # off | on | server: net.ipv4.tcp_ecn 0/1/2 (default
//                                   #   server: answer ECN, do not ask for it; stock)
//
// TCP per DC and per host: a DC's `tcp:` overrides the topology's keys for its hosts, and a
// host written as a map in a `hosts:` list overrides its DC's, each partially (keys absent
// keep the outer value):
//   dcs:
//     - {name: east, hosts: 2, tcp: {congestion: bbr}}
//     - {name: west, hosts: [w1, {name: w2, tcp: {rmem_max: 32mib}}]}
// An experiment's `tcp:` (experiment.h) is applied over every host's, as its `wan:` is.
//
// Decisions: jitter may exceed delay (as in netem; a sampled negative delay counts as
// zero). Scalar `jitter:` uses the normal distribution (tc's default would be uniform);
// in an override it changes the amount and keeps the inherited distribution. `loss` in an
// override replaces the whole loss model. Gilbert-Elliott h and k in YAML are written as
// tc's command line takes them (`loss gemodel p r 1-h 1-k`): the LOSS probabilities in
// the bad and the good state, defaults r 100%, h 100%, k 0%; k > h is refused. LinkParams
// stores netem's delivery probabilities (their complements). "0%" loss is no loss model at all.
// Unknown keys are errors everywhere.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/input_error.h"
#include "netem/shaper/link_params.h"

namespace xdc::topo {

// Names: lowercase letters, digits and '-', starting with a letter. Limits that keep
// every derived kernel name within IFNAMSIZ (15 chars):
//   root-namespace veth "xdc-<network>"     -> network name <= 10
//   gateway WAN veth    "wan-<peer dc>"     -> DC name <= 11
//   gateway host port   "<host>"            -> host name <= 15
// `hosts: N` generates "<dc>-h1".."<dc>-hN"; host names are unique across the topology
// and never equal a DC name. A host's name is also the name of its ports on the gateway
// and the management switch, and part of its namespace "xdc-<net>.<host>", so it may not
// be one of the builder's own names there (harness/network/names.h, builder.cpp):
// "lo", "br0", "root", "mgmt", nor start with "wan-".
inline constexpr size_t kMaxNetworkName = 10;
inline constexpr size_t kMaxDcName = 11;
inline constexpr size_t kMaxHostName = 15;
inline constexpr const char* kReservedHostNames[] = {"lo", "br0", "root", "mgmt"};
inline constexpr const char* kReservedHostPrefix = "wan-";
// Address plan limits (harness/network/names.h): a DC is a /24, the management network
// one subnet for all hosts (up to a /20), WAN /30s numbered from 10.2.0.0.
inline constexpr int kMaxDcs = 250;
inline constexpr int kMaxHostsPerDc = 250;
inline constexpr int kMaxHosts = 4093;
inline constexpr int kMaxWanLinks = 4096;

// TCP settings of an emulated host, written into its namespace's sysctls by the network
// builder. Defaults are stock Linux (Debian 12), not the machine's: an experiment gives the
// same TCP on every machine. net.core.rmem_max/wmem_max are machine-wide (read-only inside
// a namespace) and only cap buffers a program fixes with SO_RCVBUF/SO_SNDBUF; xdc leaves
// them alone and records them, autotuned sockets (OpenMPI's default) are bounded by
// rmem_max_bytes / wmem_max_bytes alone.
struct TcpSettings {
  std::string congestion = "cubic";      // net.ipv4.tcp_congestion_control
  uint64_t rmem_max_bytes = 6ULL << 20;  // net.ipv4.tcp_rmem's 3rd field
  uint64_t wmem_max_bytes = 4ULL << 20;  // net.ipv4.tcp_wmem's 3rd field
  bool slow_start_after_idle = true;     // net.ipv4.tcp_slow_start_after_idle
  int ecn = 2;                           // net.ipv4.tcp_ecn: 0 off, 1 on, 2 server
  SourcePos congestion_pos;  // the `congestion:` value in effect, for the kernel's refusal
  // Equal settings; where they were written does not count.
  bool operator==(const TcpSettings& o) const {
    return congestion == o.congestion && rmem_max_bytes == o.rmem_max_bytes &&
           wmem_max_bytes == o.wmem_max_bytes && slow_start_after_idle == o.slow_start_after_idle &&
           ecn == o.ecn;
  }
};
// Bounds of rmem_max / wmem_max (the sysctl is an int; below a page TCP cannot work).
inline constexpr uint64_t kMinTcpBufferBytes = 4096;
inline constexpr uint64_t kMaxTcpBufferBytes = 1ULL << 30;
// "off" | "on" | "server", the YAML words for tcp_ecn 0, 1, 2.
std::string ecn_word(int ecn);

struct Host {
  std::string name;  // unique across the topology, e.g. "east-h1"
  std::string dc;    // owning DC
  int index = 0;     // 0-based position inside its DC
  SourcePos pos;     // the name in `hosts: [...]`, or the count that generated it
  TcpSettings tcp;   // resolved: stock <- topology <- DC <- host (<- experiment)
};

struct Dc {
  std::string name;
  std::vector<Host> hosts;
  SourcePos pos;    // the DC's `name:` value
  TcpSettings tcp;  // the DC's hosts' before their own overrides
};

struct IntraDc {
  uint64_t rate_bps = 10'000'000'000ULL;  // 10gbit default
  uint64_t delay_us = 0;
};

// One scheduled change of a WAN direction (`changes:`), applied in place while a run
// goes on (harness/linkctl/): `at` counts from the start of each schedule's run, in the
// topology's (undilated) time. Only the given parameters change; `down: 2s` is stored as
// two changes, {at, down: true} and {at + 2s, down: false}. In YAML:
//   changes: [{at: 30s, delay: 80ms, jitter: 2ms, loss: 1%, rate: 200mbit}, {at: 40s, down: 2s}]
// Checked: `at` a duration (0..60 s, units.h), strictly increasing within a direction and
// after the end of a down window before it; each change names at least one of delay,
// jitter, loss, rate, down; rate > 0; unknown keys are errors.
// The one change type of a WAN direction: the topology's `changes:` / `trace:`, an
// experiment's `events:`, `xdc link`, and the simulator's timelines all carry it.
struct WanChange {
  uint64_t at_us = 0;  // scheduled changes: when, from the run's start (undilated)
  std::optional<uint64_t> delay_us, jitter_us, rate_bps;  // one-way, undilated
  std::optional<double> loss_pct;                         // random loss; 0 = none
  std::optional<bool> down;                               // true: cut; false: restore
  // Every parameter at once, undilated (restoring a direction), before the keys above.
  std::optional<netem::LinkParams> params;
  SourcePos pos;       // the change's `at:`
  std::string source;  // who asked, for the events log: "xdc link" | "FILE:LINE (at 4s)"
  bool empty() const {
    return !delay_us && !jitter_us && !loss_pct && !rate_bps && !down && !params;
  }
};
// A direction's parameters `p` with change `c` applied (params first, then the keys given;
// `down` is not a parameter: a cut keeps them). Both in the same time (undilated, or both
// dilated: time_dilated below).
netem::LinkParams applied(netem::LinkParams p, const WanChange& c);
// The change with its durations x k and its rates / k (netem::time_dilated).
WanChange time_dilated(WanChange c, double k);
// One direction in words, as `xdc link` and the report show it: "delay 20ms, jitter 1ms,
// loss 0.1%, rate 1gbit" (jitter and loss only when set; "rate unlimited").
std::string describe(const netem::LinkParams& p);

// A trace file as changes: rows "t_ms,delay_ms,rate_mbit,loss_pct" (an optional header of
// exactly those names first; blank lines and '#' comments skipped), each a change of
// delay, rate and loss at t_ms / compress. Checked: 4 numeric columns, t_ms strictly
// increasing, delay 0..60000 ms, rate > 0, loss 0..100; InputError "FILE:LINE:COL: ...".
std::vector<WanChange> load_trace_csv(const std::string& path, double compress = 1);
// Mahimahi's packet-delivery trace (`trace: {file: F, format: mahimahi, window: 100ms}`):
// one line per delivery opportunity of an MTU-sized packet (1500 bytes), its time in whole
// ms, nondecreasing. Read as a rate per `window` (opportunities x 1500 x 8 / window; an
// empty window keeps one packet's worth, a blackout of ~0.1 Mbit/s at 100 ms), one change
// where the rate changes, times / compress. Delay and loss stay the link's. InputError
// "FILE:LINE:COL: ..." for a line that is not whole ms or goes back in time.
inline constexpr double kMahimahiPacketBytes = 1500;
std::vector<WanChange> load_mahimahi_trace(const std::string& path, uint64_t window_us,
                                           double compress = 1);
// `loop: true`: the trace's changes repeated every `period_us` (Mahimahi: its last window's
// end; CSV: the last row lasts as long as the interval before it) up to kLoopHorizonUs of
// run or kLoopMaxSteps changes, whichever comes first.
inline constexpr uint64_t kLoopHorizonUs = 3'600'000'000;
inline constexpr size_t kLoopMaxSteps = 20000;
std::vector<WanChange> loop_changes(std::vector<WanChange> one_period, uint64_t period_us);

// A point-to-point link between two DC gateways. Each direction is shaped on the
// sending gateway's egress. In YAML the shared keys apply to both directions and the
// keys "<a>_to_<b>" / "<b>_to_<a>" hold partial per-direction overrides.
struct WanLink {
  std::string a, b;          // DC names, as written in `between: [a, b]`
  netem::LinkParams a_to_b;  // impairments on a's gateway egress towards b
  netem::LinkParams b_to_a;
  std::vector<WanChange> a_to_b_changes, b_to_a_changes;  // in time order
  SourcePos pos;  // where the link was declared, for messages

  bool joins(const std::string& x, const std::string& y) const {
    return (a == x && b == y) || (a == y && b == x);
  }
  // The direction leaving `from` (one of a, b).
  const netem::LinkParams& egress(const std::string& from) const {
    return from == a ? a_to_b : b_to_a;
  }
  const std::string& peer(const std::string& dc) const { return dc == a ? b : a; }
};

// What builds a network's layer 2 (namespaces, bridges, veths): xdc itself over netlink
// (native), or Mininet's Python API (harness/network/mininet.h). Addresses, routes, TCP
// and the WAN shaping are xdc's in both, so `xdc run`, `check`, `link` work unchanged.
// A topology's `network: {backend: mininet}`; an experiment's `network:` overrides it
// (experiment.h), `xdc up --backend` too.
enum class NetworkBackend { kNative, kMininet };
std::string to_string(NetworkBackend b);  // "native" | "mininet"

struct Topology {
  std::string name;         // network name (<= kMaxNetworkName), the default for `xdc up --name`
  std::string description;  // optional free text
  std::string source_file;
  netem::Backend shaping = netem::Backend::kAuto;
  NetworkBackend backend = NetworkBackend::kNative;
  IntraDc intra_dc;
  TcpSettings tcp;  // the topology's `tcp:` over the stock defaults
  std::vector<Dc> dcs;
  std::vector<WanLink> wan;

  const Dc* find_dc(const std::string& name) const;      // nullptr if absent
  const Host* find_host(const std::string& name) const;  // nullptr if absent
  std::vector<const Host*> hosts() const;                // all hosts, DC order
  const WanLink* find_link(const std::string& x, const std::string& y) const;  // either order
};

// The network that emulates `t` under time dilation `k` (>= 1; experiment.h's
// time_dilation): every WAN delay and jitter and the intra-DC delay x k, every WAN and
// intra-DC rate / k (netem::time_dilated). Queue sizes in packets are kept: an automatic
// WAN bottleneck queue is fixed at its undilated size (queue_sizing.h's floor of 1 ms
// would shrink by k; above it rate x delay is unchanged anyway).
Topology time_dilated(Topology t, double k);
inline constexpr double kMaxTimeDilation = 1000;  // a 1 ms delay becomes 1 s

// Parses and validates. `file_label` names the source in error messages.
Topology parse_topology(const std::string& yaml_text, const std::string& file_label);
// Reads `path` (InputError if unreadable) and parses it.
Topology load_topology(const std::string& path);

// Static routing between DCs: shortest paths by one-way delay in the direction of travel
// (ties: fewer hops, then the next hop with the smallest name). Routes are destination
// trees, so following next_hop from any DC reaches `to` along the path() it reports;
// with asymmetric delays the way back may differ. next_hop(from, to) is the neighbour DC
// that `from` forwards to; it throws std::out_of_range for from == to or unknown DCs.
struct Routes {
  std::map<std::pair<std::string, std::string>, std::string> next;
  const std::string& next_hop(const std::string& from, const std::string& to) const;
  std::vector<std::string> path(const std::string& from, const std::string& to) const;  // from..to
};
Routes compute_routes(const Topology& t);

}  // namespace xdc::topo
