#include "netem/shaper/queue_sizing.h"

#include <algorithm>
#include <cmath>

namespace xdc::netem {

namespace {
double bytes_in(uint64_t rate_bps, double seconds) {
  return rate_bps / 8.0 * seconds;
}
}  // namespace

uint32_t rate_queue_pkts(const LinkParams& p) {
  if (p.queue_pkts) return p.queue_pkts;
  double delay_s = std::max<uint64_t>(p.delay_us, 1000) / 1e6;
  double pkts = std::ceil(1.5 * bytes_in(p.rate_bps, delay_s) / kFrameBytes);
  return static_cast<uint32_t>(std::clamp(pkts, double{kMinRateQueuePkts}, 1e7));
}

uint64_t rate_queue_bytes(const LinkParams& p) {
  uint64_t bytes = uint64_t{rate_queue_pkts(p)} * kFrameBytes;
  return std::max<uint64_t>(bytes, uint64_t{tbf_burst_bytes(p.rate_bps)} + kFrameBytes);
}

uint64_t intra_dc_queue_bytes(uint64_t rate_bps, double time_dilation) {
  LinkParams p;
  p.rate_bps = time_dilated_rate_bps(rate_bps, 1 / time_dilation);
  p.queue_pkts = rate_queue_pkts(p);
  p.rate_bps = rate_bps;
  return rate_queue_bytes(p);
}

uint32_t delay_queue_pkts(const LinkParams& p) {
  uint64_t rate = p.rate_bps ? p.rate_bps : kUnlimitedRateBps;
  double hold_s = (p.delay_us + 4.0 * p.jitter_us) / 1e6;
  double pkts = std::ceil(1.5 * bytes_in(rate, hold_s) / kFrameBytes);
  return static_cast<uint32_t>(std::clamp(pkts, double{kMinDelayQueuePkts}, 1e7));
}

uint32_t tbf_burst_bytes(uint64_t rate_bps) {
  double one_ms = bytes_in(rate_bps, 1e-3);
  return static_cast<uint32_t>(std::clamp(one_ms, 8.0 * kFrameBytes, 1e9));
}

double tcp_payload_bps(uint64_t rate_bps) {
  return static_cast<double>(rate_bps) * kTcpPayloadShare;
}

}  // namespace xdc::netem
