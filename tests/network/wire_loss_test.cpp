// Loss acts per wire packet: a TCP flow between hosts with their offloads on (TSO/GSO
// aggregates of up to ~45 packets reach the gateway whole) loses one packet in a hundred
// at 1% loss, as on a real WAN, not one aggregate in a hundred. Measured two ways: the
// delay line's own counters (packets it decided on are frame-sized; the drop fraction),
// and the sender's TCP retransmissions per segment sent.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "harness/check/probes.h"
#include "harness/network/state.h"
#include "netem/shaper/shaper.h"
#include "tests/network/network_fixture.h"

namespace {

constexpr double kLoss = 0.01;

// |measured - p| within 3 sigma of n Bernoulli(p) trials.
void expect_rate(double measured, double n, const char* what) {
  double sigma = std::sqrt(kLoss * (1 - kLoss) / n);
  EXPECT_NEAR(measured, kLoss, 3 * sigma) << what << " over " << n << " packets";
}

class LossyPair : public xdc::testing::NetworkTest {
 protected:
  LossyPair() : NetworkTest("tests/network/lossy-pair.yaml", "wloss") {}
};

TEST_F(LossyPair, TcpLosesWirePacketsAtTheConfiguredRate) {
  auto state = xdc::net::load_state("wloss");
  ASSERT_TRUE(state);
  const auto* w1 = state->find_host("w1");
  ASSERT_NE(w1, nullptr);
  auto tcp = xdc::check::tcp_goodput("wloss", "e1", "w1", w1->data_ip, 6, 0, "cubic");
  ASSERT_GT(tcp.bytes_sent, 0);
  double segments = tcp.bytes_sent / 1448 + tcp.retransmits;
  RecordProperty("goodput_mbit", std::to_string(tcp.goodput_mbit));
  expect_rate(tcp.retransmits / segments, segments, "TCP retransmissions per segment");

  const xdc::net::ShapedLink* east_west = nullptr;
  for (auto& l : state->links)
    if (l.from == "east" && l.to == "west") east_west = &l;
  ASSERT_NE(east_west, nullptr);
  ASSERT_EQ(east_west->backend, "userspace");
  auto st = xdc::netem::delayline_stats(xdc::netem::ShapeRecord::from_json(east_west->record));
  double packets = st.value("packets", 0.0), bytes = st.value("bytes", 0.0);
  ASSERT_GT(packets, 1000);
  // Frames of at most 1500 bytes of IP each: no aggregate was decided on as one packet.
  EXPECT_LE(bytes / packets, 1500.0);
  expect_rate(st.value("dropped", 0.0) / packets, packets, "delay line drops per packet");
}

}  // namespace
