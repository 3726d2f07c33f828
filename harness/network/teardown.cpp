#include "harness/network/teardown.h"

#include <netlink/route/link.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

#include "harness/network/links.h"
#include "harness/network/mininet.h"
#include "harness/network/names.h"
#include "harness/network/namespace.h"
#include "harness/network/state.h"
#include "harness/network/tcp.h"

namespace xdc::net {
namespace fs = std::filesystem;
namespace {

std::vector<std::string> root_link_names() {
  nl::NlSocket sk;
  nl_cache* cache = nullptr;
  nl::check(rtnl_link_alloc_cache(sk.get(), AF_UNSPEC, &cache), "list links");
  std::vector<std::string> out;
  for (nl_object* o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o))
    out.push_back(rtnl_link_get_name(reinterpret_cast<rtnl_link*>(o)));
  nl_cache_free(cache);
  return out;
}

// Helpers that no namespace lookup can find any more (e.g. after an interrupted
// teardown removed their namespace's mount) are found by their command line.
int kill_orphan_helpers(const std::string& net) {
  int n = 0;
  for (pid_t pid : helper_pids(net)) n += kill(pid, SIGKILL) == 0;
  return n;
}

}  // namespace

std::vector<pid_t> helper_pids(const std::string& net) {
  // A helper names one of its network's namespaces on its command line ("xdc-<net>.<..>").
  static const std::regex any_net(R"(xdc-[a-z][a-z0-9-]*\.)");
  // mpirun, OpenMPI's daemons (orted carries its launcher's rsh agent on its command line)
  // and the agents themselves name the network after `mpi-agent --name` (network names
  // are [a-z0-9-], safe inside a pattern).
  const std::regex mpi("(^|[ /])mpi-agent --name " + (net.empty() ? "[a-z][a-z0-9-]*" : net) +
                       "( |$)");
  std::vector<pid_t> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/proc", ec)) {
    std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream comm(e.path() / "comm");
    std::string c;
    std::getline(comm, c);
    // Read through istream (never the buffer directly): a process that exits between
    // open and read makes read(2) fail with ESRCH, which the buffer would throw.
    std::ifstream cmd(e.path() / "cmdline", std::ios::binary);
    std::string args, arg;
    while (std::getline(cmd, arg, '\0')) args += arg + ' ';
    const bool match = (c.rfind("xdc-", 0) == 0 &&
                        (net.empty() ? std::regex_search(args, any_net)
                                     : args.find(ns_prefix(net)) != std::string::npos)) ||
                       std::regex_search(args, mpi);
    if (match) out.push_back(static_cast<pid_t>(std::stol(pid)));
  }
  return out;
}

TeardownReport teardown_network(const std::string& net, bool take_lock) {
  std::optional<StateLock> lock;
  if (take_lock) lock.emplace();
  TeardownReport r;
  const std::string prefix = ns_prefix(net);
  std::vector<std::string> mine;
  for (auto& ns : list_netns())
    if (ns.rfind(prefix, 0) == 0) mine.push_back(ns);
  // A Mininet-built network's driver first: Mininet stops its own nodes and links
  // (mininet.h); what it leaves is removed below like a native network's.
  r.processes += stop_mininet(net);
  // Processes first: a process inside a namespace keeps it (and its links) alive.
  for (auto& ns : mine) r.processes += kill_netns_processes(ns);
  r.processes += kill_orphan_helpers(net);
  for (auto& ns : mine) {
    std::string host = ns.substr(prefix.size());
    bool is_host = host.find('.') == std::string::npos && host != "mgmt";
    delete_netns(ns, is_host ? uts_path(net, host) : "");
    ++r.namespaces;
  }
  // Deleting the management namespace removes the root port with it; a crash between
  // creating the pair and moving its peer can leave it alone in the root namespace.
  for (auto& l : root_link_names()) {
    if (net_of_root_link(l) != net) continue;
    delete_link(nl::NlSocket(), l);
    ++r.root_links;
  }
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/etc/netns", ec)) {
    if (e.path().filename().string().rfind(prefix, 0) != 0) continue;
    fs::remove_all(e.path());
    ++r.files;
  }
  // A daemon that an MPI launch was starting while its namespace's processes were killed
  // (orted forks as it daemonizes) outlives the namespace's name: found by its command line.
  r.processes += kill_orphan_helpers(net);
  // Leftover UTS pins (a host whose netns mount was already gone).
  std::string uts_dir = state_dir(net) + "/uts";
  for (auto& e : fs::directory_iterator(uts_dir, ec)) unpin(e.path());
  if (fs::exists(state_dir(net))) {
    fs::remove_all(state_dir(net));
    ++r.files;
  }
  r.restored = restore_root_allowed_if_last();
  return r;
}

std::vector<std::string> networks_present() {
  std::set<std::string> nets;
  for (auto& ns : list_netns())
    if (auto n = net_of_ns(ns); !n.empty()) nets.insert(n);
  for (auto& l : root_link_names())
    if (auto n = net_of_root_link(l); !n.empty()) nets.insert(n);
  for (auto& d : list_state_dirs()) nets.insert(d);
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/etc/netns", ec))
    if (auto n = net_of_ns(e.path().filename()); !n.empty()) nets.insert(n);
  return {nets.begin(), nets.end()};
}

TeardownReport clean_all() {
  StateLock lock;
  TeardownReport total;
  for (auto& n : networks_present()) {
    auto r = teardown_network(n, false);
    total.namespaces += r.namespaces;
    total.root_links += r.root_links;
    total.processes += r.processes;
    total.files += r.files;
    if (!r.restored.empty()) total.restored = r.restored;
  }
  total.processes += kill_orphan_helpers("");  // of networks with nothing else left
  if (total.restored.empty()) total.restored = restore_root_allowed_if_last();  // no network left
  return total;
}

}  // namespace xdc::net
