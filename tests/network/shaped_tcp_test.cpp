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
#include <thread>

#include "harness/network/state.h"
#include "netem/nl/netns.h"
#include "tests/network/leftovers.h"

using xdc::testing::leftovers;
using xdc::testing::run_xdc;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A socket created inside host namespace `ns` stays there after we leave it.
int socket_in(const std::string& ns) {
  xdc::nl::NetnsGuard in(ns);
  return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

class ShapedPair : public ::testing::Test {
 protected:
  void SetUp() override {
    auto up = run_xdc({"up", "tests/network/shaped-pair.yaml", "--name", "tcp"});
    ASSERT_EQ(up.rc, 0) << up.out;
  }
  void TearDown() override {
    run_xdc({"down", "tcp"});
    EXPECT_TRUE(leftovers("tcp").empty());
  }
};

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
  double handshake_ms = ms_since(t0);
  std::vector<double> rtts;
  for (int i = 0; i < 10; ++i) {
    char b = 'x';
    t0 = Clock::now();
    ASSERT_EQ(write(cli, &b, 1), 1);
    ASSERT_EQ(read(cli, &b, 1), 1);
    rtts.push_back(ms_since(t0));
  }
  close(cli);
  echo.join();
  close(srv);
  std::sort(rtts.begin(), rtts.end());
  // 15 ms there + 25 ms back, plus a fraction of a millisecond of unshaped path.
  EXPECT_NEAR(handshake_ms, 40.0, 1.5) << "SYN -> SYN/ACK";
  EXPECT_NEAR(rtts[5], 40.0, 1.0) << "request/response median";
  std::printf("tcp e1->w1: handshake %.2f ms, request/response median %.2f ms (configured 40)\n",
              handshake_ms, rtts[5]);
}

TEST_F(ShapedPair, CheckMeasuresBothDirectionsAsConfigured) {
  auto r = run_xdc(
      {"check", "tcp", "--json", "--pings", "100", "--udp-packets", "5000", "--tcp-seconds", "3"});
  // run_xdc returns standard output then standard error (the progress lines); that
  // standard output is JSON alone is check_json_cli.sh's test.
  const auto first = r.out.find('{'), last = r.out.rfind('}');
  ASSERT_NE(first, std::string::npos) << r.out;
  auto j = nlohmann::json::parse(r.out.substr(first, last - first + 1), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(r.rc, 0) << r.out;
  ASSERT_EQ(j["links"].size(), 2u);
  for (auto& l : j["links"]) {
    EXPECT_TRUE(l["ok"].get<bool>()) << l.dump(2);
    EXPECT_NEAR(
        l["measured"]["rtt_median_ms"].get<double>() - l["measured"]["base_rtt_ms"].get<double>(),
        40.0, 0.8);
    double goodput = l["measured"]["goodput_mbit"].get<double>();
    EXPECT_GE(goodput, 92.0);
    EXPECT_LE(goodput, 101.0);
    std::printf("check %s->%s: %s\n", l["from"].get<std::string>().c_str(),
                l["to"].get<std::string>().c_str(), l["measured"].dump().c_str());
  }
  EXPECT_EQ(j["backend"], "userspace") << "this kernel has no sch_netem; auto must pick userspace";
}

}  // namespace
