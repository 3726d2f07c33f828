#include "tests/network/leftovers.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/text_file.h"
#include "harness/network/names.h"
#include "harness/network/namespace.h"
#include "harness/network/state.h"
#include "harness/network/teardown.h"
#include "harness/process/process.h"

namespace xdc::testing {
namespace fs = std::filesystem;

std::vector<std::string> leftovers(const std::string& net) {
  std::vector<std::string> out;
  auto mine = [&](const std::string& owner) {
    return !owner.empty() && (net.empty() || owner == net);
  };
  for (auto& ns : net::list_netns())
    if (mine(net::net_of_ns(ns))) out.push_back("netns " + ns);
  for (auto& e : fs::directory_iterator("/sys/class/net"))
    if (mine(net::net_of_root_link(e.path().filename())))
      out.push_back("link " + e.path().filename().string());
  std::error_code ec;
  for (auto& d : net::list_state_dirs())  // the lock file beside them is not a network's
    if (mine(d)) out.push_back("state " + net::state_dir(d));
  for (auto& e : fs::directory_iterator("/etc/netns", ec))
    if (mine(net::net_of_ns(e.path().filename()))) out.push_back("file " + e.path().string());
  for (pid_t pid : net::helper_pids(net)) out.push_back("process " + std::to_string(pid));
  return out;
}

std::vector<std::string> processes_matching(const std::function<bool(const std::string&)>& match,
                                            size_t width) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/proc", ec)) {
    std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = read_text_file_or_empty(e.path() / "cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (match(cmd)) out.push_back(pid + " " + cmd.substr(0, width));
  }
  return out;
}

CliResult run_xdc(const std::vector<std::string>& args, int timeout_s) {
  std::vector<std::string> argv{XDC_EXE_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = proc::run(argv, std::chrono::seconds(timeout_s));
  return {r.exit_code, r.out + r.err};
}

bool wait_stopped(proc::Background& p, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  const std::string stat = "/proc/" + std::to_string(p.pid()) + "/stat";
  while (std::chrono::steady_clock::now() < until) {
    if (!p.running()) return false;
    // "pid (comm) S ...": the state follows the last ')'; T is stopped by a signal.
    const std::string s = read_text_file_or_empty(stat);
    const auto paren = s.rfind(')');
    if (paren != std::string::npos && paren + 2 < s.size() && s[paren + 2] == 'T') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace xdc::testing
