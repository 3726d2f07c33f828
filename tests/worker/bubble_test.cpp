// Modeled 1F1B, p = 4, m = 8, zero added delay: the measured bubble is the schedule's
// (p-1)/(m+p-1) = 27.3% within 3 points (acceptance 4 of issue 5), measured with the
// one trace analysis (harness/trace/analysis.h, the Zero Bubble definition, which is
// the one this formula is for).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "harness/trace/analysis.h"
#include "tests/worker/mpirun.h"
#include "workloads/schedule/generators.h"

namespace xdc::worker::test {
namespace {

TEST(WorkerBubble, OneFOneBModeledMatchesTheFormula) {
  const int P = 4, m = 8, iters = 3;
  RunSpec spec;
  spec.run_dir = temp_run_dir("bubble");
  spec.pipeline_ranks = P;
  spec.microbatches = m;
  spec.iterations = iters;
  spec.warmup = 1;
  spec.compute = "modeled";
  spec.timeout_s = 60;
  // 20 ms per action against ~1 ms per message hop on a loaded 2-core loopback.
  spec.modeled.f_ns.assign(P, 20'000'000);
  spec.modeled.b_ns.assign(P, 20'000'000);
  spec.modeled.w_ns.assign(P, 20'000'000);
  spec.modeled.activation_bytes.assign(P, 16 << 10);
  sched::Params p;
  p.ranks = P;
  p.microbatches = m;
  const MpiRun run = run_worker(spec, sched::generate("1f1b", p));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const double expect = double(P - 1) / (m + P - 1);
  // The median iteration: a shared 2-core machine stalls every process now and then
  // (seen: all ranks idle 50 ms at once while others compiled); that is the machine,
  // not the schedule.
  std::vector<double> bubbles;
  for (int i = 0; i < iters; ++i) {
    const trace::Summary s = trace::analyze(iteration_trace(spec.run_dir, 0, P, i, m));
    std::printf(
        "iteration %d: %.1f ms (ideal %.1f), bubble zerobubble %.2f%% (formula %.2f%%), "
        "megatron %.2f%%, crosspipe %.2f%%\n",
        i, s.iteration_ns / 1e6, (m + P - 1) * 60.0, 100 * s.bubble.zerobubble, 100 * expect,
        100 * s.bubble.megatron, 100 * s.bubble.crosspipe);
    bubbles.push_back(s.bubble.zerobubble);
  }
  std::sort(bubbles.begin(), bubbles.end());
  EXPECT_NEAR(bubbles[iters / 2], expect, 0.03) << "median iteration";
  const RankReport r0 = read_report(spec.run_dir, 0);
  std::printf("rank 0 waits: %s\n", r0.waits.dump().c_str());
}

}  // namespace
}  // namespace xdc::worker::test
