// tc-style units: what parses to what, and what is refused with which expectation.
#include "harness/common/units.h"

#include <gtest/gtest.h>

namespace xdc {
namespace {

TEST(Units, Durations) {
  EXPECT_EQ(*parse_duration_us("20ms").value, 20'000u);
  EXPECT_EQ(*parse_duration_us("250us").value, 250u);
  EXPECT_EQ(*parse_duration_us("1s").value, 1'000'000u);
  EXPECT_EQ(*parse_duration_us("1.5ms").value, 1'500u);
  EXPECT_EQ(*parse_duration_us("1.1ms").value, 1'100u);  // no floating-point surprise
  EXPECT_EQ(*parse_duration_us("0.25s").value, 250'000u);
  EXPECT_EQ(*parse_duration_us("10usec").value, 10u);
  EXPECT_EQ(*parse_duration_us("2 msec").value, 2'000u);
  EXPECT_EQ(*parse_duration_us("20MS").value, 20'000u);
  EXPECT_EQ(*parse_duration_us("0").value, 0u);
  EXPECT_EQ(*parse_duration_us("60s").value, 60'000'000u);
}

TEST(Units, DurationsRefused) {
  EXPECT_EQ(parse_duration_us("fast").expected, "a duration like \"20ms\" (units s, ms, us)");
  EXPECT_FALSE(parse_duration_us("20"));  // tc would read microseconds; we ask for a unit
  EXPECT_FALSE(parse_duration_us(""));
  EXPECT_FALSE(parse_duration_us("ms"));
  EXPECT_FALSE(parse_duration_us("1e3us"));
  EXPECT_FALSE(parse_duration_us("+5ms"));
  EXPECT_FALSE(parse_duration_us("5 m s"));
  EXPECT_EQ(parse_duration_us("-5ms").expected, "a non-negative duration like \"20ms\"");
  EXPECT_EQ(parse_duration_us("1.5us").expected,
            "a duration in whole microseconds (resolution 1us)");
  EXPECT_EQ(parse_duration_us("61s").expected, "a duration of at most 60s");
  // Beyond 2^64 us the conversion was undefined (found by tests/fuzz's changes target).
  EXPECT_EQ(parse_duration_us("222222222222222222222222222s").expected,
            "a duration of at most 60s");
  EXPECT_EQ(parse_duration_us("3000000000000000000000000.5ms").expected,
            "a duration of at most 60s");
}

TEST(Units, Rates) {
  EXPECT_EQ(*parse_rate_bps("1gbit").value, 1'000'000'000u);
  EXPECT_EQ(*parse_rate_bps("100mbit").value, 100'000'000u);
  EXPECT_EQ(*parse_rate_bps("800gbit").value, 800'000'000'000u);
  EXPECT_EQ(*parse_rate_bps("10kbit").value, 10'000u);
  EXPECT_EQ(*parse_rate_bps("8000bit").value, 8'000u);
  EXPECT_EQ(*parse_rate_bps("11.3gbit").value, 11'300'000'000u);
  EXPECT_EQ(*parse_rate_bps("1Gbit").value, 1'000'000'000u);  // tc is case-insensitive
  EXPECT_EQ(*parse_rate_bps("1mibit").value, 1'048'576u);
  // tc's "bps" family is BYTES per second.
  EXPECT_EQ(*parse_rate_bps("1000bps").value, 8'000u);
  EXPECT_EQ(*parse_rate_bps("125mbps").value, 1'000'000'000u);
  EXPECT_EQ(*parse_rate_bps("10tbit").value, kMaxRateBps);
}

TEST(Units, RatesRefused) {
  EXPECT_FALSE(parse_rate_bps("1000000"));  // a unit is required
  EXPECT_FALSE(parse_rate_bps("1gb"));
  EXPECT_FALSE(parse_rate_bps("fast"));
  EXPECT_EQ(parse_rate_bps("0gbit").expected, "a positive rate like \"1gbit\"");
  EXPECT_EQ(parse_rate_bps("-1mbit").expected, "a positive rate like \"1gbit\"");
  EXPECT_EQ(parse_rate_bps("11tbit").expected, "a rate of at most 10tbit");
  EXPECT_EQ(parse_rate_bps("0.1bit").expected, "a rate of at least 8kbit");
  EXPECT_EQ(parse_rate_bps("7999bit").expected, "a rate of at least 8kbit");
  EXPECT_EQ(parse_rate_bps("8kbit").value, 8000u);
}

TEST(Units, Percentages) {
  EXPECT_DOUBLE_EQ(*parse_percent("0.1%").value, 0.1);
  EXPECT_DOUBLE_EQ(*parse_percent("100%").value, 100);
  EXPECT_DOUBLE_EQ(*parse_percent("25 %").value, 25);
  EXPECT_DOUBLE_EQ(*parse_percent("0").value, 0);
  EXPECT_EQ(parse_percent("0.1").expected, "a percentage like \"0.1%\"");  // not a fraction
  EXPECT_EQ(parse_percent("101%").expected, "a percentage between 0% and 100%");
  EXPECT_EQ(parse_percent("-1%").expected, "a percentage between 0% and 100%");
  EXPECT_FALSE(parse_percent("%"));
}

TEST(Units, Sizes) {
  EXPECT_EQ(*parse_size_bytes("1500").value, 1'500u);
  EXPECT_EQ(*parse_size_bytes("1500b").value, 1'500u);
  EXPECT_EQ(*parse_size_bytes("64kb").value, 65'536u);
  EXPECT_EQ(*parse_size_bytes("1mb").value, 1'048'576u);
  EXPECT_EQ(*parse_size_bytes("2g").value, 2'147'483'648u);
  EXPECT_EQ(*parse_size_bytes("8kbit").value, 1'024u);
  EXPECT_FALSE(parse_size_bytes("1.5b"));
  EXPECT_FALSE(parse_size_bytes("lots"));
  EXPECT_FALSE(parse_size_bytes("-1kb"));
  EXPECT_EQ(parse_size_bytes("99999999999999999999gb").expected, "a size below 2^64 bytes");
}

TEST(Units, Formatting) {
  EXPECT_EQ(format_duration(20'000), "20ms");
  EXPECT_EQ(format_duration(1'500), "1.5ms");
  EXPECT_EQ(format_duration(250), "250us");
  EXPECT_EQ(format_duration(2'000'000), "2s");
  EXPECT_EQ(format_duration(0), "0us");
  EXPECT_EQ(format_rate(1'000'000'000), "1gbit");
  EXPECT_EQ(format_rate(11'300'000'000), "11.3gbit");
  EXPECT_EQ(format_rate(100'000'000), "100mbit");
  EXPECT_EQ(format_rate(999), "999bit");
  EXPECT_EQ(format_percent(0.1), "0.1%");
  EXPECT_EQ(format_percent(25), "25%");
  // Round trips for what users write.
  for (const char* s : {"20ms", "1.5ms", "250us", "1s"})
    EXPECT_EQ(format_duration(*parse_duration_us(s).value), s);
  for (const char* s : {"1gbit", "100mbit", "800gbit", "10kbit", "11.3gbit"})
    EXPECT_EQ(format_rate(*parse_rate_bps(s).value), s);
}

}  // namespace
}  // namespace xdc
