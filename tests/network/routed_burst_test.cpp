// A route over several WAN hops can overflow a hop before its bottleneck: the simulator's
// TCP model (TcpPath::upstream_bytes, harness/plan/links.cpp) against the kernel on the
// emulated WAN. On routed-burst.yaml a connection near -> far whose window holds the
// burst, idle for a few round trips, writes one burst: a small one passes the 2 ms hop's queue, a
// large one overflows it (the kernel retransmits); the same large burst far -> near, which meets
// the long hop's bottleneck queue first, passes.
//
// Each burst leaves at once, as a warm connection's would: the two hosts' routes give a
// new connection an initial window larger than the largest burst (initcwnd, and initrwnd
// with a receive buffer that holds it), so no warm-up is needed. A warm-up that opens
// CUBIC's window by sending is decided by the machine: on a busy one a delay line that
// runs late releases a bunch that a queue drops, and the window is cut below the burst.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/experiment/experiment.h"
#include "harness/network/state.h"
#include "harness/plan/plan.h"
#include "harness/sim/link_model.h"
#include "netem/shaper/run.h"
#include "tests/network/network_fixture.h"

namespace {

constexpr int kPort = 7712;
constexpr int64_t kSmall = 200 << 10;     // passes the short hop (the model: 283 KB do)
constexpr int64_t kLarge = 600 << 10;     // overflows it
constexpr unsigned kInitialWindow = 512;  // segments: 741 KB, above kLarge
constexpr int kReceiveBuffer = 8 << 20;

class RoutedBurst : public xdc::testing::NetworkTest {
 protected:
  RoutedBurst() : NetworkTest("tests/network/routed-burst.yaml", "rtb") {}

  // Every route of namespace `ns` gives a new connection an initial congestion and
  // receive window of kInitialWindow segments.
  static void open_initial_windows(const std::string& ns) {
    const auto routes = xdc::netem::run_argv({"ip", "route", "show"}, ns);
    ASSERT_EQ(routes.exit_code, 0) << routes.output;
    std::istringstream lines(routes.output);
    for (std::string line; std::getline(lines, line);) {
      std::vector<std::string> argv = {"ip", "route", "change"};
      std::istringstream words(line);
      for (std::string w; words >> w;) {
        if (w == "initcwnd" || w == "initrwnd") {
          words >> w;  // set below
          continue;
        }
        argv.push_back(w);
      }
      for (const char* m : {"initcwnd", "initrwnd"}) {
        argv.push_back(m);
        argv.push_back(std::to_string(kInitialWindow));
      }
      const auto r = xdc::netem::run_argv(argv, ns);
      ASSERT_EQ(r.exit_code, 0) << line << ": " << r.output;
    }
  }

  // A new connection `from` -> `to` whose first window holds every burst; after 150 ms
  // idle (several round trips, under the retransmission timeout) each burst of `bursts`
  // in turn: the segments the kernel retransmitted for each.
  std::vector<unsigned> bursts_after_idle(const std::string& from, const std::string& to,
                                          const std::vector<int64_t>& bursts) {
    auto state = xdc::net::load_state(name_);
    EXPECT_TRUE(state);
    if (!state) return {};
    const auto* a = state->find_host(from);
    const auto* b = state->find_host(to);
    open_initial_windows(a->ns);
    open_initial_windows(b->ns);
    xdc::testing::TcpPair conn =
        xdc::testing::connect_in(a->ns, b->ns, b->data_ip, kPort, kReceiveBuffer);
    EXPECT_GE(conn.peer, 0) << "no connection " << from << " -> " << to;
    const int c = conn.client, peer = conn.peer;
    // One byte each way: the SYN-ACK's window is never scaled (at most 64 KiB); the
    // receiver's next segment advertises its whole first window.
    char byte = 'x';
    EXPECT_EQ(write(c, &byte, 1), 1);
    EXPECT_EQ(read(peer, &byte, 1), 1);
    EXPECT_EQ(write(peer, &byte, 1), 1);
    EXPECT_EQ(read(c, &byte, 1), 1);
    std::vector<char> buf(static_cast<size_t>(*std::max_element(bursts.begin(), bursts.end())),
                          'x');
    auto send_all = [&](int64_t bytes) {
      int64_t sent = 0, got = 0;
      std::thread reader([&] { got = xdc::testing::read_up_to(peer, bytes); });
      while (sent < bytes) {
        const ssize_t n = write(c, buf.data() + sent, static_cast<size_t>(bytes - sent));
        if (n <= 0) break;
        sent += n;
      }
      reader.join();
    };
    auto info = [&] {
      tcp_info i{};
      socklen_t len = sizeof i;
      getsockopt(c, IPPROTO_TCP, TCP_INFO, &i, &len);
      return i;
    };
    std::vector<unsigned> out;
    for (int64_t bytes : bursts) {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      const tcp_info before = info();
      std::printf("%s -> %s: window %u segments, %u retransmitted, before a %lld B burst\n",
                  from.c_str(), to.c_str(), before.tcpi_snd_cwnd, before.tcpi_total_retrans,
                  static_cast<long long>(bytes));
      EXPECT_GE(int64_t{before.tcpi_snd_cwnd} * before.tcpi_snd_mss, bytes)
          << "the window does not hold the burst: it would not leave at once";
      send_all(bytes);
      out.push_back(info().tcpi_total_retrans - before.tcpi_total_retrans);
    }
    conn.close_all();
    return out;
  }
};

// The model's side: the route's upstream room, and whether a warm connection's burst
// after 150 ms idle is cut (ssthresh set) on the pair from -> to.
struct ModelSide {
  int64_t upstream = 0;
  bool cut = false;
};
ModelSide model(int from, int to, int64_t bytes) {
  const auto e = xdc::run::load_experiment("tests/network/routed-burst-exp.yaml");
  const xdc::sim::LinkModel m = xdc::run::link_model(e);
  xdc::sim::LinkState s(m, 150'000'000);  // warm, idle for 150 ms
  s.send(from, to, bytes, 0);
  const size_t i = static_cast<size_t>(from) * m.ranks + to;
  return {m.tcp[i].upstream_bytes, s.history()[i].ssthresh > 0};  // no loss before: 0
}

TEST_F(RoutedBurst, ABurstOverflowsTheShortHopBeforeTheBottleneck) {
  const auto there = bursts_after_idle("near-h1", "far-h1", {kSmall, kLarge});
  ASSERT_EQ(there.size(), 2u);
  EXPECT_EQ(there[0], 0u) << "a small burst near -> far retransmitted";
  EXPECT_GT(there[1], 0u) << "a large burst near -> far passed the short hop";
  const auto back = bursts_after_idle("far-h1", "near-h1", {kLarge});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], 0u) << "the large burst far -> near retransmitted";

  const ModelSide small = model(0, 1, kSmall), large = model(0, 1, kLarge),
                  returning = model(1, 0, kLarge);
  std::printf(
      "near -> far: %lld B burst %u retransmitted, %lld B %u; far -> near %lld B %u; "
      "model: upstream %lld B near -> far, %lld B back\n",
      static_cast<long long>(kSmall), there[0], static_cast<long long>(kLarge), there[1],
      static_cast<long long>(kLarge), back[0], static_cast<long long>(small.upstream),
      static_cast<long long>(returning.upstream));
  EXPECT_GT(small.upstream, kSmall);
  EXPECT_LT(large.upstream, kLarge);
  EXPECT_EQ(returning.upstream, 0) << "the way back has no hop before its bottleneck";
  EXPECT_FALSE(small.cut);
  EXPECT_TRUE(large.cut);
  EXPECT_FALSE(returning.cut);
}

}  // namespace
