#pragma once
// A lab: the machines one `xdc up/run --lab` spans, and which DC of a
// topology each machine holds. `vagrant up` writes one (Vagrantfile); any hosts reachable
// over ssh can be listed by hand. Loading validates it; bad input throws InputError
// "FILE:LINE:COL: PATH: expected ..., got ..." (exit 2). Unknown keys are errors.
//
//   name: vagrant                 # optional label
//   machines:                     # required, at least one
//     - name: lab1                # required: [a-z0-9-], starting with a letter, <= 32, unique
//       ssh: 192.168.56.11        # required: host name or address the controller ssh-es to
//       port: 22                  # optional (default 22)
//       user: vagrant             # required: the ssh user (root, or passwordless sudo)
//       key: .vagrant/xdc-lab/id_ed25519   # optional: private key, relative to this file
//                                 #   (default: ssh's own choice)
//       data_interface: eth1      # required: the NIC between the machines that carries
//                                 #   WAN tunnels (VXLAN/GRE between gateways on different
//                                 #   machines end on its address)
//   dcs: auto                     # optional (default auto): DCs spread over the machines,
//                                 #   largest DC first onto the machine with fewest hosts
//                                 #   (ties: the earlier machine)
//   dcs: {east: lab1, west: lab2} #   or explicit: every DC of the topology named, each
//                                 #   to a listed machine (checked by assign_dcs)
//   xdc: /vagrant/build/harness/cli/xdc   # optional: the xdc program on every machine
//                                 #   (default: `xdc` on the remote PATH)
//   checkout: /vagrant            # optional: where the machines have the directory that
//                                 #   holds this lab file (the project checkout): a file
//                                 #   under it here (an experiment, its topology) is read
//                                 #   there at the same relative path (default: the same
//                                 #   absolute paths on every machine, as in a shared FS)
//
// Names: a machine's name labels it in reports and messages; its `ssh` address is what
// is dialled. Decisions: one user and key per machine (no per-DC credentials); several DCs
// may share a machine (their WAN links there stay veths); a machine may hold no DC.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/input_error.h"
#include "harness/topology/topology.h"

namespace xdc::lab {

inline constexpr size_t kMaxMachineName = 32;

struct Machine {
  std::string name;
  std::string ssh;  // host name or address
  int port = 22;
  std::string user;
  std::string key;  // absolute path, or "" = ssh's default
  std::string data_interface;
  SourcePos pos;  // the machine's `name:`
};

struct Lab {
  std::string name;
  std::string source_file;
  std::vector<Machine> machines;
  bool auto_dcs = true;
  std::map<std::string, std::string> dcs;              // explicit: DC -> machine name
  std::map<std::string, SourcePos> dc_pos;             // where each explicit DC was written
  std::string xdc = "xdc";                             // the program on the machines
  std::string checkout;                                // "" = same paths everywhere
  const Machine* find(const std::string& name) const;  // nullptr if absent
  // The machines' path of `path` on this machine (checkout: above), absolute.
  std::string on_machines(const std::string& path) const;
};

Lab parse_lab(const std::string& yaml_text, const std::string& file_label);
Lab load_lab(const std::string& path);

// DC -> machine name for topology `t`: the explicit map (InputError at the lab's entry for
// a DC the topology lacks, or at `dcs:` for a DC of the topology not named), or `auto`.
std::map<std::string, std::string> assign_dcs(const Lab& lab, const topo::Topology& t);

}  // namespace xdc::lab
