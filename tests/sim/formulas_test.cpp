// With zero delay, simulated bubble ratios and peak activations equal the closed forms
// (GPipe / 1F1B: (p-1)/(m+p-1); Zero Bubble's and interleaved 1F1B's papers for theirs).
#include <gtest/gtest.h>

#include "harness/sim/experiments.h"

using namespace xdc::sim;

TEST(Formulas, ZeroDelayBubbleRatiosAndPeaks) {
  const auto checks = formula_checks();
  ASSERT_GE(checks.size(), 12u);
  for (const auto& c : checks) EXPECT_NEAR(c.simulated, c.expected, 1e-3) << c.name;
}

TEST(Formulas, NamedValues) {
  std::map<std::string, double> v;
  for (const auto& c : formula_checks()) v[c.name] = c.simulated;
  EXPECT_NEAR(v["1f1b zerobubble, T_B=2T_F"], 0.273, 5e-4);
  EXPECT_NEAR(v["gpipe zerobubble, T_B=2T_F"], 0.273, 5e-4);
  EXPECT_NEAR(v["interleaved v=2 zerobubble, T_B=2T_F"], 0.158, 5e-4);
  EXPECT_NEAR(v["zbh1 zerobubble, T_F=T_B=T_W"], 0.111, 5e-4);
  EXPECT_NEAR(v["zbh2 zerobubble, T_F=T_B=T_W"], 0.0, 1e-9);
  EXPECT_NEAR(v["zbv zerobubble, T_F=T_B=T_W"], 0.0, 1e-9);
  EXPECT_DOUBLE_EQ(v["zbv peak activations (p)"], 4);
}
