#pragma once
// The Mininet backend (topology.h's NetworkBackend::kMininet, `network: {backend:
// mininet}`): the layer 2 of a network -- namespaces, bridges, veths -- is built through
// Mininet's Python API by the driver harness/network/xdc-mininet (/usr/bin/python3 with
// Debian's `mininet` and `bridge-utils`), and every Mininet node's namespace is then pinned
// under xdc's name (/run/netns/xdc-<net>.<...>, as `ip netns attach` does), so that all
// that follows -- addresses, routes, TCP, shaping, hosts files, `xdc exec/run/check/link`,
// traces and reports -- is the native backend's code, unchanged.
//
// Mininet's topology of an xdc network:
//   node                           Mininet class            pinned as          interfaces
//   each host                      Host                     xdc-<net>.<host>   eth0, mgmt0
//   each DC's gateway              Host (xdc makes it route) xdc-<net>.gw.<dc> lan0, wan-<peer>
//   DC d's switch "s<d>"           LinuxBridge, own netns   xdc-<net>.sw.<dc>  s<d>-eth<i+1>,
//   s<d>-gw the management switch "mgmt"   LinuxBridge, own netns   xdc-<net>.mgmt mgmt-eth<k+1>,
//   mgmt-root the root namespace             Node(inNamespace=False)  (none)             xdc-<net>
// (i: the host's index in its DC, k: its position in the topology). Switches live in
// namespaces of their own (Mininet's per-node inNamespace), so two networks' bridges never
// meet in the root namespace and nothing of a network but its management port is there, as
// with the native backend. Against native, each DC has one namespace more (its switch; a
// native DC has no switch: its gateway routes to a port per host), and the intra-DC delay
// sits on the gateway's lan0 egress instead of its fabric loop's: the same place on every
// packet's way to a host.
//
// Shaping is xdc's on both backends: the WAN on the gateways' wan-<peer> (kernel netem
// where the kernel has sch_netem, else the userspace delay line, as `shaping:` says), the
// intra-DC rate by tbf on a host's eth0 and its switch port. Mininet's TCLink is not used:
// `xdc link`, `xdc check` and time dilation drive xdc's shapers, TCLink's netem needs
// sch_netem (absent on the kernel this was built on) and its bw stops at 1 Gbit/s.
//
// Ownership. The driver process owns the Mininet network (node shells, bridges, links) and
// stops it with Mininet's own net.stop() on SIGTERM. xdc owns the pins, the hosts' UTS
// namespaces, /etc/netns, the state directory and what it configured. `xdc down`/`clean`
// stop the driver first (found by its command line, which names the network, so also
// after a crash), then undo the rest as for native. After a kill -9 of the driver, its
// node shells exit (their terminal closes) and the pinned namespaces stay for xdc down /
// clean. `mn -c` kills Mininet's node shells (pkill "mininet:") and removes root-namespace
// links named "*-ethN" (xdc makes none): the namespaces are xdc's, kept until xdc down /
// clean. Mininet's fixLimits() is skipped (xdc-mininet's docstring): root sysctls stay.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "harness/topology/topology.h"

namespace xdc::net {

inline constexpr const char* kMininetGatewayLan = "lan0";       // a gateway's port on its switch
std::string mininet_switch_port(int dc_index, int host_index);  // "s<d>-eth<i+1>"

// The driver: $XDC_MININET, else xdc-mininet next to this program, else the source tree's.
std::string mininet_program();

// One network's Mininet build, from start to detach.
class MininetNetwork {
 public:
  // Starts the driver for topology `t` as network `net` (its state directory must exist:
  // the plan and the driver's log go there) and waits until Mininet has built and started
  // it, calling `poll` every 100 ms (it may throw to abandon the build). Then pins each
  // node's namespace and gives each host a UTS namespace with its name. Throws
  // std::runtime_error with the driver's message and the tail of its log.
  MininetNetwork(const topo::Topology& t, const std::string& net,
                 const std::function<void()>& poll);
  // Not detached: closes the control pipe, so the driver stops the network, and waits
  // for it (the caller then removes the pins).
  ~MininetNetwork();
  MininetNetwork(const MininetNetwork&) = delete;
  MininetNetwork& operator=(const MininetNetwork&) = delete;

  // The build is complete: the driver keeps the network beyond this process.
  void detach();
  pid_t pid() const { return pid_; }
  const std::map<std::string, int>& nodes() const { return nodes_; }  // node -> shell pid

 private:
  pid_t pid_ = -1;
  int control_fd_ = -1;
  std::map<std::string, int> nodes_;
};

// Stops the Mininet driver(s) of network `net`: SIGTERM (the driver runs net.stop()), up
// to `grace`, then SIGKILL; reaps those that are this process's children. Returns how many
// were found. Idempotent; a network of the native backend has none.
int stop_mininet(const std::string& net,
                 std::chrono::milliseconds grace = std::chrono::seconds(20));

}  // namespace xdc::net
