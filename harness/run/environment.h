#pragma once
// environment.json of a run: where and with what it ran (kernel, CPU count, shaping
// backend of every WAN direction and what the emulation could not honour, OpenMPI's
// version, the network and the compute mode, the hosts' TCP and the root's for reference),
// so that results can be compared honestly.
#include <nlohmann/json.hpp>

#include "harness/experiment/experiment.h"
#include "harness/network/state.h"

namespace xdc::sim {
struct HostMemory;
}

namespace xdc::run {

// `host_memory`: the rates the run's prediction takes for libnbc's work (host_memory.h),
// recorded when measured (non-zero).
nlohmann::json environment_json(const Experiment& e, const net::NetworkState& net, bool reused,
                                const sim::HostMemory* host_memory = nullptr);
// The hosts' TCP as read back (state.h's HostTcp), one member per setting: its value when
// every host has it, else "value (hosts); value (hosts)". {} when the state has none.
nlohmann::json tcp_json(const net::NetworkState& net);
// The root namespace's TCP, for reference, and xdc's change to its allowed list if any.
nlohmann::json root_tcp_json(const net::RootTcp& r);
// {"k": k} and, when k != 1, "not_stretched": time_dilation_fixed_timers().
nlohmann::json time_dilation_json(double k);
// What time dilation does not stretch (experiment.h), in words, for the record and the report.
std::vector<std::string> time_dilation_fixed_timers();
// mpi.connections as recorded: {"wan": N or "openmpi", "dc": N or "openmpi"}.
nlohmann::json connections_json(const Experiment& e);
// "kernel" | "userspace" | "mixed: ..." from the network's WAN links.
std::string shaping_backend(const net::NetworkState& net);

}  // namespace xdc::run
