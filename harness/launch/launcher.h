#pragma once
// The launcher: one MPI job across the hosts of an emulated network (made by `xdc up`).
// mpirun runs in the root namespace and starts one orted per emulated host through an
// rsh agent that enters the host (`xdc mpi-agent`, agent.h: the one way in, as
// `xdc exec`). Out-of-band traffic rides the unshaped management subnet; MPI traffic is
// pinned to the shaped data subnets (`btl tcp,self`, no shared memory across hosts).
//
// Files it writes into `run_dir`:
//   hostfile     "<host> slots=<ranks on it>" per host (the allocation; no core counting)
//   rankmap      one host per line, line r = host of world rank r (mapped with `rmaps seq`)
//   mpirun.log   mpirun's output, every rank's line tagged "[1,r]<stdout>:" by --tag-output
//   rank<r>.log  that output split per rank after the job
//
// Hosts' TCP (congestion control, buffer limits, slow start after idle, ECN) is the
// topology's `tcp:` settings, applied by the network builder (harness/network/tcp.h).
//
// Host names the root namespace resolves itself (its hostname, /etc/hosts) are refused:
// mpirun would take them as local and start those ranks outside the emulated network.
//
// A job in which no rank writes a line for `stall_timeout` (or that is cancelled) is
// terminated and whatever it wrote is kept; a long job that keeps writing runs to its end. Failures
// are named: the first rank that died or aborted and its host.
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "harness/network/state.h"

namespace xdc::launch {

// The shaped data network MPI (btl_tcp_if_include) and the workers' stripes use.
inline constexpr const char* kDataCidr = "10.0.0.0/8";

struct Job {
  std::string run_dir;                  // absolute; exists
  std::vector<std::string> rank_hosts;  // world rank -> emulated host
  std::vector<std::string> program;     // argv of every rank (absolute program path)
  std::vector<std::pair<std::string, std::string>> env;  // exported to the ranks (-x)
  int tcp_links = 0;                                     // btl_tcp_links; 0 = OpenMPI's default
  std::vector<std::pair<std::string, std::string>> mca;  // more --mca KEY VALUE
  // Stopped when mpirun's output (every rank's) gains no line for this long.
  std::chrono::seconds stall_timeout{600};
  const std::atomic<bool>* cancel = nullptr;  // set (e.g. by SIGINT) to stop the job
  // Each new line of mpirun's output as {rank or -1, text without the tag}, within ~20 ms
  // of mpirun writing it (run_job polls its log).
  std::function<void(int, const std::string&)> on_line;
};

struct Failure {
  int rank = -1;     // world rank, -1 when unknown
  std::string host;  // its emulated host, "" when unknown
  std::string what;  // "exited on signal 9 (Killed)", "called MPI_Abort (code 1)", ...
};

struct Result {
  int exit_code = 0;       // mpirun's; -1 when it was terminated
  bool timed_out = false;  // stopped: no line for stall_s
  bool cancelled = false;
  double seconds = 0;
  int stall_s = 0;                // the job's stall_timeout
  std::vector<Failure> failures;  // first failure first
  bool ok() const { return exit_code == 0 && !timed_out && !cancelled; }
  std::string message() const;  // one line for the user ("" when ok)
};

// The mpirun argv of a job on `net` (exposed for tests and for the record).
std::vector<std::string> mpirun_argv(const net::NetworkState& net, const Job& job);
// "host slots=N" lines, hosts in order of first appearance.
std::string hostfile_text(const std::vector<std::string>& rank_hosts);
// The rsh agent value of --mca plm_rsh_agent: "<xdc> mpi-agent --name <net>".
std::string agent_command(const std::string& net);

// Parses mpirun's (tagged) output for ranks that died, aborted or reported an error;
// hosts are filled from `rank_hosts` when mpirun did not name them.
std::vector<Failure> parse_failures(const std::string& output,
                                    const std::vector<std::string>& rank_hosts);

// SIGKILLs the job's program (its ranks, not orted) in `hosts`; returns how many died.
// For a run's event that fails a DC (experiment.h's kill_ranks) while run_job goes on.
int kill_ranks_on(const net::NetworkState& net, const Job& job,
                  const std::vector<std::string>& hosts);

// Writes the files, runs mpirun to completion (or timeout/cancel), splits the log per
// rank and kills whatever of this job is left in the hosts (orted, the program).
Result run_job(const net::NetworkState& net, const Job& job);

}  // namespace xdc::launch
