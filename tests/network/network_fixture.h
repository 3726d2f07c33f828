#pragma once
// A test with one emulated network up: `xdc up FILE --name NAME` before each test, `xdc
// down NAME` after it, and nothing of NAME left behind. Probes (harness/check/probes.h)
// reach the hosts through the built xdc (XDC_EXE).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <string>

#include "netem/nl/netns.h"
#include "tests/network/leftovers.h"

namespace xdc::testing {

// A TCP socket created inside network namespace `ns` (it stays there after the guard).
inline int socket_in(const std::string& ns) {
  xdc::nl::NetnsGuard in(ns);
  return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
