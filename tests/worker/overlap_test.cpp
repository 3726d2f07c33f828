// Communication overlaps computation, on loopback.
//
// Probe: 2 ranks, forward only, 2 microbatches; rank 0 holds stages 0 and 2, rank 1
// stage 1. rank 0 computes 150 ms per forward and sends 4 MiB activations (stage 0's);
// rank 1 receives microbatch 0, then computes 300 ms. rank 0 sends microbatch 1 at
// ~300 ms, while rank 1 computes, and rank 1 reaches RECV_F of microbatch 1 at ~450 ms.
// The 150 ms keep microbatch 1's rendezvous apart from microbatch 0's transfer: were it
// to arrive while rank 1 still waits in MPI for microbatch 0 (a slow transfer on a busy
// machine), that wait would answer it and the counterfactual below would not hold.
// Stage 1 sends 1 KiB back to rank 0's stage 2, which paces rank 0 to rank 1. 4 MiB is
// far above OpenMPI's 64 KiB eager limit: the transfer needs rank 1's MPI to answer the
// rendezvous while its compute thread is busy (the receive was posted before).
//
// On loopback the transfer itself takes ~1 ms, so "the wait at RECV is < 10% of the
// standalone transfer" alone would be a weak test. The probe runs twice:
//  - progress "none": MPI progresses only inside the executor's waits or while an Isend
//    is pending (comm.h), so a computing receiver stalls a rendezvous. Then rank 0's
//    Isend completes only after rank 1 reached the RECV (the counterfactual, showing the
//    probe detects missing progress), and rank 1's wait at the RECV is the standalone
//    transfer time (rendezvous and 4 MiB, both sides polling in MPI: rank 0 is waiting
//    for stage 1's output meanwhile);
//  - progress "thread" (the default): rank 1's wait at the RECV must be < 10% of that
//    standalone time, and rank 0's Isend must have completed before rank 1 reached the
//    RECV, i.e. the transfer happened during the 300 ms compute.
// Both ranks share one clock here; the launcher's tests repeat this across the WAN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "tests/worker/mpirun.h"

namespace xdc::worker::test {
namespace {

using sched::Kind;

sched::Schedule probe_schedule() {
  sched::Schedule s;
  s.name = "overlap-probe";
  s.ranks = 2;
  s.stages = 3;
  s.microbatches = 2;
  s.stage_rank = {0, 1, 0};
  s.actions = {{{Kind::F, 0, 0, -1},
                {Kind::SEND_F, 0, 0, 1},
                {Kind::F, 0, 1, -1},
                {Kind::SEND_F, 0, 1, 1},
                {Kind::RECV_F, 2, 0, 1},
                {Kind::F, 2, 0, -1},
                {Kind::RECV_F, 2, 1, 1},
                {Kind::F, 2, 1, -1}},
               {{Kind::RECV_F, 1, 0, 0},
                {Kind::F, 1, 0, -1},
                {Kind::SEND_F, 1, 0, 0},
                {Kind::RECV_F, 1, 1, 0},
                {Kind::F, 1, 1, -1},
                {Kind::SEND_F, 1, 1, 0}}};
  return s;
}

constexpr int64_t kCompute = 300'000'000;
constexpr int kIterations = 2;

struct Probe {
  // Per measured iteration, microbatch 1: rank 0's SEND post and completion, rank 1's
  // RECV wait.
  std::vector<int64_t> send_start, send_end, recv_start, recv_end;
};

Probe run_probe(const std::string& progress) {
  RunSpec spec;
  spec.run_dir = temp_run_dir("overlap-" + progress);
  spec.pipeline_ranks = 2;
  spec.microbatches = 2;
  spec.iterations = kIterations;
  spec.warmup = 1;  // TCP connections open on first use
  spec.compute = "modeled";
  spec.progress = progress;
  spec.timeout_s = 60;
  spec.modeled.f_ns = {150'000'000, kCompute, 1'000'000};
  spec.modeled.b_ns = {0, 0, 0};
  spec.modeled.w_ns = {0, 0, 0};
  spec.modeled.activation_bytes = {4 << 20, 1 << 10, 0};
  const MpiRun run = run_worker(spec, probe_schedule());
  EXPECT_EQ(run.exit_code, 0) << run.err;
  Probe p;
  for (const auto& e : read_trace(spec.run_dir, 0).events) {
    if (e.kind != Kind::SEND_F || e.stage != 0 || e.microbatch != 1) continue;
    EXPECT_EQ(e.bytes, 4 << 20);
    p.send_start.push_back(e.start_ns);
    p.send_end.push_back(e.end_ns);
  }
  for (const auto& e : read_trace(spec.run_dir, 1).events) {
    if (e.kind != Kind::RECV_F || e.microbatch != 1) continue;
    p.recv_start.push_back(e.start_ns);
    p.recv_end.push_back(e.end_ns);
  }
  EXPECT_EQ(p.send_end.size(), size_t(kIterations));
  EXPECT_EQ(p.recv_end.size(), size_t(kIterations));
  return p;
}

TEST(WorkerOverlap, FourMiBTransferHidesBehindThreeHundredMsCompute) {
  const Probe none = run_probe("none");
  const Probe thread = run_probe("thread");
  ASSERT_EQ(none.recv_end.size(), size_t(kIterations));
  ASSERT_EQ(none.send_end.size(), size_t(kIterations));
  ASSERT_EQ(thread.recv_end.size(), size_t(kIterations));
  ASSERT_EQ(thread.send_end.size(), size_t(kIterations));
  std::vector<int64_t> standalone;
  for (int k = 0; k < kIterations; ++k) standalone.push_back(none.recv_end[k] - none.recv_start[k]);
  std::sort(standalone.begin(), standalone.end());
  const int64_t standalone_ns = standalone.front();  // the shortest: the strictest bound
  std::printf("standalone 4 MiB transfer (shortest RECV wait without progress): %.3f ms\n",
              standalone_ns / 1e6);
  for (int k = 0; k < kIterations; ++k) {
    const int64_t wait = thread.recv_end[k] - thread.recv_start[k];
    std::printf(
        "iteration %d: without progress: Isend done %+.1f ms after rank 1 reached RECV, "
        "RECV wait %.3f ms | comm thread: Isend done %.1f ms before rank 1 reached RECV "
        "(%.2f ms after post), RECV wait %.4f ms\n",
        k, (none.send_end[k] - none.recv_start[k]) / 1e6,
        (none.recv_end[k] - none.recv_start[k]) / 1e6,
        (thread.recv_start[k] - thread.send_end[k]) / 1e6,
        (thread.send_end[k] - thread.send_start[k]) / 1e6, wait / 1e6);
    // The counterfactual: without progress the message waits for rank 1's RECV.
    EXPECT_GT(none.send_end[k], none.recv_start[k]) << "iteration " << k;
    // With the comm thread it crossed during the compute, and the RECV found it there.
    EXPECT_LT(thread.send_end[k], thread.recv_start[k]) << "iteration " << k;
  }
}

}  // namespace
}  // namespace xdc::worker::test
