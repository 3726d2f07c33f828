#include "harness/report/html.h"

#include <fmt/format.h>

#include <cmath>

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

std::string seconds_text(double s) {
  if (!std::isfinite(s)) return "-";
  const double a = std::fabs(s);
  if (a == 0) return "0";
  if (a < 1e-3) return fmt::format("{:.3g} µs", s * 1e6);
  if (a < 1) return fmt::format("{:.4g} ms", s * 1e3);
  return fmt::format("{:.4g} s", s);
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
