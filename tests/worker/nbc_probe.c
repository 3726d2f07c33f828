/* The workers' all-reduce call alone, for tests/worker/libnbc_copy_test.cpp: every rank
 * calls MPI_Iallreduce in place on argv[1] MiB of floats (as xdc-worker's comm thread
 * does), once to warm OpenMPI up and once measured, and prints
 * "rank R of N faults F": the minor page faults of the measured call. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static void allreduce(float* buf, long count) {
  MPI_Request q;
  MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long bytes = (argc > 1 ? atol(argv[1]) : 64) << 20;
  float* buf = malloc((size_t)bytes);
  memset(buf, 0, (size_t)bytes); /* the worker's gradients: touched */
  allreduce(buf, bytes / 4);
  MPI_Barrier(MPI_COMM_WORLD);
  struct rusage a, b;
  getrusage(RUSAGE_SELF, &a);
  allreduce(buf, bytes / 4);
  getrusage(RUSAGE_SELF, &b);
  printf("rank %d of %d faults %ld\n", rank, size, b.ru_minflt - a.ru_minflt);
  fflush(stdout);
  free(buf);
  MPI_Finalize();
  return 0;
}
