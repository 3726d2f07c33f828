// The send buffer's window as the kernel keeps it (harness/sim/tcp_model.h,
// tcp_send_buffer_window): a writer that fills its socket as OpenMPI's btl/tcp does (non-
// blocking, one write of all that is left per EPOLLOUT) over 80 ms one way with stock
// buffers is woken only once its queued bytes have fallen to 2/3 of the send buffer
// (sk_stream_is_writeable), and each write fills the buffer again: the refills the
// simulator's window is made of. Ground truth for the window-limited WAN transfers of
// experiments/repro/dp-sync.yaml (docs/history/predictions.md).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "harness/network/state.h"
#include "harness/sim/tcp_model.h"
#include "tests/network/network_fixture.h"

namespace {

constexpr int64_t kBytes = 96LL << 20;  // ~6 s at the window's ~140 Mbit/s

class SendBuffer : public xdc::testing::NetworkTest {
 protected:
  SendBuffer() : NetworkTest("tests/network/wan-80ms.yaml", "wsndbuf") {}
};

struct Write {
  int64_t queued_before = 0, wrote = 0;  // TIOCOUTQ (unacked + unsent payload), bytes taken
};

TEST_F(SendBuffer, AWriterIsWokenAtTwoThirdsOfItsSendBufferAndRefillsIt) {
  auto state = xdc::net::load_state(name_);
  ASSERT_TRUE(state);
  const auto* e1 = state->find_host("e1");
  const auto* w1 = state->find_host("w1");
  ASSERT_TRUE(e1 && w1);
  xdc::testing::TcpPair pair = xdc::testing::connect_in(e1->ns, w1->ns, w1->data_ip, 7731);
  ASSERT_GE(pair.peer, 0) << "no connection e1 -> w1";
  std::thread drain([&] {
    std::vector<char> in(1 << 20);
    while (read(pair.peer, in.data(), in.size()) > 0) {
    }
  });

  const int fd = pair.client;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLOUT;  // level-triggered, as libevent registers it
  ev.data.fd = fd;
  ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
  std::vector<char> buf(static_cast<size_t>(kBytes), 'x');
  std::vector<Write> writes;
  for (int64_t off = 0; off < kBytes;) {
    epoll_event got{};
    if (epoll_wait(ep, &got, 1, 10'000) != 1) break;
    int queued = 0;
    ioctl(fd, SIOCOUTQ, &queued);
    const ssize_t n = write(fd, buf.data() + off, static_cast<size_t>(kBytes - off));
    if (n > 0) {
      writes.push_back({queued, n});
      off += n;
    }
  }
  int sndbuf = 0;
  socklen_t len = sizeof sndbuf;
  getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len);
  close(ep);
  shutdown(fd, SHUT_WR);
  drain.join();
  pair.close_all();

  // The buffer-limited part: the second half of the writes (the first fill the buffer
  // while slow start still limits what leaves).
  ASSERT_GE(writes.size(), 20u) << "the writer was not buffer-limited";
  const std::vector<Write> steady(writes.begin() + static_cast<long>(writes.size() / 2),
                                  writes.end() - 1);
  int64_t highest = 0;
  std::vector<int64_t> sizes, after;
  for (const Write& w : steady) {
    highest = std::max(highest, w.queued_before);
    sizes.push_back(w.wrote);
    after.push_back(w.queued_before + w.wrote);
  }
  std::sort(after.begin(), after.end());
  std::sort(sizes.begin(), sizes.end());
  const int64_t median = sizes[sizes.size() / 2];
  const int64_t window = xdc::sim::tcp_send_buffer_window(static_cast<uint64_t>(sndbuf));
  std::printf(
      "send buffer %d B: %zu writes, %zu buffer-limited: queued before a write at most %lld B "
      "(%.3f of it), median write %lld B; the model's refill %lld B (window %lld B)\n",
      sndbuf, writes.size(), steady.size(), static_cast<long long>(highest),
      static_cast<double>(highest) / sndbuf, static_cast<long long>(median),
      static_cast<long long>(window / 2), static_cast<long long>(window));
  // The wake: never above 2/3 of the buffer (payload is below its truesize), and the writer
  // woken close to it (a late wake on a busy machine only lowers it).
  EXPECT_LE(highest, 2 * static_cast<int64_t>(sndbuf) / 3);
  EXPECT_GE(highest, 6 * static_cast<int64_t>(sndbuf) / 10);
  // The refill: each write fills the buffer again (its payload, ~0.99 of it, and more:
  // tcp_sendmsg goes past the limit by the skb it fills, and takes in ACKs that arrive while
  // it copies, every 16 skbs), so a write is at least the model's refill less a skb: 25
  // skbs with this writer, 22 with OpenMPI's on the same machine.
  EXPECT_GE(after[after.size() / 2], 95 * static_cast<int64_t>(sndbuf) / 100);
  EXPECT_GE(median, window / 2 - xdc::sim::kTsoSkbPayload);
}

}  // namespace
