// A WAN connection that shares a host's port with a connection inside the DC meets that
// port's queue full: at the sender's own tbf (the LAN connection leaving the same host) and
// at the gateway's tbf towards the receiver (the LAN connection reaching the same host).
// Each time, CUBIC backs off, and over a run the WAN window settles far below the one it
// keeps alone. The simulator's ports (LinkModel::port, TcpPath::port_bottleneck,
// tcp_port_loss in harness/sim/tcp_model.h) against the kernel on port-share.yaml: 80
// messages of 1.2 MB every 100 ms (or once the previous one is acknowledged) on the WAN
// connection, alone or beside the same on the LAN connection; and (PortBulk, port-bulk.yaml)
// a WAN connection's messages beside one bulk transfer leaving the same host.

#include <gtest/gtest.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "harness/experiment/experiment.h"
#include "harness/network/state.h"
#include "harness/plan/plan.h"
#include "harness/sim/link_model.h"
#include "tests/network/network_fixture.h"

namespace {

using Clock = std::chrono::steady_clock;
// A stream of messages: `count` of `bytes`, message i at start + i x gap or once the
// previous one is answered.
struct Stream {
  int64_t bytes = 1'200'000;
  int count = 80;
  std::chrono::milliseconds gap{100};
};

bool read_all(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t got = read(fd, p, n);
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

// What a sender saw: after each message (acknowledged by its receiver) its connection's
// ssthresh (segments; 0 unset) and how long the message took.
struct Seen {
  std::vector<unsigned> ssthresh;
  std::vector<double> ms;
  int cuts() const {  // the messages after which ssthresh was lower than before
    int n = 0;
    for (size_t i = 1; i < ssthresh.size(); ++i) n += ssthresh[i] < ssthresh[i - 1];
    return n;
  }
  double late_ms() const {  // the second half's mean
    double s = 0;
    for (size_t i = ms.size() / 2; i < ms.size(); ++i) s += ms[i];
    return ms.empty() ? 0 : s / static_cast<double>(ms.size() - ms.size() / 2);
  }
};

// The stream's messages on the connection `pair` (client sends, peer answers one byte each).
void run_flow(xdc::testing::TcpPair pair, Stream f, Clock::time_point start, Seen* seen) {
  std::thread answer([fd = pair.peer, f] {
    std::vector<char> in(static_cast<size_t>(f.bytes));
    for (int i = 0; i < f.count; ++i) {
      if (!read_all(fd, in.data(), in.size())) return;
      const char k = 'k';
      if (write(fd, &k, 1) != 1) return;
    }
  });
  const std::vector<char> out(static_cast<size_t>(f.bytes), 'x');
  for (int i = 0; i < f.count; ++i) {
    std::this_thread::sleep_until(start + i * f.gap);
    const auto t0 = Clock::now();
    size_t sent = 0;
    while (sent < out.size()) {
      const ssize_t n = write(pair.client, out.data() + sent, out.size() - sent);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    char k = 0;
    if (sent < out.size() || !read_all(pair.client, &k, 1)) break;
    tcp_info info{};
    socklen_t len = sizeof info;
    getsockopt(pair.client, IPPROTO_TCP, TCP_INFO, &info, &len);
    seen->ssthresh.push_back(info.tcpi_snd_ssthresh >= 0x7fffffffu ? 0 : info.tcpi_snd_ssthresh);
    seen->ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  answer.join();
  pair.close_all();
}

// A network of two hosts in DC west and one in east (port-share.yaml and its kind) and
// its experiment, whose ranks 0, 1, 2 are west-h1, west-h2, east-h1.
class PortShare : public xdc::testing::NetworkTest {
 protected:
  explicit PortShare(const std::string& topology = "tests/network/port-share.yaml",
                     std::string experiment = "tests/network/port-share-exp.yaml")
      : NetworkTest(topology, "pshare"), experiment_(std::move(experiment)) {}

  // The kernel: the WAN connection `wan` (host names) alone, or with the LAN one `lan`; both
  // send stream f, or the LAN one `lan_stream` where given.
  Seen kernel(const std::string& wan_from, const std::string& wan_to, const std::string& lan_from,
              const std::string& lan_to, int port, const Stream& f = {},
              const Stream* lan_stream = nullptr) {
    auto state = xdc::net::load_state(name_);
    EXPECT_TRUE(state);
    if (!state) return {};
    auto conn = [&](const std::string& a, const std::string& b, int p) {
      const auto* x = state->find_host(a);
      const auto* y = state->find_host(b);
      return xdc::testing::connect_in(x->ns, y->ns, y->data_ip, p);
    };
    Seen wan, lan;
    const auto start = Clock::now() + std::chrono::milliseconds(200);
    std::thread w(run_flow, conn(wan_from, wan_to, port), f, start, &wan);
    std::thread l;
    if (!lan_from.empty())
      l = std::thread(run_flow, conn(lan_from, lan_to, port + 1), lan_stream ? *lan_stream : f,
                      start, &lan);
    w.join();
    if (l.joinable()) l.join();
    return wan;
  }

  // The simulator: the same messages from ranks wf to wt and lf to lt (lf < 0: none), each
  // stream's next at i x gap or once the previous one arrived and its answer is back.
  // ssthresh: the WAN connection's at the end.
  Seen model(int wf, int wt, int lf, int lt, const Stream& f = {},
             const Stream* lan_stream = nullptr) const {
    const auto e = xdc::run::load_experiment(experiment_);
    const xdc::sim::LinkModel m = xdc::run::link_model(e);
    xdc::sim::LinkState st(m, xdc::sim::LinkState::launch(m));  // new, as the kernel's
    struct Sender {
      int from, to;
      Stream f;
      int sent = 0;
      int64_t ready = 0;
    };
    std::vector<Sender> senders = {{wf, wt, f}};
    if (lf >= 0) senders.push_back({lf, lt, lan_stream ? *lan_stream : f});
    Seen seen;
    for (;;) {
      Sender* next = nullptr;
      for (Sender& s : senders)
        if (s.sent < s.f.count && (!next || s.ready < next->ready)) next = &s;
      if (!next) break;
      const xdc::sim::Transfer x = st.send(next->from, next->to, next->f.bytes, next->ready);
      const int64_t back = x.arrival_ns + m.at(next->to, next->from).latency_ns;
      if (next == &senders[0]) seen.ms.push_back(static_cast<double>(back - next->ready) / 1e6);
      ++next->sent;
      next->ready =
          std::max<int64_t>(next->sent * std::chrono::nanoseconds(next->f.gap).count(), back);
    }
    const xdc::sim::TcpConn& c = st.history()[m.connection(wf, wt)];
    seen.ssthresh.push_back(static_cast<unsigned>(c.ssthresh / xdc::sim::kTcpMss));
    return seen;
  }

  std::string experiment_;
};

TEST_F(PortShare, AWanWindowSharingAPortWithALanConnectionSettlesLowAsModelled) {
  // Ranks of port-share-exp.yaml: 0 west-h1, 1 west-h2, 2 east-h1.
  const Seen alone = kernel("west-h1", "east-h1", "", "", 7721);
  const Seen out = kernel("west-h1", "east-h1", "west-h1", "west-h2", 7723);
  const Seen in = kernel("east-h1", "west-h1", "west-h2", "west-h1", 7725);
  const Seen m_alone = model(0, 2, -1, -1), m_out = model(0, 2, 0, 1), m_in = model(2, 0, 1, 0);
  auto show = [](const char* what, const Seen& k, const Seen& s) {
    std::printf(
        "%-28s kernel: %d cuts, ssthresh %u at the end, second half %.1f ms a message; "
        "model: ssthresh %u, %.1f ms\n",
        what, k.cuts(), k.ssthresh.empty() ? 0 : k.ssthresh.back(), k.late_ms(), s.ssthresh.back(),
        s.late_ms());
  };
  show("alone", alone, m_alone);
  show("sender's port shared", out, m_out);
  show("receiver's port shared", in, m_in);
  ASSERT_EQ(alone.ms.size(), static_cast<size_t>(Stream{}.count));
  ASSERT_EQ(out.ms.size(), static_cast<size_t>(Stream{}.count));
  ASSERT_EQ(in.ms.size(), static_cast<size_t>(Stream{}.count));
  // Sharing the receiver's port, the kernel's WAN connection backs off more often than
  // alone (3-7 cuts against 0-2: alone, slow start and its regrowth overflow its own host's
  // tbf now and then), and the model's backs off at either port.
  EXPECT_GT(in.cuts(), alone.cuts());
  EXPECT_LT(m_out.ssthresh.back(), m_alone.ssthresh.back());
  EXPECT_LT(m_in.ssthresh.back(), m_alone.ssthresh.back());
  // At the receiver's port the kernel's messages take 93-116 ms (idle; the model 85 ms):
  // the model is held to within a factor of two. At the sender's each LAN overflow takes
  // the WAN connection's packet about half the time, so one run is a draw (1-5 cuts and
  // 30-106 ms a message; the model 95 ms): printed, not checked.
  EXPECT_GT(m_in.late_ms(), in.late_ms() / 2);
  EXPECT_LT(m_in.late_ms(), in.late_ms() * 2);
}

// The WAN connection's messages (3.6 MB every 400 ms over 33 ms and 420 Mbit/s) while its
// host sends one bulk transfer inside the DC (200 MiB, about two seconds of the port): the
// bulk transfer keeps the port's queue near full (what TCP small queues let it hold
// there), the WAN connection's aggregates meet it, its own qdisc drops them and it enters
// CWR (no retransmission) again and again. The ground truth for the sender's port under a
// LAN flow that outlasts the WAN messages, and the model held to it (LinkState's
// port_queue: each WAN aggregate dropped whole where the bulk connection's share leaves it
// no room).
class PortBulk : public PortShare {
 protected:
  PortBulk() : PortShare("tests/network/port-bulk.yaml", "tests/network/port-bulk-exp.yaml") {}
};

TEST_F(PortBulk, AWanConnectionBesideABulkTransferLeavingItsHostIsCutAgainAndAgain) {
  const Stream wan{3'726'336, 10, std::chrono::milliseconds(400)};
  const Stream bulk{int64_t{200} << 20, 1, std::chrono::milliseconds(0)};
  // Ranks of port-bulk-exp.yaml: 0 west-h1, 1 west-h2, 2 east-h1.
  const Seen alone = kernel("west-h1", "east-h1", "", "", 7741, wan);
  const Seen shared = kernel("west-h1", "east-h1", "west-h1", "west-h2", 7743, wan, &bulk);
  const Seen m_alone = model(0, 2, -1, -1, wan), m_shared = model(0, 2, 0, 1, wan, &bulk);
  auto row = [](const char* what, const Seen& k) {
    std::printf("%-14s ms a message:", what);
    for (const double ms : k.ms) std::printf(" %.0f", ms);
    std::printf("; ssthresh at the end %u\n", k.ssthresh.empty() ? 0 : k.ssthresh.back());
  };
  row("kernel alone", alone);
  row("kernel shared", shared);
  row("model alone", m_alone);
  row("model shared", m_shared);
  ASSERT_EQ(alone.ssthresh.size(), static_cast<size_t>(wan.count));
  ASSERT_EQ(shared.ssthresh.size(), static_cast<size_t>(wan.count));
  // Alone its window ends near the path's (ssthresh 2410-2480 segments, 140-175 ms a
  // message); beside the bulk transfer ssthresh ended at 186-336 and messages 1-4 (after
  // slow start, while the bulk transfer lasts) took 470-880 ms. The model: 2443 alone,
  // 149-175 ms; beside it 248, 336-666 ms.
  auto early = [](const Seen& k) { return (k.ms[1] + k.ms[2] + k.ms[3] + k.ms[4]) / 4; };
  EXPECT_LT(shared.ssthresh.back() * 4, alone.ssthresh.back());
  EXPECT_GT(early(shared), 2 * early(alone));
  EXPECT_LT(m_shared.ssthresh.back() * 4, m_alone.ssthresh.back());
  EXPECT_GT(early(m_shared), 2 * early(m_alone));
}

}  // namespace
