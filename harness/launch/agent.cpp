#include "harness/launch/agent.h"

#include "harness/network/enter.h"

namespace xdc::launch {

void run_agent(const std::string& net, const std::string& host,
               const std::vector<std::string>& words) {
  std::string command;
  for (const auto& w : words) command += (command.empty() ? "" : " ") + w;
  auto [n, ns] = net::resolve_host(host, net);
  net::exec_in_namespace(n, ns, {"/bin/sh", "-c", command});
}

}  // namespace xdc::launch
