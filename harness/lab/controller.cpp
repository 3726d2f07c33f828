#include "harness/lab/controller.h"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "harness/network/links.h"
#include "harness/network/names.h"
#include "harness/process/process.h"

namespace xdc::lab {

LocalRoute route_toward(const std::string& address) {
  const proc::Result r =
      proc::run({"ip", "-4", "-o", "route", "get", address}, std::chrono::seconds(10));
  if (r.exit_code != 0)
    throw std::runtime_error("no route from this machine to the lab machine at " + address + ": " +
                             r.err);
  // "10.99.0.11 dev br0 src 10.99.0.1 uid 0 \    cache"
  LocalRoute out;
  std::istringstream words(r.out);
  for (std::string w; words >> w;) {
    if (w == "dev") words >> out.interface;
    if (w == "src") words >> out.source;
  }
  if (out.source.empty() || out.interface.empty())
    throw std::runtime_error("cannot read the route to " + address + " from: " + r.out);
  return out;
}

std::string controller_mgmt_ip(int slot, size_t machines) {
  return fmt::format("198.18.{}.{}", slot, 254 - static_cast<int>(machines));
}

net::NetworkState merge_states(const std::vector<net::NetworkState>& parts,
                               const std::vector<std::string>& names, const Lab& lab) {
  if (parts.empty()) throw std::runtime_error("no machine of the lab holds a DC");
  net::NetworkState s = parts.front();
  s.hosts.clear();
  s.links.clear();
  s.fabric.clear();
  s.dcs.clear();
  s.notes.clear();
  for (size_t i = 0; i < parts.size(); ++i) {
    const net::NetworkState& p = parts[i];
    if (p.slot != s.slot)
      throw std::runtime_error(
          fmt::format("machines disagree on the management slot ({} on {}, "
                      "{} on {})",
                      s.slot, names[0], p.slot, names[i]));
    for (net::HostState h : p.hosts) {
      h.machine = names[i];
      s.hosts.push_back(std::move(h));
    }
    s.links.insert(s.links.end(), p.links.begin(), p.links.end());
    s.fabric.insert(s.fabric.end(), p.fabric.begin(), p.fabric.end());
    s.dcs.insert(s.dcs.end(), p.dcs.begin(), p.dcs.end());
    for (const std::string& n : p.notes) s.notes.push_back(names[i] + ": " + n);
  }
  // The hosts in topology order again (management addresses are .(k+1) in that order).
  std::stable_sort(s.hosts.begin(), s.hosts.end(), [](const auto& a, const auto& b) {
    auto last = [](const std::string& ip) { return std::stoi(ip.substr(ip.rfind('.') + 1)); };
    return last(a.mgmt_ip) < last(b.mgmt_ip);
  });
  s.backend = "lab";
  s.lab_file = std::filesystem::absolute(lab.source_file).string();
  s.mgmt_root_ip = controller_mgmt_ip(s.slot, lab.machines.size());
  s.mininet_pid = 0;
  s.mininet_nodes.clear();
  s.tcp_allowed_added.clear();  // each machine's own, undone by its own xdc down
  return s;
}

void join_management(const net::NetworkState& state, const LocalRoute& route,
                     const std::vector<std::string>& peers) {
  // Hosts are .1 .. .n, the machines .254 down, the controller just below the machines.
  const std::string& ip = state.mgmt_root_ip;
  if (static_cast<int>(state.hosts.size()) >= std::stoi(ip.substr(ip.rfind('.') + 1)))
    throw std::runtime_error(fmt::format(
        "{} hosts and the lab's machines do not fit one management subnet (the controller "
        "would be {})",
        state.hosts.size(), ip));
  const std::string port = net::root_link(state.name);
  nl::NlSocket root;
  try {
    net::add_vxlan(root, port, net::lab_mgmt_vni(state.slot), route.source, "",
                   root.ifindex(route.interface), "");
    for (const std::string& peer : peers) net::add_vxlan_flood(root, port, peer);
    net::add_address(root, port, state.mgmt_root_ip + "/24");
    net::set_up(root, port);
    net::save_state(state);
  } catch (...) {
    net::delete_link(root, port);
    std::error_code ec;
    std::filesystem::remove_all(net::state_dir(state.name), ec);
    throw;
  }
}

}  // namespace xdc::lab
