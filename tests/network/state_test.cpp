// state.json keeps every parameter of a link: `xdc link set` changes one field of the
// recorded link and `xdc check` measures against it, so a field lost on the way back
// would silently change the link (a Gilbert-Elliott loss turned into plain random loss).
#include "harness/network/state.h"

#include <gtest/gtest.h>

#include "harness/network/names.h"
#include "harness/network/shaping.h"

namespace {
using xdc::netem::JitterDist;
using xdc::netem::LinkParams;
using xdc::netem::LossModel;

LinkParams round_trip(const LinkParams& p) {
  const nlohmann::json j = p;
  return nlohmann::json::parse(j.dump()).get<LinkParams>();
}

TEST(NetworkState, LinkParamsKeepEveryField) {
  LinkParams p;
  p.delay_us = 30000;
  p.jitter_us = 2000;
  p.jitter_dist = JitterDist::kPareto;
  p.jitter_correlation_pct = 25;
  p.loss.kind = LossModel::Kind::kGilbertElliott;
  p.loss.p_pct = 1;
  p.loss.r_pct = 10;
  p.loss.h_pct = 5;
  p.loss.k_pct = 99.5;
  p.rate_bps = 26214000;
  p.queue_pkts = 260;
  p.duplicate_pct = 0.5;
  p.reorder_pct = 2;
  p.corrupt_pct = 0.1;
  const LinkParams q = round_trip(p);
  EXPECT_EQ(q.delay_us, p.delay_us);
  EXPECT_EQ(q.jitter_us, p.jitter_us);
  EXPECT_EQ(q.jitter_dist, p.jitter_dist);
  EXPECT_EQ(q.jitter_correlation_pct, p.jitter_correlation_pct);
  EXPECT_EQ(q.loss.kind, p.loss.kind);
  EXPECT_EQ(q.loss.p_pct, p.loss.p_pct);
  EXPECT_EQ(q.loss.r_pct, p.loss.r_pct);
  EXPECT_EQ(q.loss.h_pct, p.loss.h_pct);
  EXPECT_EQ(q.loss.k_pct, p.loss.k_pct);
  EXPECT_EQ(q.rate_bps, p.rate_bps);
  EXPECT_EQ(q.queue_pkts, p.queue_pkts);
  EXPECT_EQ(q.duplicate_pct, p.duplicate_pct);
  EXPECT_EQ(q.reorder_pct, p.reorder_pct);
  EXPECT_EQ(q.corrupt_pct, p.corrupt_pct);

  LinkParams r;  // correlated random loss, uniform jitter
  r.jitter_us = 1000;
  r.jitter_dist = JitterDist::kUniform;
  r.loss.kind = LossModel::Kind::kRandom;
  r.loss.p_pct = 0.1;
  r.loss.correlation_pct = 30;
  const LinkParams s = round_trip(r);
  EXPECT_EQ(s.jitter_dist, JitterDist::kUniform);
  EXPECT_EQ(s.loss.kind, LossModel::Kind::kRandom);
  EXPECT_EQ(s.loss.correlation_pct, 30);
}

// A state file written before these fields were recorded reads them as a stock link's.
TEST(NetworkState, OldStateReadsMissingFieldsAsDefaults) {
  const auto q = nlohmann::json::parse(R"({"delay_us": 5000, "loss_model": "random",
                                           "loss_pct": 0.5})")
                     .get<LinkParams>();
  const LinkParams stock;
  EXPECT_EQ(q.delay_us, 5000u);
  EXPECT_EQ(q.loss.kind, LossModel::Kind::kRandom);
  EXPECT_EQ(q.jitter_dist, stock.jitter_dist);
  EXPECT_EQ(q.loss.r_pct, stock.loss.r_pct);
  EXPECT_EQ(q.loss.k_pct, stock.loss.k_pct);
}
}  // namespace

// A delay line's loss and jitter draws come from the network's seed and the direction, not
// from the network's name: `xdc run` names its network after its process, so a name in
// the seed made every run draw differently, and every run of one sweep (one process) draw
// the same whatever its experiment's seed.
TEST(NetworkState, DelayLineDrawsFollowTheSeedAndTheDirectionNotTheNetworksName) {
  xdc::net::ShapedLink a;
  a.from = "east", a.to = "west", a.netns = "xdc-r123.gw.east", a.seed = 1;
  xdc::net::ShapedLink b = a;
  b.netns = "xdc-r456.gw.east";
  EXPECT_EQ(xdc::net::shape_options(a).seed, xdc::net::shape_options(b).seed);
  b.seed = 2;
  EXPECT_NE(xdc::net::shape_options(a).seed, xdc::net::shape_options(b).seed);
  xdc::net::ShapedLink back = a;
  std::swap(back.from, back.to);
  EXPECT_NE(xdc::net::shape_options(a).seed, xdc::net::shape_options(back).seed);
  EXPECT_NE(xdc::net::shape_options(a).seed, 0u);  // 0 would ask the delay line for a random one

  xdc::net::NetworkState s;
  s.name = "n";
  a.seed = 7;
  s.links.push_back(a);
  const nlohmann::json j = s;
  EXPECT_EQ(nlohmann::json::parse(j.dump()).get<xdc::net::NetworkState>().links.at(0).seed, 7u);
}

// The management subnet grows with the hosts: a /24 up to 253 hosts (and the root), one bit
// less per doubling; its hosts count up from its start across /24 boundaries, the root is
// its last address but one.
TEST(ManagementAddresses, TheSubnetIsSizedFromTheHostsAndAlignedToItsSlots) {
  using namespace xdc::net;
  EXPECT_EQ(mgmt_prefix(1), 24);
  EXPECT_EQ(mgmt_prefix(253), 24);
  EXPECT_EQ(mgmt_prefix(254), 23);
  EXPECT_EQ(mgmt_prefix(1024), 21);
  EXPECT_EQ(mgmt_prefix(kMaxHosts), 20);
  EXPECT_EQ(mgmt_slots(24), 1);
  EXPECT_EQ(mgmt_slots(21), 8);
  EXPECT_EQ(mgmt_subnet(3, 24), "198.18.3.0/24");
  EXPECT_EQ(mgmt_root_ip(3, 24), "198.18.3.254");
  EXPECT_EQ(mgmt_ip(3, 0), "198.18.3.1");
  EXPECT_EQ(mgmt_subnet(8, 21), "198.18.8.0/21");
  EXPECT_EQ(mgmt_root_ip(8, 21), "198.18.15.254");
  EXPECT_EQ(mgmt_ip(8, 254), "198.18.8.255");
  EXPECT_EQ(mgmt_ip(8, 255), "198.18.9.0");
  EXPECT_EQ(mgmt_ip(8, 1023), "198.18.12.0");
  EXPECT_EQ(subnet_prefix("198.18.8.0/21"), 21);
  EXPECT_EQ(subnet_prefix(""), 24);  // a state written before subnets were sized
}
