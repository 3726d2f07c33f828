#pragma once
// A test with one emulated network up: `xdc up FILE --name NAME` before each test, `xdc
// down NAME` after it, and nothing of NAME left behind. Probes (harness/check/probes.h)
// reach the hosts through the built xdc (XDC_EXE).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "tests/network/leftovers.h"

namespace xdc::testing {

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
