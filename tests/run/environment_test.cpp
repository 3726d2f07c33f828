// environment.json's TCP: one member per setting, grouped by host where they differ,
// and the root namespace's values with xdc's change to its allowed list.
#include "harness/run/environment.h"

#include <gtest/gtest.h>

namespace {

using xdc::net::HostState;
using xdc::net::HostTcp;

HostState host(const std::string& name, const std::string& cc, bool ssai) {
  HostState h;
  h.name = name;
  h.tcp = HostTcp{cc, "4096 131072 6291456", "4096 16384 4194304", ssai, 2};
  return h;
}

TEST(EnvironmentTcp, OneValueWhenUniformElseGroupedByHost) {
  xdc::net::NetworkState s;
  s.hosts = {host("a", "cubic", true), host("b", "bbr", true), host("c", "cubic", true)};
  auto j = xdc::run::tcp_json(s);
  EXPECT_EQ(j["congestion"], "cubic (a c); bbr (b)");
  EXPECT_EQ(j["tcp_rmem"], "4096 131072 6291456");
  EXPECT_EQ(j["slow_start_after_idle"], true);
  EXPECT_EQ(j["ecn"], "server");
  s.hosts[1].tcp.slow_start_after_idle = false;
  EXPECT_EQ(xdc::run::tcp_json(s)["slow_start_after_idle"], "true (a c); false (b)");
}

TEST(EnvironmentTcp, NothingRecordedGivesAnEmptyObject) {
  xdc::net::NetworkState s;
  s.hosts = {HostState{}};
  EXPECT_TRUE(xdc::run::tcp_json(s).empty());
}

TEST(EnvironmentTcp, RootShowsXdcsAdditionToTheAllowedList) {
  xdc::net::RootTcp r;
  r.tcp = HostTcp{"bbr", "4096 131072 33554432", "4096 16384 4194304", true, 2};
  r.allowed = "reno bbr cubic";
  r.rmem_max = 4194304;
  auto j = xdc::run::root_tcp_json(r);
  EXPECT_EQ(j["congestion"], "bbr");
  EXPECT_EQ(j["core_rmem_max"], 4194304);
  EXPECT_FALSE(j.contains("allowed_added_by_xdc"));
  r.allowed_original = "reno bbr";
  r.allowed_added = {"cubic"};
  j = xdc::run::root_tcp_json(r);
  EXPECT_EQ(j["allowed_added_by_xdc"], "cubic");
  EXPECT_EQ(j["allowed_before_xdc"], "reno bbr");
}

}  // namespace
