// A bottleneck queue is shared by the connections that cross it: the simulator's TCP
// model (LinkState, tcp_model.h) against the kernel on the emulated WAN. New connections
// each send one message in slow start through shared-bottleneck.yaml's 100 Mbit/s, 64-packet
// queue: one alone fits the queue (no retransmission, no window cut); three at once
// overflow it (the kernel retransmits, and the model cuts their windows).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "harness/experiment/experiment.h"
#include "harness/network/state.h"
#include "harness/plan/plan.h"
#include "harness/sim/link_model.h"
#include "netem/nl/netns.h"
#include "tests/network/network_fixture.h"

namespace {

constexpr int64_t kMessage = 150 * 1448;  // slow start's rounds: 10 + 20 + 40 + 80 segments
constexpr int kPort = 7711;

using xdc::testing::socket_in;

sockaddr_in address(const std::string& ip) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(kPort);
  inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

class SharedBottleneck : public xdc::testing::NetworkTest {
 protected:
  SharedBottleneck() : NetworkTest("tests/network/shared-bottleneck.yaml", "sbn") {}

  // New connections east-hK -> west-hK (K = 1..pairs) each send one message, all starting
  // together once every one is connected; each sender's retransmitted segments
  // (tcpi_total_retrans) when its receiver has the whole message.
  std::vector<unsigned> send_at_once(int pairs) {
    auto state = xdc::net::load_state(name_);
    EXPECT_TRUE(state);
    if (!state) return {};
    std::vector<int> servers, clients;
    for (int k = 1; k <= pairs; ++k) {
      const auto* w = state->find_host("west-h" + std::to_string(k));
      const auto* e = state->find_host("east-h" + std::to_string(k));
      int s = socket_in(w->ns), one = 1;
      setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      sockaddr_in a = address(w->data_ip);
      EXPECT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
      EXPECT_EQ(listen(s, 1), 0);
      int c = socket_in(e->ns);
      EXPECT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
      servers.push_back(s);
      clients.push_back(c);
    }
    std::vector<unsigned> retrans(pairs, 0);
    std::vector<int> peers;
    for (int k = 0; k < pairs; ++k) peers.push_back(accept(servers[k], nullptr, nullptr));
    // Receivers read as the data comes; one thread writes every message, round robin on
    // non-blocking sockets, so the connections start within microseconds of each other
    // whatever the scheduler does with threads (three writer threads on 2 busy cores
    // started a round trip apart and never met in the queue).
    std::vector<std::thread> readers;
    for (int k = 0; k < pairs; ++k)
      readers.emplace_back([&, k] { xdc::testing::read_up_to(peers[k], kMessage); });
    const std::vector<char> data(kMessage, 'x');
    std::vector<int64_t> sent(pairs, 0);
    for (int c : clients) fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
    for (bool more = true; more;) {
      more = false;
      std::vector<pollfd> wait;
      for (int k = 0; k < pairs; ++k) {
        while (sent[k] < kMessage) {
          const ssize_t n = write(clients[k], data.data() + sent[k], kMessage - sent[k]);
          if (n <= 0) break;
          sent[k] += n;
        }
        if (sent[k] < kMessage) {
          more = true;
          wait.push_back({clients[k], POLLOUT, 0});
        }
      }
      if (more && poll(wait.data(), wait.size(), 10'000) <= 0) break;
    }
    for (auto& t : readers) t.join();
    for (int k = 0; k < pairs; ++k) {
      EXPECT_EQ(sent[k], kMessage) << "pair " << k;
      tcp_info info{};
      socklen_t len = sizeof info;
      getsockopt(clients[k], IPPROTO_TCP, TCP_INFO, &info, &len);
      retrans[k] = info.tcpi_total_retrans;
      close(peers[k]);
    }
    for (int k = 0; k < pairs; ++k) close(clients[k]), close(servers[k]);
    return retrans;
  }
};

// The same messages in the simulator: pairs (rank 2k -> 2k + 1) from new connections at
// the launch, all at time 0; whether each connection's window was cut (ssthresh set).
std::vector<bool> model_cuts(int pairs) {
  const auto e = xdc::run::load_experiment("tests/network/shared-bottleneck-exp.yaml");
  const xdc::sim::LinkModel m = xdc::run::link_model(e);
  xdc::sim::LinkState s(m, xdc::sim::LinkState::launch(m));
  std::vector<int64_t> tickets;
  for (int k = 0; k < pairs; ++k) tickets.push_back(s.post(2 * k, 2 * k + 1, kMessage, 0).ticket);
  for (int64_t t : tickets) s.current(t);
  const auto h = s.history();
  std::vector<bool> cut;
  for (int k = 0; k < pairs; ++k)
    cut.push_back(h[static_cast<size_t>(2 * k) * m.ranks + 2 * k + 1].ssthresh > 0);
  return cut;
}

TEST_F(SharedBottleneck, OneConnectionFitsTheQueueThreeAtOnceOverflowIt) {
  const auto alone = send_at_once(1);
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0], 0u) << "one connection's slow start retransmitted";
  EXPECT_EQ(model_cuts(1), std::vector<bool>{false}) << "the model cut one connection's window";

  const auto three = send_at_once(3);
  ASSERT_EQ(three.size(), 3u);
  unsigned total = 0;
  for (unsigned r : three) total += r;
  EXPECT_GT(total, 0u) << "three connections at once did not overflow the queue";
  const auto cuts = model_cuts(3);
  EXPECT_EQ(std::count(cuts.begin(), cuts.end(), true), 3)
      << "the model did not see the shared queue overflow";
}

}  // namespace
