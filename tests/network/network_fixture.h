#pragma once
// A test with one emulated network up: `xdc up FILE --name NAME` before each test, `xdc
// down NAME` after it, and nothing of NAME left behind. Probes (harness/check/probes.h)
// reach the hosts through the built xdc (XDC_EXE).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "harness/network/state.h"
#include "netem/nl/netns.h"
#include "tests/network/leftovers.h"

namespace xdc::testing {

// A TCP socket created inside network namespace `ns` (it stays there after the guard).
inline int socket_in(const std::string& ns) {
  xdc::nl::NetnsGuard in(ns);
  return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

// One TCP connection from namespace `from_ns` to `to_ip`:`port` in namespace `to_ns`: the
// listening socket, the client's and the accepted one (-1 where a step failed). A
// `rcvbuf` > 0 fixes the receiver's buffer (SO_RCVBUFFORCE, no autotuning) before it
// listens, so that its first window can be that large.
struct TcpPair {
  int listener = -1, client = -1, peer = -1;
  void close_all() {
    for (int fd : {peer, client, listener})
      if (fd >= 0) ::close(fd);
  }
};
inline TcpPair connect_in(const std::string& from_ns, const std::string& to_ns,
                          const std::string& to_ip, int port, int rcvbuf = 0) {
  TcpPair p;
  p.listener = socket_in(to_ns);
  int one = 1;
  setsockopt(p.listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (rcvbuf > 0) setsockopt(p.listener, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, to_ip.c_str(), &addr.sin_addr);
  if (bind(p.listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(p.listener, 1) != 0)
    return p;
  p.client = socket_in(from_ns);
  if (connect(p.client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return p;
  p.peer = accept(p.listener, nullptr, nullptr);
  return p;
}

// Reads from `fd` until `bytes` have come or the peer closed or failed: what came.
inline int64_t read_up_to(int fd, int64_t bytes) {
  std::vector<char> in(1 << 20);
  int64_t got = 0;
  while (got < bytes) {
    const ssize_t n = ::read(fd, in.data(), in.size());
    if (n <= 0) break;
    got += n;
  }
  return got;
}

// Writes `bytes` on `fd` (blocking) until done or the write fails: what was written.
inline int64_t write_up_to(int fd, int64_t bytes) {
  std::vector<char> out(1 << 20, 'x');
  int64_t sent = 0;
  while (sent < bytes) {
    const ssize_t n =
        ::write(fd, out.data(), static_cast<size_t>(std::min<int64_t>(bytes - sent, 1 << 20)));
    if (n <= 0) break;
    sent += n;
  }
  return sent;
}

// The packets the root tbf of `dev` in namespace `ns` dropped (`tc -s qdisc`); -1 when it
// has none.
inline long tbf_drops(const std::string& ns, const std::string& dev) {
  const std::string cmd = "ip netns exec " + ns + " tc -s qdisc show dev " + dev + " 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return -1;
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, f)) out += buf;
  pclose(f);
  std::smatch m;
  static const std::regex kTbf(R"(qdisc tbf[^\n]*\n\s*Sent \d+ bytes \d+ pkt \(dropped (\d+))");
  return std::regex_search(out, m, kTbf) ? std::stol(m[1]) : -1;
}

// A TCP connection from host `from` to host `to` of the live network `net` (`to`'s data
// address, `port`), its srtt and RTO settled on `rounds` one-byte request / response round
// trips: {client, accepted}, either -1 on failure.
inline std::pair<int, int> tcp_pair(const std::string& net, const std::string& from,
                                    const std::string& to, int port, int rounds) {
  auto s = net::load_state(net);
  auto socket_in = [](const std::string& ns) {
    nl::NetnsGuard in(ns);
    return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  };
  const int srv = socket_in(s->find_host(to)->ns);
  if (srv < 0) return {-1, -1};
  int one = 1;
  setsockopt(srv, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, s->find_host(to)->data_ip.c_str(), &addr.sin_addr);
  int cli = -1, acc = -1;
  if (bind(srv, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && listen(srv, 1) == 0) {
    cli = socket_in(s->find_host(from)->ns);
    if (cli >= 0 && connect(cli, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
      acc = accept(srv, nullptr, nullptr);
  }
  close(srv);
  if (acc < 0) {
    if (cli >= 0) close(cli);
    return {-1, -1};
  }
  setsockopt(cli, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(acc, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char b = 'x';
  for (int i = 0; i < rounds; ++i)
    if (write(cli, &b, 1) != 1 || read(acc, &b, 1) != 1 || write(acc, &b, 1) != 1 ||
        read(cli, &b, 1) != 1)
      return {-1, -1};
  return {cli, acc};
}

class NetworkTest : public ::testing::Test {
 protected:
  NetworkTest(std::string file, std::string name)
      : file_(std::move(file)), name_(std::move(name)) {}
  void SetUp() override {
    setenv("XDC_EXE", XDC_EXE_PATH, 1);
    auto up = run_xdc({"up", file_, "--name", name_});
    up_output_ = up.out;
    ASSERT_EQ(up.rc, 0) << up.out;
  }
  void TearDown() override {
    run_xdc({"down", name_});
    EXPECT_TRUE(leftovers(name_).empty());
  }
  std::string file_, name_, up_output_;
};

}  // namespace xdc::testing
