// Linux's retransmissions across a cut WAN link against the simulator's
// (tcp_retransmit_after, harness/sim/tcp_model.h): a connection across tests/network/
// shaped-pair.yaml (40 ms round trip) settles its srtt on request / response round trips,
// the link is cut (`xdc link down`) and a message written into it. Every retransmission
// the kernel makes (tcpi_total_retrans, polled) is held to the model's: the tail loss probe
// first (at the RTO with one segment out, 2 srtt + 2 ticks with several), then the RTO
// armed afresh from it and doubling, each timer late as the timer wheel fires it. The link
// comes back between two retransmissions, and the message arrives after the next one.
#include <gtest/gtest.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "harness/network/state.h"
#include "harness/sim/tcp_model.h"
#include "netem/nl/netns.h"
#include "tests/network/network_fixture.h"

namespace xdc::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kMs = 1'000'000;

int64_t since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

tcp_info info_of(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  EXPECT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len), 0);
  return info;
}

class TcpCut : public NetworkTest {
 protected:
  TcpCut() : NetworkTest("tests/network/shaped-pair.yaml", "tcpcut") {}

  // Cuts the link, writes `bytes` into it, records the kernel's first `before_up`
  // retransmissions, restores the link, and holds each, and the message's arrival, to the
  // model's instants.
  void cut_and_compare(int port, int64_t bytes, int before_up) {
    auto [cli, acc] = tcp_pair(name_, "e1", "w1", port, 20);
    ASSERT_GE(acc, 0) << "no connection e1 -> w1";
    const tcp_info settled = info_of(cli);
    const int64_t srtt = int64_t{settled.tcpi_rtt} * 1000;
    const sim::TcpPath path;  // stock: rto_min 200 ms
    std::printf("%lld B: srtt %.1f ms, rto %.0f ms (model %.0f)\n", static_cast<long long>(bytes),
                srtt / 1e6, settled.tcpi_rto / 1e3, sim::tcp_rto_ns(path, srtt) / 1e6);
    EXPECT_NEAR(settled.tcpi_rto / 1e3, sim::tcp_rto_ns(path, srtt) / 1e6, 4.1)
        << "Linux's RTO: srtt + rto_min in whole ticks";
    auto r = run_xdc({"link", "down", name_, "east", "west"});
    ASSERT_EQ(r.rc, 0) << r.out;
    const std::vector<char> data(static_cast<size_t>(bytes), 'y');
    const Clock::time_point t0 = Clock::now();
    ASSERT_EQ(write(cli, data.data(), data.size()), static_cast<ssize_t>(bytes));
    const uint32_t base = info_of(cli).tcpi_total_retrans;
    std::vector<int64_t> retx;
    while (static_cast<int>(retx.size()) < before_up && since(t0) < 5000 * kMs) {
      const uint32_t n = info_of(cli).tcpi_total_retrans - base;
      if (n > retx.size()) retx.push_back(since(t0));
      usleep(200);
    }
    ASSERT_EQ(static_cast<int>(retx.size()), before_up) << "retransmissions seen in 5 s";
    const int64_t up_asked = since(t0);
    r = run_xdc({"link", "up", name_, "east", "west"});
    ASSERT_EQ(r.rc, 0) << r.out;
    const int64_t up = since(t0);  // in force somewhere in [up_asked, up]
    const bool one_segment = bytes <= sim::kTcpMss;
    int64_t model = 0, prev = 0;
    for (int k = 0; k < before_up; ++k) {
      // The model's k-th retransmission: its first at or after the one before it.
      const int64_t want = sim::tcp_retransmit_after(path, srtt, one_segment, 0, model + 1);
      // The wheel fires a level-1 timer 1-8 ticks late, the model takes 4.5: half that
      // spread, plus this process's own polling and scheduling.
      const int64_t gap = want - model;
      const int64_t slack = (gap >= 63 * sim::kJiffyNs ? 4 : 1) * sim::kJiffyNs + 12 * kMs;
      const int64_t got = retx[static_cast<size_t>(k)];
      std::printf("  retransmission %d: %.1f ms after the previous, model %.1f\n", k + 1,
                  (got - prev) / 1e6, gap / 1e6);
      EXPECT_NEAR(static_cast<double>(got - prev), static_cast<double>(gap),
                  static_cast<double>(slack))
          << "gap before retransmission " << k + 1;
      model = want;
      prev = got;
    }
    // The message arrives after the model's next retransmission, the link up (+15 ms one
    // way), on the clock of the last one seen.
    const int64_t shift = prev - model;
    auto expected = [&](int64_t up_at) {
      return sim::tcp_retransmit_after(path, srtt, one_segment, 0, up_at - shift) + shift +
             15 * kMs;
    };
    // A retransmission while `xdc link up` ran may have met the link either way.
    const int64_t earliest = expected(up_asked), expect = expected(up);
    pollfd p{acc, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 6000), 1) << "the message did not arrive after the link came up";
    const int64_t arrived = since(t0);
    std::printf("  up %.1f ms after the write; arrived %.1f ms, model %.1f\n", up / 1e6,
                arrived / 1e6, expect / 1e6);
    if (std::abs(arrived - earliest) > 40 * kMs) {
      EXPECT_NEAR(static_cast<double>(arrived), static_cast<double>(expect), 40.0 * kMs);
    }
    close(cli);
    close(acc);
  }
};

TEST_F(TcpCut, OneSegmentOutIsProbedAtTheRtoThenRetransmittedAtTheRtoDoubling) {
  cut_and_compare(7781, 100, 3);
}

TEST_F(TcpCut, SeveralSegmentsOutAreProbedAfterTwoRoundTripsThenAtTheRtoDoubling) {
  cut_and_compare(7782, 10 * sim::kTcpMss, 3);
}

}  // namespace
}  // namespace xdc::testing
