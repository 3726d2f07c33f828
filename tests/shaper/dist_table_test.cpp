#include "netem/shaper/dist_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <sstream>

namespace xdc::netem {
namespace {

double table_mean(const std::vector<int16_t>& t) {
  return std::accumulate(t.begin(), t.end(), 0.0) / t.size() / kDistScale;
}
double table_stdev(const std::vector<int16_t>& t) {
  double m = table_mean(t), s = 0;
  for (int16_t v : t) s += (v / double(kDistScale) - m) * (v / double(kDistScale) - m);
  return std::sqrt(s / t.size());
}

TEST(DistTable, NormalIsStandardNormal) {
  auto t = load_dist_table(JitterDist::kNormal);
  ASSERT_EQ(t.size(), 4096u);
  EXPECT_NEAR(table_mean(t), 0.0, 0.01);
  EXPECT_NEAR(table_stdev(t), 1.0, 0.02);
}

TEST(DistTable, ComputedNormalMatchesIproute2) {
  auto computed = computed_normal_table();
  ASSERT_EQ(computed.size(), 4096u);
  EXPECT_NEAR(table_stdev(computed), 1.0, 0.02);
  std::vector<int16_t> shipped;
  try {
    shipped = load_dist_table(JitterDist::kNormal);
  } catch (...) {
  }
  if (shipped.size() == computed.size()) {
    int max_diff = 0;
    for (size_t i = 0; i < shipped.size(); ++i)
      max_diff = std::max(max_diff, std::abs(shipped[i] - computed[i]));
    EXPECT_LE(max_diff, 2);
  }
}

TEST(DistTable, UniformNeedsNoTable) {
  EXPECT_TRUE(load_dist_table(JitterDist::kUniform).empty());
}

TEST(DistTable, ParseErrorsNameTheLine) {
  std::istringstream bad("# comment\n 1 2 3\n 4 x 5\n");
  try {
    parse_dist_table(bad, "t.dist");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("t.dist:3"), std::string::npos) << e.what();
  }
  std::istringstream empty("# nothing\n");
  EXPECT_THROW(parse_dist_table(empty, "e.dist"), std::runtime_error);
  std::istringstream ok(" -32768 0 32767 \n");
  EXPECT_EQ(parse_dist_table(ok, "ok.dist"), (std::vector<int16_t>{-32768, 0, 32767}));
}

}  // namespace
}  // namespace xdc::netem
