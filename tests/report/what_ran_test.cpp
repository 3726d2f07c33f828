// "What ran": the network drawn from the experiment as the parser loads it (DCs, hosts,
// ranks, each WAN link labelled per direction, measured figures under it), the settings
// box, and the facts beside the drawing.
#include "harness/report/what_ran.h"

#include <gtest/gtest.h>

#include "harness/report/topology_svg.h"

namespace xdc::report {
namespace {

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// Two DCs, the demo's: the experiment's `wan:` override over the topology's link.
run::Experiment two_dc(const std::string& extra = "") {
  return run::parse_experiment(R"(name: two-dc
topology:
  name: two-dc
  intra_dc: {rate: 10gbit, delay: 50us}
  dcs:
    - {name: east, hosts: 2}
    - {name: west, hosts: [w1, w2, w3]}
  wan:
    - between: [east, west]
      delay: 20ms
      jitter: 1ms
      loss: 0.1%
      rate: 1gbit
wan: {loss: 0%, delay: 40ms}
model: {preset: tiny, layers: 4}
compute: real
pipeline: {stages: 4, placement: [east-h1, east-h2, w1, w1]}
microbatches: 8
microbatch_size: 4
iterations: 8
warmup: 2
schedules: [1f1b, overlap]
)" + extra,
                               "two-dc.yaml");
}

TEST(ReportTopology, DcsHostsRanksAndTheLinkAsConfigured) {
  const run::Experiment e = two_dc();
  const std::string svg = topology_svg(e.topology, e.rank_hosts(), std::nullopt);
  EXPECT_EQ(count(svg, "class=\"dc\""), 2u);
  EXPECT_EQ(count(svg, "class=\"host\""), 5u);
  EXPECT_NE(svg.find(">east-h2</text>"), std::string::npos);
  EXPECT_NE(svg.find(">ranks 2, 3</text>"), std::string::npos);  // both on w1
  EXPECT_NE(svg.find(">no rank</text>"), std::string::npos);     // w2, w3
  EXPECT_NE(svg.find(">LAN 10gbit, 50us</text>"), std::string::npos);
  // The override applied: 40 ms, no loss; both directions alike.
  EXPECT_NE(svg.find(">each way: delay 40ms, jitter 1ms, rate 1gbit</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"wan\""), 1u);
}

TEST(ReportTopology, DirectionsThatDifferAreSaidApartWithWhatWasMeasured) {
  const run::Experiment e = run::parse_experiment(R"(name: x
topology:
  name: x
  dcs: [{name: a, hosts: 1}, {name: b, hosts: 1}]
  wan: [{between: [a, b], delay: 10ms, rate: 100mbit, b_to_a: {delay: 30ms}}]
compute: {modeled: {f: 1ms, b: 1ms}}
pipeline: {stages: 2, placement: [a-h1, b-h1]}
microbatches: 2
schedules: [1f1b]
)",
                                                  "x.yaml");
  const auto check = nlohmann::json::parse(R"({"links": [
    {"from": "a", "to": "b", "measured": {"rtt_median_ms": 40.3, "goodput_mbit": 94.2}},
    {"from": "b", "to": "a", "measured": {"rtt_median_ms": 40.4}}]})");
  const std::string svg = topology_svg(e.topology, e.rank_hosts(), check, {"under the link"});
  EXPECT_NE(svg.find(">a → b: delay 10ms, rate 100mbit</text>"), std::string::npos);
  EXPECT_NE(svg.find(">b → a: delay 30ms, rate 100mbit</text>"), std::string::npos);
  EXPECT_NE(svg.find(">a → b measured: RTT 40.3 ms, 94 Mbit/s</text>"), std::string::npos);
  EXPECT_NE(svg.find(">b → a measured: RTT 40.4 ms</text>"), std::string::npos);
  EXPECT_NE(svg.find(">under the link</text>"), std::string::npos);
}

// Three DCs all joined: neighbours in the row across their gaps, the outer pair in a lane
// under the row, its measured lines not drawn (they are not that link's alone).
TEST(ReportTopology, ALinkBetweenDcsApartRunsUnderTheRow) {
  const run::Experiment e = run::parse_experiment(R"(name: tri
topology:
  name: tri
  dcs: [{name: a, hosts: 1}, {name: b, hosts: 1}, {name: c, hosts: 1}]
  wan:
    - {between: [a, b], delay: 10ms}
    - {between: [b, c], delay: 20ms}
    - {between: [a, c], delay: 30ms}
compute: {modeled: {f: 1ms, b: 1ms}}
pipeline: {stages: 3, placement: [a-h1, b-h1, c-h1]}
microbatches: 3
schedules: [1f1b]
)",
                                                  "tri.yaml");
  const std::string svg = topology_svg(e.topology, e.rank_hosts(), std::nullopt, {"not here"});
  EXPECT_EQ(count(svg, "class=\"wan\""), 2u);
  EXPECT_EQ(count(svg, "class=\"wan lane\""), 1u);
  EXPECT_NE(svg.find(">each way: delay 30ms, rate unlimited</text>"), std::string::npos);
  EXPECT_EQ(svg.find("not here"), std::string::npos);
}

TEST(ReportTopology, RanksInWords) {
  EXPECT_EQ(ranks_text({}), "");
  EXPECT_EQ(ranks_text({3}), "rank 3");
  EXPECT_EQ(ranks_text({2, 3}), "ranks 2, 3");
  EXPECT_EQ(ranks_text({0, 1, 2, 3, 8, 10, 11}), "ranks 0-3, 8, 10, 11");
}

TEST(ReportWhatRan, NonDefaultSettingsStatedPlainlyOrHighlighted) {
  RunData d;
  EXPECT_NE(non_default_html(d).find("not recorded"), std::string::npos);
  d.non_default_settings.emplace();
  EXPECT_NE(non_default_html(d).find("class=\"settings stock\""), std::string::npos);
  EXPECT_NE(non_default_html(d).find("none (stock OpenMPI and TCP)"), std::string::npos);
  d.non_default_settings = {"mpi.connections.wan=8", "tcp.congestion=bbr<"};
  const std::string box = non_default_html(d);
  EXPECT_NE(box.find("class=\"settings changed\""), std::string::npos);
  EXPECT_NE(box.find("<code>mpi.connections.wan=8</code>"), std::string::npos);
  EXPECT_NE(box.find("<code>tcp.congestion=bbr&lt;</code>"), std::string::npos);
}

TEST(ReportWhatRan, TheExperimentDrawnWithItsFactsAndGoodputUnderTheLink) {
  RunData d;
  d.recorded = two_dc();
  d.non_default_settings = run::non_default_settings(*d.recorded);
  d.backend = "userspace";
  d.compute_costs = "real on cpu";
  ScheduleData a, b;
  a.name = "1f1b";
  a.repeats = 3;
  a.wan_goodput_mbit_p50 = 17.4;
  a.simulated_wan_goodput_mbit_p50 = 17.2;
  a.wan_connections = 1;
  b.name = "overlap";
  b.ok = false;
  d.schedules = {a, b};
  d.setup = {{"kernel", "Linux 6"}};
  const std::string html = what_ran_html(d);
  EXPECT_NE(html.find("none (stock OpenMPI and TCP)"), std::string::npos);
  EXPECT_NE(html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"topo\""),
            std::string::npos);
  EXPECT_NE(html.find(">goodput per WAN message, median, 1 connection:</text>"), std::string::npos);
  EXPECT_NE(html.find(">1f1b: 17 Mbit/s (sim 17)</text>"), std::string::npos);
  EXPECT_NE(html.find("<dd>2 DCs, 5 hosts (topology two-dc); shaping userspace</dd>"),
            std::string::npos);
  EXPECT_NE(html.find("<dd>mini Llama: 4 layers, dim 128"), std::string::npos);
  EXPECT_NE(html.find("<dd>4 stages (4 ranks); 8 microbatches of 4</dd>"), std::string::npos);
  EXPECT_NE(html.find("<dd>8 measured after 2 warm-up, each schedule run 3 times</dd>"),
            std::string::npos);
  EXPECT_NE(html.find("<dd>1f1b, overlap <span class=\"bad\">failed</span></dd>"),
            std::string::npos);
  // The full record folded (closed) under it.
  EXPECT_NE(html.find("<details class=\"env\"><summary>"), std::string::npos);
  EXPECT_EQ(html.find("<details open"), std::string::npos);
  EXPECT_NE(html.find("<dt>kernel</dt><dd>Linux 6</dd>"), std::string::npos);

  // The hosts' TCP, where summary.json recorded it: timeouts and segments sent again.
  EXPECT_EQ(html.find("TCP on the hosts"), std::string::npos);
  d.schedules[0].tcp_timeouts = 82;
  d.schedules[0].tcp_retransmitted_share = 0.0371;
  d.schedules[1].tcp_timeouts = 1;
  EXPECT_NE(what_ran_html(d).find("<dt>TCP on the hosts</dt><dd>1f1b: 82 retransmission timeouts, "
                                  "3.71% of segments sent again; overlap: 1 retransmission "
                                  "timeout (a timeout stalls"),
            std::string::npos)
      << what_ran_html(d);

  // Tensor-parallel all-reduces a timer longer than their median (summary.json tp_stalls).
  EXPECT_EQ(html.find("TP all-reduces 200 ms"), std::string::npos);
  d.schedules[0].tp_stalled = 16;
  d.schedules[0].tp_records = 2112;
  d.schedules[0].tp_stall_excess_s = 3.532;
  d.schedules[1].tp_stalled = 0;
  EXPECT_NE(what_ran_html(d).find("<dt>TP all-reduces 200 ms or more over their median</dt><dd>"
                                  "1f1b: 16 of 2112 records, 3.53 s beyond their median (as long "),
            std::string::npos)
      << what_ran_html(d);
  EXPECT_EQ(what_ran_html(d).find("overlap: 0 of"), std::string::npos);

  // A setting off stock, as a simulation's report derives it from the experiment.
  d.non_default_settings = run::non_default_settings(two_dc("mpi: {connections: {wan: 8}}\n"));
  EXPECT_NE(what_ran_html(d).find("<code>mpi.connections.wan=8</code>"), std::string::npos);
}

// A `workload:` run: the user's program, its processes and steps; not xdc-worker's model,
// pipeline and iterations (the experiment's defaults, which never ran).
TEST(ReportWhatRan, AWorkloadShowsTheProgramNotTheWorkersDefaults) {
  RunData d;
  d.recorded = run::parse_experiment(R"(name: byo
topology:
  name: byo-two-dc
  dcs:
    - {name: east, hosts: [e1]}
    - {name: west, hosts: [w1]}
  wan:
    - {between: [east, west], delay: 20ms, rate: 1gbit}
workload:
  command: [/usr/bin/python3, ddp.py, --steps, "20"]
  hosts: [e1, w1]
  launcher: torch
  warmup_steps: 2
)",
                                     "byo.yaml");
  d.backend = "userspace";
  ScheduleData w;
  w.name = "workload";
  w.iterations = 18;
  d.schedules = {w};
  const std::string html = what_ran_html(d);
  EXPECT_NE(html.find("<dd><code>/usr/bin/python3 ddp.py --steps 20</code></dd>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<dd>2 (1 per host on e1, w1), launcher torch</dd>"), std::string::npos);
  EXPECT_NE(html.find("<dd>18 measured after 2 warm-up</dd>"), std::string::npos);
  EXPECT_EQ(html.find("mini Llama"), std::string::npos);
  EXPECT_EQ(html.find("microbatches"), std::string::npos);
  EXPECT_EQ(html.find("<dt>schedules</dt>"), std::string::npos);
}

}  // namespace
}  // namespace xdc::report
