// Experiment files: the shipped ones load; bad ones are refused with FILE:LINE:COL and
// what was expected, before anything is built (exit 2 from the CLI, nothing left).
#include "harness/experiment/experiment.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/input_error.h"
#include "harness/plan/predict.h"
#include "harness/run/environment.h"
#include "harness/run/results.h"
#include "harness/run/runner.h"
#include "tests/network/leftovers.h"
#include "tests/run/experiment_fixture.h"
#include "workloads/model/stage_api.h"

namespace {

using xdc::run::parse_experiment;
using xdc::test::kGood;
using xdc::test::kGoodDp;
using xdc::test::kLabel;
using xdc::test::with;

TEST(Experiment, ShippedFilesLoad) {
  for (const char* f : {"experiments/two-dc.yaml",
                        "experiments/diloco-two-dc.yaml",
                        "experiments/two-dc-lossy.yaml",
                        "experiments/two-dc-modeled.yaml",
                        "tests/run/modeled-20ms.yaml",
                        "tests/run/overlap.yaml",
                        "tests/run/kill.yaml",
                        "tests/run/stall.yaml",
                        "tests/run/bubble-0ms.yaml",
                        "tests/run/dp-real.yaml",
                        "tests/run/dp-modeled.yaml",
                        "experiments/multi-connection.yaml",
                        "experiments/flap.yaml",
                        "tests/run/kill-dc.yaml",
                        "experiments/tp-two-dc.yaml",
                        "experiments/tp-two-dc-modeled.yaml",
                        "tests/run/tp-real.yaml",
                        "experiments/repro/bubbletea-base.yaml",
                        "tests/run/prefill.yaml",
                        "experiments/wan-sharing.yaml",
                        "experiments/repro/geopipe-paper-base.yaml",
                        "tests/run/repeat-pair.yaml"}) {
    SCOPED_TRACE(f);
    const auto e = xdc::run::load_experiment(f);
    EXPECT_EQ(e.world_size(), static_cast<int>(e.rank_hosts().size()));
    EXPECT_NO_THROW(xdc::run::make_plan(e));
  }
  const auto e = xdc::run::load_experiment("experiments/two-dc.yaml");
  EXPECT_EQ(e.rank_hosts(), (std::vector<std::string>{"east-h1", "east-h2", "w1", "w2"}));
  EXPECT_EQ(e.model.layers, 4);
  EXPECT_EQ(e.compute.name(), "real");
}

TEST(Experiment, TheCopyInAResultsDirectoryLoadsFromThere) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("xdc-exp-copy-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  // experiments/gpu-profile.yaml names its topology and a profile by relative paths.
  const auto e = xdc::run::load_experiment("experiments/gpu-profile.yaml");
  ASSERT_FALSE(e.topology_file.empty());
  ASSERT_FALSE(e.compute.profile_file.empty());
  xdc::run::write_experiment(dir.string(), e);
  const auto copy = xdc::run::load_experiment((dir / "experiment.yaml").string());
  EXPECT_EQ(copy.topology_file, (dir / "topology.yaml").string());
  EXPECT_EQ(copy.compute.profile_file, fs::absolute(e.compute.profile_file).string());
  EXPECT_EQ(copy.topology.dcs.size(), e.topology.dcs.size());
  EXPECT_EQ(copy.stages, e.stages);
  // Only the two paths changed: the comments and the rest are as written.
  std::istringstream a(e.text), b(copy.text);
  int changed = 0;
  for (std::string x, y; std::getline(a, x) && std::getline(b, y);) changed += x != y;
  EXPECT_EQ(changed, 2);
  // Written again from there into the same directory: the same files.
  xdc::run::write_experiment(dir.string(), copy);
  EXPECT_EQ(xdc::run::load_experiment((dir / "experiment.yaml").string()).text, copy.text);
  // experiments/trace-wan.yaml: trace files inside an inline topology's flow maps.
  const auto traced = xdc::run::load_experiment("experiments/trace-wan.yaml");
  xdc::run::write_experiment((dir / "trace").string(), traced);
  const auto traced_copy = xdc::run::load_experiment((dir / "trace" / "experiment.yaml").string());
  ASSERT_EQ(traced_copy.topology.wan.size(), traced.topology.wan.size());
  EXPECT_EQ(traced_copy.topology.wan[0].a_to_b_changes.size(),
            traced.topology.wan[0].a_to_b_changes.size());
  EXPECT_EQ(traced_copy.topology.wan[0].b_to_a_changes.size(),
            traced.topology.wan[0].b_to_a_changes.size());
  EXPECT_FALSE(traced_copy.topology.wan[0].a_to_b_changes.empty());
  // A topology file naming a trace by a relative path: its copy names it absolutely.
  const fs::path src = dir / "src";
  fs::create_directories(src);
  std::ofstream(src / "wan.csv") << "t_ms,delay_ms,rate_mbit,loss_pct\n0,20,100,0\n1000,30,50,0\n";
  std::ofstream(src / "t.yaml") << "name: t\ndcs: [{name: east, hosts: 1}, {name: west, hosts: "
                                   "[w1]}]\nwan:\n  - between: [east, west]\n"
                                   "    west_to_east: {trace: {file: wan.csv, compress: 10}}\n";
  std::ofstream(src / "x.yaml") << "name: x\ntopology: t.yaml\ncompute: {modeled: {f: 1ms, b: "
                                   "1ms}}\npipeline: {stages: 2, placement: [east-h1, w1]}\n"
                                   "microbatches: 2\nschedules: [1f1b]\n";
  const auto x = xdc::run::load_experiment((src / "x.yaml").string());
  xdc::run::write_experiment((dir / "x").string(), x);
  const auto x_copy = xdc::run::load_experiment((dir / "x" / "experiment.yaml").string());
  EXPECT_EQ(x_copy.topology.wan.at(0).b_to_a_changes.size(), 2u);
  EXPECT_EQ(xdc::run::record(x).topology,
            "name: t\ndcs: [{name: east, hosts: 1}, {name: west, hosts: [w1]}]\nwan:\n  - "
            "between: [east, west]\n    west_to_east: {trace: {file: " +
                fs::absolute(src / "wan.csv").lexically_normal().string() + ", compress: 10}}\n");
  fs::remove_all(dir);
}

TEST(Experiment, LinksFollowTheTopologyAndTheWanOverride) {
  auto e = parse_experiment(kGood + "wan: {delay: 5ms, rate: 100mbit}\n", kLabel);
  auto l = xdc::run::link_model(e);
  // two-dc.yaml's fabric delays every packet to a host by 50 us (builder.cpp shape_fabric).
  EXPECT_EQ(l.at(1, 2).latency_ns, 5'050'000);  // east-h2 -> w1: the WAN, then west's fabric
  // Bandwidth is the payload rate: full TCP frames of 1514 bytes carry 1448 (the tbfs count
  // frames; Fidelity.Rate* measures it).
  EXPECT_DOUBLE_EQ(l.at(1, 2).bandwidth_bps, 100e6 * 1448 / 1514);
  EXPECT_EQ(l.at(0, 1).latency_ns, 50'000);  // inside east
  EXPECT_DOUBLE_EQ(l.at(0, 1).bandwidth_bps, 10e9 * 1448 / 1514);
  EXPECT_EQ(parse_experiment(kGood, kLabel).topology.wan[0].a_to_b.delay_us, 20000u);
}

TEST(Experiment, NetworkBackendOverridesTheTopologyAndIsRecorded) {
  auto native = parse_experiment(kGood, kLabel);
  EXPECT_EQ(native.topology.backend, xdc::topo::NetworkBackend::kNative);
  auto e = parse_experiment(kGood + "network: {backend: mininet}\n", kLabel);
  EXPECT_EQ(e.topology.backend, xdc::topo::NetworkBackend::kMininet);
  auto settings = xdc::run::non_default_settings(e);
  EXPECT_NE(std::find(settings.begin(), settings.end(), "network.backend=mininet"), settings.end());
  try {
    parse_experiment(kGood + "network: {backend: ovs}\n", kLabel);
    FAIL() << "accepted backend ovs";
  } catch (const xdc::InputError& ex) {
    EXPECT_STREQ(ex.what(),
                 "tests/run/bad.yaml:8:20: network.backend: expected one of: native, mininet, got "
                 "\"ovs\"");
  }
}

TEST(Experiment, WanChangesGoToEveryDirection) {
  auto e = parse_experiment(kGood + "wan: {changes: [{at: 5s, down: 2s}]}\n", kLabel);
  for (const auto& l : e.topology.wan)
    for (const auto* c : {&l.a_to_b_changes, &l.b_to_a_changes}) {
      ASSERT_EQ(c->size(), 2u);
      EXPECT_EQ((*c)[1].at_us, 7'000'000u);
    }
  try {
    parse_experiment(kGood + "wan: {changes: [{at: 5s, down: 2s}, {at: 6s, rate: 1gbit}]}\n",
                     kLabel);
    FAIL() << "a change inside a down window was accepted";
  } catch (const xdc::InputError& err) {
    EXPECT_NE(std::string(err.what()).find("wan.changes[1].at: expected changes in time order"),
              std::string::npos)
        << err.what();
    EXPECT_GT(err.pos().line, 0);
  }
}

TEST(Experiment, TcpOverrideGoesOverEveryHost) {
  // The topology's own TCP: stock defaults.
  auto plain = parse_experiment(kGood, kLabel);
  EXPECT_EQ(plain.topology.find_host("w1")->tcp, xdc::topo::TcpSettings{});
  EXPECT_FALSE(plain.tcp_override);
  auto e = parse_experiment(kGood + "tcp: {congestion: bbr, rmem_max: 32mib}\n", kLabel);
  EXPECT_TRUE(e.tcp_override);
  EXPECT_EQ(e.topology.tcp.congestion, "bbr");
  for (const xdc::topo::Host* h : e.topology.hosts()) {
    EXPECT_EQ(h->tcp.congestion, "bbr") << h->name;
    EXPECT_EQ(h->tcp.rmem_max_bytes, 32u << 20) << h->name;
    EXPECT_EQ(h->tcp.wmem_max_bytes, 4u << 20) << h->name;  // not named: stock
    EXPECT_TRUE(h->tcp.slow_start_after_idle) << h->name;
  }
}

TEST(Experiment, TimeDilationStretchesTheWorkersAndNotThePlan) {
  const auto plain = parse_experiment(kGood, kLabel);
  EXPECT_EQ(plain.time_dilation, 1);
  const auto e = parse_experiment(kGood + "time_dilation: 20\nmpi: {timeout_s: 30}\n", kLabel);
  EXPECT_EQ(e.time_dilation, 20);
  // The plan (what the simulator predicts with) is the undilated one.
  EXPECT_EQ(e.topology.wan[0].a_to_b.delay_us, 20000u);
  const auto plan = xdc::run::make_plan(e);
  const auto& costs = plan.schedules[0].costs;
  EXPECT_EQ(costs.f_ns, xdc::run::make_plan(plain).schedules[0].costs.f_ns);
  // The workers sleep k times the modeled costs and wait k times the timeout; messages
  // keep their size.
  const auto spec = xdc::run::run_spec(plan, plan.schedules[0], "/tmp/x", "/tmp/x/schedule.csv");
  ASSERT_EQ(spec.modeled.f_ns.size(), costs.f_ns.size());
  for (size_t i = 0; i < costs.f_ns.size(); ++i) {
    EXPECT_EQ(spec.modeled.f_ns[i], 20 * costs.f_ns[i]);
    EXPECT_EQ(spec.modeled.b_ns[i], 20 * costs.b_ns[i]);
    EXPECT_EQ(spec.modeled.w_ns[i], 20 * costs.w_ns[i]);
    EXPECT_EQ(spec.modeled.activation_bytes[i], costs.activation_bytes[i]);
  }
  EXPECT_EQ(spec.modeled.opt_ns, 20 * costs.opt_ns);
  EXPECT_EQ(spec.timeout_s, 600);
  EXPECT_EQ(spec.time_dilation, 20);
  EXPECT_EQ(parse_experiment(kGood + "time_dilation: 2.5\n", kLabel).time_dilation, 2.5);
  // The old key at the top level points to the new one.
  try {
    parse_experiment(kGood + "message_scale: 0.1\n", kLabel);
    FAIL() << "message_scale accepted";
  } catch (const xdc::InputError& err) {
    EXPECT_NE(std::string(err.what()).find("time_dilation"), std::string::npos) << err.what();
  }
}

TEST(Experiment, ConnectionsPerPeerClassReachSpecSimulatorAndRecord) {
  const auto plain = parse_experiment(kGood, kLabel);
  EXPECT_EQ(plain.connections_wan, 0);
  EXPECT_EQ(plain.connections_dc, 0);
  EXPECT_TRUE(xdc::run::non_default_settings(plain).empty());
  const auto e = parse_experiment(kGood + "mpi: {connections: {wan: 8}}\n", kLabel);
  EXPECT_EQ(e.connections_wan, 8);
  EXPECT_EQ(e.connections_dc, 0);
  EXPECT_EQ(xdc::run::non_default_settings(e), (std::vector<std::string>{"mpi.connections.wan=8"}));
  EXPECT_EQ(xdc::run::connections_json(e), (nlohmann::json{{"wan", 8}, {"dc", "openmpi"}}));
  // The workers get the class of every rank's host and N per class.
  const auto plan = xdc::run::make_plan(e);
  const auto spec = xdc::run::run_spec(plan, plan.schedules[0], "/tmp/x", "/tmp/x/schedule.csv");
  EXPECT_EQ(spec.connections_wan, 8);
  EXPECT_EQ(spec.connections_dc, 0);
  EXPECT_EQ(spec.rank_dcs, (std::vector<std::string>{"east", "east", "west", "west"}));
  // The simulator stripes east -> west (8 connections, no rendezvous), not inside east.
  const auto l = xdc::run::link_model(e);
  EXPECT_EQ(l.tcp[1 * 4 + 2].connections, 8);
  EXPECT_EQ(l.tcp[1 * 4 + 2].eager_limit, xdc::sim::kNoRendezvous);
  EXPECT_EQ(l.tcp[0 * 4 + 1].connections, 1);
  EXPECT_EQ(l.tcp[0 * 4 + 1].eager_limit, xdc::sim::kOpenMpiEagerLimit);
  const auto both = parse_experiment(kGood + "mpi: {connections: {wan: 4, dc: 2}}\n", kLabel);
  EXPECT_EQ(xdc::run::link_model(both).tcp[0 * 4 + 1].connections, 2);
  EXPECT_EQ(xdc::run::non_default_settings(both),
            (std::vector<std::string>{"mpi.connections.wan=4", "mpi.connections.dc=2"}));
}

// dp_sync diloco: recorded as non-default, carried to the workers, and predicted with no
// gradient all-reduce but an outer sync of the payload's bytes after every H-th iteration.
TEST(Experiment, DilocoSyncsEveryInnerStepsWithThePayloadsBytes) {
  const std::string block =
      "dp_sync: {method: diloco, inner_steps: 2, outer: {optimizer: nesterov, lr: 0.5, "
      "momentum: 0.8}, payload: int8}\n";
  const auto e = parse_experiment(kGoodDp + block, kLabel);
  ASSERT_TRUE(e.dp_sync.outer_loop());
  EXPECT_EQ(e.dp_sync.inner_steps, 2);
  EXPECT_EQ(xdc::run::non_default_settings(e),
            (std::vector<std::string>{"dp_sync: diloco inner_steps=2 outer=nesterov(lr 0.5, "
                                      "momentum 0.8) payload=int8"}));
  const auto plan = xdc::run::make_plan(e);
  const auto& sp = plan.schedules[0];
  const auto w = xdc::run::run_spec(plan, sp, "/tmp/x", "/tmp/x/s.csv");
  EXPECT_EQ(w.dp_sync.method, "diloco");
  EXPECT_EQ(w.dp_sync.inner_steps, 2);
  EXPECT_EQ(w.dp_sync.outer_lr, 0.5);
  EXPECT_EQ(w.dp_sync.payload, "int8");
  // The outer payload: each stage's parameters (bf16 gradient bytes / 2) as int8 blocks
  // of 1024 values and a float scale.
  const auto values = xdc::run::outer_sync_values(e, 2);
  ASSERT_EQ(sp.costs.outer_bytes.size(), 2u);
  for (int st = 0; st < 2; ++st) {
    EXPECT_GT(values[st], 1000000000 / 2);  // llama2-13b's half
    EXPECT_EQ(sp.costs.outer_bytes[st], std::vector<int64_t>{(values[st] + 1023) / 1024 * 1028});
    EXPECT_EQ(w.modeled.grad_bytes[st], 4 * values[st]);  // the workers' fp32 scratch
  }
  EXPECT_TRUE(sp.costs.grad_bytes.empty());  // no per-iteration all-reduce
  // Iterations 1 and 3 end with the outer sync (1.7 GB over the WAN): longer than 0 and 2,
  // which carry no gradient all-reduce and so are shorter than synchronous DP's.
  const auto pred = xdc::run::predict(plan, sp, sp.costs);
  ASSERT_EQ(pred.run.iteration_s.size(), 4u);
  const auto& it = pred.run.iteration_s;
  EXPECT_GT(it[1], it[0] + 1.0);
  EXPECT_GT(it[3], it[2] + 1.0);
  const auto sync = xdc::run::make_plan(parse_experiment(kGoodDp, kLabel));
  const auto sync_pred = xdc::run::predict(sync, sync.schedules[0], sync.schedules[0].costs);
  EXPECT_LT(it[2], sync_pred.run.iteration_s[2]);
  EXPECT_LT(pred.iteration_s(), sync_pred.iteration_s());
  // fp4 halves int8's bytes, so the sync iterations shorten.
  const auto fp4 = parse_experiment(
      kGoodDp + "dp_sync: {method: diloco, inner_steps: 2, payload: fp4}\n", kLabel);
  const auto fp4_plan = xdc::run::make_plan(fp4);
  EXPECT_EQ(fp4_plan.schedules[0].costs.outer_bytes[0],
            std::vector<int64_t>{(values[0] + 1023) / 1024 * 516});
  const auto fp4_pred =
      xdc::run::predict(fp4_plan, fp4_plan.schedules[0], fp4_plan.schedules[0].costs);
  EXPECT_LT(fp4_pred.run.iteration_s[1], it[1]);
  EXPECT_EQ(fp4.dp_sync.outer_lr, 0.7);  // the paper's defaults
  EXPECT_EQ(fp4.dp_sync.outer_momentum, 0.9);
}

// dp_sync eager: recorded, carried to the workers, and predicted with each sync waited for
// only as its fragment's next starts (H iterations later), not after its own iteration.
TEST(Experiment, EagerSyncsAreWaitedForAsTheNextStarts) {
  const auto blocking =
      parse_experiment(kGoodDp + "dp_sync: {method: diloco, inner_steps: 2}\n", kLabel);
  const auto e = parse_experiment(
      kGoodDp + "dp_sync: {method: diloco, inner_steps: 2, eager: true}\n", kLabel);
  EXPECT_TRUE(e.dp_sync.eager);
  EXPECT_EQ(e.dp_sync.apply_after_steps(), 2);
  EXPECT_EQ(blocking.dp_sync.apply_after_steps(), 0);
  EXPECT_EQ(xdc::run::non_default_settings(e),
            (std::vector<std::string>{"dp_sync: diloco inner_steps=2 eager "
                                      "outer=nesterov(lr 0.7, momentum 0.9) payload=fp32"}));
  const auto plan = xdc::run::make_plan(e);
  const auto& sp = plan.schedules[0];
  EXPECT_TRUE(xdc::run::run_spec(plan, sp, "/tmp/x", "/tmp/x/s.csv").dp_sync.eager);
  const auto pred = xdc::run::predict(plan, sp, sp.costs).run.iteration_s;
  const auto bplan = xdc::run::make_plan(blocking);
  const auto bpred =
      xdc::run::predict(bplan, bplan.schedules[0], bplan.schedules[0].costs).run.iteration_s;
  ASSERT_EQ(pred.size(), 4u);
  ASSERT_EQ(bpred.size(), 4u);
  // Blocking: iterations 1 and 3 wait for their syncs (1.7 GB over the WAN each). Eager:
  // the sync started after iteration 1 ends within iterations 2 and 3 (hours of modeled
  // compute here), so no iteration waits.
  EXPECT_LT(pred[1], bpred[1] - 1.0);
  EXPECT_LT(pred[3], bpred[3] - 1.0);
  EXPECT_NEAR(pred[1], pred[0], 1.0);
  EXPECT_LT(pred[0] + pred[1] + pred[2] + pred[3], bpred[0] + bpred[1] + bpred[2] + bpred[3]);
}

// dp_sync collective gloo (a torch program's step, simulated only): recorded as
// non-default, timed as gloo's ring without MPI's rendezvous, refused by `xdc run`.
TEST(Experiment, GlooCollectiveIsSimulatedAndRefusedByRun) {
  std::string text = kGoodDp + "dp_sync: {method: sync, collective: gloo}\n";
  const std::string shape = "{model: llama2-13b, device: a100, seq: 1024}";
  text.replace(text.find(shape), shape.size(), "{f: 10ms, b: 20ms, grad: 4mib}");
  const auto e = parse_experiment(text, kLabel);
  EXPECT_EQ(xdc::run::non_default_settings(e),
            (std::vector<std::string>{"dp_sync: sync collective=gloo"}));
  const auto plan = xdc::run::make_plan(e);
  EXPECT_EQ(plan.worker.dp_collective, xdc::sim::WorkerModel::Collective::kGlooRing);
  for (const auto& t : plan.worker.dp_links.tcp) EXPECT_EQ(t.eager_limit, xdc::sim::kNoRendezvous);
  const auto& sp = plan.schedules[0];
  EXPECT_GT(xdc::run::predict(plan, sp, sp.costs).iteration_s(), 0);
  try {
    xdc::run::run_experiment(e, {});
    FAIL() << "xdc run took a gloo collective";
  } catch (const xdc::InputError& ex) {
    EXPECT_NE(std::string(ex.what()).find("collective: gloo describes a torch program"),
              std::string::npos)
        << ex.what();
    EXPECT_EQ(ex.pos().line, 9);
  }
}

// An overlapped sync of 20 MiB over 40 Mbit/s (~9 s) beside 9 iterations of 1.2 s: with
// the iteration barrier off it is hidden (utilisation 1); with it on, each barrier message
// between the two ranks queues behind the sync's data on their one TCP connection, so the
// iterations after a sync starts wait (measured 0.70 where this predicts ~0.78).
TEST(Experiment, AnOverlappedSyncDelaysTheIterationBarrierBehindItsData) {
  auto utilisation = [](bool barrier) {
    const std::string text = std::string(R"(name: t
topology:
  name: t
  dcs: [{name: a, hosts: 1}, {name: b, hosts: 1}]
  wan: [{between: [a, b], delay: 10ms, rate: 40mbit}]
compute: {modeled: {f: 100ms, b: 200ms, activation: 1mib, grad: 40mib}}
pipeline: {stages: 1, data_parallel: 2, placement: [[a-h1], [b-h1]]}
microbatches: 4
iterations: 40
warmup: 0
schedules: [1f1b]
dp_sync: {method: streaming, inner_steps: 20, fragments: 2, overlap_steps: 9}
iteration_barrier: )") + (barrier ? "true" : "false") +
                             "\n";
    const auto plan = xdc::run::make_plan(parse_experiment(text, kLabel));
    const auto& sp = plan.schedules[0];
    const auto u = xdc::run::simulated_utilisation(xdc::run::predict(plan, sp, sp.costs));
    EXPECT_FALSE(u.empty());
    return u.empty() ? 0.0 : u[0];
  };
  EXPECT_GT(utilisation(false), 0.99);
  EXPECT_LT(utilisation(true), 0.9);
}

// Streaming DiLoCo: each stage's payload cut into fragments of whole layers (llama2-13b's
// 40 layers in 4 strided fragments), the runs handed to the workers partition the stage's
// values, one fragment starts every H / P iterations, and with overlap the predicted
// iterations carry no sync spike where the blocking ones do.
TEST(Experiment, StreamingCutsThePayloadIntoFragmentsAndOverlapHidesTheSync) {
  std::string eight = kGoodDp;
  eight.replace(eight.find("iterations: 4"), 13, "iterations: 8");
  auto streaming = [&](const std::string& extra) {
    return parse_experiment(eight + "dp_sync: {method: streaming, inner_steps: 4, fragments: 4, " +
                                extra + "payload: int8}\n",
                            kLabel);
  };
  const auto e = streaming("overlap_steps: 1, ");
  EXPECT_EQ(e.dp_sync.merge, 0.5);  // the default with overlap
  EXPECT_EQ(xdc::run::non_default_settings(e),
            (std::vector<std::string>{"dp_sync: streaming inner_steps=4 fragments=4 "
                                      "overlap_steps=1 merge=0.5 outer=nesterov(lr 0.7, "
                                      "momentum 0.9) payload=int8"}));
  const auto values = xdc::run::outer_sync_values(e, 2);
  const auto runs = xdc::run::outer_sync_runs(e, 2);
  ASSERT_EQ(runs.size(), 2u);
  for (int st = 0; st < 2; ++st) {
    ASSERT_EQ(runs[st].size(), 4u);
    int64_t at = 0;
    for (const auto& fragment : runs[st]) {
      ASSERT_EQ(fragment.size(), 1u);  // modeled: one run a fragment, in order
      EXPECT_EQ(fragment[0].first, at);
      EXPECT_GT(fragment[0].second, 0);
      at += fragment[0].second;
    }
    EXPECT_EQ(at, values[st]);
  }
  // Stage 0 holds layers 0..19 and the embedding: fragment 0 has 5 layers and the embedding.
  EXPECT_GT(runs[0][0][0].second, runs[0][1][0].second);
  EXPECT_EQ(runs[0][1][0].second, runs[0][2][0].second);
  const auto plan = xdc::run::make_plan(e);
  const auto& sp = plan.schedules[0];
  ASSERT_EQ(sp.costs.outer_bytes.size(), 2u);
  EXPECT_EQ(sp.costs.outer_bytes[0][1], (runs[0][1][0].second + 1023) / 1024 * 1028);
  const auto w = xdc::run::run_spec(plan, sp, "/tmp/x", "/tmp/x/s.csv");
  EXPECT_EQ(w.dp_sync.method, "streaming");
  EXPECT_EQ(w.dp_sync.overlap_steps, 1);
  EXPECT_EQ(w.dp_sync.fragment_runs, runs);
  // Blocking: every iteration starts a fragment (H / P = 1) and waits for it.
  const auto blocking = xdc::run::make_plan(streaming(""));
  const auto bp = xdc::run::predict(blocking, blocking.schedules[0], blocking.schedules[0].costs);
  const auto op = xdc::run::predict(plan, sp, sp.costs);
  ASSERT_EQ(op.run.iteration_s.size(), 8u);
  ASSERT_EQ(bp.run.iteration_s.size(), 8u);
  const auto diloco = xdc::run::make_plan(parse_experiment(
      eight + "dp_sync: {method: diloco, inner_steps: 4, payload: int8}\n", kLabel));
  const auto dp = xdc::run::predict(diloco, diloco.schedules[0], diloco.schedules[0].costs);
  const double inner = dp.run.iteration_s[0];  // no sync after it
  for (int i = 0; i < 8; ++i) EXPECT_GT(bp.run.iteration_s[i], inner + 0.1) << i;
  EXPECT_LT(op.iteration_s(), bp.iteration_s());
  int64_t fragments = 0, whole = 0;  // the same bytes a round as DiLoCo's, spread out
  for (const auto& per : sp.costs.outer_bytes)
    for (int64_t b : per) fragments += b;
  for (const auto& per : diloco.schedules[0].costs.outer_bytes) whole += per[0];
  EXPECT_NEAR(static_cast<double>(fragments) / static_cast<double>(whole), 1.0, 1e-3);
}

// prefill: each schedule runs without, then with prefill; the workers get the stream, a
// cost per prompt token from the stage's F (f / (seq x microbatch_size)) and the simulated
// start of every compute action; the setting is recorded as non-default.
TEST(Experiment, PrefillRunsEachScheduleTwiceAndTellsTheWorkersTheBubbles) {
  const auto e = parse_experiment(
      kGood +
          "prefill: {rate_rps: 40, prompt_tokens: {dist: uniform, mean: 256, max: 1024}, "
          "deadline: 500ms}\n",
      kLabel);
  ASSERT_TRUE(e.prefill.on);
  EXPECT_EQ(e.prefill.deadline_us, 500000u);
  EXPECT_EQ(xdc::run::non_default_settings(e),
            (std::vector<std::string>{"prefill: rate_rps=40 tokens=uniform(mean 256, max 1024) "
                                      "deadline=0.5s seed=1"}));
  const auto plan = xdc::run::make_plan(e);
  ASSERT_EQ(plan.schedules.size(), 4u);
  EXPECT_EQ(plan.schedules[0].choice.name, "1f1b");
  EXPECT_FALSE(plan.schedules[0].prefill);
  EXPECT_EQ(plan.schedules[1].choice.name, "1f1b+prefill");
  EXPECT_TRUE(plan.schedules[1].prefill);
  EXPECT_EQ(plan.schedules[3].choice.name, "crosspipe-greedy+prefill");
  EXPECT_FALSE(xdc::run::run_spec(plan, plan.schedules[0], "/tmp/x", "/tmp/x/s.csv").prefill.on);
  const auto sp = plan.schedules[1];
  const auto w = xdc::run::run_spec(plan, sp, "/tmp/x", "/tmp/x/s.csv").prefill;
  ASSERT_TRUE(w.on);
  EXPECT_EQ(w.rate_rps, 40);
  EXPECT_EQ(w.dist, "uniform");
  EXPECT_EQ(w.deadline_ns, 500000000);
  ASSERT_EQ(w.ns_per_token.size(), 4u);
  EXPECT_DOUBLE_EQ(w.ns_per_token[0], static_cast<double>(sp.costs.f_ns[0]) / 1024.0);
  const auto pred = xdc::run::predict(plan, sp, sp.costs);
  EXPECT_EQ(w.iteration_ns, pred.summary.iteration_ns);
  ASSERT_EQ(w.action_start_ns.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    const auto& actions = sp.schedule.actions[r];
    ASSERT_EQ(w.action_start_ns[r].size(), actions.size());
    int64_t last = -1;
    for (size_t i = 0; i < actions.size(); ++i) {
      const bool compute =
          xdc::sched::is_compute(actions[i].kind) || actions[i].kind == xdc::sched::Kind::OPT;
      if (!compute) {
        EXPECT_EQ(w.action_start_ns[r][i], -1);
        continue;
      }
      EXPECT_GE(w.action_start_ns[r][i], last) << "rank " << r << " action " << i;
      last = w.action_start_ns[r][i];
    }
  }
  // Stage 0 starts at once; the last stage waits for its first input (a bubble).
  EXPECT_EQ(w.action_start_ns[0][0], 0);
  EXPECT_GT(w.action_start_ns[3][1], 3 * sp.costs.f_ns[0]);
}

// compute.real.device: cuda gives each host's ranks the listed GPUs round-robin; where
// the build or the machine has none, `xdc run`'s check refuses with the key's position.
// Tensor parallelism: world rank = (replica * stages + stage) * t + TP index (run_spec.h);
// the spec, the simulator's world (one rank per TP group) and the planned costs follow.
TEST(Experiment, TensorParallelGroupsLayOutTheWorld) {
  const auto e = xdc::run::load_experiment("experiments/tp-two-dc.yaml");
  EXPECT_EQ(e.tensor_parallel, 2);
  EXPECT_EQ(e.world_size(), 8);
  EXPECT_EQ(e.rank_hosts(), (std::vector<std::string>{"east-h1", "east-h2", "w1", "w2", "east-h1",
                                                      "east-h2", "w1", "w2"}));
  EXPECT_EQ(e.pipeline_hosts(), (std::vector<std::string>{"east-h1", "w1", "east-h1", "w1"}));
  EXPECT_EQ(e.world_rank(1, 1, 1), 7);
  const auto p = xdc::run::make_plan(e);
  EXPECT_EQ(p.worker.world.ranks, 4);
  EXPECT_EQ(p.dp_groups, (std::vector<std::vector<int>>{{0, 4}, {2, 6}}));
  const auto spec = xdc::run::run_spec(p, p.schedules[0], "/tmp/x", "/tmp/x/s.csv");
  EXPECT_EQ(spec.tensor_parallel, 2);
  EXPECT_EQ(spec.world_size(), 8);
  // One host per TP group: all TP ranks of a stage on it.
  const auto one =
      parse_experiment(with("pipeline: {stages: 4, placement: [east-h1, east-h2, w1, w2]}",
                            "pipeline: {stages: 2, tensor_parallel: 2, placement: [east-h1, w1]}"),
                       kLabel);
  EXPECT_EQ(one.rank_hosts(), (std::vector<std::string>{"east-h1", "east-h1", "w1", "w1"}));
  // Modeled: per TP rank half the compute of TP 1, plus 2 all-reduces per layer in F and B.
  const auto m = xdc::run::load_experiment("experiments/tp-two-dc-modeled.yaml");
  const auto c = xdc::run::planned_costs(m, {0, 1});
  ASSERT_EQ(c.tp_allreduces, (std::vector<int>{4, 4}));
  EXPECT_EQ(c.tp_allreduce_bytes[0], 64 * 1024);
  EXPECT_GT(c.tp_allreduce_ns[0], 0);
  EXPECT_EQ(c.f_ns[0], 40'000'000 + 4 * c.tp_allreduce_ns[0]);
  const auto ms = xdc::run::run_spec(xdc::run::make_plan(m), xdc::run::make_plan(m).schedules[0],
                                     "/tmp/x", "/tmp/x/s.csv");
  EXPECT_EQ(ms.modeled.f_ns[0], 40'000'000);  // the workers sleep the compute only
  EXPECT_EQ(ms.modeled.tp_allreduces, (std::vector<int>{4, 4}));
}

// compute.modeled.tensor_parallel: each rank is a node of n devices in TP; one process per
// node (world = stages), compute / n and the node's all-reduces inside F and B, nothing
// for the workers to perform; the peak a rank is measured against is the node's.
TEST(Experiment, NodeTensorParallelIsOneProcessPerNodeWithItsAllReducesInside) {
  const auto e = xdc::run::load_experiment("experiments/repro/geopipe-paper-base.yaml");
  EXPECT_EQ(e.compute.node_tp, 8);
  EXPECT_EQ(e.tensor_parallel, 1);
  EXPECT_EQ(e.world_size(), 8);
  EXPECT_NE(e.compute.costs_source().find("TP 8 inside each rank's node"), std::string::npos)
      << e.compute.costs_source();
  const auto c = xdc::run::planned_costs(e, {0, 1, 2, 3, 4, 5, 6, 7});
  ASSERT_EQ(c.node_tp_ns.size(), 8u);
  EXPECT_GT(c.node_tp_ns[0], 0);
  const auto p = xdc::run::make_plan(e);
  const auto spec = xdc::run::run_spec(p, p.schedules[0], "/tmp/x", "/tmp/x/s.csv");
  EXPECT_TRUE(spec.modeled.tp_allreduces.empty());
  EXPECT_NEAR(static_cast<double>(spec.modeled.f_ns[0]), c.f_ns[0] * e.time_dilation, 1);  // slept
  EXPECT_DOUBLE_EQ(xdc::run::peak_flops_per_rank(e), 8 * 313e12);
  const auto given = parse_experiment(
      with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}",
           "compute: {modeled: {model: llama2-13b, device: a100, seq: 1024, tensor_parallel: 4, "
           "tp_bandwidth: 800gbit}}"),
      kLabel);
  EXPECT_EQ(given.compute.node_tp, 4);
  EXPECT_DOUBLE_EQ(given.compute.node_busbw, 100e9);
}

TEST(Experiment, CudaRanksTakeTheirHostsGpusRoundRobin) {
  const std::string real = with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}",
                                "compute: {real: {device: cuda, gpus: [0, 1]}}\n"
                                "model: {preset: tiny, layers: 4}");
  std::string text = real;
  const std::string from = "[east-h1, east-h2, w1, w2]";
  text.replace(text.find(from), from.size(), "[east-h1, east-h1, east-h1, w1]");
  const auto e = parse_experiment(text, kLabel);
  EXPECT_EQ(e.compute.real_device, "cuda");
  EXPECT_EQ(e.rank_gpus(), (std::vector<int>{0, 1, 0, 0}));
  EXPECT_TRUE(parse_experiment(kGood, kLabel).rank_gpus().empty());  // modeled
  std::string why;
  if (xdc::model::cuda_gpus(&why).size() >= 2) {
    EXPECT_FALSE(xdc::run::check_gpus_here(e).empty());
    return;
  }
  try {
    xdc::run::check_gpus_here(e);
    FAIL() << "accepted cuda on a machine with fewer than 2 GPUs";
  } catch (const xdc::InputError& err) {
    const std::string what = err.what();
    std::printf("%s\n", what.c_str());
    EXPECT_EQ(what.rfind(kLabel + ":3:", 0), 0u) << what;
    EXPECT_NE(what.find("GPU"), std::string::npos) << what;
  }
}

TEST(Experiment, CliRefusesBadInputWithExit2AndBuildsNothing) {
  auto r = xdc::testing::run_xdc({"run", "tests/run/bad-host.yaml", "--name", "tbadexp"});
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("tests/run/bad-host.yaml:9:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nowhere"), std::string::npos) << r.out;
  EXPECT_EQ(xdc::testing::leftovers("tbadexp"), std::vector<std::string>{});
}

// `xdc profile` measures per-stage costs on this machine and writes the CSV a modeled
// experiment reads; the run then says where its costs came from.
TEST(Experiment, ProfileCsvDrivesAModeledExperimentAndNamesItsSource) {
  const std::string csv = ::testing::TempDir() + "xdc-profile-test.csv";
  auto r = xdc::testing::run_xdc(
      {"profile", "tiny", "--stages", "2", "--microbatch-size", "2", "--repeats", "2", "-o", csv});
  ASSERT_EQ(r.rc, 0) << r.out;
  std::string text = with("{modeled: {model: llama2-13b, device: a100, seq: 1024}}",
                          "{modeled: {profile: " + csv + "}}");
  for (auto [from, to] : {std::pair<std::string, std::string>{"stages: 4", "stages: 2"},
                          {"[east-h1, east-h2, w1, w2]", "[east-h1, w1]"}})
    text.replace(text.find(from), from.size(), to);
  const auto e = parse_experiment(text, kLabel);
  const std::string src = e.compute.costs_source();
  EXPECT_NE(src.find("xdc profile: measured on cpu"), std::string::npos) << src;
  EXPECT_NE(src.find("microbatch size 2"), std::string::npos) << src;
  const auto plan = xdc::run::make_plan(e);
  const auto& costs = plan.schedules.at(0).costs;
  ASSERT_EQ(costs.stages(), 2);
  for (int s = 0; s < 2; ++s) {
    EXPECT_GT(costs.f_ns[s], 0);
    EXPECT_GT(costs.w_ns[s], 0);
    EXPECT_EQ(costs.activation_bytes[s], 2 * 128 * 128 * 4);  // B x T x dim fp32 (tiny)
  }
  auto bad = xdc::testing::run_xdc({"profile", "tiny", "--stages", "9", "-o", csv});
  EXPECT_EQ(bad.rc, 2) << bad.out;
}

TEST(Experiment, CliRefusesCudaWithoutAGpuWithExit2AndBuildsNothing) {
  if (!xdc::model::cuda_gpus().empty()) GTEST_SKIP() << "this machine has a GPU: nothing to refuse";
  auto r = xdc::testing::run_xdc({"run", "tests/run/cuda.yaml", "--name", "tcudaexp"});
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("tests/run/cuda.yaml:6:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no GPU"), std::string::npos) << r.out;
  EXPECT_EQ(xdc::testing::leftovers("tcudaexp"), std::vector<std::string>{});
  auto p = xdc::testing::run_xdc(
      {"profile", "tiny", "--device", "cuda", "-o", ::testing::TempDir() + "xdc-no-gpu.csv"});
  EXPECT_EQ(p.rc, 2) << p.out;
  EXPECT_NE(p.out.find("no GPU"), std::string::npos) << p.out;
}

}  // namespace

// mpi.wan_sharing: temporal reaches the plan (every replica predicted over exclusive WAN
// channels), the workers (an order key per SEND, each direction's round trip of bytes)
// and the record; a bad value is refused at its position.
TEST(Experiment, TemporalWanSharingReachesPlanSpecAndRecord) {
  EXPECT_FALSE(parse_experiment(kGood, kLabel).wan_temporal);
  const auto e = parse_experiment(kGood + "mpi: {wan_sharing: temporal}\n", kLabel);
  ASSERT_TRUE(e.wan_temporal);
  EXPECT_EQ(xdc::run::non_default_settings(e),
            (std::vector<std::string>{"mpi.wan_sharing=temporal"}));
  const auto plan = xdc::run::make_plan(e);
  ASSERT_TRUE(plan.all_replicas);
  const auto& w = plan.world_links;
  EXPECT_TRUE(w.exclusive_channel(w.channel_of(1, 2)));  // east-h2 -> w1: the WAN
  EXPECT_TRUE(w.exclusive_channel(w.channel_of(2, 1)));
  EXPECT_FALSE(w.exclusive_channel(w.channel_of(0, 1)));  // inside east
  const auto spec = xdc::run::run_spec(plan, plan.schedules[0], "/tmp/x", "/tmp/x/s.csv");
  ASSERT_EQ(spec.wan_send_order_ns.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    const auto& acts = plan.schedules[0].schedule.actions[r];
    ASSERT_EQ(spec.wan_send_order_ns[r].size(), acts.size());
    for (size_t i = 0; i < acts.size(); ++i)
      EXPECT_EQ(spec.wan_send_order_ns[r][i] >= 0, xdc::sched::is_send(acts[i].kind));
  }
  // 1 Gbit/s, 20 ms each way (and 50 us in each DC): 5 MB of frames in flight over a round
  // trip, 1448 of each 1514 bytes payload.
  EXPECT_NEAR(static_cast<double>(spec.wan_release_ahead_bytes.at("east->west")),
              5.0125e6 * 1448 / 1514, 1e3);
  try {
    parse_experiment(kGood + "mpi: {wan_sharing: sometimes}\n", kLabel);
    FAIL() << "wan_sharing: sometimes accepted";
  } catch (const xdc::InputError& err) {
    EXPECT_NE(std::string(err.what()).find("temporal"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find(":8:20:"), std::string::npos) << err.what();
  }
  // Two replicas sharing the WAN are predicted together: a trace of every world rank with
  // the stages as the workers trace them.
  const auto two = xdc::run::load_experiment("experiments/wan-sharing.yaml");
  const auto p2 = xdc::run::make_plan(two);
  const auto pred = xdc::run::predict(p2, p2.schedules[0], p2.schedules[0].costs);
  EXPECT_EQ(pred.trace.ranks, 4);
  for (const auto& ev : pred.trace.events) EXPECT_LT(ev.stage, 2);
  EXPECT_GT(pred.summary.iteration_ns, 0);
}
