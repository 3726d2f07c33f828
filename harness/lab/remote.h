#pragma once
// Commands on a lab's machines (lab.h) over ssh, from argv vectors: every word is quoted
// for the remote shell (ssh hands the remote side one command string), so nothing taken
// from input is ever parsed as shell there. A machine whose user is not root runs the
// command under `sudo -n` (passwordless sudo, as the Vagrantfile sets up).
//
// ssh options: BatchMode (never prompt), a connect timeout, and no host-key check against
// ~/.ssh/known_hosts (StrictHostKeyChecking=no, UserKnownHostsFile=/dev/null): lab machines
// are the researcher's own and are rebuilt often (vagrant destroy/up, User-Mode Linux
// guests booted with fresh keys); the lab file names the addresses to trust.
#include <chrono>
#include <string>
#include <vector>

#include "harness/lab/lab.h"
#include "harness/process/process.h"

namespace xdc::lab {

// `word` as one word for a POSIX shell: itself when made only of safe characters, else
// in single quotes (a ' inside as '\'').
std::string shell_quote(const std::string& word);

// The local argv that runs `remote_argv` on `m`: ssh [options] [-i key] -p port user@host
// -- 'quoted' 'words' (prefixed by sudo -n unless the user is root).
std::vector<std::string> ssh_argv(const Machine& m, const std::vector<std::string>& remote_argv);

// Runs `remote_argv` on `m` to completion (proc::run: captured output, killed at the
// timeout). ssh's own failure to connect is exit code 255.
proc::Result run_on(const Machine& m, const std::vector<std::string>& remote_argv,
                    std::chrono::milliseconds timeout = std::chrono::minutes(5));

// `xdc clean` on every machine of the lab (nothing left on any machine, also after a
// controller crash), one after another; and here, every lab network's controller port and
// record. Per machine: its name, whether it was cleaned, and what xdc said (or why ssh
// failed).
struct MachineOutcome {
  std::string machine;
  bool ok = false;
  std::string message;
};
std::vector<MachineOutcome> clean_lab(const Lab& lab);

// `xdc up` of topology `t` (its file `topology_path` read on every machine at
// lab.on_machines(topology_path): a shared or synced checkout) across the lab: each machine that
// holds DCs (assign_dcs) builds its part
// (`xdc up --lab-part`, net/builder.h: its DCs, VXLAN tunnels for the WAN links to other
// machines' DCs between their data addresses, found on each machine's data_interface).
// `extra` is passed on to every machine's `xdc up` (--shaping, --time-dilation). When a
// machine fails, the machines already built are taken down again and the outcome names
// it. Then this machine, the controller, joins the lab's management switch
// (controller.h; an outcome "controller" when that fails, the machines taken down again).
// One outcome per machine that holds DCs, in the lab's order.
std::vector<MachineOutcome> up_lab(const Lab& lab, const topo::Topology& t,
                                   const std::string& topology_path, const std::string& net,
                                   const std::vector<std::string>& extra = {});
// `xdc down NET` on every machine (a machine without that network counts as done), and
// the controller's port and record here.
std::vector<MachineOutcome> down_lab(const Lab& lab, const std::string& net);

}  // namespace xdc::lab
