// A route over several WAN hops can overflow a hop before its bottleneck: the simulator's
// TCP model (TcpPath::upstream_bytes, harness/plan/links.cpp) against the kernel on the
// emulated WAN. On routed-burst.yaml a warm connection near -> far, idle for a few round
// trips, writes one burst: a small one passes the 2 ms hop's queue, a large one overflows
// it (the kernel retransmits); the same large burst far -> near, which meets the long
// hop's bottleneck queue first, passes.
//
// The warm-up opens CUBIC's window without a loss: it writes 64 KiB at a time at
// 200 Mbit/s (kWarmBps, below the 300 Mbit/s bottleneck), so no queue fills and no burst
// exceeds the short hop's room, and slow start still grows the window to twice what is in
// flight (tcp_is_cwnd_limited), above the large burst. A warm-up at full speed overshoots
// the queues, and its losses can leave the window below the burst.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "harness/experiment/experiment.h"
#include "harness/network/state.h"
#include "harness/plan/plan.h"
#include "harness/sim/link_model.h"
#include "tests/network/network_fixture.h"

namespace {

constexpr int kPort = 7712;
constexpr int64_t kSmall = 200 << 10;  // passes the short hop (the model: 283 KB do)
constexpr int64_t kLarge = 600 << 10;  // overflows it
constexpr double kWarmBps = 200e6;
constexpr int64_t kWarmChunk = 64 << 10;

class RoutedBurst : public xdc::testing::NetworkTest {
 protected:
  RoutedBurst() : NetworkTest("tests/network/routed-burst.yaml", "rtb") {}

  // A connection `from` -> `to` that has carried 16 MB (its window open), then after
  // 150 ms idle (several round trips, under the retransmission timeout) each burst of
  // `bursts` in turn, 150 ms apart: the segments the kernel retransmitted for each.
  std::vector<unsigned> bursts_after_warmup(const std::string& from, const std::string& to,
                                            const std::vector<int64_t>& bursts) {
    auto state = xdc::net::load_state(name_);
    EXPECT_TRUE(state);
    if (!state) return {};
    const auto* a = state->find_host(from);
    const auto* b = state->find_host(to);
    xdc::testing::TcpPair conn = xdc::testing::connect_in(a->ns, b->ns, b->data_ip, kPort);
    EXPECT_GE(conn.peer, 0) << "no connection " << from << " -> " << to;
    const int c = conn.client, peer = conn.peer;
    std::vector<char> buf(16 << 20, 'x');
    // `bytes` written at once (a burst), or kWarmChunk at a time at kWarmBps (a slot
    // missed on a busy machine is skipped, never made up in a burst).
    auto send_all = [&](int64_t bytes, bool paced = false) {
      int64_t sent = 0, got = 0;
      std::thread reader([&] {
        std::vector<char> in(1 << 20);
        while (got < bytes) {
          const ssize_t n = read(peer, in.data(), in.size());
          if (n <= 0) break;
          got += n;
        }
      });
      const auto slot = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(kWarmChunk * 8 / kWarmBps));
      auto next = std::chrono::steady_clock::now();
      while (sent < bytes) {
        int64_t want = bytes - sent;
        if (paced) {
          std::this_thread::sleep_until(next);
          next = std::max(next + slot, std::chrono::steady_clock::now());
          want = std::min(want, kWarmChunk);
        }
        const ssize_t n = write(c, buf.data() + sent, static_cast<size_t>(want));
        if (n <= 0) break;
        sent += n;
      }
      reader.join();
    };
    auto retransmitted = [&] {
      tcp_info info{};
      socklen_t len = sizeof info;
      getsockopt(c, IPPROTO_TCP, TCP_INFO, &info, &len);
      return info.tcpi_total_retrans;
    };
    auto window = [&] {
      tcp_info info{};
      socklen_t len = sizeof info;
      getsockopt(c, IPPROTO_TCP, TCP_INFO, &info, &len);
      return int64_t{info.tcpi_snd_cwnd} * info.tcpi_snd_mss;
    };
    send_all(16 << 20, /*paced=*/true);
    std::printf("%s -> %s warm-up of 16 MiB: %u retransmitted, window %lld B\n", from.c_str(),
                to.c_str(), retransmitted(), static_cast<long long>(window()));
    std::vector<unsigned> out;
    for (int64_t bytes : bursts) {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      // Where a busy machine's late delay line released a bunch that a queue dropped,
      // CUBIC cut the window: warm again (at most three times) until it holds the burst.
      for (int warm = 0; warm < 3 && window() < bytes; ++warm) {
        send_all(16 << 20, /*paced=*/true);
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
      }
      EXPECT_GE(window(), bytes)
          << "the window does not hold the burst: it would not leave at once";
      const unsigned before = retransmitted();
      send_all(bytes);
      out.push_back(retransmitted() - before);
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
  const auto there = bursts_after_warmup("near-h1", "far-h1", {kSmall, kLarge});
  ASSERT_EQ(there.size(), 2u);
  EXPECT_EQ(there[0], 0u) << "a small burst near -> far retransmitted";
  EXPECT_GT(there[1], 0u) << "a large burst near -> far passed the short hop";
  const auto back = bursts_after_warmup("far-h1", "near-h1", {kLarge});
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
