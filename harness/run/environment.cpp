#include "harness/run/environment.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <ctime>
#include <set>

#include "harness/process/process.h"

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

nlohmann::json environment_json(const Experiment& e, const net::NetworkState& net, bool reused) {
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
                        {"configured", netem::time_dilated(l.configured, 1 / k)}};
    if (k != 1) j["as_built"] = l.configured;
    links.push_back(j);
  }
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return {{"date", date},
          {"kernel", std::string(u.sysname) + " " + u.release},
          {"machine", u.machine},
          {"cpus", sysconf(_SC_NPROCESSORS_ONLN)},
          {"mpi", mpi},
          {"xdc", "0.1"},
          {"network", net.name},
          {"network_reused", reused},
          {"management_subnet", net.mgmt_subnet},
          {"shaping_backend", shaping_backend(net)},
          {"wan_links", links},
          {"notes", net.notes},
          {"compute_mode", e.compute.name()},
          {"time_dilation", time_dilation_json(k)},
          {"mpi_tcp_links", e.tcp_links == 0 ? 1 : e.tcp_links},
          {"mpi_progress", e.progress}};
}

}  // namespace xdc::run
