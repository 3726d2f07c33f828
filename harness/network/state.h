#pragma once
// What `xdc up` made, written to /run/xdc/<net>/state.json so that `xdc down`,
// `xdc exec`, `xdc check` and the launcher can find it. Teardown does not rely on it:
// names carry the network (names.h), so `xdc clean` works even when no state was written.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "netem/shaper/link_params.h"

namespace xdc::netem {
// JSON form of LinkParams as state.json and check reports write it (found by ADL).
void to_json(nlohmann::json& j, const LinkParams& p);
void from_json(const nlohmann::json& j, LinkParams& p);
}  // namespace xdc::netem

namespace xdc::net {

// TCP of a namespace as read back from its sysctls after the builder applied the
// topology's `tcp:` settings (harness/network/tcp.h). Empty congestion: not recorded
// (a state written before xdc recorded TCP).
struct HostTcp {
  std::string congestion;          // net.ipv4.tcp_congestion_control
  std::string tcp_rmem, tcp_wmem;  // "min default max" in bytes, space-separated
  bool slow_start_after_idle = true;
  int ecn = 2;  // net.ipv4.tcp_ecn
  bool operator==(const HostTcp&) const = default;
};

// The root namespace's TCP, for reference (hosts do not inherit it: xdc sets theirs).
struct RootTcp {
  HostTcp tcp;
  std::string allowed;                  // net.ipv4.tcp_allowed_congestion_control, after this build
  std::string available;                // net.ipv4.tcp_available_congestion_control
  uint64_t rmem_max = 0, wmem_max = 0;  // net.core.{r,w}mem_max: machine-wide caps of
                                        // SO_RCVBUF/SO_SNDBUF, not changed by xdc
  // Set while xdc has widened `allowed` (tcp.h): the list before, and what xdc added.
  std::string allowed_original;
  std::vector<std::string> allowed_added;
};

struct HostState {
  std::string name, dc, ns;
  std::string data_ip;  // on eth0, the shaped data network
  std::string mgmt_ip;  // on mgmt0, the unshaped control network
  HostTcp tcp;          // as read back after applying
  std::string machine;  // lab networks (backend "lab"): the lab machine holding the host
};

// One shaped WAN direction: gateway of `from` egress towards `to`. For a DC's fabric
// (intra-DC delay) from == to and ifname is the gateway's bridge.
struct ShapedLink {
  std::string from, to;  // DC names
  std::string netns, ifname;
  std::string backend;           // "kernel" | "userspace" | "none"
  netem::LinkParams configured;  // as built: under time dilation k, delays x k and rates / k
                                 // (changed in place by `xdc link set`, harness/linkctl/)
  nlohmann::json record;         // what the shaper needs to be undone (pids, handles)
  bool down = false;             // cut by `xdc link down` / `xdc dc isolate`: drops every packet
  // The shaper counts a cut's drops as loss (a cut is 100% loss): what the loss counter
  // read when the current cut began, and the drops of the cuts before it, so that `xdc
  // link show` can tell the two apart (linkctl::link_status).
  uint64_t loss_drops_at_down = 0;
  uint64_t down_drops = 0;
  // The network's seed for its delay lines' loss and jitter draws (BuildOptions::seed);
  // with the direction it seeds this link's shaper (shape_options).
  uint64_t seed = 1;
};

struct NetworkState {
  std::string name;
  std::string topology_file;
  int slot = -1;  // management subnet slot
  std::string mgmt_subnet, mgmt_root_ip;
  double created_unix = 0;
  std::vector<std::string> dcs;
  std::vector<HostState> hosts;
  std::vector<ShapedLink> links;
  // Intra-DC delay, one per DC: hosts route through their gateway, whose bridge egress
  // (every packet on its way to a host) carries the delay. Empty without intra-DC delay.
  std::vector<ShapedLink> fabric;
  std::vector<std::string> notes;  // what the emulation could not honour, in words
  RootTcp root_tcp;
  // Congestion controls this build added to the root's allowed list (tcp.h).
  std::vector<std::string> tcp_allowed_added;
  // Built under time dilation k (xdc up --time-dilation, experiment time_dilation): the
  // links run k times slower than the topology says; `xdc check` divides it back out
  // (the topology's values are netem::time_dilated(configured, 1 / k)).
  double time_dilation = 1;
  // Each host's intra-DC rate as built (both ends of its veth; under time dilation k, / k);
  // 0: unshaped. A flow between two hosts carries at most this whatever its WAN link's rate.
  uint64_t intra_dc_rate_bps = 0;
  // The shaping backend asked for ("auto" | "kernel" | "userspace"): what shapes a link
  // that was unimpaired at `xdc up` when a change impairs it. "" in older states = auto.
  std::string shaping;
  // What built the namespaces, bridges and veths: "native" (netlink, builder.cpp) or
  // "mininet" (mininet.h). "" in older states = native.
  std::string backend = "native";
  // Mininet backend: the driver that owns the Mininet network (stopped by xdc down /
  // clean), and the pid of each Mininet node's shell when the network came up.
  int mininet_pid = 0;
  std::map<std::string, int> mininet_nodes;
  // Backend "lab": the controller's view of a network spread over a lab's machines
  // (harness/lab/controller.h): every machine's hosts and links, each host's machine, and
  // the lab file (absolute) that says how to reach them. The only local object is the
  // controller's port on the management switch (root_link(name), mgmt_root_ip).
  std::string lab_file;

  const HostState* find_host(const std::string& name) const;
};

void to_json(nlohmann::json& j, const HostTcp& t);
void from_json(const nlohmann::json& j, HostTcp& t);
void to_json(nlohmann::json& j, const RootTcp& t);
void from_json(const nlohmann::json& j, RootTcp& t);
void to_json(nlohmann::json& j, const NetworkState& s);
void from_json(const nlohmann::json& j, NetworkState& s);

// Atomic write (temp file + rename) to state_dir(name)/state.json.
void save_state(const NetworkState& s);
std::optional<NetworkState> load_state(const std::string& net);
// Serialises xdc up / down / clean across processes (flock on /run/xdc/.lock), so a
// clean never races a build. Held for the object's lifetime.
class StateLock {
 public:
  StateLock();
  ~StateLock();
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;

 private:
  int fd_ = -1;
};

// Networks with a state directory under /run/xdc, sorted.
std::vector<std::string> list_state_dirs();

}  // namespace xdc::net
