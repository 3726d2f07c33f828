#pragma once
// The validated model of an emulated multi-datacenter network (topologies/*.yaml).
// Loading checks everything a build could trip on, so that NetworkBuilder never
// fails on input: names (charset, length limits of interface names), units, ranges,
// WAN links naming known DCs, connectivity. Bad input throws xdc::InputError with
// file:line:col and what was expected.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/common/input_error.h"
#include "netem/shaper/link_params.h"

namespace xdc::topo {

// Limits that keep every derived kernel name within IFNAMSIZ (15 chars):
//   root-namespace veth "xdc-<network>"     -> network name <= 10
//   gateway WAN veth    "wan-<peer dc>"     -> DC name <= 11
//   gateway host port   "<host>"            -> host name <= 15
inline constexpr size_t kMaxNetworkName = 10;
inline constexpr size_t kMaxDcName = 11;
inline constexpr size_t kMaxHostName = 15;

struct Host {
  std::string name;  // unique across the topology, e.g. "east-h1"
  std::string dc;    // owning DC
  int index = 0;     // 0-based position inside its DC
};

struct Dc {
  std::string name;
  std::vector<Host> hosts;
};

struct IntraDc {
  uint64_t rate_bps = 10'000'000'000ULL;  // 10gbit default
  uint64_t delay_us = 0;
};

struct WanLink {
  std::string a, b;              // DC names, as written in `between: [a, b]`
  netem::LinkParams a_to_b;      // impairments on a's gateway egress towards b
  netem::LinkParams b_to_a;
  SourcePos pos;                 // where the link was declared, for messages
};

struct Topology {
  std::string name;  // network name (<= kMaxNetworkName), the default for `xdc up --name`
  std::string source_file;
  netem::Backend shaping = netem::Backend::kAuto;
  IntraDc intra_dc;
  std::vector<Dc> dcs;
  std::vector<WanLink> wan;

  const Dc* find_dc(const std::string& name) const;      // nullptr if absent
  const Host* find_host(const std::string& name) const;  // nullptr if absent
  std::vector<const Host*> hosts() const;                // all hosts, DC order
};

// Parses and validates. `file_label` names the source in error messages.
Topology parse_topology(const std::string& yaml_text, const std::string& file_label);
// Reads `path` (InputError if unreadable) and parses it.
Topology load_topology(const std::string& path);

// Static routing between DCs: shortest paths by one-way delay (ties: fewer hops, then
// name order). next_hop(from, to) is the neighbour DC that `from` forwards to.
struct Routes {
  std::map<std::pair<std::string, std::string>, std::string> next;
  const std::string& next_hop(const std::string& from, const std::string& to) const;
  std::vector<std::string> path(const std::string& from, const std::string& to) const;  // from..to
};
Routes compute_routes(const Topology& t);

}  // namespace xdc::topo
