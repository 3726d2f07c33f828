// Time dilation (harness/experiment/experiment.h): the network as built (delays x k, rates / k,
// packets unchanged) and the one place where it is undone (the ranks' files as read).
#include <gtest/gtest.h>

#include "harness/run/results.h"
#include "harness/topology/topology.h"
#include "netem/shaper/queue_sizing.h"

namespace {

const char* kTopo = R"(name: d
intra_dc: {rate: 10gbit, delay: 50us}
dcs:
  - {name: a, hosts: 1}
  - {name: b, hosts: 1}
wan:
  - between: [a, b]
    delay: 5ms
    jitter: 1ms
    loss: 0.1%
    rate: 10gbit
    queue: 500
    b_to_a: {delay: 7ms, rate: 5gbit}
)";

TEST(TimeDilation, StretchesDelaysAndDividesRates) {
  const auto t = xdc::topo::parse_topology(kTopo, "d.yaml");
  const auto d = xdc::topo::time_dilated(t, 20);
  const auto& ab = d.wan[0].a_to_b;
  const auto& ba = d.wan[0].b_to_a;
  EXPECT_EQ(ab.delay_us, 100'000u);
  EXPECT_EQ(ab.jitter_us, 20'000u);
  EXPECT_EQ(ab.rate_bps, 500'000'000u);
  EXPECT_EQ(ba.delay_us, 140'000u);
  EXPECT_EQ(ba.rate_bps, 250'000'000u);
  EXPECT_EQ(d.intra_dc.rate_bps, 500'000'000u);
  EXPECT_EQ(d.intra_dc.delay_us, 1'000u);
  // Packets and probabilities are what TCP must see unchanged.
  EXPECT_EQ(ab.queue_pkts, 500u);
  EXPECT_EQ(ab.loss.p_pct, t.wan[0].a_to_b.loss.p_pct);
  EXPECT_EQ(ab.jitter_dist, t.wan[0].a_to_b.jitter_dist);
  // k = 1 is the identity; 1 / k undoes k.
  EXPECT_EQ(xdc::topo::time_dilated(t, 1).wan[0].a_to_b.rate_bps, 10'000'000'000u);
  const auto back = xdc::netem::time_dilated(ab, 1.0 / 20);
  EXPECT_EQ(back.delay_us, 5'000u);
  EXPECT_EQ(back.jitter_us, 1'000u);
  EXPECT_EQ(back.rate_bps, 10'000'000'000u);
  // An unlimited rate stays unlimited.
  xdc::netem::LinkParams open;
  open.delay_us = 1000;
  EXPECT_EQ(xdc::netem::time_dilated(open, 10).rate_bps, 0u);
}

TEST(TimeDilation, KeepsTheQueuesInPackets) {
  // Automatic queues follow rate x delay, which dilation leaves unchanged.
  auto t = xdc::topo::parse_topology(kTopo, "d.yaml");
  auto p = t.wan[0].a_to_b;
  p.queue_pkts = 0;
  for (double k : {2.0, 10.0, 20.0}) {
    const auto d = xdc::netem::time_dilated(p, k);
    EXPECT_EQ(xdc::netem::rate_queue_pkts(d), xdc::netem::rate_queue_pkts(p)) << k;
    EXPECT_EQ(xdc::netem::delay_queue_pkts(d), xdc::netem::delay_queue_pkts(p)) << k;
  }
}

TEST(TimeDilation, FixesAutomaticQueuesAtTheirUndilatedSize) {
  // A 0 ms WAN (the atlas sweep's first point): the automatic queue is sized from the 1 ms
  // floor, which must not shrink with the rate.
  auto t = xdc::topo::parse_topology(kTopo, "d.yaml");
  auto& p = t.wan[0].a_to_b;
  p.queue_pkts = 0;
  p.delay_us = 0;
  p.jitter_us = 0;
  const uint32_t undilated = xdc::netem::rate_queue_pkts(p);
  EXPECT_EQ(undilated, 1239u);  // 1.5 x 10 Gbit/s x 1 ms in 1514-byte frames
  const auto d = xdc::topo::time_dilated(t, 20);
  EXPECT_EQ(d.wan[0].a_to_b.rate_bps, 500'000'000u);
  EXPECT_EQ(xdc::netem::rate_queue_pkts(d.wan[0].a_to_b), undilated);
}

TEST(TimeDilation, RankFilesAreReadBackUndilated) {
  xdc::run::RankFiles f;
  xdc::trace::Event e;
  e.rank = 0;
  e.start_ns = 2'000'000'000;
  e.end_ns = 3'000'000'000;
  e.bytes = 41943040;
  f.trace.events.push_back(e);
  xdc::worker::RankReport r;
  r.iteration_start_ns = {1'000'000'000};
  r.iteration_end_ns = {11'000'000'000};
  r.waits = {{"RECV_F", 500'000'000}, {"ALLREDUCE", 0}};
  f.reports.push_back(r);
  xdc::run::undilate(f, 10);
  EXPECT_EQ(f.trace.events[0].start_ns, 200'000'000);
  EXPECT_EQ(f.trace.events[0].end_ns, 300'000'000);
  EXPECT_EQ(f.trace.events[0].bytes, 41943040) << "sizes are not dilated";
  EXPECT_EQ(f.reports[0].iteration_start_ns[0], 100'000'000);
  EXPECT_EQ(f.reports[0].iteration_end_ns[0], 1'100'000'000);
  EXPECT_DOUBLE_EQ(f.reports[0].waits["RECV_F"].get<double>(), 50'000'000);
  // The analysis then sees the undilated iteration.
  const auto its = xdc::run::split_iterations(f);
  ASSERT_EQ(its.size(), 1u);
  EXPECT_EQ(its[0].events.size(), 1u);
}

}  // namespace
