#pragma once
// What `xdc run --lab` needs of the lab's machines while a job runs: where the ranks read
// their spec and write their files (RunFiles), a watch that stops the job when a machine
// is lost (MachineWatch), and environment.json's record of the placement.
#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "harness/lab/lab.h"
#include "harness/network/state.h"
#include "harness/process/process.h"

namespace xdc::lab {

// The lab's machines that hold hosts of `state` (a lab network's merged record).
std::vector<const Machine*> machines_holding_hosts(const Lab& lab, const net::NetworkState& state);

// Where a lab run's ranks read their spec and write their files. When every machine holding
// hosts sees the results directory (a shared filesystem: a marker file written here is
// looked for over ssh), the directory itself. Otherwise (Vagrant's rsync'ed /vagrant) a
// directory per schedule under the network's state on each machine (so `xdc down`/`clean`
// there remove it): the spec and schedule pushed before the job, every file fetched back
// (tar over ssh) after it, the remote copy removed.
class RunFiles {
 public:
  RunFiles(const Lab& lab, const net::NetworkState& state, const std::filesystem::path& root);
  bool shared() const { return shared_; }
  // The machines' directory for the schedule whose results go to `local`.
  std::string dir(const std::filesystem::path& local) const;
  // Before the job: the spec and schedule to every machine.
  void push(const std::filesystem::path& local) const;
  // After the job: every machine's files into `local`, the machine's copy removed; "" or
  // which machines' files could not be fetched.
  std::string fetch(const std::filesystem::path& local) const;

 private:
  std::string net_;
  std::vector<const Machine*> machines_;
  bool shared_ = true;
};

// While a lab job runs, every machine that holds hosts is pinged (its ssh address) once a
// second; one that misses 5 in a row and then does not answer over ssh is lost, and the job
// is stopped at once: a machine that vanished sends no FIN, so mpirun would wait for TCP to
// give up on its daemon, the workers for their timeout_s. After a failed job, lost() also
// asks every machine over ssh (one may have gone between two pings).
class MachineWatch {
 public:
  MachineWatch(const Lab& lab, const net::NetworkState& state, const std::atomic<bool>* cancel);
  ~MachineWatch();
  MachineWatch(const MachineWatch&) = delete;
  MachineWatch& operator=(const MachineWatch&) = delete;
  // What the job polls: set on SIGINT (the run's cancel) or when a machine is lost.
  const std::atomic<bool>* stop_flag() const { return &stop_; }
  // "" or "lab machine(s) NAME lost (...)"; call once the job is over.
  std::string lost();

 private:
  void watch();
  std::vector<const Machine*> machines_;
  const std::atomic<bool>* cancel_;
  std::atomic<bool> stop_{false}, done_{false};
  std::string lost_;  // written by the thread before it ends, read after the join
  std::thread thread_;
};

// environment.json's "lab": per machine its DCs, hosts and ranks; and one line for the
// report ("placement").
nlohmann::json placement_json(const Lab& lab, const net::NetworkState& state,
                              const std::vector<std::string>& rank_hosts);

}  // namespace xdc::lab
