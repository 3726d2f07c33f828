// Trace writers: Chrome JSON structure (tracks, flows) and CSV round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "harness/sim/simulator.h"
#include "harness/trace/analysis.h"
#include "harness/trace/chrome.h"
#include "harness/trace/gantt.h"
#include "workloads/schedule/generators.h"

using namespace xdc;

namespace {
trace::Trace small_trace() {
  sched::Params x;
  x.ranks = 3;
  x.microbatches = 4;
  auto s = sched::generate("zbh1", x);
  return sim::simulate(s, sim::constant_costs(3, 1000, 1000, 1000, 4096),
                       sim::LinkModel::uniform(3, {500, 1e9}));
}
}  // namespace

TEST(Trace, ChromeJsonHasTracksAndFlows) {
  auto t = small_trace();
  auto doc = nlohmann::json::parse(trace::to_chrome_json(t));
  ASSERT_TRUE(doc.contains("traceEvents"));
  int flows_out = 0, flows_in = 0;
  std::set<int> pids;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    pids.insert(e["pid"].get<int>());
    if (e.contains("flow_out")) ++flows_out;
    if (e.contains("flow_in")) ++flows_in;
    if (e["cat"] == "F") {
      EXPECT_EQ(e["tid"], 0);
    }
    if (e["cat"] == "SEND_F") {
      EXPECT_NE(e["tid"], 0);
    }
  }
  EXPECT_EQ(pids.size(), 3u);
  // 2 boundaries x 4 microbatches x 2 directions.
  EXPECT_EQ(flows_out, 16);
  EXPECT_EQ(flows_in, 16);
}

// Three iterations back to back, as a measured trace holds them: each RECV's flow must
// bind to the SEND of its own iteration (the one that ended before it), ids never reused.
TEST(Trace, ChromeFlowsBindWithinEachIteration) {
  const trace::Trace one = small_trace();
  int64_t span = 0;
  for (const auto& e : one.events) span = std::max(span, e.end_ns);
  trace::Trace t = one;
  t.events.clear();
  for (int it = 0; it < 3; ++it)
    for (auto e : one.events) {
      e.start_ns += it * (span + 1000);
      e.end_ns += it * (span + 1000);
      t.events.push_back(e);
    }
  auto doc = nlohmann::json::parse(trace::to_chrome_json(t));
  std::map<int, double> send_ts;  // bind_id -> start of its SEND (us)
  std::map<int, int> recvs_per_id;
  int recvs = 0;
  for (const auto& e : doc["traceEvents"])
    if (e.contains("flow_out")) {
      EXPECT_FALSE(send_ts.count(e["bind_id"].get<int>())) << "flow id reused";
      send_ts[e["bind_id"].get<int>()] = e["ts"].get<double>();
    }
  const double span_us = static_cast<double>(span + 1000) / 1000;
  for (const auto& e : doc["traceEvents"])
    if (e.contains("flow_in")) {
      ++recvs;
      const int id = e["bind_id"].get<int>();
      ASSERT_TRUE(send_ts.count(id));
      ++recvs_per_id[id];
      const double recv_ts = e["ts"].get<double>();
      EXPECT_LE(send_ts[id], recv_ts + e["dur"].get<double>());
      EXPECT_EQ(static_cast<int>(send_ts[id] / span_us), static_cast<int>(recv_ts / span_us))
          << "flow " << id << " crosses iterations";
    }
  EXPECT_EQ(send_ts.size(), 48u);
  EXPECT_EQ(recvs, 48);
  for (auto& [id, n] : recvs_per_id) EXPECT_EQ(n, 1) << "flow " << id;
}

TEST(Trace, CsvRoundTrips) {
  auto t = small_trace();
  auto back = trace::from_csv(trace::to_csv(t));
  ASSERT_EQ(back.events.size(), t.events.size());
  for (size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_EQ(back.events[i].kind, t.events[i].kind);
    EXPECT_EQ(back.events[i].start_ns, t.events[i].start_ns);
    EXPECT_EQ(back.events[i].peer, t.events[i].peer);
  }
  EXPECT_EQ(trace::analyze(back).iteration_ns, trace::analyze(t).iteration_ns);
}

TEST(Trace, TextGantt) {
  sched::Params x;
  x.ranks = 2;
  x.microbatches = 2;
  auto s = sched::generate("1f1b", x);
  auto t =
      sim::simulate(s, sim::constant_costs(2, 1000, 1000, 1000, 0), sim::LinkModel::uniform(2, {}));
  EXPECT_EQ(trace::text_gantt(t),
            "rank 0  |F0 F1 .  .  B0 -- .  B1 --\n"
            "rank 1  |.  F0 B0 -- F1 B1 -- .  .\n");
  // A given quantum is the column width even when the first action starts off its grid
  // (real compute: durations and starts share no gcd; it drew 10^9 columns, or refused).
  for (auto& e : t.events) e.start_ns += 7, e.end_ns += 7;
  EXPECT_EQ(trace::text_gantt(t, 1, 1000, 160),  // 7 ns past the 8th column: a 9th
            "rank 0  |F0 F1 .  .  B0 -- .  B1 -- .\n"
            "rank 1  |.  F0 B0 -- F1 B1 -- .  .  .\n");
}
