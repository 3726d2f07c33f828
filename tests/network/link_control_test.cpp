// `xdc link set|down|up|show` and `xdc dc isolate|join` on real networks, through the CLI:
// a change touches only what it names and shows on real traffic (ping), is recorded in
// state.json and the events log, is dilated on a dilated network, an unshaped link gets
// shaped on demand, bad input exits 2 with a message, and `xdc down` leaves nothing
// (delay lines and their control sockets included).
#include "harness/linkctl/link_control.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/check/probes.h"
#include "harness/network/state.h"
#include "netem/nl/netns.h"
#include "tests/network/network_fixture.h"
#include "tests/network/round_trip_base.h"

namespace xdc::testing {
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

const net::ShapedLink& link_of(const net::NetworkState& s, const std::string& from,
                               const std::string& to) {
  for (const auto& l : s.links)
    if (l.from == from && l.to == to) return l;
  throw std::runtime_error("no link " + from + "->" + to);
}

// Round trips (ms) of `count` pings `interval_ms` apart from `from` to host `to` of `net`.
std::vector<double> ping_rtts(const std::string& net, const std::string& from,
                              const std::string& to, int count, double interval_ms) {
  auto s = net::load_state(net);
  return check::ping_rtts(net, from, s->find_host(to)->data_ip, count, interval_ms);
}

// The least round trip is held to the configured delays plus this machine's base round trip on
// the same path (tests/common/round_trip.h), measured with the same pings and the
// delays at 0.
class LinkPair : public NetworkTest {
 protected:
  LinkPair() : NetworkTest("tests/network/shaped-pair.yaml", "lnkpair") {}
  std::vector<double> rtts() { return ping_rtts(name_, "e1", "w1", 10, 20); }
  double least_rtt_ms() { return RoundTrips(rtts()).min(); }
  RoundTrips base() {
    return zero_delay_base(name_, [&] { return rtts(); });
  }
  int received(int count) {
    auto s = net::load_state(name_);
    return check::ping(name_, "e1", s->find_host("w1")->data_ip, count, 20).received;
  }
};

TEST_F(LinkPair, SetChangesOnlyWhatItNamesInPlaceAndLogsIt) {
  const RoundTrips base = this->base();
  EXPECT_TRUE(within("e1->w1 as built", least_rtt_ms(), least_bounds({15, 25}, base)));
  auto before = net::load_state(name_);
  pid_t delayline = link_of(*before, "east", "west").record.value("delayline_pid", 0);
  auto r = run_xdc(
      {"link", "set", name_, "east", "west", "--direction", "east->west", "--delay", "40ms"});
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(within("e1->w1 after east->west 40ms", least_rtt_ms(), least_bounds({40, 25}, base)));
  auto s = net::load_state(name_);
  const auto& ew = link_of(*s, "east", "west");
  EXPECT_EQ(ew.configured.delay_us, 40'000u);
  EXPECT_EQ(ew.configured.rate_bps, 100'000'000u) << "the rate was not given: it stays";
  EXPECT_EQ(ew.record.value("delayline_pid", 0), delayline) << "torn down and rebuilt";
  EXPECT_EQ(link_of(*s, "west", "east").configured.delay_us, 25'000u);

  auto events = linkctl::read_link_events(name_);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["kind"], "link_set");
  EXPECT_EQ(events[0]["link"], "east->west");
  EXPECT_EQ(events[0]["changed"], nlohmann::json({{"delay_us", 40000}}));
  EXPECT_EQ(events[0]["params"]["delay_us"], 40000);
  EXPECT_GT(events[0]["t_ns"].get<int64_t>(), before->created_unix * 1e9);

  auto show = run_xdc({"link", "show", name_, "--json"});
  ASSERT_EQ(show.rc, 0) << show.out;
  auto j = nlohmann::json::parse(show.out.substr(show.out.find('{')));
  ASSERT_EQ(j["links"].size(), 2u);
  EXPECT_EQ(j["links"][0]["params"]["delay_us"], 40000);
  EXPECT_GT(j["links"][0]["sent"].get<uint64_t>(), 10u) << "counters read live";
}

TEST_F(LinkPair, DownDropsEverythingAndUpRestores) {
  ASSERT_EQ(received(5), 5);
  const RoundTrips base = this->base();
  auto r = run_xdc({"link", "down", name_, "east", "west"});
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(received(10), 0);
  auto show = run_xdc({"link", "show", name_, "--json"});
  auto j = nlohmann::json::parse(show.out.substr(show.out.find('{')));
  EXPECT_TRUE(j["links"][0]["down"].get<bool>());
  // The cut's drops apart from the loss model's (a cut is 100% loss to the shaper).
  EXPECT_GE(j["links"][0]["down_drops"].get<uint64_t>(), 10u) << "the pings it dropped";
  EXPECT_EQ(j["links"][0]["loss_drops"].get<uint64_t>(), 0u) << "the link has no loss";
  r = run_xdc({"link", "up", name_, "east", "west"});
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(within("e1->w1 after up (up restores the parameters)", least_rtt_ms(),
                     least_bounds({15, 25}, base)));
  show = run_xdc({"link", "show", name_, "--json"});
  j = nlohmann::json::parse(show.out.substr(show.out.find('{')));
  EXPECT_GE(j["links"][0]["down_drops"].get<uint64_t>(), 10u) << "kept after the cut";
  EXPECT_EQ(j["links"][0]["loss_drops"].get<uint64_t>(), 0u);
  auto kinds = linkctl::read_link_events(name_);
  ASSERT_EQ(kinds.size(), 4u);
  EXPECT_EQ(kinds[0]["kind"], "link_down");
  EXPECT_EQ(kinds[3]["kind"], "link_up");
}

TEST_F(LinkPair, BadInputExits2WithAMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"link", "set", "nosuchnet", "east", "west", "--delay", "1ms"}, "no network named"},
      {{"link", "set", name_, "east", "mars", "--delay", "1ms"}, "no DC named 'mars'"},
      {{"link", "set", name_, "east", "east", "--delay", "1ms"}, "no WAN link between"},
      {{"link", "set", name_, "east", "west", "--direction", "a->b", "--delay", "1ms"},
       "--direction: expected east->west or west->east"},
      {{"link", "set", name_, "east", "west", "--delay", "fast"}, "--delay: expected a duration"},
      {{"link", "set", name_, "east", "west", "--rate", "0"}, "--rate: expected"},
      {{"link", "set", name_, "east", "west", "--rate", "1bit"},
       "--rate: expected a rate of at least 8kbit"},
      {{"link", "set", name_, "east", "west", "--rate", "100gbit"}, "cannot replace it in place"},
      {{"link", "set", name_, "east", "west", "--loss", "150%"}, "--loss: expected"},
      {{"link", "set", name_, "east", "west"}, "nothing to change"},
      {{"link", "down", name_, "east", "pluto"}, "no DC named 'pluto'"},
      {{"dc", "isolate", name_, "mars"}, "no DC named 'mars'"},
      {{"link", "show", "nosuchnet"}, "no network named"},
  };
  for (const auto& c : cases) {
    auto r = run_xdc(c.args);
    EXPECT_EQ(r.rc, 2) << c.args[0] << " " << c.args[1] << ": " << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << r.out;
  }
  EXPECT_TRUE(linkctl::read_link_events(name_).empty()) << "nothing was applied";
}

TEST_F(LinkPair, DownRemovesDelayLinesAndTheirControlSockets) {
  auto s = net::load_state(name_);
  std::string ctl = link_of(*s, "east", "west").record.value("ctl_path", "");
  ASSERT_FALSE(ctl.empty());
  EXPECT_TRUE(exists(ctl));
  ASSERT_EQ(run_xdc({"down", name_}).rc, 0);
  EXPECT_FALSE(exists(ctl));
  EXPECT_FALSE(exists(linkctl::events_path(name_)));
  // (TearDown checks that nothing else is left.)
}

class LinkChain : public NetworkTest {
 protected:
  LinkChain() : NetworkTest("tests/network/plain-chain.yaml", "lnkchain") {}
  int received(const std::string& from, const std::string& to) {
    auto s = net::load_state(name_);
    return check::ping(name_, from, s->find_host(to)->data_ip, 5, 20).received;
  }
};

TEST_F(LinkChain, IsolateCutsEveryLinkOfTheDcAndJoinRestores) {
  ASSERT_EQ(received("east-h1", "w1"), 5);
  ASSERT_EQ(received("w1", "eu-h1"), 5);
  auto r = run_xdc({"dc", "isolate", name_, "west"});
  ASSERT_EQ(r.rc, 0) << r.out;
  // west has two WAN links (to east and to eu): four directions cut. Unshaped at `xdc up`,
  // they are shaped now.
  EXPECT_EQ(linkctl::read_link_events(name_).size(), 4u);
  EXPECT_EQ(received("east-h1", "w1"), 0);
  EXPECT_EQ(received("w1", "eu-h1"), 0);
  EXPECT_EQ(received("east-h1", "eu-h1"), 0) << "east reaches eu only through west";
  EXPECT_EQ(received("east-h1", "east-h2"), 5) << "inside a DC nothing changes";
  r = run_xdc({"dc", "join", name_, "west"});
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(received("east-h1", "eu-h1"), 5);
}

TEST_F(LinkChain, SetShapesALinkThatWasUnshaped) {
  auto r = run_xdc({"link", "set", name_, "east", "west", "--delay", "20ms", "--rate", "50mbit"});
  ASSERT_EQ(r.rc, 0) << r.out;
  auto s = net::load_state(name_);
  EXPECT_NE(link_of(*s, "east", "west").backend, "none");
  auto rtts = [&] { return ping_rtts(name_, "east-h1", "w1", 10, 20); };
  const RoundTrips base = zero_delay_base(name_, rtts);
  EXPECT_TRUE(
      within("east-h1->w1 after set 20ms", RoundTrips(rtts()).min(), least_bounds({20, 20}, base)));
}

class LinkDilated : public NetworkTest {
 protected:
  LinkDilated() : NetworkTest("tests/network/dilated-pair.yaml", "lnkdil") {}
  void SetUp() override {
    setenv("XDC_EXE", XDC_EXE_PATH, 1);
    auto up = run_xdc({"up", file_, "--name", name_, "--time-dilation", "10"});
    ASSERT_EQ(up.rc, 0) << up.out;
  }
};

TEST_F(LinkDilated, ChangesAreGivenUndilatedAndAppliedDilated) {
  auto r = run_xdc({"link", "set", name_, "east", "west", "--delay", "8ms", "--rate", "500mbit"});
  ASSERT_EQ(r.rc, 0) << r.out;
  auto s = net::load_state(name_);
  const auto& ew = link_of(*s, "east", "west");
  EXPECT_EQ(ew.configured.delay_us, 80'000u) << "8 ms x 10";
  EXPECT_EQ(ew.configured.rate_bps, 50'000'000u) << "500 mbit / 10";
  auto events = linkctl::read_link_events(name_);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["params"]["delay_us"], 8000) << "the log is undilated";
  EXPECT_EQ(events[0]["params"]["rate_bps"], 500'000'000);
  // As built: 80 ms each way.
  auto rtts = [&] { return ping_rtts(name_, "e1", "w1", 5, 50); };
  const RoundTrips base = zero_delay_base(name_, rtts);
  EXPECT_TRUE(
      within("e1->w1 after set 8ms x 10", RoundTrips(rtts()).min(), least_bounds({80, 80}, base)));
}

// Dilation stretches TCP's minimum RTO with the round trip (the hosts' route rto_min,
// 200 ms x 10): a connection across the WAN reports an RTO above 2 s. A route's rto_min
// counts only when locked; unlocked, this RTO was ~0.3 s (100 ms round trip + 200 ms), and
// slow start after idle restarted windows k times too early.
TEST_F(LinkDilated, TcpTakesTheStretchedMinimumRto) {
  // Round trips measured: the RTO follows them.
  auto [cli, acc] = tcp_pair(name_, "e1", "w1", 7779, 3);
  ASSERT_GE(acc, 0) << "no connection e1 -> w1";
  tcp_info info{};
  socklen_t len = sizeof info;
  ASSERT_EQ(getsockopt(cli, IPPROTO_TCP, TCP_INFO, &info, &len), 0);
  EXPECT_GE(info.tcpi_rtt, 95'000u) << "10 ms round trip x 10";
  EXPECT_GE(info.tcpi_rto, 2'000'000u) << "rto_min 200 ms x 10, locked on the route";
  for (int fd : {acc, cli}) close(fd);
}

}  // namespace
}  // namespace xdc::testing
