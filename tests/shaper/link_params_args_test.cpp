#include "netem/shaper/link_params_args.h"

#include <gtest/gtest.h>

namespace xdc::netem {
namespace {

TEST(LinkParamsArgs, RoundTrip) {
  LinkParams p;
  p.delay_us = 20'000;
  p.jitter_us = 1'234;
  p.jitter_dist = JitterDist::kParetoNormal;
  p.jitter_correlation_pct = 25.5;
  p.loss.kind = LossModel::Kind::kGilbertElliott;
  p.loss.p_pct = 0.1;
  p.loss.r_pct = 33.3333333333;
  p.loss.h_pct = 10;
  p.loss.k_pct = 99.9;
  p.rate_bps = 1'400'000'000;
  p.queue_pkts = 777;
  p.reorder_pct = 2;
  LinkParams q;
  for (const auto& a : to_args(p)) ASSERT_TRUE(apply_arg(a, q)) << a;
  EXPECT_EQ(to_args(q), to_args(p));
  EXPECT_EQ(q.loss.r_pct, p.loss.r_pct);
  EXPECT_EQ(q.jitter_dist, JitterDist::kParetoNormal);
}

TEST(LinkParamsArgs, RejectsBadValues) {
  LinkParams p;
  EXPECT_FALSE(apply_arg("--netns=x", p));
  EXPECT_FALSE(apply_arg("delay-us=5", p));
  EXPECT_THROW(apply_arg("--delay-us=-5", p), std::invalid_argument);
  EXPECT_THROW(apply_arg("--delay-us=5ms", p), std::invalid_argument);
  EXPECT_THROW(apply_arg("--loss-p=101", p), std::invalid_argument);
  EXPECT_THROW(apply_arg("--jitter-dist=gauss", p), std::invalid_argument);
}

TEST(LinkParams, Names) {
  EXPECT_STREQ(to_string(Backend::kAuto), "auto");
  EXPECT_STREQ(to_string(Backend::kKernel), "kernel");
  EXPECT_STREQ(to_string(Backend::kUserspace), "userspace");
  EXPECT_STREQ(to_string(JitterDist::kParetoNormal), "paretonormal");
}

}  // namespace
}  // namespace xdc::netem
