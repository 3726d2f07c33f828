#pragma once
// MPI's rsh agent: OpenMPI runs `AGENT HOST orted ARGS...` where a remote shell would
// run `orted ARGS...` on HOST, the arguments quoted for that shell. `xdc mpi-agent
// --name NET HOST ARGS...` enters HOST of network NET the one way (net::exec_in_namespace,
// as `xdc exec` does: netns, UTS name, the host's /etc/hosts) and hands the joined
// arguments to /bin/sh -c, which is the remote shell OpenMPI quoted them for. The
// words come from mpirun, never from user input. On a network spread over a lab (state
// backend "lab", harness/lab/controller.h) the host is on another machine: the agent
// hands the same words to that machine's `xdc mpi-agent` over ssh (each word quoted for
// the remote shell, lab/remote.h), which enters the host there.
#include <string>
#include <vector>

namespace xdc::launch {

// Replaces the process; returns only by throwing (unknown host: InputError).
[[noreturn]] void run_agent(const std::string& net, const std::string& host,
                            const std::vector<std::string>& words);

}  // namespace xdc::launch
