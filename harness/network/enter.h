#pragma once
// Entering an emulated host the way `ip netns exec` does, plus its UTS namespace:
// a private mount namespace where /etc/hosts is the host's /etc/netns/<ns>/hosts and
// /sys shows the host's interfaces, then exec. Used by `xdc exec` and by MPI's rsh
// agent, so there is one way into a host.
#include <string>
#include <vector>

#include "harness/network/state.h"

namespace xdc::net {

// Resolves HOST (an emulated host, or "gw.<dc>"/"mgmt" for infrastructure namespaces)
// in network `net` ("" = the only network that has it). Throws InputError when unknown
// or ambiguous. Returns {network, namespace}.
std::pair<std::string, std::string> resolve_host(const std::string& host, const std::string& net);

// Replaces this process with argv[0] inside the namespace. Returns only by throwing.
[[noreturn]] void exec_in_namespace(const std::string& net, const std::string& ns,
                                    const std::vector<std::string>& argv);

}  // namespace xdc::net
