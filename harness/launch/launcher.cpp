#include "harness/launch/launcher.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "common/text_file.h"
#include "harness/network/names.h"
#include "harness/network/namespace.h"
#include "harness/process/process.h"

namespace xdc::launch {
namespace fs = std::filesystem;
namespace {

// Data subnets only (hosts 10.1.0.0/16, WAN 10.2.0.0/16): MPI traffic is shaped.

std::vector<std::string> distinct(const std::vector<std::string>& v) {
  std::vector<std::string> out;
  for (auto& x : v)
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  return out;
}

// "[1,3]<stdout>:text" -> {3, "text"}; untagged -> {-1, line}.
std::pair<int, std::string> untag(const std::string& line) {
  static const std::regex tag(R"(^\[\d+,(\d+)\]<std(out|err)>:(.*)$)");
  std::smatch m;
  if (std::regex_match(line, m, tag)) return {std::stoi(m[1]), m[3]};
  return {-1, line};
}

std::string comm_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string c;
  std::getline(in, c);
  return c;
}

// The job's program as the kernel names its processes (comm: 15 characters).
std::string program_comm(const Job& job) {
  return job.program.empty() ? "" : fs::path(job.program[0]).filename().string().substr(0, 15);
}

// orted and the program of this job still alive in the job's hosts (mpirun normally
// takes them down; after a SIGKILL'd mpirun or a hung orted it may not).
int kill_leftovers(const net::NetworkState& net, const Job& job) {
  std::set<std::string> names{"orted"};
  if (!job.program.empty()) names.insert(program_comm(job));
  int killed = 0;
  for (int round = 0; round < 20; ++round) {
    int alive = 0;
    for (auto& h : distinct(job.rank_hosts))
      for (pid_t pid : net::netns_pids(net::host_ns(net.name, h)))
        if (names.count(comm_of(pid))) {
          ++alive;
          // Give orted a moment to exit by itself after a clean job.
          if (round >= 5 && ::kill(pid, SIGKILL) == 0) ++killed;
        }
    if (alive == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return killed;
}

}  // namespace

int kill_ranks_on(const net::NetworkState& net, const Job& job,
                  const std::vector<std::string>& hosts) {
  const std::string name = program_comm(job);
  int killed = 0;
  for (const std::string& h : hosts)
    for (pid_t pid : net::netns_pids(net::host_ns(net.name, h)))
      if (comm_of(pid) == name && ::kill(pid, SIGKILL) == 0) ++killed;
  return killed;
}

namespace {

// mpirun treats a hostfile name that resolves to one of the root namespace's own
// addresses as local and never calls the agent: the rank would run outside the
// emulated network. Emulated host names live only in the hosts' own /etc/hosts, so this
// only happens for a name that is also this machine's (its hostname, an /etc/hosts alias).
void refuse_local_names(const std::vector<std::string>& hosts) {
  char self[256] = {0};
  gethostname(self, sizeof self - 1);
  std::set<std::string> local{self, "localhost"};
  std::ifstream etc("/etc/hosts");
  for (std::string line; std::getline(etc, line);) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string w;
    words >> w;  // the address
    while (words >> w) local.insert(w);
  }
  for (auto& h : distinct(hosts))
    if (local.count(h))
      throw std::runtime_error("emulated host '" + h +
                               "' has a name the root namespace resolves itself (hostname or "
                               "/etc/hosts): mpirun would start its ranks outside the emulated "
                               "network; rename the host in the topology");
}

}  // namespace

std::string agent_command(const std::string& net) {
  return proc::xdc_exe() + " mpi-agent --name " + net;
}

std::string hostfile_text(const std::vector<std::string>& rank_hosts) {
  std::string out;
  for (auto& h : distinct(rank_hosts))
    out += fmt::format("{} slots={}\n", h, std::count(rank_hosts.begin(), rank_hosts.end(), h));
  return out;
}

std::vector<std::string> mpirun_argv(const net::NetworkState& net, const Job& job) {
  const fs::path dir = job.run_dir;
  std::vector<std::string> a = {"env",
                                "OMPI_ALLOW_RUN_AS_ROOT=1",
                                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                "mpirun",
                                "--default-hostfile",
                                (dir / "hostfile").string(),
                                "--hostfile",
                                (dir / "rankmap").string(),
                                "--mca",
                                "rmaps",
                                "seq",
                                "-np",
                                std::to_string(job.rank_hosts.size()),
                                "--mca",
                                "plm_rsh_agent",
                                agent_command(net.name),
                                "--mca",
                                "plm_rsh_no_tree_spawn",
                                "1",
                                "--mca",
                                "oob_tcp_if_include",
                                net.mgmt_subnet,
                                "--mca",
                                "btl",
                                "tcp,self",
                                "--mca",
                                "btl_tcp_if_include",
                                kDataCidr,
                                "--bind-to",
                                "none",
                                "--tag-output"};
  if (job.tcp_links > 0) {
    a.insert(a.end(), {"--mca", "btl_tcp_links", std::to_string(job.tcp_links)});
  }
  for (auto& [k, v] : job.mca) a.insert(a.end(), {"--mca", k, v});
  for (auto& [k, v] : job.env) a.insert(a.end(), {"-x", k + "=" + v});
  a.insert(a.end(), job.program.begin(), job.program.end());
  return a;
}

std::vector<Failure> parse_failures(const std::string& output,
                                    const std::vector<std::string>& rank_hosts) {
  // Strip the rank tags so that multi-line messages match as written.
  std::string text;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) text += untag(line).second + "\n";
  struct Hit {
    size_t pos;
    Failure f;
  };
  std::vector<Hit> hits;
  auto scan = [&](const std::regex& re, auto make) {
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
         ++it)
      hits.push_back({static_cast<size_t>(it->position()), make(*it)});
  };
  scan(std::regex(R"(xdc-worker: rank (\d+) \(host ([^)]*)\): ([^\n]*))"),
       [](const std::smatch& m) {
         return Failure{std::stoi(m[1]), m[2], m[3]};
       });
  scan(std::regex(
           R"(process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+) \(([^)]*)\))"),
       [](const std::smatch& m) {
         return Failure{std::stoi(m[1]), m[2],
                        "exited on signal " + m[3].str() + " (" + m[4].str() + ")"};
       });
  scan(std::regex(
           R"(MPI_ABORT was invoked on rank (\d+) in communicator \S+\s+with errorcode (\d+))"),
       [](const std::smatch& m) {
         return Failure{std::stoi(m[1]), "", "called MPI_Abort (error code " + m[2].str() + ")"};
       });
  scan(std::regex(R"(Process name:\s+\[\[\d+,\d+\],(\d+)\]\s+Exit code:\s+(\d+))"),
       [](const std::smatch& m) {
         return Failure{std::stoi(m[1]), "", "exited with code " + m[2].str()};
       });
  // Without a rank: the daemon of a host went away (the host's processes were killed
  // from outside, or its namespace was removed under the job).
  scan(
      std::regex(
          R"(ORTE has lost communication with a remote daemon\.\s+HNP daemon\s*:[^\n]*\n\s*Remote daemon:\s*\S+ on node (\S+))"),
      [](const std::smatch& m) {
        return Failure{-1, m[1], "lost its MPI daemon (orted died or was killed)"};
      });
  // The rsh agent could not enter a host: its namespace is gone.
  scan(std::regex(R"(xdc: no emulated host '([^']+)' in network)"), [](const std::smatch& m) {
    return Failure{-1, m[1], "cannot be entered: its namespace is gone (network removed?)"};
  });
  // Failures that name a rank come first; then in the order mpirun reported them.
  std::stable_sort(hits.begin(), hits.end(), [](auto& a, auto& b) {
    if ((a.f.rank < 0) != (b.f.rank < 0)) return a.f.rank >= 0;
    return a.pos < b.pos;
  });
  std::vector<Failure> out;
  for (auto& h : hits) {
    Failure f = h.f;
    if (f.host.empty() && f.rank >= 0 && f.rank < static_cast<int>(rank_hosts.size()))
      f.host = rank_hosts[f.rank];
    auto same = std::find_if(out.begin(), out.end(),
                             [&](auto& o) { return o.rank == f.rank && o.host == f.host; });
    if (same == out.end())
      out.push_back(f);
    else if (same->what.find(f.what) == std::string::npos)
      same->what += "; " + f.what;
  }
  return out;
}

std::string Result::message() const {
  if (ok()) return "";
  std::string m;
  if (cancelled) m = "interrupted";
  if (timed_out)
    m = fmt::format("no rank wrote a line for {} s: stopped after {:.0f} s", stall_s, seconds);
  for (auto& f : failures) {
    if (!m.empty()) m += "; ";
    m += f.rank >= 0       ? fmt::format("rank {} (host {}) {}", f.rank, f.host, f.what)
         : !f.host.empty() ? fmt::format("host {}: {}", f.host, f.what)
                           : f.what;
  }
  if (m.empty()) m = fmt::format("mpirun exited with code {}", exit_code);
  return m;
}

Result run_job(const net::NetworkState& net, const Job& job) {
  if (job.rank_hosts.empty() || job.program.empty())
    throw std::invalid_argument("launch: a job needs ranks and a program");
  for (auto& h : job.rank_hosts)
    if (!net.find_host(h))
      throw std::invalid_argument("launch: no host '" + h + "' in network " + net.name);
  refuse_local_names(job.rank_hosts);
  const fs::path dir = job.run_dir;
  write_text_file((dir / "hostfile").string(), hostfile_text(job.rank_hosts));
  std::string rankmap;
  for (auto& h : job.rank_hosts) rankmap += h + "\n";
  write_text_file((dir / "rankmap").string(), rankmap);

  const auto argv = mpirun_argv(net, job);
  std::string cmdline;
  for (auto& a : argv)  // a record to read or paste into a shell; mpirun gets argv itself
    cmdline += (a.find(' ') == std::string::npos ? a : "'" + a + "'") + " ";
  write_text_file((dir / "mpirun.cmd").string(), cmdline + "\n");
  const fs::path log = dir / "mpirun.log";
  Result r;
  const auto t0 = std::chrono::steady_clock::now();
  {
    proc::Background mpirun(argv, log.string());
    std::ifstream tail;
    std::string partial;
    auto last_line = std::chrono::steady_clock::now();
    r.stall_s = static_cast<int>(job.stall_timeout.count());
    auto pump = [&] {
      if (!tail.is_open()) tail.open(log);
      if (!tail.is_open()) return;
      tail.clear();
      std::string chunk((std::istreambuf_iterator<char>(tail)), std::istreambuf_iterator<char>());
      if (!chunk.empty()) last_line = std::chrono::steady_clock::now();
      partial += chunk;
      size_t nl;
      while ((nl = partial.find('\n')) != std::string::npos) {
        auto [rank, text] = untag(partial.substr(0, nl));
        partial.erase(0, nl + 1);
        if (job.on_line) job.on_line(rank, text);
      }
    };
    for (;;) {
      int rc = mpirun.wait_for(std::chrono::milliseconds(20));
      pump();
      if (rc != -1) {
        r.exit_code = rc;
        // Ctrl-C reaches mpirun too (the terminal signals the whole process group): it ends
        // on its own, as the cancel is being set; the run was interrupted all the same.
        if (rc != 0 && job.cancel && job.cancel->load()) r.cancelled = true;
        break;
      }
      if (job.cancel && job.cancel->load()) r.cancelled = true;
      if (std::chrono::steady_clock::now() - last_line > job.stall_timeout) r.timed_out = true;
      if (r.cancelled || r.timed_out) {
        mpirun.terminate();  // SIGTERM: mpirun takes its job down; SIGKILL after 2 s
        r.exit_code = -1;
        pump();
        break;
      }
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  kill_leftovers(net, job);

  const std::string output = read_text_file_or_empty(log);
  std::map<int, std::string> per_rank;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    auto [rank, text] = untag(line);
    if (rank >= 0) per_rank[rank] += text + "\n";
  }
  for (int rank = 0; rank < static_cast<int>(job.rank_hosts.size()); ++rank)
    write_text_file((dir / fmt::format("rank{}.log", rank)).string(), per_rank[rank]);
  if (r.exit_code != 0 || r.timed_out || r.cancelled)
    r.failures = parse_failures(output, job.rank_hosts);
  return r;
}

}  // namespace xdc::launch
