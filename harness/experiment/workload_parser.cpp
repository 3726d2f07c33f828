// The `workload:` block (workload.h): the user's program, where it runs, its environment.
#include "harness/experiment/workload_parser.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

namespace xdc::run {
namespace {

const std::vector<std::string> kReservedEnv = {
    "RANK",        "WORLD_SIZE",  "LOCAL_RANK",         "LOCAL_WORLD_SIZE",   "GROUP_RANK",
    "MASTER_ADDR", "MASTER_PORT", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "XDC_EVENTS",
    "XDC_PROFILE", "XDC_HOST"};

bool env_name(const std::string& k) {
  if (k.empty() || std::isdigit(static_cast<unsigned char>(k[0]))) return false;
  return std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// argv[0] as the process will find it: a path (relative to `cwd`) or a name on PATH.
bool program_exists(const std::string& prog, const std::string& cwd) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (prog.find('/') != std::string::npos) {
    const fs::path p = fs::path(prog).is_absolute() ? fs::path(prog) : fs::path(cwd) / prog;
    return fs::is_regular_file(p, ec);
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && fs::is_regular_file(fs::path(d) / prog, ec)) return true;
  return false;
}

// Longer than units.h's durations (at most 60 s): "300s", "20m", "2h" or seconds.
uint64_t time_limit_us(const yaml::Value& v) {
  const std::string t = v.scalar("a time limit like \"300s\", \"20m\" or \"2h\"");
  const std::map<std::string, double> scale = {{"s", 1}, {"m", 60}, {"h", 3600}, {"", 1}};
  size_t used = 0;
  double n = -1;
  try {
    n = std::stod(t, &used);
  } catch (const std::exception&) {
  }
  const auto unit = scale.find(used ? t.substr(used) : "?");
  if (n <= 0 || unit == scale.end() || n * unit->second < 1 || n * unit->second > 7 * 86400)
    v.fail("a time limit from 1s to 7 days, like \"300s\", \"20m\" or \"2h\"");
  return static_cast<uint64_t>(n * unit->second * 1e6);
}

}  // namespace

Workload parse_workload(const yaml::Value& v, const topo::Topology& topology,
                        const std::string& source_file) {
  yaml::Map m = v.map({}, "a map like {command: [/usr/bin/python3, train.py], hosts: [a, b]}");
  m.check_keys({"command", "hosts", "per_host", "launcher", "port", "time_limit", "env",
                "warmup_steps", "predict"},
               {{"argv", "command"},
                {"cmd", "command"},
                {"nodes", "hosts"},
                {"placement", "hosts"},
                {"nproc_per_node", "per_host"},
                {"processes_per_host", "per_host"},
                {"timeout", "time_limit"},
                {"environment", "env"},
                {"master_port", "port"},
                {"warmup", "warmup_steps"}});
  Workload w;
  w.pos = v.pos();
  w.cwd = std::filesystem::absolute(source_file).parent_path().string();
  const yaml::Value cmd = m.require("command");
  if (cmd.is_scalar())
    cmd.fail(
        "an argv list like [/usr/bin/python3, train.py] (no shell strings: split the "
        "words yourself)");
  for (const auto& a : cmd.list("an argv list like [/usr/bin/python3, train.py]"))
    w.command.push_back(a.scalar("a word of the command"));
  if (w.command.empty()) cmd.fail("a non-empty argv list like [/usr/bin/python3, train.py]");
  const yaml::Value prog = cmd.list().front();
  if (w.command[0].find('=') != std::string::npos)
    prog.fail("a program (path or name on PATH), not an assignment; set variables in env:");
  if (!program_exists(w.command[0], w.cwd))
    prog.fail(
        "a program that exists (a path relative to this file's directory, or a name "
        "on PATH)");
  const yaml::Value hosts = m.require("hosts");
  for (const auto& h : hosts.list("a list of the topology's hosts like [east-h1, w1]")) {
    const std::string name = h.scalar("a host name");
    if (!topology.find_host(name)) h.fail("a host of the topology");
    if (std::find(w.hosts.begin(), w.hosts.end(), name) != w.hosts.end())
      h.fail("each host once (per_host starts several processes on one)");
    w.hosts.push_back(name);
  }
  if (w.hosts.empty()) hosts.fail("at least one host");
  if (auto x = m.get("per_host")) w.per_host = static_cast<int>(x->integer(1, 64));
  if (auto x = m.get("launcher")) {
    w.launcher = x->choice({"torch", "mpi"}) == "torch" ? Workload::Launcher::kTorch
                                                        : Workload::Launcher::kMpi;
  }
  if (auto x = m.get("port")) w.port = static_cast<int>(x->integer(1024, 65535));
  if (auto x = m.get("time_limit")) w.time_limit_us = time_limit_us(*x);
  if (auto x = m.get("warmup_steps")) w.warmup_steps = static_cast<int>(x->integer(0, 1000000));
  if (auto x = m.get("env")) {
    yaml::Map em = x->map({}, "a map of environment variables like {OMP_NUM_THREADS: 2}");
    for (const auto& entry : em.entries()) {
      if (!env_name(entry.key)) entry.key_node.fail("a variable name of letters, digits and '_'");
      if (std::find(kReservedEnv.begin(), kReservedEnv.end(), entry.key) != kReservedEnv.end())
        entry.key_node.fail("a variable xdc does not set itself (" + entry.key +
                            " is set per process by the launcher)");
      w.env.emplace_back(entry.key, entry.value.scalar("a value"));
    }
  }
  if (auto x = m.get("predict")) {
    yaml::Map pm = x->map({}, "a map like {allreduce: 2mib}");
    pm.check_keys({"allreduce"}, {{"grad", "allreduce"}, {"bytes", "allreduce"}});
    const yaml::Value a = pm.require("allreduce");
    w.allreduce_bytes = static_cast<int64_t>(a.size_bytes());
    if (w.allreduce_bytes <= 0) a.fail("a size above 0, like \"2mib\"");
    if (w.world_size() < 2) x->error("predict: needs at least two processes to all-reduce");
  }
  return w;
}

}  // namespace xdc::run
