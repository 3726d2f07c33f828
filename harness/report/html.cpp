#include "harness/report/html.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>

namespace xdc::report {

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string fixed(double x, int decimals) {
  if (!std::isfinite(x)) return "-";
  return fmt::format("{:.{}f}", x, decimals);
}

std::string percent(double ratio, int decimals) {
  if (!std::isfinite(ratio)) return "-";
  return fmt::format("{:.{}f} %", 100 * ratio, decimals);
}

namespace {
// The unit seconds_text writes `s` in: its scale and name.
std::pair<double, const char*> unit_of(double s) {
  const double a = std::fabs(s);
  if (a < 1e-3) return {1e6, "µs"};
  if (a < 1) return {1e3, "ms"};
  return {1, "s"};
}
}  // namespace

std::string seconds_text(double s) {
  if (!std::isfinite(s)) return "-";
  if (s == 0) return "0";
  const auto [scale, unit] = unit_of(s);
  return fmt::format("{:.{}g} {}", s * scale, scale == 1e6 ? 3 : 4, unit);
}

std::string seconds_range_text(double lo, double hi, std::string_view sep, double like) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return "-";
  const auto [scale, unit] = unit_of(std::isfinite(like) && like != 0 ? like : lo == 0 ? hi : lo);
  return fmt::format("{:.4g}{}{:.4g} {}", lo * scale, sep, hi * scale, unit);
}

std::string si_text(double x) {
  if (!std::isfinite(x)) return "-";
  const double a = std::fabs(x);
  if (a >= 1e9) return fmt::format("{:.3g} G", x / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g} M", x / 1e6);
  if (a >= 1e3) return fmt::format("{:.3g} k", x / 1e3);
  return fmt::format("{:.3g}", x);
}

}  // namespace xdc::report
