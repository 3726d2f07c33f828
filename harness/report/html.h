#pragma once
// Text for the report page. Every string that comes from a results file (schedule names,
// host names, errors, experiment names) goes through escape() before it reaches the page,
// in element text and in attribute values alike. Numbers are formatted here once, so the
// table, the charts and the tests agree on how "31.2 %" or "412 ms" reads.
#include <limits>
#include <string>
#include <string_view>

namespace xdc::report {

// & < > " ' replaced by entities.
std::string escape(std::string_view s);

// "-" for a value that is not finite.
std::string fixed(double x, int decimals);
// 0.312 -> "31.2 %".
std::string percent(double ratio, int decimals = 1);
// A duration in the unit that reads best: "87 µs", "412 ms", "1.23 s".
std::string seconds_text(double s);
// Two durations in one unit, the first's: "956.9–1043 ms", "1.359–1.488 s"; `sep` between
// them ("993.5 / 1069 ms"). With `like` (a finite duration) the unit seconds_text writes
// `like` in: an interval shown beside its figure reads in that figure's unit (1.103 s,
// "0.9018–1.305 s").
std::string seconds_range_text(double lo, double hi, std::string_view sep = "–",
                               double like = std::numeric_limits<double>::quiet_NaN());
// 1234567 -> "1.23 M" (tokens/s and rates).
std::string si_text(double x);

}  // namespace xdc::report
