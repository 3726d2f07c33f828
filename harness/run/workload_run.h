#pragma once
// `xdc run` of an experiment with `workload:` (experiment/workload.h): the user's program
// on the emulated hosts, the WAN recorded under it.
//
// The network comes up (or --network is borrowed); a sampler thread reads every WAN
// direction's counters every 10 ms (bytes and packets off the gateway's egress interface,
// drops and queue depth from the shaper); the program starts on every host: torch, one
// process per rank through `xdc exec` with torch.distributed's environment; mpi, one
// mpirun job through the launcher (harness/launch). The first process that exits
// non-zero ends the run: the others are stopped (SIGTERM, then SIGKILL) and the run fails
// naming its host, rank and exit code; so does the time limit. Every process the program
// started (found by the XDC_EVENTS value in its environment) is killed on the way out,
// and the network this run built is torn down on every way out.
//
// Results directory (default results/<UTC date>-<name>/): experiment.yaml, topology.yaml,
// environment.json, events.jsonl (the program's), processes.json (per rank: host,
// local rank, exit code, seconds, stopped by xdc), rank<r>.stdout / rank<r>.stderr
// (torch) or mpirun.log and rank<r>.log (mpi), rank<r>.profile.json where the program
// wrote one, wan.csv, steps.csv, trace.json (Perfetto), summary.json (summary_schema.h,
// kind "workload"); with a prediction, predicted.yaml (the modeled experiment, which
// `xdc simulate` predicts alone) and simulated.trace.json.
#include "harness/experiment/experiment.h"
#include "harness/run/runner.h"

namespace xdc::run {

RunOutcome run_workload(const Experiment& e, const RunOptions& opts);

}  // namespace xdc::run
