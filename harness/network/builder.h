#pragma once
// Builds the emulated network of a topology: host, gateway and management namespaces,
// DC bridges, WAN veths between gateways (made over netlink, or by Mininet with
// `network: {backend: mininet}`, mininet.h), addresses, static routes along shortest
// paths, /etc/netns hosts files, and the WAN shaping on each gateway's egress.
// All or nothing: on any failure (or SIGINT/SIGTERM during the build) what was made is
// torn down before the error propagates. On success the state file is written and the
// shapers are left running until `xdc down`.
#include <functional>
#include <string>

#include "harness/network/state.h"
#include "harness/topology/topology.h"

namespace xdc::net {

struct BuildOptions {
  std::string name;                                  // network name; "" = the topology's
  std::optional<netem::Backend> shaping;             // overrides the topology's `shaping`
  std::optional<topo::NetworkBackend> backend;       // overrides the topology's `network.backend`
  std::function<void(const std::string&)> progress;  // one line per phase; may be empty
  double time_dilation = 1;  // >= 1: build topo::time_dilated(topo, k), recorded in the state
};

NetworkState build_network(const topo::Topology& topo, const BuildOptions& opts);

// Network names: [a-z0-9-], starting with a letter, at most topo::kMaxNetworkName.
// Returns "" when valid, else what is wrong.
std::string check_network_name(const std::string& name);

}  // namespace xdc::net
