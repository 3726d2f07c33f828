// Lab files (harness/lab/lab.h): what a lab.yaml says, the DC placement it gives a
// topology, and bad input refused at FILE:LINE:COL. With XDC_LAB_FILE set (the vagrant
// test, tests/lab/vagrant_test.sh), also that the file `vagrant up` writes loads.
#include "harness/lab/lab.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "harness/lab/controller.h"
#include "harness/lab/remote.h"
#include "harness/network/builder.h"

namespace xdc::lab {
namespace {

const std::string kLab = R"(name: bench
machines:
  - {name: lab1, ssh: 192.168.56.11, user: vagrant, key: keys/id, data_interface: eth1}
  - {name: lab2, ssh: lab2.example, port: 2222, user: root, data_interface: ens5}
)";

topo::Topology three_dcs() {
  return topo::parse_topology(
      "name: t\ndcs: [{name: a, hosts: 1}, {name: b, hosts: 4}, {name: c, hosts: 2}]\n"
      "wan: [{between: [a, b]}, {between: [b, c]}]\n",
      "t.yaml");
}

std::string error_of(const std::string& text) {
  try {
    parse_lab(text, "labs/lab.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Lab, ReadsMachinesWithKeysRelativeToTheFile) {
  Lab lab = parse_lab(kLab, "labs/lab.yaml");
  ASSERT_EQ(lab.machines.size(), 2u);
  EXPECT_EQ(lab.name, "bench");
  EXPECT_EQ(lab.machines[0].ssh, "192.168.56.11");
  EXPECT_EQ(lab.machines[0].port, 22);
  EXPECT_EQ(lab.machines[0].key, "labs/keys/id");
  EXPECT_EQ(lab.machines[0].data_interface, "eth1");
  EXPECT_EQ(lab.machines[1].port, 2222);
  EXPECT_EQ(lab.machines[1].key, "");
  EXPECT_TRUE(lab.auto_dcs);
}

TEST(Lab, AutoPutsTheLargestDcFirstOnTheLeastLoadedMachine) {
  Lab lab = parse_lab(kLab + "dcs: auto\n", "labs/lab.yaml");
  auto at = assign_dcs(lab, three_dcs());
  // b (4 hosts) -> lab1; c (2) -> lab2; a (1) -> lab2 (2 hosts there against 4).
  EXPECT_EQ(at, (std::map<std::string, std::string>{{"a", "lab2"}, {"b", "lab1"}, {"c", "lab2"}}));
}

TEST(Lab, ExplicitDcsMustCoverTheTopologyAndNameKnownMachines) {
  Lab lab = parse_lab(kLab + "dcs: {a: lab1, b: lab2, c: lab2}\n", "labs/lab.yaml");
  EXPECT_EQ(assign_dcs(lab, three_dcs()).at("a"), "lab1");
  Lab partial = parse_lab(kLab + "dcs: {a: lab1, b: lab2}\n", "labs/lab.yaml");
  EXPECT_THROW(assign_dcs(partial, three_dcs()), InputError);
  Lab extra = parse_lab(kLab + "dcs: {a: lab1, b: lab2, c: lab1, zz: lab2}\n", "labs/lab.yaml");
  try {
    assign_dcs(extra, three_dcs());
    FAIL() << "a DC the topology lacks was accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "labs/lab.yaml:5:34: dcs.zz: the topology t has no DC \"zz\"");
  }
}

TEST(Lab, BadInputNamesFileLineAndColumn) {
  EXPECT_EQ(error_of(kLab + "dcs: {a: lab9}\n"),
            "labs/lab.yaml:5:10: dcs.a: expected one of the machines listed (lab1, lab2), got "
            "\"lab9\"");
  EXPECT_EQ(error_of(kLab + "dcs: balanced\n"),
            "labs/lab.yaml:5:6: dcs: expected one of: auto, got \"balanced\"");
  EXPECT_EQ(error_of("machines:\n  - {name: Lab1, ssh: x, user: u, data_interface: eth1}\n"),
            "labs/lab.yaml:2:12: machines[0].name: expected a machine name of lowercase letters, "
            "digits and '-', starting with a letter, at most 32 characters, got \"Lab1\"");
  EXPECT_EQ(error_of("machines:\n  - {name: a, ssh: x, user: u}\n"),
            "labs/lab.yaml:2:5: machines[0]: missing required key 'data_interface'");
  EXPECT_EQ(error_of("machines:\n  - {name: a, ssh: x, user: u, data_interface: e, port: 0}\n"),
            "labs/lab.yaml:2:57: machines[0].port: expected an integer in 1..65535, got \"0\"");
  EXPECT_EQ(error_of("machines: []\n"),
            "labs/lab.yaml:1:11: machines: expected at least one machine, got an empty list");
}

// The file `vagrant up` writes (tests/lab/vagrant_test.sh points here).
TEST(Lab, VagrantWrittenFileLoads) {
  const char* file = std::getenv("XDC_LAB_FILE");
  if (!file) GTEST_SKIP() << "XDC_LAB_FILE not set (tests/lab/vagrant_test.sh sets it)";
  Lab lab = load_lab(file);
  const int n = std::atoi(std::getenv("XDC_LAB_MACHINES"));
  ASSERT_EQ(static_cast<int>(lab.machines.size()), n);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(lab.machines[i].name, "lab" + std::to_string(i + 1));
    EXPECT_EQ(lab.machines[i].ssh, "192.168.56." + std::to_string(11 + i));
    EXPECT_EQ(lab.machines[i].user, "vagrant");
    EXPECT_EQ(lab.machines[i].data_interface, "eth1");
    EXPECT_FALSE(lab.machines[i].key.empty());
  }
  EXPECT_TRUE(lab.auto_dcs);
  EXPECT_EQ(lab.xdc, "/vagrant/build/harness/cli/xdc");
  EXPECT_EQ(lab.checkout, "/vagrant");  // the machines' rsync'ed copy of the checkout
}

}  // namespace
}  // namespace xdc::lab

// Commands on lab machines go over ssh as one quoted string (remote.h): a word from input
// stays one word on the remote side, whatever it contains.
TEST(LabRemote, QuotesEveryWordForTheRemoteShell) {
  using xdc::lab::shell_quote;
  EXPECT_EQ(shell_quote("/vagrant/build/harness/cli/xdc"), "/vagrant/build/harness/cli/xdc");
  EXPECT_EQ(shell_quote("clean"), "clean");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("x; rm -rf /"), "'x; rm -rf /'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$(id)`id`"), "'$(id)`id`'");
  xdc::lab::Machine m;
  m.name = "lab1";
  m.ssh = "192.168.56.11";
  m.port = 2222;
  m.user = "vagrant";
  m.key = "/keys/id";
  const auto argv = xdc::lab::ssh_argv(m, {"/opt/xdc", "up", "topo file.yaml"});
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv.front(), "ssh");
  EXPECT_EQ(argv[argv.size() - 3], "vagrant@192.168.56.11");
  EXPECT_EQ(argv[argv.size() - 2], "--");
  EXPECT_EQ(argv.back(), "sudo -n /opt/xdc up 'topo file.yaml'");  // not root: sudo
  EXPECT_NE(std::find(argv.begin(), argv.end(), "2222"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "/keys/id"), argv.end());
  m.user = "root";
  EXPECT_EQ(xdc::lab::ssh_argv(m, {"xdc", "clean"}).back(), "xdc clean");
}

TEST(LabFile, NamesTheXdcProgramOnTheMachines) {
  const std::string text =
      "machines:\n  - {name: lab1, ssh: 10.0.0.1, user: root, data_interface: eth0}\n";
  EXPECT_EQ(xdc::lab::parse_lab(text, "l.yaml").xdc, "xdc");
  EXPECT_EQ(xdc::lab::parse_lab(text + "xdc: /opt/xdc/bin/xdc\n", "l.yaml").xdc,
            "/opt/xdc/bin/xdc");
  EXPECT_THROW(xdc::lab::parse_lab(text + "xdc: \"/opt/my xdc\"\n", "l.yaml"), xdc::InputError);
}

// `checkout:` maps a file under the lab file's directory to the machines' copy of it (the
// Vagrant machines' /vagrant); other files, and every file without it, keep their path.
TEST(LabFile, MapsCheckoutPathsToTheMachines) {
  const std::string text =
      "machines:\n  - {name: lab1, ssh: 10.0.0.1, user: root, data_interface: eth0}\n";
  const xdc::lab::Lab same = xdc::lab::parse_lab(text, "/home/u/xdc/lab.yaml");
  EXPECT_EQ(same.on_machines("/home/u/xdc/experiments/a.yaml"), "/home/u/xdc/experiments/a.yaml");
  const xdc::lab::Lab vagrant =
      xdc::lab::parse_lab(text + "checkout: /vagrant\n", "/home/u/xdc/lab.yaml");
  EXPECT_EQ(vagrant.on_machines("/home/u/xdc/experiments/a.yaml"), "/vagrant/experiments/a.yaml");
  EXPECT_EQ(vagrant.on_machines("/home/u/xdc/experiments/../topologies/t.yaml"),
            "/vagrant/topologies/t.yaml");
  EXPECT_EQ(vagrant.on_machines("/srv/other/e.yaml"), "/srv/other/e.yaml");
  EXPECT_THROW(xdc::lab::parse_lab(text + "checkout: vagrant\n", "l.yaml"), xdc::InputError);
}

// A machine's part of a lab network travels as JSON on `xdc up --lab-part` (builder.h).
TEST(LabPart, RoundTripsAndRefusesBadInput) {
  xdc::net::LabPart p;
  p.dcs = {"east"};
  p.dc_address = {{"east", "10.99.0.11"}, {"west", "10.99.0.12"}};
  p.local_address = "10.99.0.11";
  p.data_interface = "eth0";
  p.slot = 77;
  const auto q = xdc::net::LabPart::from_json(p.to_json());
  EXPECT_EQ(q.dcs, p.dcs);
  EXPECT_EQ(q.dc_address, p.dc_address);
  EXPECT_EQ(q.local_address, "10.99.0.11");
  EXPECT_EQ(q.data_interface, "eth0");
  EXPECT_EQ(q.slot, 77);
  EXPECT_EQ(q.mtu, 1450);
  EXPECT_THROW(xdc::net::LabPart::from_json("{}"), xdc::InputError);
  EXPECT_THROW(xdc::net::LabPart::from_json("not json"), xdc::InputError);
}

// The controller's record of a lab network (controller.h): the machines' records merged,
// each host naming its machine, in topology order, the controller's management address
// below the machines'.
TEST(LabController, MergesTheMachinesRecords) {
  const xdc::lab::Lab lab = xdc::lab::parse_lab(
      "machines:\n"
      "  - {name: m1, ssh: 10.0.0.1, user: root, data_interface: eth0}\n"
      "  - {name: m2, ssh: 10.0.0.2, user: root, data_interface: eth0}\n",
      "/srv/lab/lab.yaml");
  auto part = [](const std::string& dc, std::vector<std::pair<std::string, int>> hosts) {
    xdc::net::NetworkState s;
    s.name = "n";
    s.slot = 77;
    s.dcs = {dc};
    for (auto& [h, k] : hosts)
      s.hosts.push_back({h, dc, "xdc-n." + h, "", "198.18.77." + std::to_string(k), {}, ""});
    s.notes = {"a note"};
    return s;
  };
  const xdc::net::NetworkState m = xdc::lab::merge_states(
      {part("west", {{"w1", 3}}), part("east", {{"e1", 1}, {"e2", 2}})}, {"m2", "m1"}, lab);
  EXPECT_EQ(m.backend, "lab");
  EXPECT_EQ(m.lab_file, "/srv/lab/lab.yaml");
  EXPECT_EQ(m.mgmt_root_ip, "198.18.77.252");  // m1 .254, m2 .253, the controller .252
  ASSERT_EQ(m.hosts.size(), 3u);
  EXPECT_EQ(m.hosts[0].name, "e1");
  EXPECT_EQ(m.hosts[0].machine, "m1");
  EXPECT_EQ(m.hosts[2].name, "w1");
  EXPECT_EQ(m.hosts[2].machine, "m2");
  EXPECT_EQ(m.notes, (std::vector<std::string>{"m2: a note", "m1: a note"}));
  xdc::net::NetworkState other = part("x", {{"x1", 4}});
  other.slot = 78;
  EXPECT_THROW(xdc::lab::merge_states({part("west", {}), other}, {"m1", "m2"}, lab),
               std::runtime_error);
}
