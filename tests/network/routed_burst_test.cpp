// Bursts that leave a host at once, as a warm connection's after idle, against the
// simulator's TCP model on the emulated WAN (harness/plan/links.cpp's burst_room):
// - RoutedBurst: a route over several WAN hops can overflow a hop before its bottleneck
//   (TcpPath::upstream_bytes). On routed-burst.yaml a connection near -> far whose window
//   holds the burst, idle for a few round trips, writes one burst: a small one passes the
//   2 ms hop's queue, a large one overflows it (the kernel retransmits); the same large burst
//   far -> near, which meets the long hop's bottleneck queue first, passes.
// - IdleBurst: the bottleneck serves part of a burst while it arrives at the host's rate
//   (TcpPath::idle_burst_bytes). On idle-burst.yaml a burst larger than the WAN tbf's queue
//   and bucket but within what the model says it passes goes without a retransmission;
//   one beyond that is cut.
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
constexpr int64_t kSmall = 200 << 10;      // passes the short hop (the model: 283 KB do)
constexpr int64_t kLarge = 600 << 10;      // overflows it
constexpr unsigned kInitialWindow = 1200;  // segments: 1.74 MB, above every burst here
constexpr int kReceiveBuffer = 8 << 20;

class BurstTest : public xdc::testing::NetworkTest {
 protected:
  using NetworkTest::NetworkTest;

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
      const tcp_info after = info();
      std::printf("  after: window %u segments, ssthresh %u, %u retransmitted\n",
                  after.tcpi_snd_cwnd, after.tcpi_snd_ssthresh, after.tcpi_total_retrans);
      out.push_back(after.tcpi_total_retrans - before.tcpi_total_retrans);
    }
    conn.close_all();
    return out;
  }
};

class RoutedBurst : public BurstTest {
 protected:
  RoutedBurst() : BurstTest("tests/network/routed-burst.yaml", "rtb") {}
};

class IdleBurst : public BurstTest {
 protected:
  IdleBurst() : BurstTest("tests/network/idle-burst.yaml", "idb") {}
};

// The model's side: the path's rooms, and whether a warm connection's burst after 150 ms
// idle is cut (ssthresh set) on the pair from -> to of experiment `exp`.
struct ModelSide {
  xdc::sim::TcpPath path;
  bool cut = false;
};
ModelSide model(const std::string& exp, int from, int to, int64_t bytes) {
  const auto e = xdc::run::load_experiment(exp);
  const xdc::sim::LinkModel m = xdc::run::link_model(e);
  xdc::sim::LinkState s(m, 150'000'000);  // warm, idle for 150 ms
  s.send(from, to, bytes, 0);
  const size_t i = static_cast<size_t>(from) * m.ranks + to;
  return {m.tcp[i], s.history()[i].ssthresh > 0};  // no loss before: 0
}
ModelSide routed(int from, int to, int64_t bytes) {
  return model("tests/network/routed-burst-exp.yaml", from, to, bytes);
}

TEST_F(RoutedBurst, ABurstOverflowsTheShortHopBeforeTheBottleneck) {
  const auto there = bursts_after_idle("near-h1", "far-h1", {kSmall, kLarge});
  ASSERT_EQ(there.size(), 2u);
  EXPECT_EQ(there[0], 0u) << "a small burst near -> far retransmitted";
  EXPECT_GT(there[1], 0u) << "a large burst near -> far passed the short hop";
  const auto back = bursts_after_idle("far-h1", "near-h1", {kLarge});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], 0u) << "the large burst far -> near retransmitted";

  const ModelSide small = routed(0, 1, kSmall), large = routed(0, 1, kLarge),
                  returning = routed(1, 0, kLarge);
  std::printf(
      "near -> far: %lld B burst %u retransmitted, %lld B %u; far -> near %lld B %u; "
      "model: upstream %lld B near -> far, %lld B back\n",
      static_cast<long long>(kSmall), there[0], static_cast<long long>(kLarge), there[1],
      static_cast<long long>(kLarge), back[0], static_cast<long long>(small.path.upstream_bytes),
      static_cast<long long>(returning.path.upstream_bytes));
  EXPECT_GT(small.path.upstream_bytes, kSmall);
  EXPECT_LT(large.path.upstream_bytes, kLarge);
  EXPECT_EQ(returning.path.upstream_bytes, 0) << "the way back has no hop before its bottleneck";
  EXPECT_FALSE(small.cut);
  EXPECT_TRUE(large.cut);
  EXPECT_FALSE(returning.cut);
}

// Between the tbf's queue and bucket and what it passes while the burst arrives, the model
// lets a burst through where a burst arriving at once would overflow; beyond, both cut.
TEST_F(IdleBurst, TheBottleneckServesPartOfABurstWhileItArrives) {
  const std::string exp = "tests/network/idle-burst-exp.yaml";
  const xdc::sim::TcpPath p = model(exp, 0, 1, 1).path;
  ASSERT_GT(p.idle_burst_bytes, p.queue_bytes * 5 / 4) << "the rate stage is fed near its rate";
  const int64_t within = (p.queue_bytes + p.idle_burst_bytes) / 2;
  const int64_t beyond = p.idle_burst_bytes * 13 / 10;
  ASSERT_LT(beyond, int64_t{kInitialWindow} * xdc::sim::kTcpMss);
  const ModelSide fits = model(exp, 0, 1, within), cut = model(exp, 0, 1, beyond);
  EXPECT_FALSE(fits.cut);
  EXPECT_TRUE(cut.cut);
  // The burst leaves the host at its tbf's rate without filling that tbf's queue: TCP small
  // queues keep less of it there than the queue holds (else the host's own drops put the
  // sender in CWR and ACKs clock the rest: tcp_host_queue_overflow's mechanism, not this).
  {
    auto state = xdc::net::load_state(name_);
    ASSERT_TRUE(state);
    const auto r = xdc::netem::run_argv({"sysctl", "-qw", "net.ipv4.tcp_limit_output_bytes=65536"},
                                        state->find_host("west-h1")->ns);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // A connection each: a burst that overflows cuts the window.
  std::vector<unsigned> kernel;
  for (int64_t bytes : {within, beyond})
    for (unsigned retransmitted : bursts_after_idle("west-h1", "east-h1", {bytes}))
      kernel.push_back(retransmitted);
  ASSERT_EQ(kernel.size(), 2u);
  std::printf(
      "queue and bucket %lld B, passed while arriving %lld B (model); kernel: %lld B burst %u "
      "retransmitted, %lld B %u\n",
      static_cast<long long>(p.queue_bytes), static_cast<long long>(p.idle_burst_bytes),
      static_cast<long long>(within), kernel[0], static_cast<long long>(beyond), kernel[1]);
  EXPECT_EQ(kernel[0], 0u) << "a burst the model passes retransmitted";
  EXPECT_GT(kernel[1], 0u) << "a burst beyond what the model passes went through";
}

}  // namespace
