// The `tcp:` blocks: stock defaults, topology -> DC -> host overrides, each partial.
#include <gtest/gtest.h>

#include "harness/topology/topology.h"

namespace xdc::topo {
namespace {

TEST(TopologyTcp, DefaultsAreStockLinux) {
  Topology t = parse_topology("name: t\ndcs: [{name: east, hosts: 1}]\n", "t.yaml");
  const TcpSettings& s = t.find_host("east-h1")->tcp;
  EXPECT_EQ(s.congestion, "cubic");
  EXPECT_EQ(s.rmem_max_bytes, 6u << 20);
  EXPECT_EQ(s.wmem_max_bytes, 4u << 20);
  EXPECT_TRUE(s.slow_start_after_idle);
  EXPECT_EQ(s.ecn, 2);
  EXPECT_EQ(s, TcpSettings{});
  EXPECT_EQ(t.tcp, TcpSettings{});
}

TEST(TopologyTcp, TopologyDcAndHostOverridesArePartial) {
  Topology t = parse_topology(R"(
name: t
tcp: {congestion: reno, rmem_max: 32mib, slow_start_after_idle: false}
dcs:
  - {name: east, hosts: 2, tcp: {congestion: bbr, ecn: on}}
  - name: west
    hosts: [w1, {name: w2, tcp: {wmem_max: 16mib, ecn: off}}]
wan:
  - between: [east, west]
)",
                              "t.yaml");
  EXPECT_EQ(t.tcp.congestion, "reno");
  EXPECT_EQ(t.tcp.rmem_max_bytes, 32u << 20);
  EXPECT_EQ(t.tcp.wmem_max_bytes, 4u << 20);  // stock, not named
  EXPECT_FALSE(t.tcp.slow_start_after_idle);

  const TcpSettings& e1 = t.find_host("east-h1")->tcp;
  EXPECT_EQ(e1.congestion, "bbr");
  EXPECT_EQ(e1.ecn, 1);
  EXPECT_EQ(e1.rmem_max_bytes, 32u << 20);  // from the topology
  EXPECT_FALSE(e1.slow_start_after_idle);
  EXPECT_EQ(t.find_host("east-h2")->tcp, e1);

  const TcpSettings& w1 = t.find_host("w1")->tcp;
  EXPECT_EQ(w1, t.tcp);  // west has no block: the topology's
  const TcpSettings& w2 = t.find_host("w2")->tcp;
  EXPECT_EQ(w2.congestion, "reno");
  EXPECT_EQ(w2.wmem_max_bytes, 16u << 20);
  EXPECT_EQ(w2.rmem_max_bytes, 32u << 20);
  EXPECT_EQ(w2.ecn, 0);
  EXPECT_EQ(t.find_host("w2")->index, 1);
  EXPECT_EQ(t.find_host("w2")->pos.line, 7);
}

TEST(TopologyTcp, EcnWordsAndSizes) {
  Topology t = parse_topology(
      "name: t\ntcp: {ecn: server, rmem_max: 4kib, wmem_max: 1gib}\ndcs: [{name: e, hosts: 1}]\n",
      "t.yaml");
  EXPECT_EQ(t.tcp.ecn, 2);
  EXPECT_EQ(t.tcp.rmem_max_bytes, 4096u);
  EXPECT_EQ(t.tcp.wmem_max_bytes, 1u << 30);
  EXPECT_EQ(ecn_word(0), "off");
  EXPECT_EQ(ecn_word(1), "on");
  EXPECT_EQ(ecn_word(2), "server");
}

}  // namespace
}  // namespace xdc::topo
