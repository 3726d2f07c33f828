#pragma once
// Internals of parse_topology: the YAML document -> Topology, in steps that each check
// their part (see topology.h for the format and the rules).
#include <optional>
#include <string>
#include <vector>

#include "harness/common/yaml_reader.h"
#include "harness/topology/topology.h"

namespace xdc::topo {

Topology parse_topology_node(const yaml::Value& root);

// The keys a WAN link (and each "<a>_to_<b>" override) may carry.
extern const std::vector<std::string> kLinkKeys;

// Where a direction's values came from, for the checks made once a direction is final.
struct LinkOrigin {
  std::optional<yaml::Value> reorder;  // the `reorder:` that set reorder_pct
};

// Applies the link keys present in `m` onto `p`, leaving absent ones as they are, so
// the same function reads the shared keys and a partial per-direction override.
// Does not check keys (the caller knows which others it allows).
void apply_link_keys(const yaml::Map& m, netem::LinkParams* p, LinkOrigin* origin);

// A `changes:` list (topology.h, WanChange), checked.
std::vector<WanChange> read_changes(const yaml::Value& v);

// A `trace:` value (a CSV path relative to the YAML file, or {file, compress}) as changes.
std::vector<WanChange> read_trace(const yaml::Value& v);

// The keys of a `tcp:` block (topology, DC, host, experiment).
extern const std::vector<std::string> kTcpKeys;
// Reads the `tcp:` block `v` (checking its keys) and applies the keys present onto `s`,
// leaving absent ones as they are: each level overrides the one outside it.
void apply_tcp_block(const yaml::Value& v, TcpSettings* s);
// A `network:` map ({backend: native | mininet}) into `backend`; InputError at the
// offending key or value. Shared by topologies and experiments.
void read_network_block(const yaml::Value& v, NetworkBackend* backend);

}  // namespace xdc::topo
