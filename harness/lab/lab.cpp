#include "harness/lab/lab.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "harness/common/yaml_reader.h"

namespace xdc::lab {
namespace {

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > kMaxMachineName || s[0] < 'a' || s[0] > 'z') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

Machine read_machine(const yaml::Value& v, const std::string& dir) {
  yaml::Map m = v.map({"name", "ssh", "port", "user", "key", "data_interface"},
                      "a machine map like {name: lab1, ssh: 192.168.56.11, user: vagrant, "
                      "data_interface: eth1}");
  Machine out;
  yaml::Value name = m.require("name");
  out.name = name.scalar("a machine name");
  if (!valid_name(out.name))
    name.fail(
        "a machine name of lowercase letters, digits and '-', starting with a letter, at "
        "most " +
        std::to_string(kMaxMachineName) + " characters");
  out.pos = name.pos();
  out.ssh = m.require("ssh").scalar("a host name or address");
  if (auto p = m.get("port")) out.port = static_cast<int>(p->integer(1, 65535));
  out.user = m.require("user").scalar("a user name");
  if (auto k = m.get("key")) {
    std::filesystem::path p(k->scalar("a private key file"));
    out.key = (p.is_absolute() ? p : std::filesystem::path(dir) / p).lexically_normal();
  }
  yaml::Value iface = m.require("data_interface");
  out.data_interface = iface.scalar("an interface name");
  if (out.data_interface.size() > 15 || out.data_interface.find('/') != std::string::npos)
    iface.fail("an interface name (at most 15 characters, no '/')");
  return out;
}

}  // namespace

std::string Lab::on_machines(const std::string& path) const {
  namespace fs = std::filesystem;
  const fs::path p = fs::absolute(path).lexically_normal();
  if (checkout.empty()) return p.string();
  const fs::path here = fs::absolute(source_file).parent_path().lexically_normal();
  const fs::path rel = p.lexically_relative(here);
  if (rel.empty() || *rel.begin() == "..") return p.string();
  return (fs::path(checkout) / rel).lexically_normal().string();
}

const Machine* Lab::find(const std::string& n) const {
  for (auto& m : machines)
    if (m.name == n) return &m;
  return nullptr;
}

static Lab parse_lab_node(const yaml::Value& root) {
  const std::string file_label = root.file();
  yaml::Map top = root.map({"name", "machines", "dcs", "xdc", "checkout"},
                           "a lab map with keys name, machines, dcs, xdc, checkout");
  Lab lab;
  lab.source_file = file_label;
  const std::string dir = std::filesystem::path(file_label).parent_path().string();
  if (auto n = top.get("name")) lab.name = n->scalar();
  if (auto x = top.get("xdc")) {
    lab.xdc = x->scalar("the xdc program's path on the machines");
    if (lab.xdc.empty() || lab.xdc.find_first_of(" \t\n'\"") != std::string::npos)
      x->fail("a path without white space or quotes");
  }
  if (auto c = top.get("checkout")) {
    lab.checkout = c->scalar("the machines' path of the directory holding this lab file");
    if (lab.checkout.empty() || lab.checkout[0] != '/' ||
        lab.checkout.find_first_of(" \t\n'\"") != std::string::npos)
      c->fail("an absolute path without white space or quotes");
  }
  yaml::Value machines = top.require("machines");
  auto list = machines.list("a list of machines");
  if (list.empty()) machines.fail("at least one machine");
  for (auto& v : list) {
    Machine m = read_machine(v, dir);
    if (lab.find(m.name))
      v.map().require("name").error("machine \"" + m.name + "\" is listed twice");
    lab.machines.push_back(std::move(m));
  }
  if (auto d = top.get("dcs")) {
    if (d->is_scalar()) {
      d->choice({"auto"});
    } else {
      lab.auto_dcs = false;
      yaml::Map dcs = d->map({}, "auto, or a map of DC -> machine like {east: lab1}");
      for (auto& e : dcs.entries()) {
        std::string machine = e.value.scalar("a machine name");
        if (!lab.find(machine))
          e.value.fail("one of the machines listed (" + [&] {
            std::vector<std::string> names;
            for (auto& m : lab.machines) names.push_back(m.name);
            return yaml::join(names);
          }() + ")");
        lab.dcs[e.key] = machine;
        lab.dc_pos[e.key] = e.key_node.pos();
      }
    }
  }
  return lab;
}

Lab parse_lab(const std::string& yaml_text, const std::string& file_label) {
  return parse_lab_node(yaml::parse(yaml_text, file_label));
}

Lab load_lab(const std::string& path) {
  return parse_lab_node(yaml::load_file(path));  // InputError naming the file when unreadable
}

std::map<std::string, std::string> assign_dcs(const Lab& lab, const topo::Topology& t) {
  std::map<std::string, std::string> out;
  if (!lab.auto_dcs) {
    for (auto& [dc, machine] : lab.dcs)
      if (!t.find_dc(dc))
        throw InputError(lab.dc_pos.at(dc),
                         "dcs." + dc + ": the topology " + t.name + " has no DC \"" + dc + "\"");
    for (auto& dc : t.dcs) {
      auto it = lab.dcs.find(dc.name);
      if (it == lab.dcs.end())
        throw InputError(SourcePos{lab.source_file, 0, 0},
                         "dcs: DC \"" + dc.name + "\" of topology " + t.name +
                             " is on no machine (name it, or write dcs: auto)");
      out[dc.name] = it->second;
    }
    return out;
  }
  std::vector<const topo::Dc*> order;
  for (auto& dc : t.dcs) order.push_back(&dc);
  std::stable_sort(order.begin(), order.end(),
                   [](auto* a, auto* b) { return a->hosts.size() > b->hosts.size(); });
  std::vector<size_t> load(lab.machines.size(), 0);
  for (auto* dc : order) {
    size_t best = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[best] += dc->hosts.size();
    out[dc->name] = lab.machines[best].name;
  }
  return out;
}

}  // namespace xdc::lab
