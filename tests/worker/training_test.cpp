// Real compute through xdc-worker: pipelining and data parallelism must not change the
// maths. The reference is LocalModel (workloads/model/local_model.h): the same model
// uncut in one process, the same batches from the same BatchLoader stream, gradient
// accumulation over the same microbatches, the same global-norm clipping and AdamW.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>

#include "tests/worker/mpirun.h"
#include "workloads/model/data.h"
#include "workloads/model/local_model.h"
#include "workloads/schedule/generators.h"

namespace xdc::worker::test {
namespace {

// 4 layers so that 4 stages hold one each; small enough for 2 cores.
nlohmann::json tiny_model() {
  return {{"preset", "tiny"}, {"layers", 4}, {"dim", 64}, {"heads", 4},
          {"kv_heads", 2},    {"ffn", 172},  {"seq", 32}};
}

RunSpec real_spec(const std::string& name, int P, int D, int m, int iterations) {
  RunSpec s;
  s.run_dir = temp_run_dir(name);
  s.pipeline_ranks = P;
  s.data_parallel = D;
  s.microbatches = m;
  s.microbatch_size = 2;
  s.iterations = iterations;
  s.warmup = 0;
  s.seed = 7;
  s.compute = "real";
  s.model = tiny_model();
  s.learning_rate = 3e-3;
  s.timeout_s = 60;
  return s;
}

TEST(WorkerTraining, OneFOneBFourStagesMatchesSingleProcess) {
  const int P = 4, m = 8, iters = 20;
  RunSpec spec = real_spec("1f1b-real", P, 1, m, iters);
  sched::Params p;
  p.ranks = P;
  p.microbatches = m;
  const MpiRun run = run_worker(spec, sched::generate("1f1b", p));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const RankReport last = read_report(spec.run_dir, P - 1);
  ASSERT_EQ(last.loss.size(), size_t(iters));
  const std::vector<double> ref = reference_losses(spec, m, iters);
  double max_diff = 0;
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(last.loss[i], ref[i], 1e-5) << "iteration " << i;
    max_diff = std::max(max_diff, std::abs(last.loss[i] - ref[i]));
  }
  std::printf(
      "1F1B p=4 m=8 real, %.1f s: loss %.5f -> %.5f (reference %.5f -> %.5f), max "
      "|diff| over the first 5 iterations %.2e\n",
      run.seconds, last.loss.front(), last.loss.back(), ref.front(), ref.back(), max_diff);
  for (int i = 0; i < iters; ++i)
    std::printf("  iteration %2d loss %.6f reference %.6f\n", i, last.loss[i], ref[i]);
  EXPECT_LT(last.loss.back(), last.loss.front() - 0.5) << "loss does not fall";
  // Only the last stage reports a loss; every rank reports its parameters each step.
  EXPECT_TRUE(read_report(spec.run_dir, 0).loss.empty());
  EXPECT_EQ(read_report(spec.run_dir, 0).param_checksums.size(), size_t(iters));
  EXPECT_TRUE(last.complete);
}

// One rank holding the whole model is the single-process reference a launcher can run
// anywhere (mpirun -np 1, no network) to check a pipelined run against.
TEST(WorkerTraining, OneRankIsTheSingleProcessReference) {
  const int m = 4, iters = 3;
  RunSpec spec = real_spec("one-rank", 1, 1, m, iters);
  sched::Params p;
  p.ranks = 1;
  p.microbatches = m;
  const MpiRun run = run_worker(spec, sched::generate("1f1b", p));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const RankReport r = read_report(spec.run_dir, 0);
  const std::vector<double> ref = reference_losses(spec, m, iters);
  ASSERT_EQ(r.loss.size(), size_t(iters));
  for (int i = 0; i < iters; ++i) EXPECT_NEAR(r.loss[i], ref[i], 1e-6) << "iteration " << i;
}

// Several stages per rank (consecutive stages on one rank hand over in memory), the
// zero-bubble B / W split and co-executed pairs (run in turn by real compute): interleaved
// 1F1B, ZB-V and DHelix's folded schedule on 2 ranks x 2 chunks.
TEST(WorkerTraining, MultiStageRanksMatchSingleProcess) {
  for (const std::string name : {"interleaved", "zbv", "dhelix"}) {
    const int P = 2, m = 4, iters = 3;
    RunSpec spec = real_spec(name + "-real", P, 1, m, iters);
    sched::Params p;
    p.ranks = P;
    p.microbatches = m;
    p.chunks = 2;
    const sched::Schedule s = sched::generate(name, p);
    ASSERT_EQ(s.stages, 4);
    const MpiRun run = run_worker(spec, s);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const int last_rank = s.stage_rank.back();
    const RankReport last = read_report(spec.run_dir, last_rank);
    ASSERT_EQ(last.loss.size(), size_t(iters)) << name;
    EXPECT_EQ(read_report(spec.run_dir, last_rank).stages.size(), 2u);
    const std::vector<double> ref = reference_losses(spec, m, iters);
    for (int i = 0; i < iters; ++i) {
      EXPECT_NEAR(last.loss[i], ref[i], 1e-5) << name << " iteration " << i;
      std::printf("%s (stages on ranks %d %d %d %d) iteration %d: loss %.6f reference %.6f\n",
                  name.c_str(), s.stage_rank[0], s.stage_rank[1], s.stage_rank[2], s.stage_rank[3],
                  i, last.loss[i], ref[i]);
    }
  }
}

// 1F1B (one stage per rank) and ZB-V (two stages per rank: stage 1's allreduce starts
// while the rank still computes stage 2's weight gradients).
TEST(WorkerTraining, DataParallelReplicasStayIdentical) {
  for (const std::string name : {"1f1b", "zbv"}) {
    const int P = 2, D = 2, m = 4, iters = 3;
    RunSpec spec = real_spec("dp-real-" + name, P, D, m, iters);
    spec.model["layers"] = name == "zbv" ? 4 : 2;
    sched::Params p;
    p.ranks = P;
    p.microbatches = m;
    const sched::Schedule s = sched::generate(name, p);
    const MpiRun run = run_worker(spec, s);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    for (int pr = 0; pr < P; ++pr) {
      const RankReport a = read_report(spec.run_dir, pr), b = read_report(spec.run_dir, P + pr);
      ASSERT_EQ(a.param_checksums.size(), size_t(iters));
      EXPECT_EQ(a.param_checksums, b.param_checksums) << name << " pipeline rank " << pr;
      EXPECT_EQ(a.replica, 0);
      EXPECT_EQ(b.replica, 1);
    }
    // Different shards: the replicas' losses differ; together they are one batch of
    // D*m microbatches, so their mean is the single-process loss over that batch.
    const int last = s.stage_rank.back();
    const RankReport r0 = read_report(spec.run_dir, last), r1 = read_report(spec.run_dir, P + last);
    const std::vector<double> ref = reference_losses(spec, D * m, iters);
    for (int i = 0; i < iters; ++i) {
      EXPECT_NE(r0.loss[i], r1.loss[i]);
      EXPECT_NEAR((r0.loss[i] + r1.loss[i]) / 2, ref[i], 1e-5) << name << " iteration " << i;
      std::printf(
          "%s DP 2 x PP 2 iteration %d: replica losses %.6f %.6f, mean %.6f, single "
          "process over 8 microbatches %.6f, checksum %s\n",
          name.c_str(), i, r0.loss[i], r1.loss[i], (r0.loss[i] + r1.loss[i]) / 2, ref[i],
          r0.param_checksums[i].c_str());
    }
    // The allreduce shows in the trace, one per stage per iteration, with its bytes.
    int allreduces = 0;
    for (const auto& e : read_trace(spec.run_dir, 0).events)
      if (e.kind == sched::Kind::ALLREDUCE && e.bytes > 0) ++allreduces;
    EXPECT_EQ(allreduces, iters * s.chunks()) << name;
  }
}

// Tensor parallelism (run_spec.h's layout, world rank = pipeline rank * T + TP index): TP 2
// and TP 4 ranks per stage of a 2-stage 1F1B train as the single process does, every TP
// rank of the last stage reporting the same loss, with 2 + 2 TP all-reduces per layer and
// microbatch traced on each rank.
TEST(WorkerTraining, TensorParallelMatchesSingleProcess) {
  for (const int T : {2, 4}) {
    const int P = 2, m = 4, iters = 3;
    RunSpec spec = real_spec("tp-real-" + std::to_string(T), P, 1, m, iters);
    spec.tensor_parallel = T;
    spec.model["kv_heads"] = 4;
    sched::Params p;
    p.ranks = P;
    p.microbatches = m;
    const MpiRun run = run_worker(spec, sched::generate("1f1b", p));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const std::vector<double> ref = reference_losses(spec, m, iters);
    for (int t = 0; t < T; ++t) {
      const RankReport r = read_report(spec.run_dir, (P - 1) * T + t);
      EXPECT_EQ(r.tp_index, t);
      ASSERT_EQ(r.loss.size(), size_t(iters));
      for (int i = 0; i < iters; ++i)
        EXPECT_NEAR(r.loss[i], ref[i], 1e-5) << "TP " << T << " rank " << t << " iteration " << i;
      int records = 0;
      for (const auto& e : read_trace(spec.run_dir, t).events)
        if (e.kind == sched::Kind::TP_ALLREDUCE) ++records;
      EXPECT_EQ(records, iters * m * (2 + 2) * 2) << "TP " << T;  // 2 layers per stage
    }
    std::printf("TP %d x PP 2: loss %.6f -> %.6f, single process %.6f -> %.6f\n", T,
                read_report(spec.run_dir, (P - 1) * T).loss.front(),
                read_report(spec.run_dir, (P - 1) * T).loss.back(), ref.front(), ref.back());
  }
}

TEST(WorkerTraining, DataParallelRunsModeled) {
  const int P = 2, D = 2, m = 4;
  RunSpec spec = real_spec("dp-modeled", P, D, m, 2);
  spec.compute = "modeled";
  spec.warmup = 1;
  spec.modeled.f_ns = {2'000'000, 2'000'000};
  spec.modeled.b_ns = {2'000'000, 2'000'000};
  spec.modeled.w_ns = {2'000'000, 2'000'000};
  spec.modeled.activation_bytes = {1 << 19, 1 << 19};
  spec.modeled.grad_bytes = {4 << 20, 4 << 20};
  sched::Params p;
  p.ranks = P;
  p.microbatches = m;
  const MpiRun run = run_worker(spec, sched::generate("zbh1", p));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (int r = 0; r < P * D; ++r) {
    const RankReport rep = read_report(spec.run_dir, r);
    EXPECT_TRUE(rep.complete);
    EXPECT_EQ(rep.compute, "modeled");
    int64_t sent = 0, reduced = 0;
    for (const auto& e : read_trace(spec.run_dir, r).events) {
      if (e.kind == sched::Kind::SEND_F || e.kind == sched::Kind::SEND_B) sent += e.bytes;
      if (e.kind == sched::Kind::ALLREDUCE) reduced += e.bytes;
    }
    // m messages of 512 KiB per iteration each way, 2 measured iterations.
    EXPECT_EQ(sent, 2 * m * (1 << 19)) << "rank " << r;
    EXPECT_EQ(reduced, 2 * (4 << 20)) << "rank " << r;
  }
}

}  // namespace
}  // namespace xdc::worker::test
