#pragma once
// The controller's side of a network spread over a lab: the machine that runs
// `xdc up/run --lab` holds no DC, but it joins the lab's management switch (a VXLAN port
// `xdc-<net>`, root_link's name, flooding to every machine's data address, at
// 198.18.<slot>.(254 - machines)) so that mpirun's out-of-band channel reaches the orted
// of every host on every machine, as on one machine. Its record of the network,
// /run/xdc/<net>/state.json with backend "lab", is every machine's state merged, each
// host naming its machine: `xdc mpi-agent` reads it to ssh into the right machine, and
// `xdc down`/`xdc clean` here remove the port by its name (teardown.h).
#include <string>
#include <vector>

#include "harness/lab/lab.h"
#include "harness/network/state.h"

namespace xdc::lab {

// This machine's source address toward `address` (`ip -4 route get`), and the interface
// the route leaves by. Throws when there is no route.
struct LocalRoute {
  std::string source, interface;
};
LocalRoute route_toward(const std::string& address);

// The controller's address on the management switch of `machines` machines, slot `slot`.
std::string controller_mgmt_ip(int slot, size_t machines);

// Merges the machines' states of one network (each machine's `xdc up --lab-part` record,
// `parts[i]` from machine `names[i]`) into the controller's record: backend "lab", every
// host tagged with its machine, the controller's management address as mgmt_root_ip.
net::NetworkState merge_states(const std::vector<net::NetworkState>& parts,
                               const std::vector<std::string>& names, const Lab& lab);

// Creates the controller's port on the lab's management switch for `state` (merged) and
// saves the state locally; `route` is the controller's way to the machines, `peers` their
// data addresses. Throws, having removed what it made, on failure.
void join_management(const net::NetworkState& state, const LocalRoute& route,
                     const std::vector<std::string>& peers);

}  // namespace xdc::lab
