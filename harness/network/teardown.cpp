#include "harness/network/teardown.h"

#include <fmt/format.h>
#include <netlink/route/link.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <thread>

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
// teardown removed their namespace's mount) are found by their command line. Returns once
// none is left: a SIGKILLed process runs until its exit drops its memory (and with it its
// command line), and one that was launching (mpirun starting an orted) may fork another
// meanwhile, so each round kills what it finds until a round finds none. Throws when some
// are still there after `limit`, a guard against a process the kernel cannot end (D state),
// far above any exit's time.
int kill_orphan_helpers(const std::string& net,
                        std::chrono::seconds limit = std::chrono::seconds(30)) {
  std::set<pid_t> killed;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const auto pids = helper_pids(net);
    if (pids.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::string list;
      for (pid_t p : pids) list += (list.empty() ? "" : ", ") + std::to_string(p);
      throw std::runtime_error("process(es) " + list + " still running " +
                               std::to_string(limit.count()) + " s after SIGKILL");
    }
    for (pid_t pid : pids)
      if (kill(pid, SIGKILL) == 0) killed.insert(pid);
    for (pid_t pid : killed) waitpid(pid, nullptr, WNOHANG);  // ours: no zombie is left
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return static_cast<int>(killed.size());
}

}  // namespace

std::vector<pid_t> helper_pids(const std::string& net) {
  // A helper names one of its network's namespaces on its command line, as an argument or
  // an option's value ("--netns=xdc-<net>.<..>"); the same text inside a path (a fuzzer's
  // "-artifact_prefix=/tmp/xdc-fuzz.XXXX/") is not a namespace.
  static const std::regex any_net(R"((^| |=)xdc-[a-z][a-z0-9-]*\.)");
  const std::regex this_net("(^| |=)xdc-" + net + "\\.");  // names are [a-z0-9-]
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
    const bool match =
        (c.rfind("xdc-", 0) == 0 && std::regex_search(args, net.empty() ? any_net : this_net)) ||
        std::regex_search(args, mpi);
    if (match) out.push_back(static_cast<pid_t>(std::stol(pid)));
  }
  return out;
}

TeardownReport teardown_network(const std::string& net, bool take_lock) {
  std::optional<StateLock> lock;
  if (take_lock) lock.emplace();
  TeardownReport r;
  // Every step is tried whatever an earlier one met: one that fails (a file that will not
  // go, a netlink error) must not leave the rest of the network up. What failed is thrown
  // at the end, and the state directory is kept then, so that `xdc ls` still lists the
  // network and `xdc down` can be run again.
  std::vector<std::string> failed;
  auto attempt = [&](const std::string& what, const auto& step) {
    try {
      step();
    } catch (const std::exception& e) {
      failed.push_back(what + ": " + e.what());
    }
  };
  const std::string prefix = ns_prefix(net);
  std::vector<std::string> mine;
  attempt("listing namespaces", [&] {
    for (auto& ns : list_netns())
      if (ns.rfind(prefix, 0) == 0) mine.push_back(ns);
  });
  // A Mininet-built network's driver first: Mininet stops its own nodes and links
  // (mininet.h); what it leaves is removed below like a native network's.
  attempt("stopping Mininet", [&] { r.processes += stop_mininet(net); });
  // Processes first: a process inside a namespace keeps it (and its links) alive.
  attempt("processes of " + prefix + "*", [&] { r.processes += kill_netns_processes(mine); });
  attempt("helper processes", [&] { r.processes += kill_orphan_helpers(net); });
  // The root links are listed and this network's removed before any namespace goes: once
  // namespaces are deleted the kernel removes their devices under the RTNL lock for a while,
  // and a listing would wait for that. What is left is known from this listing.
  // The management namespace's root port goes here with its peer; a crash between creating
  // the pair and moving the peer can also leave it alone in the root namespace.
  std::vector<std::string> root_links;
  attempt("root links", [&] {
    for (auto& l : root_link_names()) {
      if (net_of_root_link(l) != net) {
        root_links.push_back(l);
        continue;
      }
      attempt("root link " + l, [&] {
        delete_link(nl::NlSocket(), l);
        ++r.root_links;
      });
    }
  });
  for (auto& ns : mine) {
    std::string host = ns.substr(prefix.size());
    bool is_host = host.find('.') == std::string::npos && host != "mgmt";
    attempt("namespace " + ns, [&] {
      delete_netns(ns, is_host ? uts_path(net, host) : "");
      ++r.namespaces;
    });
  }
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/etc/netns", ec)) {
    if (e.path().filename().string().rfind(prefix, 0) != 0) continue;
    attempt(e.path().string(), [&] {
      fs::remove_all(e.path());
      ++r.files;
    });
  }
  // A daemon that an MPI launch was starting while its namespace's processes were killed
  // (orted forks as it daemonizes) outlives the namespace's name: found by its command line.
  attempt("helper processes", [&] { r.processes += kill_orphan_helpers(net); });
  // Leftover UTS pins (a host whose netns mount was already gone).
  std::string uts_dir = state_dir(net) + "/uts";
  for (auto& e : fs::directory_iterator(uts_dir, ec))
    attempt(e.path().string(), [&] { unpin(e.path()); });
  if (failed.empty() && fs::exists(state_dir(net))) {
    attempt(state_dir(net), [&] {
      fs::remove_all(state_dir(net));
      ++r.files;
    });
  }
  std::vector<std::string> present;
  attempt("listing networks", [&] { present = networks_present(root_links); });
  attempt("the root's TCP settings", [&] { r.restored = restore_root_allowed_if_last(present); });
  // The state root's bind onto itself (make_shared_mount_dir), once no network needs it.
  attempt(kStateRoot, [&] {
    if (failed.empty() && present.empty()) unmount_shared_mount_dir(kStateRoot);
  });
  if (!failed.empty()) {
    std::string what;
    for (auto& f : failed) what += (what.empty() ? "" : "; ") + f;
    throw std::runtime_error(fmt::format(
        "network {}: {} of its parts could not be removed ({}); the rest was: {} namespaces, "
        "{} root links, {} processes, {} files",
        net, failed.size(), what, r.namespaces, r.root_links, r.processes, r.files));
  }
  return r;
}

std::string teardown_or_error(const std::string& net, bool take_lock) noexcept {
  try {
    teardown_network(net, take_lock);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "network " + net + ": teardown failed";
  }
}

std::vector<std::string> networks_present() {
  return networks_present(root_link_names());
}

std::vector<std::string> networks_present(const std::vector<std::string>& root_links) {
  std::set<std::string> nets;
  for (auto& ns : list_netns())
    if (auto n = net_of_ns(ns); !n.empty()) nets.insert(n);
  for (auto& l : root_links)
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
  std::string failed;  // one network that cannot be undone does not keep the others
  for (auto& n : networks_present()) {
    try {
      auto r = teardown_network(n, false);
      total.namespaces += r.namespaces;
      total.root_links += r.root_links;
      total.processes += r.processes;
      total.files += r.files;
      if (!r.restored.empty()) total.restored = r.restored;
    } catch (const std::exception& e) {
      failed += (failed.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  total.processes += kill_orphan_helpers("");  // of networks with nothing else left
  const std::vector<std::string> present = networks_present();
  if (total.restored.empty()) total.restored = restore_root_allowed_if_last(present);
  if (failed.empty() && present.empty()) unmount_shared_mount_dir(kStateRoot);
  if (!failed.empty()) throw std::runtime_error(failed);
  return total;
}

}  // namespace xdc::net
