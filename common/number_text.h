#pragma once
// Numbers as text, printf's way: the one number formatter of netem, workloads, the
// harness and the tests (header-only, so that each layer may use it without linking
// another).
#include <cstdio>
#include <string>

namespace xdc {

// `v` in at most `significant` significant digits, printf's "%.*g": 17 reads back as the
// same double; 6 (printf's own default, "%g") is for people.
inline std::string format_general(double v, int significant = 6) {
  std::string s(std::snprintf(nullptr, 0, "%.*g", significant, v), '\0');
  std::snprintf(s.data(), s.size() + 1, "%.*g", significant, v);
  return s;
}

// `v` with `decimals` digits after the point, printf's "%.*f".
inline std::string format_fixed(double v, int decimals) {
  std::string s(std::snprintf(nullptr, 0, "%.*f", decimals, v), '\0');
  std::snprintf(s.data(), s.size() + 1, "%.*f", decimals, v);
  return s;
}

}  // namespace xdc
