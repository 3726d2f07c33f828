#pragma once
// Named network namespaces, made the way `ip netns add` makes them (unshare + bind
// mount under the shared /run/netns), optionally with a persistent UTS namespace
// bind-mounted at a path of ours so the host has its own hostname.
#include <sys/types.h>

#include <string>
#include <vector>

namespace xdc::net {

// No IPv6 in namespace `ns`, set before its interfaces exist: no IPv6 chatter
// (duplicate-address probes, listener reports, router solicitations on timers) on
// measured links, nor on the management switch, which carries the MPI launch.
void no_ipv6(const std::string& ns);

// Namespace `ns` routes (a DC's gateway), and routes back out of the interface a packet
// came in by (its DC's hosts talk through it): no ICMP redirects (they would bypass the
// intra-DC delay), no reverse-path filter (through a fabric loop a host's packets arrive
// on one interface while their source is routed out of another). Set before its
// interfaces exist, which take `default`'s values.
void gateway_sysctls(const std::string& ns);

// Creates netns `name`; with a non-empty `hostname`, also a UTS namespace set to it
// and pinned at `uts_path` (whose directory must exist, under a shared mount). Throws
// std::system_error (EEXIST when it already exists).
void create_netns(const std::string& name, const std::string& hostname = "",
                  const std::string& uts_path = "");

// Pins the network namespace of process `pid` as netns `name` (a bind mount of
// /proc/<pid>/ns/net, as `ip netns attach` does): it then outlives the process. Throws
// std::system_error (EEXIST when the name is taken).
void pin_netns(const std::string& name, pid_t pid);

// A new UTS namespace set to `hostname`, pinned at `uts_path` (whose directory must exist,
// under a shared mount); this thread's own UTS namespace is unchanged. Throws std::system_error.
void create_uts_ns(const std::string& hostname, const std::string& uts_path);

// Unmounts and unlinks /run/netns/<name> (and `uts_path` if given). Idempotent.
void delete_netns(const std::string& name, const std::string& uts_path = "");

// Makes `dir` a shared mount point (as iproute2 does for /run/netns), so that pins made
// later propagate into mount namespaces made earlier, and so do their removals.
void make_shared_mount_dir(const std::string& dir);
// Undoes what make_shared_mount_dir bound: the mounts of `dir` onto itself (a mount whose
// root is `dir`; one mounted there by anyone else stays). True when one went.
bool unmount_shared_mount_dir(const std::string& dir);

// Unmounts and unlinks one namespace pin file (a bind-mounted ns file). Idempotent.
void unpin(const std::string& path);

// Names under /run/netns, sorted.
std::vector<std::string> list_netns();

// Processes whose network namespace is /run/netns/<name>.
std::vector<pid_t> netns_pids(const std::string& name);
// Processes whose network namespace is any of /run/netns/<names> (one scan of /proc).
std::vector<pid_t> netns_pids(const std::vector<std::string>& names);

// SIGTERM to every process in the namespaces, SIGKILL to those alive after `grace_ms`.
// Reaps those that are this process's children. Returns how many were signalled.
int kill_netns_processes(const std::vector<std::string>& names, int grace_ms = 500);
inline int kill_netns_processes(const std::string& name, int grace_ms = 500) {
  return kill_netns_processes(std::vector<std::string>{name}, grace_ms);
}

}  // namespace xdc::net
