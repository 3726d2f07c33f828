// Good topologies: what the YAML means once parsed.
#include "harness/topology/topology.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace xdc::topo {
namespace {

using netem::JitterDist;
using netem::LossModel;

TEST(Topology, ChangesPerLinkAndPerDirection) {
  Topology t = parse_topology(R"(
name: t
dcs: [{name: east, hosts: 1}, {name: west, hosts: 1}]
wan:
  - between: [east, west]
    delay: 20ms
    changes:
      - {at: 0s, rate: 100mbit}
      - {at: 30s, delay: 80ms, loss: 1%}
      - {at: 40s, down: 2s}
    west_to_east:
      changes: [{at: 5s, jitter: 2ms}]
)",
                              "c.yaml");
  const WanLink& l = t.wan.at(0);
  ASSERT_EQ(l.a_to_b_changes.size(), 4u) << "down: 2s is a cut and a restore";
  EXPECT_EQ(l.a_to_b_changes[0].at_us, 0u);
  EXPECT_EQ(*l.a_to_b_changes[0].rate_bps, 100'000'000u);
  EXPECT_EQ(*l.a_to_b_changes[1].delay_us, 80'000u);
  EXPECT_EQ(*l.a_to_b_changes[1].loss_pct, 1.0);
  EXPECT_FALSE(l.a_to_b_changes[1].rate_bps) << "only what the change names";
  EXPECT_TRUE(*l.a_to_b_changes[2].down);
  EXPECT_EQ(l.a_to_b_changes[3].at_us, 42'000'000u);
  EXPECT_FALSE(*l.a_to_b_changes[3].down);
  EXPECT_EQ(l.a_to_b_changes[2].pos.line, 10);
  ASSERT_EQ(l.b_to_a_changes.size(), 1u) << "the direction's list replaces the link's";
  EXPECT_EQ(*l.b_to_a_changes[0].jitter_us, 2'000u);
  EXPECT_EQ(l.a_to_b.delay_us, 20'000u) << "changes leave the built parameters alone";
}

TEST(Topology, TraceFileBecomesChanges) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("xdc-trace-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "wan.csv") << "t_ms,delay_ms,rate_mbit,loss_pct\n0,20,100,0\n"
                                    "# a comment\n\n1000,25.5,50,0.1\n2000,30,10,0\n";
  std::ofstream(dir / "topo.yaml") << "name: t\ndcs: [{name: east, hosts: 1}, {name: west, "
                                      "hosts: 1}]\nwan:\n  - between: [east, west]\n"
                                      "    west_to_east: {trace: {file: wan.csv, compress: 10}}\n";
  Topology t = load_topology((dir / "topo.yaml").string());
  const WanLink& l = t.wan.at(0);
  EXPECT_TRUE(l.a_to_b_changes.empty());
  ASSERT_EQ(l.b_to_a_changes.size(), 3u);
  EXPECT_EQ(l.b_to_a_changes[1].at_us, 100'000u) << "1000 ms compressed 10 x";
  EXPECT_EQ(*l.b_to_a_changes[1].delay_us, 25'500u);
  EXPECT_EQ(*l.b_to_a_changes[1].rate_bps, 50'000'000u);
  EXPECT_EQ(*l.b_to_a_changes[1].loss_pct, 0.1);
  EXPECT_EQ(l.b_to_a_changes[1].pos.line, 5);

  // Bad rows: FILE:LINE:COL and what was expected.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"0,20,100\n", ":1:1: expected 4 columns t_ms,delay_ms,rate_mbit,loss_pct, got 3"},
      {"0,20,fast,0\n", ":1:6: rate_mbit: expected a number in 0.001..1e+07, got \"fast\""},
      {"0,20,100,0\n0,20,100,0\n", ":2:1: t_ms: expected rows in time order"},
      {"-5,20,100,0\n", ":1:1: t_ms: expected a number in 0..1e+09, got \"-5\""},
      {"0,-1,100,0\n", ":1:3: delay_ms: expected a number in 0..60000, got \"-1\""},
      {"0,20,0,0\n", ":1:6: rate_mbit: expected a number in 0.001..1e+07, got \"0\""},
      {"0,20,100,101\n", ":1:10: loss_pct: expected a number in 0..100, got \"101\""},
      {"t_ms,delay,rate,loss\n", ":1:1: expected the header \"t_ms,delay_ms,rate_mbit,loss_pct\""},
      {"# nothing\n", ":1:1: expected rows of t_ms,delay_ms,rate_mbit,loss_pct, got none"},
  };
  for (const auto& [csv, says] : bad) {
    std::ofstream(dir / "bad.csv") << csv;
    try {
      load_trace_csv((dir / "bad.csv").string());
      ADD_FAILURE() << csv << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find((dir / "bad.csv").string() + says), std::string::npos)
          << e.what();
    }
  }
  std::ofstream(dir / "none.yaml") << "name: t\ndcs: [{name: east, hosts: 1}, {name: west, "
                                      "hosts: 1}]\nwan:\n  - between: [east, west]\n"
                                      "    trace: missing.csv\n";
  try {
    load_topology((dir / "none.yaml").string());
    ADD_FAILURE() << "a missing trace file was accepted";
  } catch (const InputError& e) {
    // At the key that names it (none.yaml line 5, column 12), naming the file.
    EXPECT_EQ(std::string(e.what()).rfind((dir / "none.yaml").string() +
                                              ":5:12: wan[0].trace: cannot read the "
                                              "trace file " +
                                              (dir / "missing.csv").string(),
                                          0),
              0u)
        << e.what();
  }
  fs::remove_all(dir);
}

TEST(Topology, MahimahiTraceBecomesRateChangesAndLoops) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("xdc-mahi-" + std::to_string(getpid()));
  fs::create_directories(dir);
  {
    // 100 ms with one MTU packet per ms (12 Mbit/s), 100 ms with two (24 Mbit/s).
    std::ofstream f(dir / "up.mahi");
    for (int ms = 0; ms < 200; ++ms)
      for (int k = 0; k < (ms < 100 ? 1 : 2); ++k) f << ms << "\n";
  }
  const auto one = load_mahimahi_trace((dir / "up.mahi").string(), 100'000);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0].at_us, 0u);
  EXPECT_EQ(*one[0].rate_bps, 12'000'000u);
  EXPECT_EQ(one[1].at_us, 100'000u);
  EXPECT_EQ(*one[1].rate_bps, 24'000'000u);
  EXPECT_FALSE(one[0].delay_us) << "Mahimahi gives the rate only";
  std::ofstream(dir / "topo.yaml")
      << "name: t\ndcs: [{name: east, hosts: 1}, {name: west, hosts: 1}]\nwan:\n"
         "  - between: [east, west]\n"
         "    east_to_west: {trace: {file: up.mahi, format: mahimahi, window: 100ms, loop: "
         "true}}\n";
  const auto looped = load_topology((dir / "topo.yaml").string()).wan.at(0).a_to_b_changes;
  ASSERT_GE(looped.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {  // the 200 ms period again and again
    EXPECT_EQ(looped[i].at_us, 100'000u * i);
    EXPECT_EQ(*looped[i].rate_bps, i % 2 ? 24'000'000u : 12'000'000u);
  }
  EXPECT_LE(looped.back().at_us, kLoopHorizonUs);
  EXPECT_LE(looped.size(), kLoopMaxSteps);
  // A trace spanning days of 1 ms windows (it held one counter per window: 2 GB, found by
  // tests/fuzz's mahimahi target): a blackout of one packet's worth between its deliveries.
  std::ofstream(dir / "days.mahi") << "0\n0\n278888888\n278888888\n278888888\n";
  const auto days = load_mahimahi_trace((dir / "days.mahi").string(), 1'000);
  ASSERT_EQ(days.size(), 3u);
  EXPECT_EQ(*days[0].rate_bps, 24'000'000u);  // 2 MTU packets in 1 ms
  EXPECT_EQ(days[1].at_us, 1'000u);
  EXPECT_EQ(*days[1].rate_bps, 12'000'000u);  // the blackout
  EXPECT_EQ(days[2].at_us, 278'888'888'000u);
  EXPECT_EQ(*days[2].rate_bps, 36'000'000u);
  // A CSV loops with its last row lasting as long as the interval before it.
  std::ofstream(dir / "wan.csv") << "0,20,100,0\n1000,30,50,0\n";
  const auto csv = loop_changes(load_trace_csv((dir / "wan.csv").string()), 2'000'000);
  EXPECT_EQ(csv[2].at_us, 2'000'000u);
  EXPECT_EQ(*csv[3].delay_us, 30'000u);
  // Bad files and keys: FILE:LINE:COL.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"0\n1.5\n", ":2:1: delivery time (ms): expected whole milliseconds"},
      {"5\n3\n", ":2:1: delivery time (ms): expected nondecreasing times, after 5, got 3"},
      {"0\nsoon\n", ":2:1: delivery time (ms): expected a number in 0..1e+09, got \"soon\""},
      {"# empty\n", ":1:1: expected one delivery time (ms) per line, got none"},
  };
  for (const auto& [text, says] : bad) {
    std::ofstream(dir / "bad.mahi") << text;
    try {
      load_mahimahi_trace((dir / "bad.mahi").string(), 100'000);
      ADD_FAILURE() << text << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find((dir / "bad.mahi").string() + says), std::string::npos)
          << e.what();
    }
  }
  std::ofstream(dir / "win.yaml") << "name: t\ndcs: [{name: east, hosts: 1}, {name: west, "
                                     "hosts: 1}]\nwan:\n  - between: [east, west]\n"
                                     "    trace: {file: wan.csv, window: 100ms}\n";
  try {
    load_topology((dir / "win.yaml").string());
    ADD_FAILURE() << "window: on a CSV trace was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("win.yaml:5:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("window: goes with format: mahimahi"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

TEST(Topology, TwoDcSketchFromDesign) {
  Topology t = parse_topology(R"(
name: two-dc
shaping: auto
intra_dc: {rate: 10gbit, delay: 50us}
dcs:
  - {name: east, hosts: 2}
  - {name: west, hosts: [w1, w2]}
wan:
  - between: [east, west]
    delay: 20ms
    jitter: {value: 1ms, distribution: normal}
    loss: 0.1%
    rate: 1gbit
    queue: auto
    west_to_east: {delay: 25ms}
)",
                              "two.yaml");
  EXPECT_EQ(t.name, "two-dc");
  EXPECT_EQ(t.source_file, "two.yaml");
  EXPECT_EQ(t.shaping, netem::Backend::kAuto);
  EXPECT_EQ(t.intra_dc.rate_bps, 10'000'000'000u);
  EXPECT_EQ(t.intra_dc.delay_us, 50u);
  ASSERT_EQ(t.dcs.size(), 2u);
  ASSERT_EQ(t.dcs[0].hosts.size(), 2u);
  EXPECT_EQ(t.dcs[0].hosts[1].name, "east-h2");
  EXPECT_EQ(t.dcs[0].hosts[1].dc, "east");
  EXPECT_EQ(t.dcs[0].hosts[1].index, 1);
  EXPECT_EQ(t.dcs[1].hosts[0].name, "w1");
  EXPECT_EQ(t.dcs[1].pos.line, 7);
  EXPECT_EQ(t.find_host("w2")->dc, "west");
  EXPECT_EQ(t.find_host("w3"), nullptr);
  EXPECT_EQ(t.find_dc("west")->hosts.size(), 2u);
  std::vector<std::string> names;
  for (const Host* h : t.hosts()) names.push_back(h->name);
  EXPECT_EQ(names, (std::vector<std::string>{"east-h1", "east-h2", "w1", "w2"}));

  ASSERT_EQ(t.wan.size(), 1u);
  const WanLink& l = t.wan[0];
  EXPECT_EQ(l.a, "east");
  EXPECT_EQ(l.b, "west");
  EXPECT_EQ(l.pos.line, 9);
  EXPECT_EQ(l.a_to_b.delay_us, 20'000u);
  EXPECT_EQ(l.b_to_a.delay_us, 25'000u);  // the override
  for (const netem::LinkParams* p : {&l.a_to_b, &l.b_to_a}) {
    EXPECT_EQ(p->jitter_us, 1'000u);
    EXPECT_EQ(p->jitter_dist, JitterDist::kNormal);
    EXPECT_EQ(p->loss.kind, LossModel::Kind::kRandom);
    EXPECT_DOUBLE_EQ(p->loss.p_pct, 0.1);
    EXPECT_EQ(p->rate_bps, 1'000'000'000u);
    EXPECT_EQ(p->queue_pkts, 0u);
  }
  EXPECT_EQ(&l.egress("west"), &l.b_to_a);
  EXPECT_EQ(l.peer("west"), "east");
  EXPECT_EQ(t.find_link("west", "east"), &l);
  EXPECT_EQ(t.find_link("east", "north"), nullptr);
}

TEST(Topology, SingleDcWithoutWanIsValid) {
  Topology t = parse_topology("name: solo\ndcs:\n  - {name: lab, hosts: 4}\n", "solo.yaml");
  EXPECT_EQ(t.hosts().size(), 4u);
  EXPECT_TRUE(t.wan.empty());
  EXPECT_EQ(t.shaping, netem::Backend::kAuto);
  EXPECT_EQ(t.intra_dc.rate_bps, 10'000'000'000u);  // default
  EXPECT_TRUE(compute_routes(t).next.empty());
}

const char* kTwo = "name: t\ndcs:\n  - {name: a, hosts: 1}\n  - {name: b, hosts: 1}\nwan:\n";

TEST(Topology, OverridesArePartialAndPerDirection) {
  Topology t = parse_topology(std::string(kTwo) + R"(
  - between: [a, b]
    delay: 10ms
    rate: 100mbit
    loss: 1%
    a_to_b: {rate: 50mbit, jitter: 2ms}
    b_to_a: {loss: 0%, queue: 500}
)",
                              "o.yaml");
  const WanLink& l = t.wan[0];
  EXPECT_EQ(l.a_to_b.delay_us, 10'000u);
  EXPECT_EQ(l.a_to_b.rate_bps, 50'000'000u);
  EXPECT_EQ(l.a_to_b.jitter_us, 2'000u);
  EXPECT_DOUBLE_EQ(l.a_to_b.loss.p_pct, 1);
  EXPECT_EQ(l.b_to_a.delay_us, 10'000u);
  EXPECT_EQ(l.b_to_a.rate_bps, 100'000'000u);
  EXPECT_EQ(l.b_to_a.jitter_us, 0u);
  EXPECT_EQ(l.b_to_a.loss.kind, LossModel::Kind::kNone);  // "0%" = no loss
  EXPECT_EQ(l.b_to_a.queue_pkts, 500u);
  EXPECT_EQ(l.a_to_b.queue_pkts, 0u);
}

TEST(Topology, LossModelsJitterAndExtras) {
  Topology t = parse_topology(std::string(kTwo) + R"(
  - between: [a, b]
    delay: 5ms
    jitter: {value: 8ms, distribution: paretonormal, correlation: 25%}
    loss: {model: gemodel, p: 1%, r: 10%}
    duplicate: 0.1%
    reorder: 25%
    corrupt: 0.01%
    b_to_a:
      loss: {model: random, p: 2%, correlation: 30%}
      jitter: 1ms
)",
                              "m.yaml");
  const netem::LinkParams& ab = t.wan[0].a_to_b;
  // Jitter may exceed the delay, as in netem: a sampled delay below zero counts as zero.
  EXPECT_EQ(ab.jitter_us, 8'000u);
  EXPECT_EQ(ab.jitter_dist, JitterDist::kParetoNormal);
  EXPECT_DOUBLE_EQ(ab.jitter_correlation_pct, 25);
  EXPECT_EQ(ab.loss.kind, LossModel::Kind::kGilbertElliott);
  EXPECT_DOUBLE_EQ(ab.loss.p_pct, 1);
  EXPECT_DOUBLE_EQ(ab.loss.r_pct, 10);
  EXPECT_DOUBLE_EQ(ab.loss.h_pct, 0);    // default: the bad state loses everything
  EXPECT_DOUBLE_EQ(ab.loss.k_pct, 100);  // default: the good state loses nothing
  EXPECT_DOUBLE_EQ(ab.duplicate_pct, 0.1);
  EXPECT_DOUBLE_EQ(ab.reorder_pct, 25);
  EXPECT_DOUBLE_EQ(ab.corrupt_pct, 0.01);
  const netem::LinkParams& ba = t.wan[0].b_to_a;
  EXPECT_EQ(ba.loss.kind, LossModel::Kind::kRandom);
  EXPECT_DOUBLE_EQ(ba.loss.p_pct, 2);
  EXPECT_DOUBLE_EQ(ba.loss.correlation_pct, 30);
  // A scalar jitter override changes the amount and keeps the inherited distribution.
  EXPECT_EQ(ba.jitter_us, 1'000u);
  EXPECT_EQ(ba.jitter_dist, JitterDist::kParetoNormal);
}

TEST(Topology, GilbertElliottFullySpecified) {
  Topology t = parse_topology(std::string(kTwo) + R"(
  - between: [a, b]
    loss: {model: gemodel, p: 1%, r: 10%, h: 80%, k: 0.1%}
)",
                              "g.yaml");
  // YAML h/k are tc's loss probabilities (bad, good); LinkParams keeps delivery ones.
  const LossModel& m = t.wan[0].b_to_a.loss;
  EXPECT_DOUBLE_EQ(m.h_pct, 20);
  EXPECT_DOUBLE_EQ(m.k_pct, 99.9);
}

TEST(Topology, ShapingAndDescription) {
  Topology t = parse_topology(
      "name: t\ndescription: a lab\nshaping: userspace\ndcs: [{name: a, hosts: [x]}]\n", "s");
  EXPECT_EQ(t.shaping, netem::Backend::kUserspace);
  EXPECT_EQ(t.description, "a lab");
}

TEST(Topology, NetworkBackendDefaultsToNativeAndReadsMininet) {
  const std::string dcs = "dcs: [{name: a, hosts: [x]}]\n";
  EXPECT_EQ(parse_topology("name: t\n" + dcs, "n").backend, NetworkBackend::kNative);
  Topology t = parse_topology("name: t\nnetwork: {backend: mininet}\n" + dcs, "n");
  EXPECT_EQ(t.backend, NetworkBackend::kMininet);
  EXPECT_EQ(to_string(t.backend), "mininet");
}

TEST(Topology, NameLimitsAreInclusive) {
  // 10-char network, 11-char DC whose generated names reach exactly 15 chars.
  Topology t = parse_topology(
      "name: abcdefghij\ndcs:\n  - {name: abcdefghijk, hosts: 99}\n"
      "  - {name: b, hosts: [abcdefghijklmno]}\n"
      "wan: [{between: [abcdefghijk, b]}]\n",
      "n.yaml");
  EXPECT_EQ(t.dcs[0].hosts.back().name, "abcdefghijk-h99");
  EXPECT_EQ(t.dcs[0].hosts.back().name.size(), kMaxHostName);
}

TEST(Topology, LoadTopologyReportsUnreadableFile) {
  try {
    load_topology("/nonexistent/topo.yaml");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.pos().file, "/nonexistent/topo.yaml");
    EXPECT_NE(std::string(e.what()).find("cannot read"), std::string::npos);
  }
}

}  // namespace
}  // namespace xdc::topo
