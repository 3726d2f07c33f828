// A run that cannot finish must end, not hang, and keep what it finished.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/worker/mpirun.h"
#include "workloads/schedule/generators.h"

namespace xdc::worker::test {
namespace {

using sched::Kind;

RunSpec modeled_spec(const std::string& name, int P, int m) {
  RunSpec spec;
  spec.run_dir = temp_run_dir(name);
  spec.pipeline_ranks = P;
  spec.microbatches = m;
  spec.compute = "modeled";
  spec.timeout_s = 30;
  spec.modeled.f_ns.assign(P, 5'000'000);
  spec.modeled.b_ns.assign(P, 5'000'000);
  spec.modeled.w_ns.assign(P, 5'000'000);
  spec.modeled.activation_bytes.assign(P, 64 << 10);
  for (int r = 0; r < P; ++r) spec.rank_hosts.push_back("h" + std::to_string(r));
  return spec;
}

// debug_exit_rank / debug_exit_after_iteration (run_spec.h): the rank exits with code 3
// without MPI_Finalize, as a crash would; mpirun then ends the job.
TEST(WorkerFailure, KilledRankEndsTheRunAndOthersKeepTheirTraces) {
  const int P = 4, m = 4, done = 2;
  RunSpec spec = modeled_spec("killed", P, m);
  spec.iterations = 8;
  spec.debug_exit_rank = 2;
  spec.debug_exit_after_iteration = done;
  sched::Params p;
  p.ranks = P;
  p.microbatches = m;
  const MpiRun run = run_worker(spec, sched::generate("1f1b", p));
  std::printf("mpirun exit %d after %.1f s\n", run.exit_code, run.seconds);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.exit_code, -1) << "killed after run_worker's timeout: the run hung";
  // The others were ended by mpirun, not by their own receive timeout (timeout_s, 30 s).
  EXPECT_EQ(run.err.find("(timeout_s)"), std::string::npos)
      << "the others waited for the dead rank:\n"
      << run.err;
  EXPECT_NE(run.err.find("rank 2 (host h2)"), std::string::npos) << run.err;
  // mpirun kills the others as soon as rank 2 is gone: a rank still finishing iteration
  // `done` (rank 0 ends 1F1B last) loses that one; what each finished is on disk.
  for (int r = 0; r < P; ++r) {
    const RankReport rep = read_report(spec.run_dir, r);
    EXPECT_GE(rep.iterations_done, r == 2 ? done : done - 1) << "rank " << r;
    EXPECT_FALSE(rep.complete) << "rank " << r;
    int forwards = 0;
    for (const auto& e : read_trace(spec.run_dir, r).events) forwards += e.kind == Kind::F;
    EXPECT_GE(forwards, rep.iterations_done * m) << "rank " << r;
    std::printf("rank %d: %d iterations on disk, %d forwards traced\n", r, rep.iterations_done,
                forwards);
  }
}

// A receive that never completes aborts the run after timeout_s, naming the action, the
// peer and its host.
TEST(WorkerFailure, ReceiveTimeoutAbortsNamingActionAndPeer) {
  RunSpec spec = modeled_spec("timeout", 2, 1);
  spec.timeout_s = 2;
  spec.iterations = 1;
  sched::Schedule s;  // rank 0 never sends what rank 1 waits for
  s.name = "missing-send";
  s.ranks = 2;
  s.stages = 2;
  s.microbatches = 1;
  s.stage_rank = {0, 1};
  s.actions = {{{Kind::F, 0, 0, -1}}, {{Kind::RECV_F, 1, 0, 0}, {Kind::F, 1, 0, -1}}};
  const MpiRun run = run_worker(spec, s);
  std::printf("mpirun exit %d after %.1f s\n", run.exit_code, run.seconds);
  EXPECT_EQ(run.exit_code, 1);  // -1: killed after run_worker's timeout, the run hung
  EXPECT_NE(run.err.find("waited 2 s (timeout_s)"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("rank 1 (host h1)"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("RECV_F stage 1 microbatch 0"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("for rank 0 (host h0)"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace xdc::worker::test
