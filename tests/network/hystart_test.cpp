// CUBIC's HyStart ends a fresh connection's first slow start without a loss, ssthresh at
// the window then: the simulator's TCP model (tcp_hystart_exit_bytes, harness/sim/
// tcp_model.h) against the kernel on hystart.yaml (200 Mbit/s, 2 ms one way, a queue that
// holds slow start's bursts): one write of 4 MiB on each of several fresh connections.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "harness/experiment/experiment.h"
#include "harness/network/state.h"
#include "harness/plan/plan.h"
#include "harness/sim/link_model.h"
#include "tests/network/network_fixture.h"

namespace {

constexpr int kPort = 7714;
constexpr int64_t kBytes = 4 << 20;

class Hystart : public xdc::testing::NetworkTest {
 protected:
  Hystart() : NetworkTest("tests/network/hystart.yaml", "hy") {}
};

// One write of kBytes on a fresh connection west -> east, read to its end on the peer:
// the sender's TCP_INFO then.
tcp_info one_connection(const xdc::net::HostState& a, const xdc::net::HostState& b, int port) {
  tcp_info info{};
  xdc::testing::TcpPair pair = xdc::testing::connect_in(a.ns, b.ns, b.data_ip, port);
  if (pair.peer < 0) return info;
  int64_t got = 0;
  std::thread reader([&] { got = xdc::testing::read_up_to(pair.peer, kBytes); });
  xdc::testing::write_up_to(pair.client, kBytes);
  reader.join();
  socklen_t len = sizeof info;
  if (got == kBytes) getsockopt(pair.client, IPPROTO_TCP, TCP_INFO, &info, &len);
  pair.close_all();
  return info;
}

TEST_F(Hystart, TheAckTrainEndsTheFirstSlowStartWithoutALossAtTheModelsWindow) {
  auto state = xdc::net::load_state(name_);
  ASSERT_TRUE(state);
  const auto* a = state->find_host("west-h1");
  const auto* b = state->find_host("east-h1");
  ASSERT_TRUE(a && b);

  // The model: the same bytes on a fresh connection of the pair, as one stream.
  const auto e = xdc::run::load_experiment("tests/network/hystart-exp.yaml");
  const xdc::sim::LinkModel m = xdc::run::link_model(e);
  const size_t cell = m.cell(0, 1), back = m.cell(1, 0);  // west-h1 -> east-h1
  const xdc::sim::Link& link = m.links[cell];
  xdc::sim::TcpConn conn;
  xdc::sim::tcp_transmit(conn, m.tcp[cell], link.bandwidth_bps,
                         link.latency_ns + m.links[back].latency_ns, 0, kBytes);
  ASSERT_TRUE(conn.hystart_found);
  const int64_t model = conn.ssthresh / xdc::sim::kTcpMss;
  const int64_t overflow = (m.tcp[cell].bdp_bytes + m.tcp[cell].queue_bytes) / xdc::sim::kTcpMss;
  std::printf(
      "model: ssthresh %lld segments, cwnd %lld at the end; bandwidth-delay product "
      "%lld segments, with the queue %lld\n",
      static_cast<long long>(model), static_cast<long long>(conn.cwnd / xdc::sim::kTcpMss),
      static_cast<long long>(m.tcp[cell].bdp_bytes / xdc::sim::kTcpMss),
      static_cast<long long>(overflow));

  // The train breaks where an ACK comes more than 2 ms after the one before: the delay
  // line stalled on a busy machine (tcp_probe shows the gaps). The kernel then ends slow
  // start a round later, so the model's window is held to the kernel's in several
  // connections, not in each.
  constexpr int kTrials = 7;
  int near = 0;
  for (int i = 0; i < kTrials; ++i) {
    // Fresh as a new network's: Linux keeps a closed connection's ssthresh for the next
    // one to the same destination (tcp_metrics), which would start there.
    ASSERT_EQ(std::system(("ip netns exec " + a->ns + " ip tcp_metrics flush all").c_str()), 0);
    const tcp_info info = one_connection(*a, *b, kPort + i);
    std::printf(
        "kernel, connection %d: %u retransmitted, ssthresh %u segments, cwnd %u at the "
        "end\n",
        i, info.tcpi_total_retrans, info.tcpi_snd_ssthresh, info.tcpi_snd_cwnd);
    ASSERT_GT(info.tcpi_snd_mss, 0u) << "connection " << i << " did not carry its bytes";
    ASSERT_LT(int64_t{info.tcpi_snd_ssthresh}, overflow) << "slow start ran to the overflow";
    const double kernel = info.tcpi_snd_ssthresh;
    near += info.tcpi_total_retrans == 0 && kernel > 0.8 * static_cast<double>(model) &&
            kernel < 1.25 * static_cast<double>(model);
  }
  // Idle, 5 of 7 connections end within a fifth of the model's window with nothing lost
  // (2 ms, 200 Mbit/s: 128-142 segments against 122); the others a round later (about
  // 200) or at a stray loss of the emulator's.
  EXPECT_GE(near, 3) << "of " << kTrials << " connections near the model's window";
}

}  // namespace
