#include "netem/delayline/impairment.h"

#include <algorithm>
#include <cmath>

#include "netem/shaper/dist_table.h"

namespace xdc::delayline {

uint32_t probability_u32(double pct) {
  return static_cast<uint32_t>(std::rint(std::clamp(pct, 0.0, 100.0) / 100.0 * UINT32_MAX));
}

uint32_t CorrelatedRandom::next(std::mt19937& rng) {
  uint32_t value = static_cast<uint32_t>(rng());
  if (rho_ == 0) return value;
  uint64_t rho = uint64_t{rho_} + 1;
  uint64_t answer = (uint64_t{value} * ((1ULL << 32) - rho) + uint64_t{last_} * rho) >> 32;
  last_ = static_cast<uint32_t>(answer);
  return last_;
}

GilbertElliott::GilbertElliott(const netem::LossModel& m)
    : a1_(probability_u32(m.p_pct)),
      a2_(probability_u32(m.r_pct)),
      a3_(probability_u32(m.h_pct)),
      a4_(probability_u32(100.0 - m.k_pct)) {}

bool GilbertElliott::lose(std::mt19937& rng) {
  // As netem: the transition is drawn first, the loss with the state's own probability.
  if (!bad_) {
    if (static_cast<uint32_t>(rng()) < a1_) bad_ = true;
    return static_cast<uint32_t>(rng()) < a4_;
  }
  if (static_cast<uint32_t>(rng()) < a2_) bad_ = false;
  return static_cast<uint32_t>(rng()) > a3_;
}

double GilbertElliott::expected_loss(const netem::LossModel& m) {
  double p = m.p_pct / 100, r = m.r_pct / 100;
  if (p + r == 0) return 1.0 - m.k_pct / 100;
  double pi_bad = p / (p + r);
  return pi_bad * (1.0 - m.h_pct / 100) + (1.0 - pi_bad) * (1.0 - m.k_pct / 100);
}

int64_t tabledist(int64_t mu, int64_t sigma, uint32_t rnd, const std::vector<int16_t>& table) {
  if (sigma == 0) return mu;
  if (table.empty())
    return static_cast<int64_t>(rnd % (2 * static_cast<uint64_t>(sigma))) + mu - sigma;
  int64_t t = table[rnd % table.size()];
  // netem splits sigma to keep the product in range; ns fit comfortably in 64 bits.
  int64_t x = sigma * t;
  x += x >= 0 ? netem::kDistScale / 2 : -netem::kDistScale / 2;
  return x / netem::kDistScale + mu;
}

Impairment::Impairment(const netem::LinkParams& p, std::vector<int16_t> dist_table, uint64_t seed)
    : p_(p),
      table_(std::move(dist_table)),
      rng_(static_cast<std::mt19937::result_type>(seed ^ (seed >> 32))),
      delay_rnd_(probability_u32(p.jitter_correlation_pct)),
      loss_rnd_(probability_u32(p.loss.correlation_pct)),
      reorder_rnd_(0),
      ge_(p.loss),
      loss_u32_(probability_u32(p.loss.p_pct)),
      reorder_u32_(probability_u32(p.reorder_pct)) {}

Impairment::Decision Impairment::on_packet(int64_t now_ns) {
  switch (p_.loss.kind) {
    case netem::LossModel::Kind::kRandom:
      if (loss_u32_ && loss_u32_ >= loss_rnd_.next(rng_)) return {Verdict::kDrop, now_ns};
      break;
    case netem::LossModel::Kind::kGilbertElliott:
      if (ge_.lose(rng_)) return {Verdict::kDrop, now_ns};
      break;
    case netem::LossModel::Kind::kNone:
      break;
  }
  // netem with gap 1: reordering needs a delay to overtake.
  if (reorder_u32_ && p_.delay_us && reorder_u32_ >= reorder_rnd_.next(rng_))
    return {Verdict::kSendNow, now_ns};
  int64_t delay =
      tabledist(static_cast<int64_t>(p_.delay_us) * 1000, static_cast<int64_t>(p_.jitter_us) * 1000,
                delay_rnd_.next(rng_), table_);
  int64_t send = std::max({now_ns + std::max<int64_t>(delay, 0), last_send_ns_});
  last_send_ns_ = send;
  return {Verdict::kHold, send};
}

}  // namespace xdc::delayline
