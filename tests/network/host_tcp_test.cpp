// The hosts' TCP (harness/network/tcp.h) on real namespaces: what the topology's `tcp:`
// blocks ask for is what each host namespace's sysctls read back, what its sockets use
// (TCP_CONGESTION, on both ends of a connection across the WAN) and what state.json
// records; a congestion control the kernel lacks fails `xdc up` with exit 2, naming it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "harness/network/state.h"
#include "harness/network/tcp.h"
#include "harness/network/teardown.h"
#include "netem/nl/netns.h"
#include "tests/network/leftovers.h"

using xdc::testing::leftovers;
using xdc::testing::run_xdc;

namespace {

const char* const kAllowed = "net/ipv4/tcp_allowed_congestion_control";

// A socket created inside namespace `ns` stays there after we leave it.
int socket_in(const std::string& ns) {
  xdc::nl::NetnsGuard in(ns);
  return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

std::string congestion_of(int fd) {
  char name[16] = {};
  socklen_t len = sizeof name;
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return strerror(errno);
  return std::string(name, strnlen(name, len));
}

std::string sysctl(const std::string& ns, const std::string& key) {
  return xdc::nl::read_sysctl(ns, "net/ipv4/" + key);
}

class HostTcp : public ::testing::Test {
 protected:
  void SetUp() override {
    others_ = !xdc::net::networks_present().empty();
    allowed_before_ = xdc::nl::read_sysctl("", kAllowed);
    auto up = run_xdc({"up", "tests/network/tcp-settings.yaml", "--name", "tcpst"});
    ASSERT_EQ(up.rc, 0) << up.out;
    up_out_ = up.out;
    auto s = xdc::net::load_state("tcpst");
    ASSERT_TRUE(s);
    state_ = *s;
  }
  void TearDown() override {
    run_xdc({"down", "tcpst"});
    EXPECT_TRUE(leftovers("tcpst").empty());
    // With no other network up, the root's allowed list is as before (xdc's additions
    // taken out); with others up, one of them may still need them.
    if (!others_ && xdc::net::networks_present().empty()) {
      EXPECT_EQ(xdc::nl::read_sysctl("", kAllowed), allowed_before_);
    }
  }
  const std::string& ns(const std::string& host) { return state_.find_host(host)->ns; }

  bool others_ = false;
  std::string allowed_before_, up_out_;
  xdc::net::NetworkState state_;
};

TEST_F(HostTcp, SysctlsReadBackAsTheTopologyAsks) {
  // east-h1: the topology's block over the stock defaults.
  EXPECT_EQ(sysctl(ns("east-h1"), "tcp_congestion_control"), "cubic");
  EXPECT_EQ(sysctl(ns("east-h1"), "tcp_rmem"), "4096\t131072\t8388608");
  EXPECT_EQ(sysctl(ns("east-h1"), "tcp_wmem"), "4096\t16384\t4194304");
  EXPECT_EQ(sysctl(ns("east-h1"), "tcp_slow_start_after_idle"), "1");
  EXPECT_EQ(sysctl(ns("east-h1"), "tcp_ecn"), "2");
  // w1: west's block.
  EXPECT_EQ(sysctl(ns("w1"), "tcp_congestion_control"), "bbr");
  EXPECT_EQ(sysctl(ns("w1"), "tcp_rmem"), "4096\t131072\t8388608");
  // w2: its own block over west's.
  EXPECT_EQ(sysctl(ns("w2"), "tcp_congestion_control"), "reno");
  EXPECT_EQ(sysctl(ns("w2"), "tcp_wmem"), "4096\t16384\t2097152");
  EXPECT_EQ(sysctl(ns("w2"), "tcp_slow_start_after_idle"), "0");
  EXPECT_EQ(sysctl(ns("w2"), "tcp_ecn"), "1");
  // cubic is allowed in namespaces now, whoever allowed it.
  EXPECT_NE(xdc::nl::read_sysctl("", kAllowed).find("cubic"), std::string::npos);
}

TEST_F(HostTcp, StateAndUpRecordWhatWasApplied) {
  const auto& e = state_.find_host("east-h1")->tcp;
  EXPECT_EQ(e.congestion, "cubic");
  EXPECT_EQ(e.tcp_rmem, "4096 131072 8388608");
  EXPECT_TRUE(e.slow_start_after_idle);
  const auto& w2 = state_.find_host("w2")->tcp;
  EXPECT_EQ(w2.congestion, "reno");
  EXPECT_FALSE(w2.slow_start_after_idle);
  EXPECT_EQ(w2.ecn, 1);
  EXPECT_EQ(xdc::net::tcp_groups(state_).size(), 3u);
  // The root's own values, for reference.
  EXPECT_EQ(state_.root_tcp.tcp.congestion, sysctl("", "tcp_congestion_control"));
  EXPECT_FALSE(state_.root_tcp.allowed.empty());
  EXPECT_GT(state_.root_tcp.rmem_max, 0u);
  EXPECT_NE(up_out_.find("tcp  east-h1: cubic, tcp_rmem 4096 131072 8388608"), std::string::npos)
      << up_out_;
  EXPECT_NE(up_out_.find("tcp  w2: reno"), std::string::npos) << up_out_;
  EXPECT_NE(up_out_.find("root namespace (reference)"), std::string::npos) << up_out_;
  if (!state_.tcp_allowed_added.empty()) {
    EXPECT_NE(up_out_.find("added cubic to the root namespace"), std::string::npos) << up_out_;
  }
}

TEST_F(HostTcp, SocketsUseTheirNamespacesCongestionControl) {
  int srv = socket_in(ns("w1"));
  ASSERT_GE(srv, 0);
  int one = 1;
  setsockopt(srv, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(7778);
  inet_pton(AF_INET, state_.find_host("w1")->data_ip.c_str(), &addr.sin_addr);
  ASSERT_EQ(bind(srv, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(srv, 1), 0);
  int cli = socket_in(ns("east-h1"));
  ASSERT_GE(cli, 0);
  EXPECT_EQ(congestion_of(cli), "cubic");
  ASSERT_EQ(connect(cli, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << strerror(errno);
  int acc = accept(srv, nullptr, nullptr);
  ASSERT_GE(acc, 0);
  EXPECT_EQ(congestion_of(cli), "cubic");  // east-h1's, across the WAN
  EXPECT_EQ(congestion_of(acc), "bbr");    // w1's
  int w2 = socket_in(ns("w2"));
  EXPECT_EQ(congestion_of(w2), "reno");
  for (int fd : {acc, cli, srv, w2}) close(fd);
}

TEST(HostTcpRefused, UnavailableCongestionControlExitsTwoNamingItAndLeavesNothing) {
  auto up = run_xdc({"up", "tests/network/tcp-unavailable.yaml", "--name", "tcpbad"});
  EXPECT_EQ(up.rc, 2) << up.out;
  // At the value in the file: line 5, column 46.
  EXPECT_NE(up.out.find("tcp-unavailable.yaml:5:46: tcp.congestion: the kernel refused "
                        "\"nosuchcc\" on host west-h1: no such congestion control"),
            std::string::npos)
      << up.out;
  EXPECT_TRUE(leftovers("tcpbad").empty());
}

}  // namespace
