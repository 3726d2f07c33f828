// xdc-worker --spec PATH: one MPI rank of an xdc run (worker.h).
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "workloads/worker/worker.h"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  std::string spec;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--spec") == 0 && i + 1 < argc) spec = argv[++i];
  }
  if (spec.empty()) {
    std::fprintf(stderr, "usage: xdc-worker --spec RUN_SPEC.json\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
    return 2;
  }
  xdc::worker::run_worker(spec, provided);
  MPI_Finalize();
  return 0;
}
