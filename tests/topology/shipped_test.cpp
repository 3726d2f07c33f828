// The topologies we ship load, and say what their comments promise.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness/topology/topology.h"

namespace xdc::topo {
namespace {

namespace fs = std::filesystem;

Topology shipped(const std::string& name) {
  return load_topology((fs::path(XDC_SOURCE_DIR) / "topologies" / name).string());
}

TEST(Shipped, EveryFileLoadsAndRoutesEverywhere) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(XDC_SOURCE_DIR) / "topologies")) {
    if (e.path().extension() != ".yaml") continue;
    SCOPED_TRACE(e.path().string());
    Topology t = load_topology(e.path().string());
    Routes r = compute_routes(t);
    EXPECT_EQ(r.next.size(), t.dcs.size() * (t.dcs.size() - 1));
    ++n;
  }
  EXPECT_GE(n, 4);
}

TEST(Shipped, TwoDc) {
  Topology t = shipped("two-dc.yaml");
  EXPECT_EQ(t.name, "two-dc");
  ASSERT_EQ(t.dcs.size(), 2u);
  EXPECT_EQ(t.hosts().size(), 4u);
  ASSERT_EQ(t.wan.size(), 1u);
  for (const netem::LinkParams* p : {&t.wan[0].a_to_b, &t.wan[0].b_to_a}) {
    EXPECT_EQ(p->delay_us, 20'000u);
    EXPECT_EQ(p->rate_bps, 1'000'000'000u);
  }
}

TEST(Shipped, ThreeDcTriangleIsUnequal) {
  Topology t = shipped("three-dc.yaml");
  ASSERT_EQ(t.dcs.size(), 3u);
  EXPECT_EQ(t.hosts().size(), 6u);
  ASSERT_EQ(t.wan.size(), 3u);
  EXPECT_NE(t.wan[0].a_to_b.delay_us, t.wan[1].a_to_b.delay_us);
  EXPECT_NE(t.wan[1].a_to_b.delay_us, t.wan[2].a_to_b.delay_us);
  EXPECT_NE(t.wan[0].a_to_b.rate_bps, t.wan[2].a_to_b.rate_bps);
  Routes r = compute_routes(t);
  for (const WanLink& l : t.wan) EXPECT_EQ(r.next_hop(l.a, l.b), l.b);  // all direct
}

TEST(Shipped, Scale64) {
  Topology t = shipped("scale-64.yaml");
  EXPECT_EQ(t.hosts().size(), 64u);
  EXPECT_EQ(t.dcs.size(), 8u);
  EXPECT_LE(t.name.size(), kMaxNetworkName);
}

}  // namespace
}  // namespace xdc::topo
