// Intra-DC delay is emulated, not dropped: hosts of one DC reach each other through their
// gateway, whose bridge egress delays every packet on its way to a host once (both
// backends; here the one this kernel runs). A round trip inside a DC is 2 x the delay; a
// WAN round trip adds it once per side.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "harness/check/probes.h"
#include "harness/network/state.h"
#include "tests/network/network_fixture.h"
#include "tests/network/round_trip_base.h"

namespace {

using xdc::testing::least_bounds;
using xdc::testing::RoundTrips;
using xdc::testing::within;
using xdc::testing::zero_delay_base;

class IntraDcDelay : public xdc::testing::NetworkTest {
 protected:
  IntraDcDelay() : NetworkTest("tests/network/intra-delay.yaml", "intrad") {}
};

TEST_F(IntraDcDelay, RoundTripsCarryTheFabricDelay) {
  EXPECT_NE(up_output_.find("east fabric"), std::string::npos) << up_output_;
  auto state = xdc::net::load_state("intrad");
  ASSERT_TRUE(state);
  ASSERT_EQ(state->fabric.size(), 2u);
  // The least round trip is held to its delays plus this machine's base round trip on the same
  // path, measured with the same pings and every delay, fabric and WAN, at 0
  // (tests/common/round_trip.h).
  auto pings = [&](const std::string& to) {
    return [&, to] {
      return xdc::check::ping_rtts("intrad", "east-h1", state->find_host(to)->data_ip, 20, 50);
    };
  };
  // 2 ms each way inside the DC.
  const RoundTrips in_dc(pings("east-h2")());
  EXPECT_EQ(in_dc.size(), 20u);
  const RoundTrips in_dc_base = zero_delay_base("intrad", pings("east-h2"));
  EXPECT_TRUE(within("east-h1->east-h2 least", in_dc.min(), least_bounds({2, 2}, in_dc_base)));
  // 10 ms each way across the WAN plus the fabric of the receiving DC each way.
  const RoundTrips wan(pings("w1")());
  const RoundTrips wan_base = zero_delay_base("intrad", pings("w1"));
  EXPECT_TRUE(within("east-h1->w1 least", wan.min(), least_bounds({10, 2, 10, 2}, wan_base)));
}

}  // namespace
