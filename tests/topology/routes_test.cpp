// Static routes: shortest one-way delay, deterministic ties, hop-by-hop consistency.
#include <gtest/gtest.h>

#include "harness/topology/topology.h"

namespace xdc::topo {
namespace {

using Path = std::vector<std::string>;

// Every next hop is a direct neighbour, and following next hops gives path().
void expect_consistent(const Topology& t, const Routes& r) {
  for (const Dc& from : t.dcs)
    for (const Dc& to : t.dcs) {
      if (from.name == to.name) continue;
      const std::string& hop = r.next_hop(from.name, to.name);
      EXPECT_NE(t.find_link(from.name, hop), nullptr) << from.name << "->" << hop;
      Path p = r.path(from.name, to.name);
      EXPECT_EQ(p.front(), from.name);
      EXPECT_EQ(p.back(), to.name);
      EXPECT_EQ(p[1], hop);
    }
}

TEST(Routes, ChainGoesThroughTheMiddle) {
  Topology t = parse_topology(R"(
name: chain
dcs: [{name: a, hosts: 1}, {name: b, hosts: 1}, {name: c, hosts: 1}]
wan:
  - {between: [a, b], delay: 10ms}
  - {between: [b, c], delay: 10ms}
)",
                              "chain.yaml");
  Routes r = compute_routes(t);
  EXPECT_EQ(r.next_hop("a", "c"), "b");
  EXPECT_EQ(r.next_hop("c", "a"), "b");
  EXPECT_EQ(r.next_hop("a", "b"), "b");
  EXPECT_EQ(r.path("a", "c"), (Path{"a", "b", "c"}));
  EXPECT_EQ(r.path("c", "a"), (Path{"c", "b", "a"}));
  EXPECT_EQ(r.path("b", "b"), (Path{"b"}));
  EXPECT_EQ(r.next.size(), 6u);
  EXPECT_THROW(r.next_hop("a", "a"), std::out_of_range);
  EXPECT_THROW(r.next_hop("a", "zz"), std::out_of_range);
  expect_consistent(t, r);
}

TEST(Routes, TriangleRoutesAroundALongEdgeOnlyWhenCheaper) {
  // a-c direct is 100 ms, a-b-c is 30 ms: go around. b-c direct 20 ms beats b-a-c.
  Topology t = parse_topology(R"(
name: tri
dcs: [{name: a, hosts: 1}, {name: b, hosts: 1}, {name: c, hosts: 1}]
wan:
  - {between: [a, b], delay: 10ms}
  - {between: [b, c], delay: 20ms}
  - {between: [a, c], delay: 100ms}
)",
                              "tri.yaml");
  Routes r = compute_routes(t);
  EXPECT_EQ(r.path("a", "c"), (Path{"a", "b", "c"}));
  EXPECT_EQ(r.path("c", "a"), (Path{"c", "b", "a"}));
  EXPECT_EQ(r.path("b", "c"), (Path{"b", "c"}));
  expect_consistent(t, r);

  // Make the direct edge cheaper than the detour: it is used.
  t.wan[2].a_to_b.delay_us = t.wan[2].b_to_a.delay_us = 29'000;
  r = compute_routes(t);
  EXPECT_EQ(r.path("a", "c"), (Path{"a", "c"}));
  // Equal delay (30 ms both ways): fewer hops wins.
  t.wan[2].a_to_b.delay_us = t.wan[2].b_to_a.delay_us = 30'000;
  r = compute_routes(t);
  EXPECT_EQ(r.path("a", "c"), (Path{"a", "c"}));
}

TEST(Routes, AsymmetricDelaysRoutePerDirection) {
  Topology t = parse_topology(R"(
name: asym
dcs: [{name: a, hosts: 1}, {name: b, hosts: 1}, {name: c, hosts: 1}]
wan:
  - {between: [a, b], delay: 10ms}
  - {between: [b, c], delay: 10ms}
  - {between: [a, c], delay: 15ms, c_to_a: {delay: 40ms}}
)",
                              "asym.yaml");
  Routes r = compute_routes(t);
  EXPECT_EQ(r.path("a", "c"), (Path{"a", "c"}));       // 15 < 20
  EXPECT_EQ(r.path("c", "a"), (Path{"c", "b", "a"}));  // 20 < 40
  expect_consistent(t, r);
}

TEST(Routes, TiesBreakOnFewerHopsThenSmallestNextHop) {
  // A square a-b-d, a-c-d, all 5 ms: a reaches d through b or c at equal cost and hops;
  // the next hop with the smaller name (b) wins, from either side.
  Topology t = parse_topology(R"(
name: square
dcs: [{name: a, hosts: 1}, {name: c, hosts: 1}, {name: b, hosts: 1}, {name: d, hosts: 1}]
wan:
  - {between: [a, c], delay: 5ms}
  - {between: [c, d], delay: 5ms}
  - {between: [a, b], delay: 5ms}
  - {between: [b, d], delay: 5ms}
)",
                              "sq.yaml");
  Routes r = compute_routes(t);
  EXPECT_EQ(r.path("a", "d"), (Path{"a", "b", "d"}));
  EXPECT_EQ(r.path("d", "a"), (Path{"d", "b", "a"}));
  EXPECT_EQ(r.path("b", "c"), (Path{"b", "a", "c"}));
  EXPECT_EQ(r.path("c", "b"), (Path{"c", "a", "b"}));
  expect_consistent(t, r);

  // Zero-delay links: hops still decide, so there is no loop.
  for (WanLink& l : t.wan) l.a_to_b.delay_us = l.b_to_a.delay_us = 0;
  r = compute_routes(t);
  EXPECT_EQ(r.path("a", "d"), (Path{"a", "b", "d"}));
  expect_consistent(t, r);
}

TEST(Routes, Scale64ChainCrossesEveryDc) {
  Topology t = load_topology(std::string(XDC_SOURCE_DIR) + "/topologies/scale-64.yaml");
  ASSERT_EQ(t.hosts().size(), 64u);
  ASSERT_EQ(t.dcs.size(), 8u);
  Routes r = compute_routes(t);
  EXPECT_EQ(r.next.size(), 8u * 7u);
  EXPECT_EQ(r.path("dc1", "dc8"), (Path{"dc1", "dc2", "dc3", "dc4", "dc5", "dc6", "dc7", "dc8"}));
  EXPECT_EQ(r.path("dc6", "dc2"), (Path{"dc6", "dc5", "dc4", "dc3", "dc2"}));
  EXPECT_EQ(r.next_hop("dc4", "dc1"), "dc3");
  EXPECT_EQ(r.next_hop("dc4", "dc8"), "dc5");
  expect_consistent(t, r);
}

TEST(Routes, RingTakesTheShorterWayRound) {
  // 6 DCs in a ring, 1 ms each: opposite DCs tie at 3 hops both ways.
  Topology t = parse_topology(R"(
name: ring
dcs: [{name: r1, hosts: 1}, {name: r2, hosts: 1}, {name: r3, hosts: 1},
      {name: r4, hosts: 1}, {name: r5, hosts: 1}, {name: r6, hosts: 1}]
wan:
  - {between: [r1, r2], delay: 1ms}
  - {between: [r2, r3], delay: 1ms}
  - {between: [r3, r4], delay: 1ms}
  - {between: [r4, r5], delay: 1ms}
  - {between: [r5, r6], delay: 1ms}
  - {between: [r6, r1], delay: 1ms}
)",
                              "ring.yaml");
  Routes r = compute_routes(t);
  EXPECT_EQ(r.path("r1", "r3"), (Path{"r1", "r2", "r3"}));
  EXPECT_EQ(r.path("r1", "r5"), (Path{"r1", "r6", "r5"}));
  EXPECT_EQ(r.path("r1", "r4"), (Path{"r1", "r2", "r3", "r4"}));  // tie: r2 < r6
  EXPECT_EQ(r.path("r4", "r1"), (Path{"r4", "r3", "r2", "r1"}));  // tie: r3 < r5
  expect_consistent(t, r);
}

}  // namespace
}  // namespace xdc::topo
