#include "harness/lab/remote.h"

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "harness/lab/controller.h"
#include "harness/network/builder.h"
#include "harness/network/names.h"
#include "harness/network/teardown.h"

namespace xdc::lab {

std::string shell_quote(const std::string& word) {
  const bool safe = !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("@%+=:,./-_").find(static_cast<char>(c)) != std::string_view::npos;
  });
  if (safe) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> ssh_argv(const Machine& m, const std::vector<std::string>& remote_argv) {
  std::vector<std::string> argv = {"ssh",
                                   "-o",
                                   "BatchMode=yes",
                                   "-o",
                                   "ConnectTimeout=10",
                                   "-o",
                                   "StrictHostKeyChecking=no",
                                   "-o",
                                   "UserKnownHostsFile=/dev/null",
                                   "-o",
                                   "LogLevel=ERROR",
                                   "-p",
                                   std::to_string(m.port)};
  if (!m.key.empty()) argv.insert(argv.end(), {"-i", m.key, "-o", "IdentitiesOnly=yes"});
  argv.push_back(m.user + "@" + m.ssh);
  argv.push_back("--");
  std::string command = m.user == "root" ? "" : "sudo -n";
  for (const std::string& w : remote_argv) command += (command.empty() ? "" : " ") + shell_quote(w);
  argv.push_back(command);
  return argv;
}

proc::Result run_on(const Machine& m, const std::vector<std::string>& remote_argv,
                    std::chrono::milliseconds timeout) {
  return proc::run(ssh_argv(m, remote_argv), timeout);
}

namespace {

std::string said(const proc::Result& r) {
  std::string s = r.err + r.out;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

MachineOutcome outcome(const Machine& m, const proc::Result& r) {
  MachineOutcome o{m.name, r.exit_code == 0, said(r)};
  if (r.timed_out)
    o.message = "no answer within the timeout";
  else if (r.exit_code == 255)
    o.message = "ssh to " + m.user + "@" + m.ssh + " failed: " + o.message;
  return o;
}

// The IPv4 address on `m`'s data interface (`ip -4 -o addr show dev IFACE` there).
std::string data_address(const Machine& m) {
  proc::Result r = run_on(m, {"ip", "-4", "-o", "addr", "show", "dev", m.data_interface},
                          std::chrono::seconds(60));
  if (r.exit_code != 0)
    throw std::runtime_error(m.name + ": cannot read the address of " + m.data_interface + ": " +
                             outcome(m, r).message);
  const auto at = r.out.find(" inet ");
  if (at == std::string::npos)
    throw std::runtime_error(m.name + ": " + m.data_interface + " has no IPv4 address");
  const auto begin = at + 6, end = r.out.find('/', begin);
  return r.out.substr(begin, end - begin);
}

// A management slot from the network's name, the same on every machine (each checks it
// is free there: builder.cpp).
int lab_slot(const std::string& net) {
  return static_cast<int>(std::hash<std::string>{}(net) % 200) + 50;
}

// The controller's records of lab networks (controller.h) and their ports, here.
void clean_controller() {
  for (const std::string& n : net::list_state_dirs())
    if (auto s = net::load_state(n); s && s->backend == "lab") net::teardown_network(n);
}

// Each built machine's record of `net`, merged, and the controller's port on the
// management switch.
void join_as_controller(const Lab& lab, const std::vector<const Machine*>& built,
                        const std::string& net, const LocalRoute& route,
                        const std::map<std::string, std::string>& address) {
  std::vector<net::NetworkState> parts;
  std::vector<std::string> names, peers;
  for (const Machine* m : built) {
    const proc::Result r =
        run_on(*m, {"cat", net::state_dir(net) + "/state.json"}, std::chrono::seconds(60));
    if (r.exit_code != 0)
      throw std::runtime_error(m->name + ": cannot read its record of " + net + ": " +
                               outcome(*m, r).message);
    parts.push_back(nlohmann::json::parse(r.out).get<net::NetworkState>());
    names.push_back(m->name);
    peers.push_back(address.at(m->name));
  }
  join_management(merge_states(parts, names, lab), route, peers);
}

}  // namespace

std::vector<MachineOutcome> clean_lab(const Lab& lab) {
  std::vector<MachineOutcome> out;
  try {
    clean_controller();
  } catch (const std::exception& e) {
    out.push_back({"controller", false, e.what()});
  }
  for (const Machine& m : lab.machines) try {
      out.push_back(outcome(m, run_on(m, {lab.xdc, "clean"}, std::chrono::minutes(2))));
    } catch (const std::exception& e) {
      out.push_back({m.name, false, e.what()});
    }
  return out;
}

std::vector<MachineOutcome> up_lab(const Lab& lab, const topo::Topology& t,
                                   const std::string& topology_path, const std::string& net,
                                   const std::vector<std::string>& extra) {
  const std::map<std::string, std::string> where = assign_dcs(lab, t);  // DC -> machine
  if (net::load_state(net))
    throw std::runtime_error("a network named " + net +
                             " is already up on this machine (the controller): xdc down " + net);
  std::map<std::string, std::string> address;  // machine -> data
  for (const Machine& m : lab.machines) address[m.name] = data_address(m);
  // The controller joins the management switch over its route to the machines.
  const LocalRoute route = route_toward(address.at(lab.machines.front().name));
  std::vector<MachineOutcome> out;
  std::vector<const Machine*> built;
  for (const Machine& m : lab.machines) {
    net::LabPart part;
    for (const auto& [dc, machine] : where) {
      part.dc_address[dc] = address.at(machine);
      if (machine == m.name) part.dcs.insert(dc);
    }
    if (part.dcs.empty()) continue;
    part.local_address = address.at(m.name);
    for (const Machine& o : lab.machines)
      if (o.name != m.name) part.peers.push_back(address.at(o.name));
    part.peers.push_back(route.source);
    part.machine = static_cast<int>(&m - lab.machines.data());
    part.data_interface = m.data_interface;
    part.slot = lab_slot(net);
    std::vector<std::string> argv = {
        lab.xdc, "up", lab.on_machines(topology_path), "--name", net, "--lab-part", part.to_json()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    out.push_back(outcome(m, run_on(m, argv, std::chrono::minutes(10))));
    if (!out.back().ok) {
      for (const Machine* b : built) run_on(*b, {lab.xdc, "down", net}, std::chrono::minutes(2));
      return out;
    }
    built.push_back(&m);
  }
  try {
    join_as_controller(lab, built, net, route, address);
  } catch (const std::exception& e) {
    for (const Machine* b : built) run_on(*b, {lab.xdc, "down", net}, std::chrono::minutes(2));
    out.push_back({"controller", false, e.what()});
  }
  return out;
}

std::vector<MachineOutcome> down_lab(const Lab& lab, const std::string& net) {
  std::vector<MachineOutcome> out;
  if (auto s = net::load_state(net); s && s->backend == "lab") try {
      net::teardown_network(net);
    } catch (const std::exception& e) {
      out.push_back({"controller", false, e.what()});
    }
  for (const Machine& m : lab.machines) {
    proc::Result r = run_on(m, {lab.xdc, "down", net}, std::chrono::minutes(2));
    MachineOutcome o = outcome(m, r);
    if (r.exit_code == 2 && o.message.find("no network named") != std::string::npos)
      o = {m.name, true, "no network " + net + " here"};
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace xdc::lab
