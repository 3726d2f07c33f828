#pragma once
// `workload:`: the experiment runs the user's own program instead of xdc-worker. The
// command (an argv, never a shell string) starts `per_host` times on each listed host,
// inside the host's namespace, with the environment its launcher expects:
//
//   workload:
//     command: [/usr/bin/python3, ddp.py, --steps, 20]   # argv; run in this file's directory
//     hosts: [east-h1, w1]          # hosts of the topology; rank order = host order
//     per_host: 1                   # processes per host (LOCAL_RANK 0..per_host-1)
//     launcher: torch               # torch | mpi
//     port: 29500                   # torch: MASTER_PORT
//     time_limit: 300s              # the run fails and every process is killed after it
//     env: {KEY: value}             # more environment for every process
//     warmup_steps: 1               # steps left out of the step-time statistics
//     predict: {allreduce: 2mib}    # optional: what a step communicates (below)
//
// torch: each process gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK,
// MASTER_ADDR (the first host's data address) and MASTER_PORT, GLOO_SOCKET_IFNAME and
// NCCL_SOCKET_IFNAME (the hosts' data interface), OMP_NUM_THREADS=1 (unless `env` sets
// it), XDC_HOST, and XDC_EVENTS and XDC_PROFILE (below). mpi: one mpirun job through
// xdc's launcher (harness/launch), the same XDC_* variables exported to every rank; the
// ranks learn their rank from MPI.
//
// Events: XDC_EVENTS is one JSON-lines file every process appends to (lines under 4 KiB
// are written whole with O_APPEND): {"t": seconds (CLOCK_REALTIME, e.g. time.time()),
// "rank": R, "name": "step", "phase": "begin" | "end", ...}; an end may carry "loss".
// XDC_PROFILE is a per-process path where the program may write a PyTorch profiler
// Chrome trace (rank<r>.profile.json in the results); xdc merges it when present.
//
// predict: the step the program reports as "step" events, described for the simulator:
// `allreduce` bytes all-reduced across the ranks per step (data parallelism); the
// compute per step is the measured step time of the run without the WAN's share: each
// rank's step outside its own "allreduce" events, or where it reports none, inside its
// "compute" events (begin/end around the part of a step that does not wait on the
// network); the slowest rank's, which the collective waits for.
// Without `predict:` nothing is predicted.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/input_error.h"

namespace xdc::run {

struct Workload {
  enum class Launcher { kTorch, kMpi };
  Launcher launcher = Launcher::kTorch;
  std::vector<std::string> command;
  std::string cwd;  // absolute: the experiment file's directory
  std::vector<std::string> hosts;
  int per_host = 1;
  int port = 29500;
  uint64_t time_limit_us = 600'000'000;
  std::vector<std::pair<std::string, std::string>> env;
  int warmup_steps = 1;
  int64_t allreduce_bytes = 0;  // predict.allreduce; 0: no prediction
  SourcePos pos;                // the block, for errors found at run time

  int world_size() const { return static_cast<int>(hosts.size()) * per_host; }
  // World rank -> host: per_host consecutive ranks on each host, in `hosts` order.
  std::vector<std::string> rank_hosts() const;
  std::string launcher_name() const { return launcher == Launcher::kTorch ? "torch" : "mpi"; }
};

}  // namespace xdc::run
