#pragma once
// One direction of an impaired link, as a plain record (Mininet's TCLink parameters).
// `delay_us` is ONE-WAY for this direction: a link with delay 20 ms in each direction
// has a 40 ms round trip. Zero means "not impaired" for every field.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace xdc::netem {

enum class JitterDist { kUniform, kNormal, kPareto, kParetoNormal };

// netem's loss models. Percentages are 0..100.
struct LossModel {
  enum class Kind { kNone, kRandom, kGilbertElliott };
  Kind kind = Kind::kNone;
  double p_pct = 0;            // random: loss probability; GE: P(good -> bad)
  double correlation_pct = 0;  // random only: correlation with the previous decision
  double r_pct = 100;          // GE: P(bad -> good)
  double h_pct = 0;            // GE: loss probability in the bad state is (100 - h)
  double k_pct = 100;          // GE: loss probability in the good state is (100 - k)
};

struct LinkParams {
  uint64_t delay_us = 0;
  uint64_t jitter_us = 0;
  JitterDist jitter_dist = JitterDist::kNormal;
  double jitter_correlation_pct = 0;
  LossModel loss;
  uint64_t rate_bps = 0;    // 0 = unlimited
  uint32_t queue_pkts = 0;  // 0 = auto: sized from the bandwidth-delay product
  double duplicate_pct = 0;
  double reorder_pct = 0;  // sent at once, ahead of held packets (needs a delay)
  double corrupt_pct = 0;

  bool impaired() const {
    return delay_us || jitter_us || loss.kind != LossModel::Kind::kNone || rate_bps ||
           duplicate_pct > 0 || reorder_pct > 0 || corrupt_pct > 0;
  }
};

// Time dilation by `k` (Gupta et al., NSDI'06): every duration (delay, jitter) x k, every
// rate / k; packet counts and probabilities (queue, loss, duplicate, corrupt, reorder)
// unchanged, so the bandwidth-delay product in packets stays the same. k < 1 undoes a
// dilation (time_dilated(time_dilated(p, k), 1 / k) == p up to rounding). k > 0.
// Inline: the topology model uses it without linking the shaper.
inline uint64_t time_dilated_us(uint64_t us, double k) {
  return static_cast<uint64_t>(std::llround(static_cast<double>(us) * k));
}
inline uint64_t time_dilated_rate_bps(uint64_t rate_bps, double k) {  // 0 (unlimited) stays 0
  if (rate_bps == 0) return 0;
  return std::max<uint64_t>(1,
                            static_cast<uint64_t>(std::llround(static_cast<double>(rate_bps) / k)));
}
inline LinkParams time_dilated(LinkParams p, double k) {
  p.delay_us = time_dilated_us(p.delay_us, k);
  p.jitter_us = time_dilated_us(p.jitter_us, k);
  p.rate_bps = time_dilated_rate_bps(p.rate_bps, k);
  return p;
}

// Which mechanism realises the impairment.
enum class Backend { kAuto, kKernel, kUserspace };
const char* to_string(Backend b);     // "auto" | "kernel" | "userspace"
const char* to_string(JitterDist d);  // "uniform" | "normal" | "pareto" | "paretonormal"

}  // namespace xdc::netem
