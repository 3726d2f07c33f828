#pragma once
// Runs xdc-worker under mpirun on loopback (no namespaces: the launcher and network
// tests repeat these inside the emulated DCs) and reads back what the ranks wrote.
#include <string>
#include <vector>

#include "workloads/schedule/schedule.h"
#include "workloads/trace/trace.h"
#include "workloads/worker/run_spec.h"

namespace xdc::worker::test {

// A fresh directory under /tmp for one run.
std::string temp_run_dir(const std::string& name);

// Writes `s` as <run_dir>/schedule.csv, points spec.schedule_csv at it, writes
// <run_dir>/spec.json, runs mpirun -np world_size xdc-worker --spec ... to completion.
struct MpiRun {
  int exit_code = -1;
  std::string out, err;
  double seconds = 0;
};
MpiRun run_worker(RunSpec& spec, const sched::Schedule& s, int timeout_s = 120);

RankReport read_report(const std::string& run_dir, int world_rank);
trace::Trace read_trace(const std::string& run_dir, int world_rank);

// Events of measured iteration `i` of ranks [first, first + count), from each rank's own
// iteration window, ranks renumbered from 0 (one replica's pipeline for analyze()).
trace::Trace iteration_trace(const std::string& run_dir, int first, int count, int i,
                             int microbatches);

// The same training in one process (model::LocalModel, the default corpus, the spec's
// model, seed, microbatch size, learning rate and clipping): `microbatches` batches drawn
// per step (for a DP run, the replicas' microbatches in replica order); the loss of each
// of `steps` steps.
std::vector<double> reference_losses(const RunSpec& spec, int microbatches, int steps);

}  // namespace xdc::worker::test
