#pragma once
// One direction of an impaired link, as a plain record (Mininet's TCLink parameters).
// `delay_us` is ONE-WAY for this direction: a link with delay 20 ms in each direction
// has a 40 ms round trip. Zero means "not impaired" for every field.
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

// Which mechanism realises the impairment.
enum class Backend { kAuto, kKernel, kUserspace };
const char* to_string(Backend b);     // "auto" | "kernel" | "userspace"
const char* to_string(JitterDist d);  // "uniform" | "normal" | "pareto" | "paretonormal"

}  // namespace xdc::netem
