#pragma once
// Undoing networks. Teardown finds objects by name (names.h), not only from state.json,
// so it also undoes what a crashed or killed `xdc up` left half-built. It never touches
// anything whose name does not carry xdc's prefix.
#include <sys/types.h>

#include <string>
#include <vector>

namespace xdc::net {

struct TeardownReport {
  int namespaces = 0, root_links = 0, processes = 0, files = 0;
  std::string restored;  // the root's TCP allowed list put back (tcp.h), in words; "" = not
};

// Removes everything of network `net`. Idempotent. Every part is tried whatever another
// met; when some could not be removed it throws std::runtime_error naming them (and what
// was removed), and keeps the network's state directory, so that it stays listed.
// Takes the StateLock (state.h) unless the caller already holds it. The last network to go
// takes xdc's additions out of the root's allowed congestion controls (tcp.h) and /run/xdc's
// bind onto itself (namespace.h).
TeardownReport teardown_network(const std::string& net, bool take_lock = true);

// teardown_network() where nothing may be thrown (a destructor, a path whose own error is
// on its way): "" when everything went, else what could not be removed.
std::string teardown_or_error(const std::string& net, bool take_lock = true) noexcept;

// Processes of xdc's helper programs (xdc-delayline, ...) whose command line names a
// namespace of network `net`, and MPI's (mpirun, orted, `xdc mpi-agent`) whose command
// line carries `mpi-agent --name <net>` ("" = of any xdc network).
std::vector<pid_t> helper_pids(const std::string& net);

// Networks that have anything left on this machine: namespaces, root links,
// state directories or /etc/netns entries. `root_links`: the root namespace's link names
// where the caller knows them (else they are listed, which waits while the kernel is
// still removing deleted namespaces' devices: it holds the RTNL lock meanwhile).
std::vector<std::string> networks_present();
std::vector<std::string> networks_present(const std::vector<std::string>& root_links);

// teardown_network() for every network present; one that throws does not stop the
// others, and its error is thrown after them.
TeardownReport clean_all();

}  // namespace xdc::net
