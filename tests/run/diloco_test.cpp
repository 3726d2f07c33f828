// `xdc run` of DiLoCo (dp_sync diloco) end to end on real namespaces, real OpenMPI and the
// real xdc-worker with real compute: two replicas in two DCs train on their own between
// outer syncs (their weights differ) and leave every outer sync with identical weights;
// each sync is traced as OUTER_SYNC carrying the int8 payload's bytes of the model's
// parameters; summary.json states the syncs, the bytes per outer step beside the
// analytic count (the WAN's own byte counters within 5% of it, headers included) and the
// final evaluation loss; nothing is left behind. Also: eager updates, Streaming DiLoCo's
// fragments, a pipeline and tensor parallelism inside each replica (evaluated over its
// ranks), a DC lost mid-sync.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/text_file.h"
#include "tests/network/leftovers.h"
#include "workloads/model/config.h"
#include "workloads/model/payload.h"
#include "workloads/model/stage.h"
#include "workloads/trace/trace.h"

namespace fs = std::filesystem;
using xdc::testing::leftovers;
using xdc::testing::run_xdc;

namespace {

nlohmann::json read_json(const fs::path& f) {
  return nlohmann::json::parse(xdc::read_text_file_or_empty(f));
}

// `xdc run` of each (experiment, network name): its first schedule's summary (null where
// the run failed); each leaves nothing behind.
std::vector<nlohmann::json> run_each(const std::vector<std::pair<std::string, std::string>>& runs) {
  std::vector<nlohmann::json> out;
  for (const auto& [file, net] : runs) {
    const fs::path dir = fs::temp_directory_path() / ("xdc-run-test-" + net);
    fs::remove_all(dir);
    const auto r = run_xdc({"run", file, "-o", dir.string(), "--name", net}, 300);
    EXPECT_EQ(r.rc, 0) << file << ": " << r.out;
    out.push_back(r.rc == 0 ? read_json(dir / "summary.json")["schedules"][0] : nlohmann::json());
    EXPECT_EQ(leftovers(net), std::vector<std::string>{});
  }
  return out;
}

// The evaluation losses of two runs of the same training, which agree to 1e-3.
void expect_same_eval_loss(const std::vector<nlohmann::json>& s) {
  ASSERT_EQ(s.size(), 2u);
  for (const auto& one : s) ASSERT_TRUE(one.contains("eval_loss")) << one.dump();
  const double a = s[0]["eval_loss"].get<double>(), b = s[1]["eval_loss"].get<double>();
  EXPECT_LT(a, std::log(256.0));
  EXPECT_NEAR(a, b, 1e-3 * b);
}

}  // namespace

TEST(Diloco, ReplicasAgreeAfterEachOuterSyncAndDifferBetween) {
  const std::string net = "dilrt";
  const fs::path dir = fs::temp_directory_path() / "xdc-run-test-diloco";
  fs::remove_all(dir);
  auto r = run_xdc({"run", "tests/run/diloco-real.yaml", "-o", dir.string(), "--name", net}, 300);
  ASSERT_EQ(r.rc, 0) << r.out;
  // World rank = replica (one stage each); inner_steps 3: syncs after iterations 2 and 5.
  const auto rank0 = read_json(dir / "1f1b" / "rank0.json");
  const auto rank1 = read_json(dir / "1f1b" / "rank1.json");
  const auto a = rank0["param_checksums"].get<std::vector<std::string>>();
  const auto b = rank1["param_checksums"].get<std::vector<std::string>>();
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 6u);
  for (size_t i = 0; i < a.size(); ++i) {
    if ((i + 1) % 3 == 0)
      EXPECT_EQ(a[i], b[i]) << "iteration " << i << " ends with an outer sync";
    else
      EXPECT_NE(a[i], b[i]) << "iteration " << i << ": each replica on its own shard";
  }
  // The payload: every parameter of the model, int8 blocks of 1024 and a float scale.
  const auto cfg = xdc::model::ModelConfig::preset("tiny");
  int64_t params = 0;
  for (const auto& t : xdc::model::stage_tensors(cfg, {0, cfg.layers})) params += t.size;
  const int64_t payload = xdc::model::payload_bytes(xdc::model::Payload::kInt8, params);
  EXPECT_EQ(payload, (params + 1023) / 1024 * 1028);
  const auto trace =
      xdc::trace::from_csv(xdc::read_text_file_or_empty(dir / "1f1b" / "rank0.trace.csv"));
  int syncs = 0;
  for (const auto& ev : trace.events)
    if (ev.kind == xdc::sched::Kind::OUTER_SYNC) {
      ++syncs;
      EXPECT_EQ(ev.bytes, payload);
      EXPECT_GT(ev.end_ns, ev.start_ns);
    }
  EXPECT_EQ(syncs, 2);
  const auto s = read_json(dir / "summary.json")["schedules"][0];
  const auto d = s["dp_sync"];
  EXPECT_EQ(d["outer_syncs"], 2);
  EXPECT_EQ(d["payload_bytes_per_outer_step"], payload);
  EXPECT_EQ(d["payload_bytes_analytic"], payload);
  EXPECT_EQ(d["collective_bytes_per_outer_step"], 2 * payload);
  EXPECT_GT(d["sync_s_per_sync"].get<double>(), 0);
  // What the WAN's egresses sent during the job, per outer sync, is the all-reduce's two
  // messages with their TCP/IP headers, within 5% (ACKs, start-up and barriers beside).
  const double analytic = d["collective_wire_bytes_analytic"].get<double>();
  EXPECT_GT(analytic, 2.0 * payload);
  EXPECT_NEAR(d["wan_wire_bytes_per_outer_step"].get<double>() / analytic, 1.0, 0.05);
  EXPECT_EQ(s["wan_wire_bytes"]["total"].get<double>(),
            2 * d["wan_wire_bytes_per_outer_step"].get<double>());
  // Over the 20 ms WAN the all-reduce waits for at least one one-way trip.
  EXPECT_GT(d["stall_s_per_sync"].get<double>(), 0.02);
  // No gradient all-reduce: its records are empty.
  EXPECT_LT(s["waits_s_per_iteration"].value("ALLREDUCE", 0.0), 1e-3);
  // The final parameters were evaluated; training moved them off the uniform loss.
  ASSERT_TRUE(s.contains("eval_loss")) << s.dump();
  EXPECT_LT(s["eval_loss"].get<double>(), std::log(256.0));
  EXPECT_GT(s["simulated_iteration_s"].get<double>(), 0);
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
}

// Eager updates: the outer step is each replica's own at the sync's start, so the
// replicas differ after every iteration; the sync started after iteration 2 is waited for
// (and traced) in iteration 5, as the next starts; the one started then ends after the run.
TEST(Diloco, EagerStepsAtTheSyncsStartAndWaitsAsTheNextStarts) {
  const std::string net = "dilea";
  const fs::path dir = fs::temp_directory_path() / "xdc-run-test-diloco-eager";
  fs::remove_all(dir);
  auto r = run_xdc({"run", "tests/run/diloco-eager.yaml", "-o", dir.string(), "--name", net}, 300);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto rank0 = read_json(dir / "1f1b" / "rank0.json");
  const auto a = rank0["param_checksums"];
  const auto b = read_json(dir / "1f1b" / "rank1.json")["param_checksums"];
  ASSERT_EQ(a.size(), 7u);
  ASSERT_EQ(b.size(), 7u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NE(a[i], b[i]) << "iteration " << i;
  const auto trace =
      xdc::trace::from_csv(xdc::read_text_file_or_empty(dir / "1f1b" / "rank0.trace.csv"));
  std::vector<int64_t> at;
  for (const auto& ev : trace.events)
    if (ev.kind == xdc::sched::Kind::OUTER_SYNC) at.push_back(ev.start_ns);
  ASSERT_EQ(at.size(), 1u);
  const auto starts = rank0["iteration_start_ns"].get<std::vector<int64_t>>();
  ASSERT_EQ(starts.size(), 7u);
  EXPECT_GE(at[0], starts[5]);
  EXPECT_LT(at[0], starts[6]);
  const auto s = read_json(dir / "summary.json")["schedules"][0];
  EXPECT_EQ(s["dp_sync"]["eager"], true);
  EXPECT_EQ(s["dp_sync"]["outer_syncs"], 1);
  const std::string html = xdc::read_text_file_or_empty(dir / "report.html");
  EXPECT_NE(html.find("<td>diloco, eager</td>"), std::string::npos) << "the report's method";
  ASSERT_TRUE(s.contains("eval_loss")) << s.dump();
  EXPECT_LT(s["eval_loss"].get<double>(), std::log(256.0));
  EXPECT_GT(s["simulated_iteration_s"].get<double>(), 0);
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
}

// DiLoCo with a two-stage pipeline in each replica: the evaluation runs the validation
// batches through replica 0's two ranks, and agrees with the same training evaluated
// on one rank per replica (the layouts differ only in floating-point order).
TEST(Diloco, APipelineInsideEachReplicaIsEvaluatedOverItsRanks) {
  expect_same_eval_loss(run_each({{"tests/run/diloco-pipeline.yaml", "dilp2"},
                                  {"tests/run/diloco-pipeline-one.yaml", "dilp1"}}));
}

// DiLoCo with tensor parallelism: each TP rank's shard agrees with its peer's in the other
// replica after every outer sync and differs between; the payload per round is every TP
// rank's shard, and the WAN carries the all-reduce of all of them.
TEST(Diloco, EachTensorParallelRankSynchronisesItsShard) {
  const std::string net = "diltp";
  const fs::path dir = fs::temp_directory_path() / "xdc-run-test-diloco-tp";
  fs::remove_all(dir);
  auto r = run_xdc({"run", "tests/run/diloco-tp.yaml", "-o", dir.string(), "--name", net}, 300);
  ASSERT_EQ(r.rc, 0) << r.out;
  // World rank (replica x 2 + pipeline rank) x 2 + TP index: rank k's peer is k + 4.
  for (int k = 0; k < 4; ++k) {
    const auto a =
        read_json(dir / "1f1b" / ("rank" + std::to_string(k) + ".json"))["param_checksums"];
    const auto b =
        read_json(dir / "1f1b" / ("rank" + std::to_string(k + 4) + ".json"))["param_checksums"];
    ASSERT_EQ(a.size(), 4u);
    ASSERT_EQ(b.size(), 4u);
    for (size_t i = 0; i < a.size(); ++i) {
      if (i % 2 == 1)
        EXPECT_EQ(a[i], b[i]) << "rank " << k << ", iteration " << i << " ends with a sync";
      else
        EXPECT_NE(a[i], b[i]) << "rank " << k << ", iteration " << i;
    }
  }
  const auto d = read_json(dir / "summary.json")["schedules"][0]["dp_sync"];
  EXPECT_EQ(d["outer_syncs"], 2);
  EXPECT_EQ(d["payload_bytes_per_outer_step"].get<double>(),
            d["payload_bytes_analytic"].get<double>());
  EXPECT_NEAR(d["wan_wire_bytes_per_outer_step"].get<double>() /
                  d["collective_wire_bytes_analytic"].get<double>(),
              1.0, 0.08);
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
}

// Streaming DiLoCo's fragments over TP shards (each TP rank holds the same layout of its
// shard) and the evaluation over TP groups: the same training without tensor parallelism
// ends at the same evaluation loss, as it would not if a fragment's runs missed a shard's
// parameters.
TEST(Diloco, StreamingFragmentsOverTensorParallelShardsTrainAsWithoutThem) {
  const auto s = run_each(
      {{"tests/run/streaming-tp.yaml", "strtp"}, {"tests/run/streaming-tp-one.yaml", "strt1"}});
  for (const auto& one : s)  // stage 0 holds fragment 0 alone: syncs after iterations 2 and 4
    EXPECT_EQ(one.value("dp_sync", nlohmann::json()).value("fragment_syncs", 0), 2);
  expect_same_eval_loss(s);
}

// sync_steps 2: iterations 0 and 1 all-reduce the gradients (the replicas stay identical),
// the outer loop starts at iteration 2 from there (inner_steps 3: a sync after iteration
// 4, none after 5), and the prediction has the synchronous iterations' all-reduces.
TEST(Diloco, AfterSyncStepsTheOuterLoopStartsFromTheSynchronisedParameters) {
  const std::string net = "dilwm";
  const fs::path dir = fs::temp_directory_path() / "xdc-run-test-diloco-warm";
  fs::remove_all(dir);
  auto r = run_xdc({"run", "tests/run/diloco-warm.yaml", "-o", dir.string(), "--name", net}, 300);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto rank0 = read_json(dir / "1f1b" / "rank0.json");
  const auto a = rank0["param_checksums"];
  const auto b = read_json(dir / "1f1b" / "rank1.json")["param_checksums"];
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 6u);
  for (size_t i = 0; i < a.size(); ++i) {
    if (i < 2 || i == 4)
      EXPECT_EQ(a[i], b[i]) << "iteration " << i << " ends synchronised";
    else
      EXPECT_NE(a[i], b[i]) << "iteration " << i << ": each replica on its own shard";
  }
  const auto trace =
      xdc::trace::from_csv(xdc::read_text_file_or_empty(dir / "1f1b" / "rank0.trace.csv"));
  std::vector<int64_t> reduced;  // bytes of each iteration's ALLREDUCE record
  int syncs = 0;
  for (const auto& ev : trace.events) {
    if (ev.kind == xdc::sched::Kind::ALLREDUCE) reduced.push_back(ev.bytes);
    syncs += ev.kind == xdc::sched::Kind::OUTER_SYNC;
  }
  ASSERT_EQ(reduced.size(), 6u);
  EXPECT_GT(reduced[0], 0);
  EXPECT_GT(reduced[1], 0);
  for (size_t i = 2; i < reduced.size(); ++i) EXPECT_EQ(reduced[i], 0) << "iteration " << i;
  EXPECT_EQ(syncs, 1);
  const auto s = read_json(dir / "summary.json")["schedules"][0];
  EXPECT_EQ(s["dp_sync"]["outer_syncs"], 1);
  EXPECT_EQ(s["dp_sync"]["sync_steps"], 2);
  // The WAN's counters hold the synchronous iterations' all-reduces too: no per-step share.
  EXPECT_FALSE(s["dp_sync"].contains("wan_wire_bytes_per_outer_step"));
  // The report's outer-sync table says where the loop started.
  EXPECT_NE(xdc::read_text_file_or_empty(dir / "report.html").find("3 (after 2 synchronous)"),
            std::string::npos);
  const auto predicted = s["simulated_series"]["iteration_s"].get<std::vector<double>>();
  ASSERT_EQ(predicted.size(), 6u);
  // The synchronous iterations wait for the gradients over the WAN; the inner steps
  // without a sync do not.
  EXPECT_GT(predicted[1], predicted[3]);
  EXPECT_GT(predicted[4], predicted[3]);
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
}

// Modeled compute: the outer sync carries each stage's modeled parameters (grad / 4 fp32
// values) in bf16, after global iterations 1 and 3 (measured 0 and 2), and the prediction
// puts the sync's WAN transfer into those iterations only.
TEST(Diloco, ModeledSyncsCarryTheStagesPayloadAndArePredictedWhereDue) {
  const std::string net = "dilmt";
  const fs::path dir = fs::temp_directory_path() / "xdc-run-test-diloco-modeled";
  fs::remove_all(dir);
  auto r =
      run_xdc({"run", "tests/run/diloco-modeled.yaml", "-o", dir.string(), "--name", net}, 300);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto s = read_json(dir / "summary.json")["schedules"][0];
  const auto d = s["dp_sync"];
  EXPECT_EQ(d["outer_syncs"], 2);
  // Two stages (one per rank of replica 0), 4 MiB / 4 values each, 2 bytes a value.
  EXPECT_EQ(d["payload_bytes_per_outer_step"], 2 * (4 << 20) / 4 * 2);
  EXPECT_NEAR(d["wan_wire_bytes_per_outer_step"].get<double>() /
                  d["collective_wire_bytes_analytic"].get<double>(),
              1.0, 0.05);
  for (int rank = 0; rank < 4; ++rank) {
    const auto trace = xdc::trace::from_csv(xdc::read_text_file_or_empty(
        dir / "1f1b" / ("rank" + std::to_string(rank) + ".trace.csv")));
    int syncs = 0;
    for (const auto& ev : trace.events) syncs += ev.kind == xdc::sched::Kind::OUTER_SYNC;
    EXPECT_EQ(syncs, 2) << "rank " << rank;
  }
  const auto predicted = s["simulated_series"]["iteration_s"].get<std::vector<double>>();
  ASSERT_EQ(predicted.size(), 3u);
  EXPECT_GT(predicted[0], predicted[1]);
  EXPECT_GT(predicted[2], predicted[1]);
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
}

// Streaming DiLoCo, modeled compute: each fragment's sync carries its half of the stage's
// values, runs beside the next iteration and is applied after it (the last one at the end
// of the run, untraced); summary.json counts rounds of every fragment, and the WAN's bytes
// per round are the analytic count's. The prediction stalls only the iterations that apply a sync
// (a new connection's slow start makes the first longer than the iteration beside it).
TEST(Diloco, StreamingFragmentsOverlapTheNextIterationAndCarryTheirShare) {
  const std::string net = "strmt";
  const fs::path dir = fs::temp_directory_path() / "xdc-run-test-streaming-modeled";
  fs::remove_all(dir);
  auto r =
      run_xdc({"run", "tests/run/streaming-modeled.yaml", "-o", dir.string(), "--name", net}, 300);
  ASSERT_EQ(r.rc, 0) << r.out;
  const int64_t fragment = (1 << 20) / 2 * 2;  // 512 Ki values in bf16
  const auto rank0 =
      xdc::trace::from_csv(xdc::read_text_file_or_empty(dir / "1f1b" / "rank0.trace.csv"));
  std::vector<xdc::trace::Event> syncs;
  for (const auto& ev : rank0.events)
    if (ev.kind == xdc::sched::Kind::OUTER_SYNC) syncs.push_back(ev);
  ASSERT_EQ(syncs.size(), 2u);  // fragment 1 after iteration 2, fragment 0 after 4
  for (const auto& ev : syncs) EXPECT_EQ(ev.bytes, fragment);
  // Each shows over the iteration it ran beside: longer than 4 F and 4 B of 30 and 60 ms.
  for (int k = 0; k < 2; ++k)
    EXPECT_GT(syncs[k].end_ns - syncs[k].start_ns, 360'000'000) << "sync " << k;
  const auto s = read_json(dir / "summary.json")["schedules"][0];
  const auto d = s["dp_sync"];
  EXPECT_EQ(d["method"], "streaming");
  EXPECT_EQ(d["fragment_syncs"], 2);
  EXPECT_EQ(d["outer_syncs"], 1.0);
  EXPECT_EQ(d["payload_bytes_analytic"], 2 * 2 * fragment);  // 2 stages, 2 fragments
  EXPECT_EQ(d["payload_bytes_per_outer_step"], 2 * 2 * fragment);
  EXPECT_EQ(d["job_payload_bytes_analytic"], 2 * 3 * fragment);
  EXPECT_NEAR(d["wan_wire_bytes_per_outer_step"].get<double>() /
                  d["collective_wire_bytes_analytic"].get<double>(),
              1.0, 0.05);
  const auto predicted = s["simulated_series"]["iteration_s"].get<std::vector<double>>();
  ASSERT_EQ(predicted.size(), 6u);
  // Iterations 2 and 6 (1-based) start a sync, 4 none: none of them waits.
  EXPECT_NEAR(predicted[3], predicted[1], 1e-6);
  EXPECT_NEAR(predicted[5], predicted[1], 1e-6);
  EXPECT_GE(predicted[2], predicted[1]);  // 3 and 5 apply one
  EXPECT_GE(predicted[4], predicted[1]);
  EXPECT_EQ(leftovers(net), std::vector<std::string>{});
}

// A DC lost while a fragment's sync is in flight (overlap_steps 1: started after iteration
// 1, applied after iteration 2; the event comes as iteration 2 starts): killed, the run
// ends at once naming the DC and the event; cut off, the waits time out (timeout_s 20)
// and the run ends naming the cut link, within timeout + 10 s. Nothing is left behind.
TEST(Diloco, ADcLostDuringAnOverlappedSyncEndsTheRunNamingIt) {
  struct Case {
    const char* file;
    const char* net;
    const char* named;
  };
  for (const Case c : {Case{"tests/run/streaming-dc-lost.yaml", "strdl", "DC west failed"},
                       Case{"tests/run/streaming-dc-cut.yaml", "strdc", "east->west was down"}}) {
    const fs::path dir = fs::temp_directory_path() / (std::string("xdc-run-test-") + c.net);
    fs::remove_all(dir);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = run_xdc({"run", c.file, "-o", dir.string(), "--name", c.net}, 300);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_NE(r.out.find(c.named), std::string::npos) << r.out;
    EXPECT_LT(s, 20 + 10 + 15) << c.file;  // timeout + 10 s, and the network's set-up
    EXPECT_EQ(leftovers(c.net), std::vector<std::string>{});
  }
}
