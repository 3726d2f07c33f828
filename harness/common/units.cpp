// Unit parsing for tc-style quantities (see units.h).
#include "harness/common/units.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include "common/number_text.h"

namespace xdc {
namespace {

struct Quantity {
  bool negative = false;
  double number = 0;
  std::string unit;  // lower-cased, surrounding spaces removed
};

// "<digits>[.<digits>]<spaces><unit>" with an optional leading '-'. No exponents, no '+'.
std::optional<Quantity> split_quantity(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  Quantity q;
  if (!s.empty() && s.front() == '-') {
    q.negative = true;
    s.remove_prefix(1);
  }
  size_t i = 0, digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + i, q.number);
  if (ec != std::errc() || end != s.data() + i) return std::nullopt;
  std::string_view rest = s.substr(i);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  for (char c : rest) q.unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return q;
}

// Rounds a scaled value to an integer when it is one (within floating-point noise) and
// below 2^64 (the cast of a larger one is undefined; callers check their own maximum).
std::optional<uint64_t> whole(long double v) {
  long double r = std::round(v);
  if (std::fabs(v - r) > 1e-6L * std::max<long double>(1, std::fabs(v))) return std::nullopt;
  if (!(r < 0x1p64L)) return std::nullopt;
  return static_cast<uint64_t>(r);
}

template <typename T>
Parsed<T> fail(std::string expected) {
  return Parsed<T>{std::nullopt, std::move(expected)};
}

std::string trim_number(double v, int decimals) {
  std::string s = format_fixed(v, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

}  // namespace

Parsed<uint64_t> parse_duration_us(std::string_view text) {
  const std::string like = "a duration like \"20ms\" (units s, ms, us)";
  auto q = split_quantity(text);
  if (!q) return fail<uint64_t>(like);
  if (q->negative) return fail<uint64_t>("a non-negative duration like \"20ms\"");
  long double scale;
  if (q->unit == "s" || q->unit == "sec" || q->unit == "secs") {
    scale = 1e6L;
  } else if (q->unit == "ms" || q->unit == "msec" || q->unit == "msecs") {
    scale = 1e3L;
  } else if (q->unit == "us" || q->unit == "usec" || q->unit == "usecs") {
    scale = 1;
  } else if (q->unit.empty() && q->number == 0) {
    scale = 1;
  } else {
    return fail<uint64_t>(like);
  }
  if (q->number * scale > kMaxDurationUs) return fail<uint64_t>("a duration of at most 60s");
  auto us = whole(q->number * scale);
  if (!us) return fail<uint64_t>("a duration in whole microseconds (resolution 1us)");
  return Parsed<uint64_t>{*us, {}};
}

Parsed<uint64_t> parse_rate_bps(std::string_view text) {
  const std::string like =
      "a rate like \"1gbit\" (units bit, kbit, mbit, gbit, tbit; kibit...; bps = bytes/s)";
  auto q = split_quantity(text);
  if (!q) return fail<uint64_t>(like);
  if (q->negative || q->number == 0) return fail<uint64_t>("a positive rate like \"1gbit\"");
  struct Unit {
    const char* name;
    long double scale;
  };
  static const Unit kUnits[] = {
      {"bit", 1},
      {"kbit", 1e3L},
      {"mbit", 1e6L},
      {"gbit", 1e9L},
      {"tbit", 1e12L},
      {"kibit", 1024.0L},
      {"mibit", 1048576.0L},
      {"gibit", 1073741824.0L},
      {"tibit", 1099511627776.0L},
      {"bps", 8},
      {"kbps", 8e3L},
      {"mbps", 8e6L},
      {"gbps", 8e9L},
      {"tbps", 8e12L},
      {"kibps", 8 * 1024.0L},
      {"mibps", 8 * 1048576.0L},
      {"gibps", 8 * 1073741824.0L},
      {"tibps", 8 * 1099511627776.0L},
  };
  for (const Unit& u : kUnits) {
    if (q->unit != u.name) continue;
    long double bps = std::round(q->number * u.scale);
    if (bps < kMinRateBps) return fail<uint64_t>("a rate of at least 8kbit");
    if (bps > static_cast<long double>(kMaxRateBps))
      return fail<uint64_t>("a rate of at most 10tbit");
    return Parsed<uint64_t>{static_cast<uint64_t>(bps), {}};
  }
  return fail<uint64_t>(like);
}

Parsed<double> parse_percent(std::string_view text) {
  const std::string like = "a percentage like \"0.1%\"";
  auto q = split_quantity(text);
  if (!q) return fail<double>(like);
  if (q->unit != "%" && !(q->unit.empty() && q->number == 0)) return fail<double>(like);
  if (q->negative || q->number > 100) return fail<double>("a percentage between 0% and 100%");
  return Parsed<double>{q->number, {}};
}

Parsed<uint64_t> parse_size_bytes(std::string_view text) {
  const std::string like = "a size like \"64kb\" (units b, kb, mb, gb; kbit, mbit, gbit)";
  auto q = split_quantity(text);
  if (!q) return fail<uint64_t>(like);
  if (q->negative) return fail<uint64_t>("a non-negative size like \"64kb\"");
  long double scale;
  const std::string& u = q->unit;
  if (u.empty() || u == "b") {
    scale = 1;
  } else if (u == "k" || u == "kb" || u == "kib") {
    scale = 1024.0L;
  } else if (u == "m" || u == "mb" || u == "mib") {
    scale = 1048576.0L;
  } else if (u == "g" || u == "gb" || u == "gib") {
    scale = 1073741824.0L;
  } else if (u == "kbit") {
    scale = 1024.0L / 8;
  } else if (u == "mbit") {
    scale = 1048576.0L / 8;
  } else if (u == "gbit") {
    scale = 1073741824.0L / 8;
  } else {
    return fail<uint64_t>(like);
  }
  if (!(q->number * scale < 0x1p64L)) return fail<uint64_t>("a size below 2^64 bytes");
  auto bytes = whole(q->number * scale);
  if (!bytes) return fail<uint64_t>("a size in whole bytes");
  return Parsed<uint64_t>{*bytes, {}};
}

std::string format_duration(uint64_t us) {
  if (us == 0) return "0us";
  if (us % 1'000'000 == 0) return std::to_string(us / 1'000'000) + "s";
  if (us >= 1000) return trim_number(us / 1000.0, 3) + "ms";
  return std::to_string(us) + "us";
}

std::string format_rate(uint64_t bps) {
  static const struct {
    uint64_t scale;
    const char* unit;
  } kUnits[] = {{1'000'000'000'000ULL, "tbit"},
                {1'000'000'000ULL, "gbit"},
                {1'000'000, "mbit"},
                {1'000, "kbit"}};
  for (const auto& u : kUnits)
    if (bps >= u.scale) return trim_number(static_cast<double>(bps) / u.scale, 3) + u.unit;
  return std::to_string(bps) + "bit";
}

std::string format_percent(double pct) {
  return trim_number(pct, 6) + "%";
}

}  // namespace xdc
