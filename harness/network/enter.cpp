#include "harness/network/enter.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include "common/input_error.h"
#include "harness/network/names.h"
#include "harness/network/namespace.h"
#include "harness/network/state.h"
#include "netem/nl/netns.h"

namespace xdc::net {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void enter(const std::string& path, int nstype) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("open " + path);
  if (setns(fd, nstype) != 0) fail("setns " + path);
  close(fd);
}

}  // namespace

std::pair<std::string, std::string> resolve_host(const std::string& host, const std::string& net) {
  std::vector<std::pair<std::string, std::string>> found;
  for (auto& ns : list_netns()) {
    std::string n = net_of_ns(ns);
    if (n.empty() || (!net.empty() && n != net)) continue;
    if (ns == ns_prefix(n) + host) found.emplace_back(n, ns);
  }
  if (found.size() == 1) return found[0];
  const std::vector<std::string> all = found.empty() ? list_netns() : std::vector<std::string>{};
  if (found.empty() && !net.empty() && !load_state(net) &&  // a lab's hosts are elsewhere
      std::none_of(all.begin(), all.end(),
                   [&](const std::string& ns) { return net_of_ns(ns) == net; }))
    throw InputError("no network '" + net + "' is up (xdc ls lists networks and hosts)");
  if (found.empty())
    throw InputError("no emulated host '" + host + "'" +
                     (net.empty() ? std::string() : " in network '" + net + "'") +
                     " (xdc ls lists networks and hosts)");
  std::string names;
  for (auto& f : found) names += " " + f.first;
  throw InputError("host '" + host + "' exists in several networks:" + names +
                   "; pick one with --name");
}

void exec_in_namespace(const std::string& net, const std::string& ns,
                       const std::vector<std::string>& argv) {
  if (argv.empty()) throw InputError("nothing to execute: give a command after --");
  // A private mount namespace, so the bind mounts below are this process's alone.
  if (unshare(CLONE_NEWNS) != 0) fail("unshare mount namespace");
  if (mount("", "/", "none", MS_SLAVE | MS_REC, nullptr) != 0) fail("make / slave");
  enter(nl::netns_path(ns), CLONE_NEWNET);
  std::string host = ns.substr(ns_prefix(net).size());
  std::string uts = uts_path(net, host);
  if (std::filesystem::exists(uts)) enter(uts, CLONE_NEWUTS);
  std::string hosts = "/etc/netns/" + ns + "/hosts";
  if (std::filesystem::exists(hosts) &&
      mount(hosts.c_str(), "/etc/hosts", "none", MS_BIND, nullptr) != 0)
    fail("bind " + hosts);
  // /sys/class/net must list this namespace's interfaces (ip, ethtool read it).
  if (umount2("/sys", MNT_DETACH) == 0) mount(ns.c_str(), "/sys", "sysfs", 0, nullptr);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  fail("exec " + argv[0]);
}

}  // namespace xdc::net
