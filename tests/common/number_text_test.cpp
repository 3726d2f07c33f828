// common/number_text.h: printf's %g and %f, whatever the length.
#include "common/number_text.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace xdc {
namespace {

TEST(NumberText, GeneralIsPrintfsG) {
  EXPECT_EQ(format_general(0.25), "0.25");
  EXPECT_EQ(format_general(1234567.0), "1.23457e+06");
  EXPECT_EQ(format_general(0.1, 17), "0.10000000000000001");
  EXPECT_EQ(std::strtod(format_general(1.0 / 3, 17).c_str(), nullptr), 1.0 / 3);
}

TEST(NumberText, FixedIsPrintfsF) {
  EXPECT_EQ(format_fixed(0.0002, 6), "0.000200");
  EXPECT_EQ(format_fixed(12.345, 1), "12.3");
  EXPECT_EQ(format_fixed(-2, 0), "-2");
  EXPECT_EQ(format_fixed(1e300, 2).size(), 301u + 3u);  // no fixed buffer cuts it
}

}  // namespace
}  // namespace xdc
