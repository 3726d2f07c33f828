// Two LAN connections leaving one host share its port: the host's intra-DC tbf is the
// bottleneck of both, so together they carry its rate, and two messages sent at once are
// both done about twice as late as one sent alone. The simulator gives the pairs leaving one
// host one channel (set_ports), which shares its rate round robin between them
// (Links.PairsLeavingOneHostShareItsPortsChannel checks the model's side).

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "harness/network/state.h"
#include "netem/shaper/queue_sizing.h"
#include "tests/network/network_fixture.h"

namespace {

constexpr int64_t kMessage = 48 << 20;  // about 0.4 s at 1 Gbit/s

class HostPort : public xdc::testing::NetworkTest {
 protected:
  HostPort() : NetworkTest("tests/network/probe-timer.yaml", "hp") {}
};

TEST_F(HostPort, TwoConnectionsLeavingOneHostShareItsPort) {
  auto state = xdc::net::load_state(name_);
  ASSERT_TRUE(state);
  const auto* src = state->find_host("dc-h1");
  const auto* a = state->find_host("dc-h2");
  const auto* b = state->find_host("dc-h3");
  ASSERT_TRUE(src && a && b);
  xdc::testing::TcpPair to_a = xdc::testing::connect_in(src->ns, a->ns, a->data_ip, 7731);
  xdc::testing::TcpPair to_b = xdc::testing::connect_in(src->ns, b->ns, b->data_ip, 7732);
  ASSERT_GE(to_a.peer, 0);
  ASSERT_GE(to_b.peer, 0);
  using Clock = std::chrono::steady_clock;
  // One message on each connection; `together`: both at once. Each message's time from
  // the start until its receiver has it all.
  auto send = [&](bool together) {
    std::vector<double> s(2, 0);
    const auto t0 = Clock::now();
    std::thread ra([&] {
      EXPECT_EQ(xdc::testing::read_up_to(to_a.peer, kMessage), kMessage);
      s[0] = std::chrono::duration<double>(Clock::now() - t0).count();
    });
    std::thread wa([&] { EXPECT_EQ(xdc::testing::write_up_to(to_a.client, kMessage), kMessage); });
    std::thread rb, wb;
    if (together) {
      rb = std::thread([&] {
        EXPECT_EQ(xdc::testing::read_up_to(to_b.peer, kMessage), kMessage);
        s[1] = std::chrono::duration<double>(Clock::now() - t0).count();
      });
      wb = std::thread(
          [&] { EXPECT_EQ(xdc::testing::write_up_to(to_b.client, kMessage), kMessage); });
    }
    for (std::thread* t : {&ra, &wa, &rb, &wb})
      if (t->joinable()) t->join();
    return s;
  };
  send(false);  // both connections past slow start before they are timed
  const double alone = send(false)[0];
  const std::vector<double> both = send(true);
  to_a.close_all();
  to_b.close_all();
  const double port_bps = xdc::netem::tcp_payload_bps(1'000'000'000);
  const double longest = std::max(both[0], both[1]);
  std::printf(
      "one message alone %.3f s (%.0f Mbit/s); two at once %.3f and %.3f s (%.0f Mbit/s "
      "together); the port's payload rate %.0f Mbit/s\n",
      alone, kMessage * 8 / alone / 1e6, both[0], both[1], 2 * kMessage * 8 / longest / 1e6,
      port_bps / 1e6);
  // Alone, a message has the port's rate; at once, the two share it: together no faster
  // than the port, the later done about twice as late as one alone. How they split it on
  // the way is TCP's (one run here: 0.495 and 0.844 s, another 0.843 and 0.824).
  EXPECT_GT(kMessage * 8 / alone, 0.7 * port_bps);
  EXPECT_LT(2 * kMessage * 8 / longest, 1.05 * port_bps);
  EXPECT_GT(longest, 1.7 * alone);
}

}  // namespace
