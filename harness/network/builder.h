#pragma once
// Builds the emulated network of a topology: host, gateway and management namespaces, a
// routed port per host on its DC's gateway, WAN veths between gateways (made over
// netlink, or by Mininet with `network: {backend: mininet}`, mininet.h), addresses,
// static routes along shortest paths, /etc/netns hosts files, and the WAN shaping on
// each gateway's egress.
// All or nothing: on any failure (or SIGINT/SIGTERM during the build) what was made is
// torn down before the error propagates. On success the state file is written and the
// shapers are left running until `xdc down`.
//
// The build runs in steps, one per phase and one per host in each per-host loop (with
// Mininet, one more once its driver runs); the last step, "saving the state", comes
// after every shaper has started and before the state file is written. A signal is
// acted on between steps.
//
// Test hook: with XDC_TEST_STOP_UP_AT=N in its environment (N >= 1, or "last") the build
// stops itself with SIGSTOP as step N begins, after writing "xdc up: stopped at step N
// (what)" to standard error; SIGCONT resumes it. A test of what a crash leaves behind
// kills it there: the moment is the same on any machine, however fast it builds.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/network/state.h"
#include "harness/topology/topology.h"

namespace xdc::net {

// One machine's part of a network spread over a lab (harness/lab/): only `dcs`
// are built here; a WAN link to a DC on another machine is a VXLAN tunnel between the two
// machines' data addresses (on `data_interface`) ending in this DC's gateway, and the
// hosts' data MTU leaves room for its 50 bytes. Host addresses, management addresses and
// hosts files are those of the whole network (every machine agrees on them). The
// management switches of the machines are one: a VXLAN port on each floods to every other
// machine in `peers`; each machine's root address on it is .254 minus its index `machine`.
// The controller joins that switch too (harness/lab/controller.h): mpirun's control
// channel for `xdc run --lab`.
struct LabPart {
  std::set<std::string> dcs;                          // built on this machine
  std::map<std::string, std::string> dc_address;      // every DC -> its machine's data address
  std::string local_address, data_interface;          // this machine's
  std::vector<std::string> peers;                     // the other machines' data addresses
  int machine = 0;                                    // this machine's index in the lab
  int slot = 0;                                       // the network's, the same everywhere
  int mtu = 1450;                                     // hosts' data links (underlay 1500 - 50)
  static LabPart from_json(const std::string& text);  // InputError on bad input
  std::string to_json() const;
};

struct BuildOptions {
  std::string name;                                  // network name; "" = the topology's
  std::optional<netem::Backend> shaping;             // overrides the topology's `shaping`
  std::optional<topo::NetworkBackend> backend;       // overrides the topology's `network.backend`
  std::function<void(const std::string&)> progress;  // one line per phase; may be empty
  double time_dilation = 1;    // >= 1: build topo::time_dilated(topo, k), recorded in the state
  std::optional<LabPart> lab;  // this machine's part of a lab's network (native backend)
  // The delay lines' loss and jitter draws: the same seed draws the same on any network
  // built from the topology; `xdc run` passes the experiment's seed.
  uint64_t seed = 1;
};

NetworkState build_network(const topo::Topology& topo, const BuildOptions& opts);

// Network names: [a-z0-9-], starting with a letter, at most topo::kMaxNetworkName.
// Returns "" when valid, else what is wrong.
std::string check_network_name(const std::string& name);

}  // namespace xdc::net
