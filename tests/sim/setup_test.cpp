// One run description -> generator parameters, per-schedule costs and DC links.
#include "harness/sim/setup.h"

#include <gtest/gtest.h>

#include "common/input_error.h"

using namespace xdc;

TEST(Setup, ConstantCostsSplitOverChunksAndBackward) {
  sim::CostSpec spec;
  spec.f_ms = 2, spec.b_ms = 4, spec.activation_bytes = 1000;
  auto c = sim::make_costs(spec, 4, sched::v_placement(4));
  ASSERT_EQ(c.stages(), 8);
  EXPECT_EQ(c.f_ns[0], 1'000'000);  // half a rank's layers
  EXPECT_EQ(c.b_ns[0] + c.w_ns[0], 2'000'000);
  EXPECT_EQ(c.activation_bytes[7], 1000);
}

TEST(Setup, ProfilePerRankIsSharedByItsChunks) {
  sim::CostSpec spec;
  spec.source = sim::CostSpec::Source::kProfile;
  spec.profile_text = "stage,f_ms,b_ms,w_ms\n0,2,2,2\n1,4,4,4\n";
  auto c = sim::make_costs(spec, 2, sched::looped_placement(2, 2));
  EXPECT_EQ(c.f_ns, (std::vector<int64_t>{1'000'000, 2'000'000, 1'000'000, 2'000'000}));
  EXPECT_THROW(sim::make_costs(spec, 3, sched::plain_placement(3)), InputError);
}

TEST(Setup, DcsAndGeneratorParams) {
  sim::CostSpec spec;
  spec.f_ms = 20, spec.b_ms = 40, spec.activation_bytes = 10'000'000;
  sim::Network net;
  net.dcs = 2;
  net.wan = {20'000'000, 10e9};
  auto l = sim::make_links(net, 4);
  EXPECT_EQ(l.at(1, 2).latency_ns, 20'000'000);
  EXPECT_EQ(l.at(0, 1).latency_ns, 0);
  auto p = sim::make_params(spec, net, 4, 8, 1, 6);
  EXPECT_DOUBLE_EQ(p.t_f, 20);
  EXPECT_DOUBLE_EQ(p.t_b + p.t_w, 40);
  EXPECT_DOUBLE_EQ(p.links[2][1].latency, 20);
  EXPECT_DOUBLE_EQ(p.links[2][1].transfer, 8);  // 10 MB over 10 Gbit/s
  EXPECT_DOUBLE_EQ(p.links[0][1].transfer, 0);
  EXPECT_EQ(p.channel, l.channel);  // ranks 0, 1 -> 2, 3 share one WAN FIFO
  EXPECT_EQ(p.channel[0 * 4 + 2], p.channel[1 * 4 + 3]);
}
