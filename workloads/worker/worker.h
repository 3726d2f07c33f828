#pragma once
// One rank of `xdc-worker --spec PATH`: reads the RunSpec (run_spec.h), builds its
// stages, measures clock offsets to world rank 0, runs warmup + measured iterations of
// its action list through the Executor, and writes rank<r>.trace.csv and rank<r>.json
// into run_dir (both rewritten after every measured iteration, so a run that dies keeps
// what finished). Errors and timeouts print "xdc-worker: rank R (host H): ..." to stderr
// and MPI_Abort the job with code 1; a spec it cannot read (InputError, "PATH:LINE:COL:
// ...") with code 2, as the CLI exits on bad input.
#include <string>

namespace xdc::worker {

// Between MPI_Init_thread and MPI_Finalize; returns normally only on success.
void run_worker(const std::string& spec_path, int mpi_thread_level);

}  // namespace xdc::worker
