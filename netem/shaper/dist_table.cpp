#include "netem/shaper/dist_table.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace xdc::netem {

std::vector<std::string> dist_table_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("XDC_TC_DIST_DIR"); env && *env) dirs.emplace_back(env);
  for (const char* d : {"/usr/lib/x86_64-linux-gnu/tc", "/usr/lib/aarch64-linux-gnu/tc",
                        "/usr/lib/tc", "/usr/lib64/tc", "/usr/local/lib/tc", "/usr/share/tc"})
    dirs.emplace_back(d);
  return dirs;
}

std::vector<int16_t> parse_dist_table(std::istream& in, const std::string& what) {
  std::vector<int16_t> table;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    const char* s = line.c_str();
    while (*s) {
      char* end = nullptr;
      long v = std::strtol(s, &end, 10);
      if (end == s) {
        while (*s == ' ' || *s == '\t' || *s == '\r') ++s;
        if (!*s) break;
        throw std::runtime_error(what + ":" + std::to_string(lineno) + ": expected an integer");
      }
      if (v < SHRT_MIN || v > SHRT_MAX)
        throw std::runtime_error(what + ":" + std::to_string(lineno) + ": value out of s16 range");
      table.push_back(static_cast<int16_t>(v));
      s = end;
    }
  }
  if (table.empty()) throw std::runtime_error(what + ": empty distribution table");
  return table;
}

std::vector<int16_t> computed_normal_table() {
  // iproute2 netem/normal.c: invert the CDF on a 16384-point grid, keep every 4th.
  constexpr int kSize = 16384;
  std::vector<double> inv(kSize + 1, 0.0);
  for (double x = -10.0; x < 10.05; x += .00005) {
    int i = static_cast<int>(std::rint(kSize * (.5 + .5 * std::erf(x / std::sqrt(2.0)))));
    inv[i] = x;
  }
  std::vector<int16_t> table;
  for (int i = 0; i < kSize; i += 4) {
    long v = std::lrint(inv[i] * kDistScale);
    table.push_back(static_cast<int16_t>(std::clamp<long>(v, SHRT_MIN, SHRT_MAX)));
  }
  return table;
}

std::vector<int16_t> load_dist_table(JitterDist d) {
  if (d == JitterDist::kUniform) return {};
  std::string name = std::string(to_string(d)) + ".dist";
  std::string tried;
  for (const auto& dir : dist_table_dirs()) {
    std::string path = dir + "/" + name;
    std::ifstream in(path);
    if (in) return parse_dist_table(in, path);
    tried += (tried.empty() ? "" : ", ") + path;
  }
  if (d == JitterDist::kNormal) return computed_normal_table();
  throw std::runtime_error("jitter distribution '" + std::string(to_string(d)) +
                           "': no table found (tried " + tried +
                           "; install iproute2 or set XDC_TC_DIST_DIR)");
}

double expected_largest_draw(const std::vector<int16_t>& table, int64_t n) {
  if (n < 2) return 0;
  const double dn = static_cast<double>(n);
  if (table.empty()) return (dn - 1) / (dn + 1);  // the largest of n uniform draws in [-1, 1)
  std::vector<int16_t> v = table;
  std::sort(v.begin(), v.end());
  const double size = static_cast<double>(v.size());
  double e = 0, below = 0;  // below: P(all n draws <= v_(i-1))
  for (size_t i = 0; i < v.size(); ++i) {
    const double upto = std::pow(static_cast<double>(i + 1) / size, dn);
    e += static_cast<double>(v[i]) * (upto - below);
    below = upto;
  }
  return e / kDistScale;
}

namespace {
constexpr double kGridStep = 1.0 / 64;  // of the jitter
// One draw's CDF F on a grid of kGridStep over [lo, hi], the range of one draw.
struct DrawGrid {
  double lo = 0, hi = 0;
  std::vector<double> cdf;  // F(lo + k h)
};
DrawGrid draw_grid(const std::vector<int16_t>& table) {
  std::vector<double> v;
  if (table.empty()) {
    v = {-1.0, 1.0};
  } else {
    for (int16_t x : table) v.push_back(static_cast<double>(x) / kDistScale);
    std::sort(v.begin(), v.end());
  }
  DrawGrid g;
  g.lo = v.front();
  g.hi = v.back();
  const auto points = static_cast<size_t>(std::ceil((g.hi - g.lo) / kGridStep)) + 1;
  g.cdf.resize(points);
  for (size_t k = 0; k < points; ++k) {
    const double x = g.lo + static_cast<double>(k) * kGridStep;
    g.cdf[k] = table.empty()
                   ? std::clamp((x + 1) / 2, 0.0, 1.0)
                   : static_cast<double>(std::upper_bound(v.begin(), v.end(), x) - v.begin()) /
                         static_cast<double>(v.size());
  }
  return g;
}
}  // namespace

std::vector<double> largest_spaced_quantiles(const std::vector<int16_t>& table, int64_t n,
                                             double lambda, int q) {
  const DrawGrid g = draw_grid(table);
  const double lo = g.lo, hi = g.hi, h = kGridStep;
  const size_t points = g.cdf.size();
  const int64_t terms = lambda > 0 ? std::min<int64_t>(std::max<int64_t>(n, 1),
                                                       static_cast<int64_t>((hi - lo) / lambda) + 1)
                                   : 1;
  const double power = lambda > 0 ? 1.0 : static_cast<double>(std::max<int64_t>(n, 1));
  // P(Y <= x) = prod_j F(x + j lambda) at each grid point (lambda 0: F(x)^n).
  std::vector<double> below(points);
  for (size_t k = 0; k < points; ++k) {
    const double x = lo + static_cast<double>(k) * h;
    double p = 1;
    for (int64_t j = 0; j < terms && p > 0; ++j) {
      const double at = std::round((x + static_cast<double>(j) * lambda - lo) / h);
      p *= at >= static_cast<double>(points - 1) ? 1.0 : g.cdf[static_cast<size_t>(at)];
    }
    below[k] = std::pow(p, power);
  }
  below.back() = 1;
  std::vector<double> out(static_cast<size_t>(std::max(q, 1)));
  size_t k = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double want = (static_cast<double>(i) + 0.5) / static_cast<double>(out.size());
    while (k + 1 < points && below[k] < want) ++k;
    // Between grid points k - 1 and k, linear in the CDF.
    const double x = lo + static_cast<double>(k) * h;
    if (k == 0 || below[k] <= below[k - 1]) {
      out[i] = x;
    } else {
      out[i] = x - h * (below[k] - want) / (below[k] - below[k - 1]);
    }
  }
  return out;
}

double expected_largest_spaced(const std::vector<int16_t>& table, int64_t n, double lambda) {
  if (!(lambda > 0)) return expected_largest_draw(table, n);
  const DrawGrid g = draw_grid(table);
  const double lo = g.lo, hi = g.hi, h = kGridStep;
  const size_t points = g.cdf.size();
  const std::vector<double>& cdf = g.cdf;
  // Draw j >= (hi - lo) / lambda never leads: draw 0 is at least lo, it at most hi - j lambda.
  const int64_t terms = std::min<int64_t>(n, static_cast<int64_t>((hi - lo) / lambda) + 1);
  // Y = max_j (z_j - j lambda) lies in [lo, hi]: E[Y] = lo + integral of P(Y > x) over it,
  // P(Y <= x) = prod_j F(x + j lambda).
  // Midpoint rule, each F read at the grid point nearest its argument.
  double e = lo;
  for (size_t k = 0; k + 1 < points; ++k) {
    const double x = lo + (static_cast<double>(k) + 0.5) * h;
    double below = 1;
    for (int64_t j = 0; j < terms && below > 0; ++j) {
      const double at = std::round((x + static_cast<double>(j) * lambda - lo) / h);
      below *= at >= static_cast<double>(points - 1) ? 1.0 : cdf[static_cast<size_t>(at)];
    }
    e += (1 - below) * h;
  }
  return e;
}

}  // namespace xdc::netem
