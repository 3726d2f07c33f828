#pragma once
// Quantities as users write them for tc: durations "20ms", rates "1gbit", percentages
// "0.1%", sizes "64kb". Each parser returns the value, or nothing plus what was expected,
// so that a caller (the YAML reader, a CLI flag) can name the key and the position.
//
//   durations  s sec ms msec us usec (case-insensitive), decimals allowed ("1.5ms");
//              resolution 1 us; a bare "0" is accepted, any other number needs a unit.
//   rates      tc's units: bit kbit mbit gbit tbit (x1000), kibit mibit gibit tibit (x1024),
//              and bytes per second like tc: bps kbps mbps gbps tbps (x8 -- "mbps" is
//              megaBYTES per second, as in tc), kibps mibps gibps tibps. A unit is required.
//   percents   "0.1%" in 0..100; a bare "0" is accepted, other bare numbers are not
//              (tc would read "0.1" as a fraction -- too easy to get wrong by 100x).
//   sizes      bytes: b, k/kb/kib, m/mb/mib, g/gb/gib (x1024 as in tc), kbit/mbit/gbit (/8);
//              a bare integer is bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xdc {

template <typename T>
struct Parsed {
  std::optional<T> value;
  std::string expected;  // set when !value: e.g. "a duration like \"20ms\" (units s, ms, us)"
  explicit operator bool() const { return value.has_value(); }
};

// Bounds, documented so every part agrees on them.
inline constexpr uint64_t kMaxDurationUs = 60'000'000;          // 60 s
inline constexpr uint64_t kMaxRateBps = 10'000'000'000'000ULL;  // 10 tbit
// The least rate the shaper sets: below it tbf's byte rate and its bucket's time in
// ticks overflow (a dilated rate too: each rate / time_dilation).
inline constexpr uint64_t kMinRateBps = 8000;  // 8 kbit

Parsed<uint64_t> parse_duration_us(std::string_view text);  // "20ms" -> 20000
Parsed<uint64_t> parse_rate_bps(std::string_view text);     // "1gbit" -> 1e9, < 8kbit rejected
Parsed<double> parse_percent(std::string_view text);        // "0.1%" -> 0.1
Parsed<uint64_t> parse_size_bytes(std::string_view text);   // "64kb" -> 65536

// Canonical spellings, for messages and reports: "20ms", "1.5ms", "250us", "1gbit",
// "11.3gbit", "0.1%".
std::string format_duration(uint64_t us);
std::string format_rate(uint64_t bps);
std::string format_percent(double pct);

}  // namespace xdc
