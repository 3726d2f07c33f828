#include "harness/run/progress.h"

#include <fmt/format.h>

#include <algorithm>

namespace xdc::run {

std::string hms(double seconds) {
  if (seconds < 0) return "--";
  const long t = static_cast<long>(seconds + 0.5);
  return t >= 3600 ? fmt::format("{}h{:02}m", t / 3600, t / 60 % 60)
                   : fmt::format("{}m{:02}s", t / 60, t % 60);
}

std::string iteration_line(const IterationProgress& p, int bar_width) {
  const int total = std::max(p.total, 1), done = std::clamp(p.done, 0, total);
  const int filled = bar_width * done / total;
  const double eta = done > 0 ? p.elapsed_s / done * (total - done) : -1;
  std::string out = fmt::format(
      "[{}] [{}{}] {}/{} iterations", p.schedule, std::string(static_cast<size_t>(filled), '#'),
      std::string(static_cast<size_t>(bar_width - filled), '.'), done, total);
  if (p.loss >= 0) out += fmt::format("  loss {:.3f}", p.loss);
  return out + fmt::format("  {}  ETA {}", hms(p.elapsed_s), hms(eta));
}

}  // namespace xdc::run
