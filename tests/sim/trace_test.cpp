// Trace writers: Chrome JSON structure (tracks, flows) and CSV round trip.
#include <gtest/gtest.h>

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
}
