/* A trivial MPI program for the launcher's tests (not the worker): every rank writes
 * "rank R of N host H rtt_ms T" to stdout after a ping-pong with rank 0 over the data
 * network. argv[1] may be "die R" (rank R kills itself with SIGKILL after the ping-pong),
 * "hang" (every rank sleeps forever after it) or "ticks S" (every rank prints a line every
 * half second for S seconds, then ends: a long job that keeps making progress). */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char host[256];
  gethostname(host, sizeof host);
  char buf[8] = {0};
  double rtt = 0;
  if (rank == 0) {
    for (int p = 1; p < size; ++p) {
      MPI_Send(buf, 8, MPI_BYTE, p, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, 8, MPI_BYTE, p, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  } else {
    MPI_Recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    /* A second ping-pong on the open connection: one round trip. */
    MPI_Recv(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
  }
  if (rank == 0)
    for (int p = 1; p < size; ++p) {
      double t0 = MPI_Wtime();
      MPI_Send(buf, 8, MPI_BYTE, p, 1, MPI_COMM_WORLD);
      MPI_Recv(buf, 8, MPI_BYTE, p, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      printf("rank 0 rtt_to %d ms %.3f\n", p, (MPI_Wtime() - t0) * 1e3);
    }
  printf("rank %d of %d host %s\n", rank, size, host);
  fflush(stdout);
  if (argc > 2 && strcmp(argv[1], "die") == 0 && atoi(argv[2]) == rank) raise(SIGKILL);
  if (argc > 1 && strcmp(argv[1], "hang") == 0)
    for (;;) pause();
  if (argc > 2 && strcmp(argv[1], "ticks") == 0)
    for (int i = 0; i < 2 * atoi(argv[2]); ++i) {
      usleep(500000);
      printf("rank %d tick %d\n", rank, i);
      fflush(stdout);
    }
  if (argc > 1) MPI_Barrier(MPI_COMM_WORLD); /* the others wait for the dead one */
  MPI_Finalize();
  (void)rtt;
  return 0;
}
