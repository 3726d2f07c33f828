// TCP between hosts in different DCs crosses the shaped WAN: the delay shows on a real
// connection (handshake and request/response), not only on ping; and `xdc check`
// measures a shaped link as configured.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "harness/check/probes.h"
#include "harness/network/state.h"
#include "netem/nl/netns.h"
#include "netem/shaper/shaper.h"
#include "tests/common/stall_meter.h"
#include "tests/network/network_fixture.h"
#include "tests/network/round_trip_base.h"

using xdc::testing::least_bounds;
using xdc::testing::RoundTripBounds;
using xdc::testing::RoundTrips;
using xdc::testing::run_xdc;
using xdc::testing::within;
using xdc::testing::zero_delay_base;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A socket created inside host namespace `ns` stays there after we leave it.
using xdc::testing::socket_in;

class ShapedPair : public xdc::testing::NetworkTest {
 protected:
  ShapedPair() : NetworkTest("tests/network/shaped-pair.yaml", "tcp") {}
};

// One-byte request/response round trips on a connected socket, each sent `idle` after the
// previous answer (zero: back to back), in ms; empty when the connection fails.
std::vector<double> round_trips(int fd, int n, std::chrono::milliseconds idle) {
  std::vector<double> rtts;
  for (int i = 0; i < n; ++i) {
    std::this_thread::sleep_for(idle);
    char b = 'x';
    const auto t0 = Clock::now();
    if (write(fd, &b, 1) != 1 || read(fd, &b, 1) != 1) return {};
    rtts.push_back(ms_since(t0));
  }
  return rtts;
}

// The shaped round trips are held to the configured 15 + 25 ms plus what this machine adds
// to a round trip on this path, measured here (tests/common/round_trip.h): the base is
// the same connection with the delays at 0 (the delay lines still relay every packet),
// each request after 40 ms of idle, so that every wake-up on the way costs what it costs
// between the shaped requests. The least of them is held both ways, so that a stall of a
// busy machine, which only adds, moves nothing. The handshake, one sample, took one shaped
// round trip: never less than the configured one, and less than a SYN's retransmission
// timeout (1 s, RFC 6298) more, so that neither the SYN nor the SYN/ACK was lost.
TEST_F(ShapedPair, TcpConnectionShowsTheConfiguredRoundTrip) {
  auto state = xdc::net::load_state("tcp");
  ASSERT_TRUE(state);
  const auto* w1 = state->find_host("w1");
  ASSERT_NE(w1, nullptr);
  int srv = socket_in(state->find_host("w1")->ns);
  int one = 1;
  setsockopt(srv, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(7777);
  inet_pton(AF_INET, w1->data_ip.c_str(), &addr.sin_addr);
  ASSERT_EQ(bind(srv, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(srv, 1), 0);
  std::thread echo([srv] {
    int c = accept(srv, nullptr, nullptr);
    char buf[64];
    for (ssize_t n; (n = read(c, buf, sizeof buf)) > 0;) write(c, buf, n);
    close(c);
  });
  int cli = socket_in(state->find_host("e1")->ns);
  setsockopt(cli, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto t0 = Clock::now();
  ASSERT_EQ(connect(cli, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const double handshake_ms = ms_since(t0);
  const int n = 21;
  const std::vector<double> shaped = round_trips(cli, n, std::chrono::milliseconds(0));
  std::optional<RoundTrips> base;
  try {  // the echo thread is joined either way
    base =
        zero_delay_base("tcp", [&] { return round_trips(cli, n, std::chrono::milliseconds(40)); });
  } catch (const std::exception& e) {
    ADD_FAILURE() << "base round trips: " << e.what();
  }
  close(cli);
  echo.join();
  close(srv);
  ASSERT_EQ(shaped.size(), size_t(n));
  ASSERT_TRUE(base && base->size() == size_t(n));
  const std::vector<double> waits_ms = {15, 25};
  const RoundTripBounds least = least_bounds(waits_ms, *base);
  EXPECT_TRUE(within("tcp e1->w1 least request/response", RoundTrips(shaped).min(), least));
  std::printf("tcp e1->w1 handshake (SYN -> SYN/ACK): %.3f ms\n", handshake_ms);
  EXPECT_GE(handshake_ms, least.low_ms);
  EXPECT_LT(handshake_ms, least.configured_ms + 1000);
}

TEST_F(ShapedPair, CheckMeasuresBothDirectionsAsConfigured) {
  xdc::testing::StallMeter stalls(xdc::netem::ShapeOptions{}.rt_prio);
  auto r = run_xdc(
      {"check", "tcp", "--json", "--pings", "100", "--udp-packets", "5000", "--tcp-seconds", "3"});
  const double stalled = stalls.stop();
  std::printf("the machine stalled %.1f%% of the check's time\n", 100 * stalled);
  // run_xdc returns standard output then standard error (the progress lines); that
  // standard output is JSON alone is check_json_cli.sh's test.
  const auto first = r.out.find('{'), last = r.out.rfind('}');
  ASSERT_NE(first, std::string::npos) << r.out;
  auto j = nlohmann::json::parse(r.out.substr(first, last - first + 1), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_EQ(j["links"].size(), 2u);
  auto state = xdc::net::load_state("tcp");
  ASSERT_TRUE(state);
  bool all_ok = true;
  for (auto& l : j["links"]) {
    all_ok = all_ok && l["ok"].get<bool>();
    // The delay and loss verdicts hold on a busy machine (the delay's tolerance takes in
    // what the delay lines measured of their own lateness). The rate verdict is the
    // check's word on whether this machine carried the rate just now: the link's time a
    // stall of the machine took is lost to the flows, so it is held below, with the
    // stalled share taken from its bound.
    EXPECT_EQ(l["verdicts"].size(), 3u) << l.dump(2);  // delay, rate, loss
    for (const auto& v : l["verdicts"]) {
      if (v["metric"] != "rate") {
        EXPECT_TRUE(v["ok"].get<bool>()) << l.dump(2);
      }
    }
    // The check's least round trip against this test's own base, measured with the
    // check's pings (100, 10 ms apart) on the same path with the delays at 0.
    const std::string src = l["hosts"][0], dst = l["hosts"][1];
    const RoundTrips base = zero_delay_base("tcp", [&] {
      return xdc::check::ping_rtts("tcp", src, state->find_host(dst)->data_ip, 100, 10);
    });
    EXPECT_TRUE(within("check " + src + "->" + dst + " least RTT",
                       l["measured"]["rtt_min_ms"].get<double>(), least_bounds({15, 25}, base)));
    // The rate: the eight flows carry what the check's verdict wants (92%) of the time
    // the machine ran; one flow, which a loss in a stall sets back for many round trips,
    // most of it; neither more than the link.
    const double multi = l["measured"]["goodput_multi_mbit"].get<double>();
    const double one = l["measured"]["goodput_mbit"].get<double>();
    EXPECT_GE(multi, 92.0 * (1 - stalled));
    EXPECT_GE(one, 50.0 * (1 - stalled));
    EXPECT_LE(multi, 101.0);
    EXPECT_LE(one, 101.0);
    std::printf("check %s->%s: %s\n", l["from"].get<std::string>().c_str(),
                l["to"].get<std::string>().c_str(), l["measured"].dump().c_str());
  }
  EXPECT_EQ(r.rc, all_ok ? 0 : 1) << r.out;
  EXPECT_EQ(j["backend"], "userspace") << "this kernel has no sch_netem; auto must pick userspace";
}

}  // namespace
