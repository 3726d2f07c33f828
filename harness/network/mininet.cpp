#include "harness/network/mininet.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>
#include <thread>

#include "common/find_program.h"
#include "common/spawn_daemon.h"
#include "common/text_file.h"
#include "harness/network/names.h"
#include "harness/network/namespace.h"
#include "harness/network/teardown.h"

namespace xdc::net {
namespace {

using json = nlohmann::json;
constexpr const char* kProgram = "xdc-mininet";
constexpr auto kBuildTimeout = std::chrono::seconds(300);

std::string plan_path(const std::string& net) {
  return state_dir(net) + "/mininet-plan.json";
}
std::string log_path(const std::string& net) {
  return state_dir(net) + "/mininet.log";
}

std::string log_tail(const std::string& net) {
  std::string s = read_text_file_or_empty(log_path(net));
  return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
}

// Mininet's nodes and links for `t` (mininet.h's table), and which namespace each node's
// is pinned as.
json make_plan(const topo::Topology& t, const std::string& net,
               std::map<std::string, std::string>* pin_as) {
  json hosts = json::array(), switches = json::array(), links = json::array();
  const std::string root = ns_prefix(net) + "root";  // a reserved host name: no clash
  switches.push_back({{"name", "mgmt"}, {"dpid", "1"}});
  (*pin_as)["mgmt"] = mgmt_ns(net);
  links.push_back({root, root_link(net), "mgmt", "mgmt-root"});
  int ordinal = 0;
  for (size_t d = 0; d < t.dcs.size(); ++d) {
    const topo::Dc& dc = t.dcs[d];
    const std::string sw = fmt::format("s{}", d), gw = gateway_ns(net, dc.name);
    switches.push_back({{"name", sw}, {"dpid", fmt::format("{:x}", d + 2)}});
    (*pin_as)[sw] = switch_ns(net, dc.name);
    hosts.push_back(gw);
    (*pin_as)[gw] = gw;
    links.push_back({gw, kMininetGatewayLan, sw, sw + "-gw"});
    for (const topo::Host& h : dc.hosts) {
      const std::string ns = host_ns(net, h.name);
      hosts.push_back(ns);
      (*pin_as)[ns] = ns;
      links.push_back({ns, "eth0", sw, mininet_switch_port(static_cast<int>(d), h.index)});
      links.push_back({ns, "mgmt0", "mgmt", fmt::format("mgmt-eth{}", ++ordinal)});
    }
  }
  for (const topo::WanLink& l : t.wan)
    links.push_back({gateway_ns(net, l.a), wan_ifname(l.b), gateway_ns(net, l.b), wan_ifname(l.a)});
  return {{"hosts", hosts}, {"switches", switches}, {"root", root}, {"links", links}};
}

// Waits for `pid` to end (reaping it when it is our child); true when it did.
bool wait_gone(pid_t pid, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    pid_t r = waitpid(pid, nullptr, WNOHANG);
    if (r == pid || (r < 0 && kill(pid, 0) != 0)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

std::string mininet_switch_port(int dc_index, int host_index) {
  return fmt::format("s{}-eth{}", dc_index, host_index + 1);
}

std::string mininet_program() {
  return find_program(kProgram, "XDC_MININET", XDC_SOURCE_MININET);
}

MininetNetwork::MininetNetwork(const topo::Topology& t, const std::string& net,
                               const std::function<void()>& poll_cb) {
  std::map<std::string, std::string> pin_as;
  {
    std::ofstream plan(plan_path(net));
    plan << make_plan(t, net, &pin_as).dump() << "\n";
    if (!plan) throw std::runtime_error("cannot write " + plan_path(net));
  }
  const std::string program = mininet_program();
  std::vector<std::string> argv = {program, "--plan=" + plan_path(net),
                                   "--prefix=" + ns_prefix(net), "--ready-fd=3", "--control-fd=4"};
  int ready[2], control[2];
  if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(control, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe");
  const std::string log = log_path(net);
  // Own session, as the delay lines: a Ctrl-C aimed at `xdc up` reaches xdc alone, which
  // tears the build down (and this driver with it).
  const int rc = spawn_daemon(argv, log, {{ready[1], 3}, {control[0], 4}}, &pid_);
  close(ready[1]);
  close(control[0]);
  control_fd_ = control[1];
  if (rc != 0) {
    close(ready[0]);
    close(control_fd_);
    control_fd_ = -1;
    pid_ = -1;
    throw std::system_error(rc, std::generic_category(), "spawn " + program);
  }
  // One line: {"pids": {...}} or "error: ...".
  std::string answer;
  try {
    pollfd pfd{ready[0], POLLIN, 0};
    auto deadline = std::chrono::steady_clock::now() + kBuildTimeout;
    while (answer.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      if (poll_cb) poll_cb();
      int r = ::poll(&pfd, 1, 100);
      if (r < 0 && errno != EINTR) break;
      if (r <= 0) continue;
      char buf[4096];
      ssize_t got = read(ready[0], buf, sizeof buf);
      if (got <= 0) break;
      answer.append(buf, static_cast<size_t>(got));
    }
  } catch (...) {
    close(ready[0]);
    throw;  // the destructor stops the driver
  }
  close(ready[0]);
  if (answer.rfind("{", 0) != 0) {
    if (answer.empty()) answer = "no answer (it exited, or took over 300 s)";
    throw std::runtime_error(fmt::format("Mininet ({}) failed to build the network: {}\n{}",
                                         program, answer, log_tail(net)));
  }
  nodes_ = json::parse(answer).at("pids").get<std::map<std::string, int>>();
  for (auto& [node, ns] : pin_as) pin_netns(ns, nodes_.at(node));
  for (const topo::Host* h : t.hosts()) create_uts_ns(h->name, uts_path(net, h->name));
}

MininetNetwork::~MininetNetwork() {
  if (control_fd_ >= 0) close(control_fd_);  // end of file: the driver stops the network
  if (pid_ > 0 && !wait_gone(pid_, std::chrono::seconds(20))) {
    kill(pid_, SIGKILL);
    wait_gone(pid_, std::chrono::seconds(2));
  }
}

void MininetNetwork::detach() {
  static const char kWord[] = "detach\n";
  if (write(control_fd_, kWord, sizeof kWord - 1) != static_cast<ssize_t>(sizeof kWord - 1))
    throw std::system_error(errno, std::generic_category(), "hand the network to xdc-mininet");
  close(control_fd_);
  control_fd_ = -1;
  pid_ = -1;  // no longer ours to wait for: it lives until xdc down
}

int stop_mininet(const std::string& net, std::chrono::milliseconds grace) {
  std::vector<pid_t> drivers;
  for (pid_t p : helper_pids(net)) {
    std::ifstream comm("/proc/" + std::to_string(p) + "/comm");
    std::string c;
    std::getline(comm, c);
    if (c == kProgram) drivers.push_back(p);
  }
  for (pid_t p : drivers) kill(p, SIGTERM);
  for (pid_t p : drivers)
    if (!wait_gone(p, grace)) {
      kill(p, SIGKILL);
      wait_gone(p, std::chrono::seconds(2));
    }
  return static_cast<int>(drivers.size());
}

}  // namespace xdc::net
