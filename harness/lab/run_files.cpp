#include "harness/lab/run_files.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>

#include "harness/lab/remote.h"
#include "harness/network/names.h"

namespace xdc::lab {
namespace fs = std::filesystem;

std::vector<const Machine*> machines_holding_hosts(const Lab& lab, const net::NetworkState& state) {
  std::set<std::string> names;
  for (const auto& h : state.hosts) names.insert(h.machine);
  std::vector<const Machine*> out;
  for (const std::string& n : names)
    if (const Machine* m = lab.find(n)) out.push_back(m);
  return out;
}

namespace {
// `before | ssh m remote | after` through the local shell (either side may be ""): a
// schedule's files may be larger than one command-line argument may be.
proc::Result through_ssh(const std::string& before, const Machine& m,
                         const std::vector<std::string>& remote, const std::string& after) {
  std::string ssh;
  for (const std::string& w : ssh_argv(m, remote)) ssh += shell_quote(w) + " ";
  return proc::run(
      {"sh", "-c",
       (before.empty() ? "" : before + " | ") + ssh + (after.empty() ? "" : "| " + after)},
      std::chrono::minutes(5));
}

// Both probes without pipes (proc::run_quiet): mpirun, started meanwhile, would inherit them.
bool answers_ssh(const Machine& m) {
  return proc::run_quiet(ssh_argv(m, {"true"}), std::chrono::seconds(20)) == 0;
}
}  // namespace

RunFiles::RunFiles(const Lab& lab, const net::NetworkState& state, const fs::path& root)
    : net_(state.name), machines_(machines_holding_hosts(lab, state)) {
  const fs::path marker = root / fmt::format(".lab-{}", getpid());
  std::ofstream(marker) << "xdc run --lab\n";
  for (const Machine* m : machines_)
    if (run_on(*m, {"test", "-e", marker.string()}, std::chrono::seconds(60)).exit_code != 0)
      shared_ = false;
  fs::remove(marker);
}

std::string RunFiles::dir(const fs::path& local) const {
  return shared_ ? local.string() : net::state_dir(net_) + "/run/" + local.filename().string();
}

void RunFiles::push(const fs::path& local) const {
  if (shared_) return;
  for (const Machine* m : machines_) {
    const proc::Result r = through_ssh(
        "tar -C " + shell_quote(local.string()) + " -cf - spec.json schedule.csv", *m,
        {"sh", "-c", R"(rm -rf "$1" && mkdir -p "$1" && tar -xf - -C "$1")", "sh", dir(local)}, "");
    if (r.exit_code != 0)
      throw std::runtime_error(m->name + ": cannot write the schedule's files: " + r.err);
  }
}

std::string RunFiles::fetch(const fs::path& local) const {
  if (shared_) return "";
  std::string missed;
  for (const Machine* m : machines_) {
    const proc::Result r = through_ssh("", *m, {"tar", "-C", dir(local), "-cf", "-", "."},
                                       "tar -xf - -C " + shell_quote(local.string()));
    if (r.exit_code == 0)
      run_on(*m, {"rm", "-rf", dir(local)}, std::chrono::minutes(1));
    else
      missed += (missed.empty() ? "" : ", ") + m->name;
  }
  return missed.empty() ? "" : "the files of machine(s) " + missed + " could not be fetched";
}

MachineWatch::MachineWatch(const Lab& lab, const net::NetworkState& state,
                           const std::atomic<bool>* cancel)
    : machines_(machines_holding_hosts(lab, state)), cancel_(cancel) {
  thread_ = std::thread([this] { watch(); });
}

MachineWatch::~MachineWatch() {
  done_ = true;
  if (thread_.joinable()) thread_.join();
}

std::string MachineWatch::lost() {
  done_ = true;
  if (thread_.joinable()) thread_.join();
  if (lost_.empty())
    for (const Machine* m : machines_)
      if (!answers_ssh(*m)) lost_ += (lost_.empty() ? "" : ", ") + m->name;
  return lost_.empty() ? "" : "lab machine(s) " + lost_ + " lost (no answer to ping or ssh)";
}

void MachineWatch::watch() {
  std::map<const Machine*, int> missed;
  while (!done_) {
    if (cancel_ && cancel_->load()) stop_ = true;
    for (const Machine* m : machines_) {
      if (done_) return;
      const bool up = proc::run_quiet({"ping", "-n", "-q", "-c", "1", "-W", "1", m->ssh},
                                      std::chrono::seconds(3)) == 0;
      missed[m] = up ? 0 : missed[m] + 1;
      if (missed[m] < 5) continue;
      if (!answers_ssh(*m)) {
        lost_ = m->name;
        stop_ = true;
        return;
      }
      missed[m] = 0;  // it answers ssh, not ping (ICMP filtered): ask again in 5 s
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

nlohmann::json placement_json(const Lab& lab, const net::NetworkState& state,
                              const std::vector<std::string>& rank_hosts) {
  nlohmann::json machines = nlohmann::json::object();
  for (const auto& h : state.hosts) {
    auto& m = machines[h.machine];
    m["ssh"] = lab.find(h.machine) ? lab.find(h.machine)->ssh : "";
    auto& dcs = m["dcs"];
    if (!dcs.is_array()) dcs = nlohmann::json::array();
    if (std::find(dcs.begin(), dcs.end(), h.dc) == dcs.end()) dcs.push_back(h.dc);
    m["hosts"].push_back(h.name);
  }
  std::string line;
  for (size_t r = 0; r < rank_hosts.size(); ++r)
    if (const net::HostState* h = state.find_host(rank_hosts[r]))
      machines[h->machine]["ranks"].push_back(r);
  for (auto& [name, m] : machines.items())
    line += fmt::format("{}{} ({}: ranks {})", line.empty() ? "" : ", ", name,
                        fmt::join(m["dcs"].get<std::vector<std::string>>(), "+"),
                        m.contains("ranks") ? m["ranks"].dump() : "none");
  return {
      {"file", state.lab_file}, {"name", lab.name}, {"machines", machines}, {"placement", line}};
}

}  // namespace xdc::lab
