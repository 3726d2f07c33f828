#include "harness/launch/agent.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/input_error.h"
#include "harness/lab/remote.h"
#include "harness/network/enter.h"
#include "harness/network/state.h"

namespace xdc::launch {

void run_agent(const std::string& net, const std::string& host,
               const std::vector<std::string>& words) {
  if (auto s = net::load_state(net); s && s->backend == "lab") {
    // A lab network: the host is on one of the lab's machines; its own xdc enters it.
    const net::HostState* h = s->find_host(host);
    if (!h) throw InputError("no emulated host '" + host + "' in network '" + net + "'");
    const lab::Lab l = lab::load_lab(s->lab_file);
    const lab::Machine* m = l.find(h->machine);
    if (!m) throw InputError("lab " + s->lab_file + " has no machine " + h->machine);
    std::vector<std::string> remote = {l.xdc, "mpi-agent", "--name", net, host};
    remote.insert(remote.end(), words.begin(), words.end());
    std::vector<std::string> argv = lab::ssh_argv(*m, remote);
    std::vector<char*> c;
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    execvp(c[0], c.data());
    throw std::runtime_error(std::string("cannot run ssh: ") + std::strerror(errno));
  }
  std::string command;
  for (const auto& w : words) command += (command.empty() ? "" : " ") + w;
  auto [n, ns] = net::resolve_host(host, net);
  net::exec_in_namespace(n, ns, {"/bin/sh", "-c", command});
}

}  // namespace xdc::launch
