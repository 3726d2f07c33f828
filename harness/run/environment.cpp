#include "harness/run/environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <functional>
#include <set>

#include "harness/process/process.h"
#include "harness/run/host_memory.h"
#include "workloads/model/stage_api.h"
#include "workloads/worker/poll.h"

namespace xdc::run {

std::string shaping_backend(const net::NetworkState& net) {
  std::set<std::string> b;
  for (auto& l : net.links) b.insert(l.backend);
  if (b.empty()) return "none";
  if (b.size() == 1) return *b.begin();
  std::string s = "mixed:";
  for (auto& x : b) s += " " + x;
  return s;
}

nlohmann::json tcp_json(const net::NetworkState& net) {
  using Get = std::function<nlohmann::json(const net::HostTcp&)>;
  // Per setting: the value when every host has it, else "value (hosts); value (hosts)".
  auto key = [&](const Get& value_of) -> nlohmann::json {
    std::vector<std::pair<nlohmann::json, std::string>> seen;
    for (auto& h : net.hosts) {
      nlohmann::json v = value_of(h.tcp);
      auto it = std::find_if(seen.begin(), seen.end(), [&](auto& x) { return x.first == v; });
      if (it == seen.end()) it = seen.insert(seen.end(), {v, ""});
      it->second += (it->second.empty() ? "" : " ") + h.name;
    }
    if (seen.size() == 1) return seen[0].first;
    std::string s;
    for (auto& [v, hosts] : seen)
      s += (s.empty() ? "" : "; ") + (v.is_string() ? v.get<std::string>() : v.dump()) + " (" +
           hosts + ")";
    return s;
  };
  nlohmann::json j = nlohmann::json::object();
  if (net.hosts.empty() || net.hosts[0].tcp.congestion.empty()) return j;  // not recorded
  j["congestion"] = key([](const net::HostTcp& t) { return t.congestion; });
  j["tcp_rmem"] = key([](const net::HostTcp& t) { return t.tcp_rmem; });
  j["tcp_wmem"] = key([](const net::HostTcp& t) { return t.tcp_wmem; });
  j["slow_start_after_idle"] = key([](const net::HostTcp& t) { return t.slow_start_after_idle; });
  j["ecn"] = key([](const net::HostTcp& t) { return topo::ecn_word(t.ecn); });
  return j;
}

nlohmann::json root_tcp_json(const net::RootTcp& r) {
  nlohmann::json j = {{"congestion", r.tcp.congestion},
                      {"allowed_congestion", r.allowed},
                      {"tcp_rmem", r.tcp.tcp_rmem},
                      {"tcp_wmem", r.tcp.tcp_wmem},
                      {"slow_start_after_idle", r.tcp.slow_start_after_idle},
                      {"ecn", topo::ecn_word(r.tcp.ecn)},
                      {"core_rmem_max", r.rmem_max},
                      {"core_wmem_max", r.wmem_max}};
  if (!r.allowed_added.empty()) {
    std::string added;
    for (auto& a : r.allowed_added) added += (added.empty() ? "" : " ") + a;
    j["allowed_added_by_xdc"] = added;
    j["allowed_before_xdc"] = r.allowed_original;
  }
  return j;
}

nlohmann::json time_dilation_json(double k) {
  nlohmann::json j = {{"k", k}};
  if (k != 1) j["not_stretched"] = time_dilation_fixed_timers();
  return j;
}

std::vector<std::string> time_dilation_fixed_timers() {
  // The minimum RTO is stretched (route rto_min = k x 200 ms on every host, builder.cpp).
  return {"TCP delayed ACK (40-200 ms)", "pacing and TCP small queues granularity",
          "CUBIC's window growth and HyStart's delay thresholds (4-16 ms), which count "
          "wall-clock time",
          "OpenMPI's and the OS's own timeouts",
          "CPU-bound work (MPI progress, copies, the delay line)"};
}

nlohmann::json connections_json(const Experiment& e) {
  auto one = [](int n) { return n > 0 ? nlohmann::json(n) : nlohmann::json("openmpi"); };
  return {{"wan", one(e.connections_wan)}, {"dc", one(e.connections_dc)}};
}

// Real compute: the device, and on cuda each world rank's GPU with the GPUs' names.
static nlohmann::json compute_device_json(const Experiment& e) {
  if (e.compute.mode != Compute::Mode::kReal) return nullptr;
  nlohmann::json j = {{"device", e.compute.real_device}};
  if (e.compute.real_device == "cuda") {
    j["rank_gpus"] = e.rank_gpus();
    j["gpus_here"] = model::cuda_gpus();
  }
  return j;
}

nlohmann::json environment_json(const Experiment& e, const net::NetworkState& net, bool reused,
                                const sim::HostMemory* host_memory) {
  utsname u{};
  uname(&u);
  std::string mpi;
  try {
    auto r = proc::run({"mpirun", "--version"}, std::chrono::seconds(10));
    mpi = r.out.substr(0, r.out.find('\n'));
  } catch (const std::exception& ex) {
    mpi = std::string("unknown: ") + ex.what();
  }
  nlohmann::json links = nlohmann::json::array();
  const double k = net.time_dilation;
  for (auto& l : net.links) {
    // `configured`: the link emulated (undilated); `as_built`: what the shaper runs.
    nlohmann::json j = {{"from", l.from},
                        {"to", l.to},
                        {"backend", l.backend},
                        {"configured", netem::time_dilated(l.configured, 1 / k)},
                        {"seed", l.seed}};  // its delay line's draws (shape_options)
    if (k != 1) j["as_built"] = l.configured;
    links.push_back(j);
  }
  nlohmann::json mca = nlohmann::json::object();
  for (auto& [k, v] : e.mca) mca[k] = v;
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  nlohmann::json env = {{"date", date},
                        {"kernel", std::string(u.sysname) + " " + u.release},
                        {"machine", u.machine},
                        {"cpus", sysconf(_SC_NPROCESSORS_ONLN)},
                        {"mpi", mpi},
                        {"xdc", "0.1"},
                        {"network", net.name},
                        {"network_reused", reused},
                        {"management_subnet", net.mgmt_subnet},
                        {"network_backend", net.backend},
                        {"shaping_backend", shaping_backend(net)},
                        {"wan_links", links},
                        {"notes", net.notes},
                        {"tcp", tcp_json(net)},
                        {"root_tcp", root_tcp_json(net.root_tcp)},
                        {"compute_mode", e.compute.name()},
                        {"compute_costs", e.compute.costs_source()},
                        {"compute_device", compute_device_json(e)},
                        {"time_dilation", time_dilation_json(k)},
                        {"mpi_tcp_links", e.tcp_links == 0 ? 1 : e.tcp_links},
                        {"mpi_connections", connections_json(e)},
                        {"wan_sharing", e.wan_temporal ? "temporal" : "fair"},
                        {"mpi_progress", e.progress},
                        {"timer_slack_ns", worker::timer_slack_ns()},
                        {"mpi_mca", mca},
                        {"non_default_settings", non_default_settings(e)}};
  if (host_memory && host_memory->fresh_copy_bps > 0)
    env["host_memory"] = host_memory_json(*host_memory);
  return env;
}

}  // namespace xdc::run
