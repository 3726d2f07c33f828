// Intra-DC delay is emulated, not dropped: hosts of one DC reach each other through their
// gateway, whose bridge egress delays every packet on its way to a host once (both
// backends; here the one this kernel runs). A round trip inside a DC is 2 x the delay; a
// WAN round trip adds it once per side.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "harness/check/probes.h"
#include "harness/network/state.h"
#include "tests/network/network_fixture.h"

namespace {

class IntraDcDelay : public xdc::testing::NetworkTest {
 protected:
  IntraDcDelay() : NetworkTest("tests/network/intra-delay.yaml", "intrad") {}
};

TEST_F(IntraDcDelay, RoundTripsCarryTheFabricDelay) {
  EXPECT_NE(up_output_.find("east fabric"), std::string::npos) << up_output_;
  auto state = xdc::net::load_state("intrad");
  ASSERT_TRUE(state);
  ASSERT_EQ(state->fabric.size(), 2u);
  // 2 ms each way inside the DC; bounds as for WAN links: max(0.2 ms, 2%) above, and the
  // delay line never releases early by more than its learnt wake-up advance.
  auto in_dc = xdc::check::ping("intrad", "east-h1", state->find_host("east-h2")->data_ip, 20, 50);
  EXPECT_EQ(in_dc.received, 20);
  EXPECT_NEAR(in_dc.median_ms, 4.0, 0.3);
  // 10 ms each way across the WAN plus the fabric of the receiving DC each way.
  auto wan = xdc::check::ping("intrad", "east-h1", state->find_host("w1")->data_ip, 20, 50);
  EXPECT_NEAR(wan.median_ms, 24.0, 0.5);
}

}  // namespace
