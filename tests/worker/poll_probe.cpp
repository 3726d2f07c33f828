// Two ranks under mpirun on loopback, each with the workers' comm thread (comm.h): rank 0
// sends rank 1 a 256 KiB message (OpenMPI's put protocol: a request, rank 1's answer, the
// data) `delay` after both left a barrier; rank 1 has posted its receive at once and then
// either computes (sleeps, its comm thread backing off) for 30 ms before it waits, or waits
// at once. Per trial, rank 0 prints "send TRIAL MODE SUBMIT_NS COMPLETE_NS" and rank 1
// "recv TRIAL MODE POSTED_NS" (one steady clock: one host). Args: TRIALS [POLL_US [BYTES
// [TIMER_SLACK_NS]]].
#include <mpi.h>
#include <sys/prctl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "workloads/worker/comm.h"

using namespace xdc::worker;

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int trials = argc > 1 ? std::atoi(argv[1]) : 40;
  const int poll_us = argc > 2 ? std::atoi(argv[2]) : 100;              // the comm thread's period
  std::vector<char> buf(argc > 3 ? std::atoi(argv[3]) : 256 << 10, 1);  // the message
  // The threads' timer slack (the kernel's default 50 us stretches each poll's sleep).
  if (argc > 4) prctl(PR_SET_TIMERSLACK, std::strtoul(argv[4], nullptr, 10), 0, 0, 0);
  const auto far = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  {
    Comm comm(Progress::kThread, poll_us);
    for (int t = 0; t < trials; ++t) {
      const bool computing = t % 2 == 0;
      // Delays from 0.2 to 9.8 ms: across the doubling schedule and the capped period.
      const auto delay = std::chrono::microseconds(200 + (t * 7919) % 9600);
      Comm::Request* b = comm.ibarrier(MPI_COMM_WORLD);
      comm.wait(b, far);
      comm.release(b);
      if (rank == 0) {
        std::this_thread::sleep_for(delay);
        Comm::Request* s =
            comm.isend(buf.data(), static_cast<int64_t>(buf.size()), 1, t, MPI_COMM_WORLD);
        comm.wait(s, far);
        std::printf("send %d %s %lld %lld\n", t, computing ? "computing" : "waiting",
                    static_cast<long long>(s->submit_ns), static_cast<long long>(s->complete_ns));
        comm.release(s);
      } else {
        Comm::Request* r =
            comm.irecv(buf.data(), static_cast<int64_t>(buf.size()), 0, t, MPI_COMM_WORLD);
        std::printf("recv %d %s %lld\n", t, computing ? "computing" : "waiting",
                    static_cast<long long>(r->submit_ns));
        if (computing) std::this_thread::sleep_for(std::chrono::milliseconds(30));
        comm.wait(r, far);
        comm.release(r);
      }
      std::fflush(stdout);
    }
    Comm::Request* b = comm.ibarrier(MPI_COMM_WORLD);
    comm.wait(b, far);
    comm.release(b);
  }
  MPI_Finalize();
  return 0;
}
