#include "netem/delayline/impairment.h"

#include <algorithm>
#include <cmath>

#include "netem/shaper/dist_table.h"

namespace xdc::delayline {

uint32_t probability_u32(double pct) {
  return static_cast<uint32_t>(std::rint(std::clamp(pct, 0.0, 100.0) / 100.0 * UINT32_MAX));
}

uint32_t CopulaRandom::next(std::mt19937& rng) {
  if (c_ <= 0) return static_cast<uint32_t>(rng());
  z_ = c_ * z_ + std::sqrt(1 - c_ * c_) * normal_(rng);
  double u = 0.5 * std::erfc(-z_ / std::sqrt(2.0));  // standard normal CDF
  return static_cast<uint32_t>(std::min(u * 4294967296.0, 4294967295.0));
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

int64_t tabledist(int64_t mu, int64_t sigma, uint32_t rnd, const std::vector<int16_t>& table) {
  if (sigma == 0) return mu;
  // netem takes rnd modulo the range (its low bits); the high bits are as uniform and
  // keep the copula's correlation between neighbouring draws.
  auto scaled = [rnd](uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(rnd) * n) >> 32);
  };
  if (table.empty())
    return static_cast<int64_t>(scaled(2 * static_cast<uint64_t>(sigma))) + mu - sigma;
  int64_t t = table[scaled(table.size())];
  // netem splits sigma to keep the product in range; ns fit comfortably in 64 bits.
  int64_t x = sigma * t;
  x += x >= 0 ? netem::kDistScale / 2 : -netem::kDistScale / 2;
  return x / netem::kDistScale + mu;
}

Impairment::Impairment(const netem::LinkParams& p, std::vector<int16_t> dist_table, uint64_t seed)
    : p_(p),
      table_(std::move(dist_table)),
      rng_(static_cast<std::mt19937::result_type>(seed ^ (seed >> 32))),
      delay_rnd_(0),
      ge_(netem::LossModel{}) {
  derive();
}

void Impairment::derive() {
  const netem::LinkParams& p = p_;
  delay_rnd_ = CopulaRandom(std::clamp(p.jitter_correlation_pct, 0.0, 99.9) / 100);
  ge_ = GilbertElliott(p.loss.kind == netem::LossModel::Kind::kRandom && p.loss.correlation_pct > 0
                           ? netem::correlated_loss_model(p.loss)
                           : p.loss);
  use_ge_ = p.loss.kind == netem::LossModel::Kind::kGilbertElliott ||
            (p.loss.kind == netem::LossModel::Kind::kRandom && p.loss.correlation_pct > 0);
  loss_u32_ = probability_u32(p.loss.p_pct);
  reorder_u32_ = probability_u32(p.reorder_pct);
  duplicate_u32_ = probability_u32(p.duplicate_pct);
  corrupt_u32_ = probability_u32(p.corrupt_pct);
}

void Impairment::change(const netem::LinkParams& p, std::vector<int16_t> dist_table) {
  bool same_loss = p.loss.kind == p_.loss.kind && p.loss.p_pct == p_.loss.p_pct &&
                   p.loss.correlation_pct == p_.loss.correlation_pct &&
                   p.loss.r_pct == p_.loss.r_pct && p.loss.h_pct == p_.loss.h_pct &&
                   p.loss.k_pct == p_.loss.k_pct;
  GilbertElliott chain = ge_;
  CopulaRandom delay_rnd = delay_rnd_;
  bool same_corr = p.jitter_correlation_pct == p_.jitter_correlation_pct;
  p_ = p;
  table_ = std::move(dist_table);
  derive();
  if (same_loss) ge_ = chain;  // a loss state carries on unless the model changed
  if (same_corr) delay_rnd_ = delay_rnd;
}

Impairment::Decision Impairment::on_packet(int64_t now_ns, bool is_copy) {
  // netem_enqueue's order: duplicate, loss (a lost duplicate still sends one), corrupt,
  // then reorder or delay.
  int count = 1;
  if (!is_copy && duplicate_u32_ && duplicate_u32_ >= static_cast<uint32_t>(rng_())) ++count;
  bool lost = false;
  if (use_ge_)
    lost = ge_.lose(rng_);
  else if (p_.loss.kind == netem::LossModel::Kind::kRandom)
    lost = loss_u32_ && loss_u32_ >= static_cast<uint32_t>(rng_());
  if (lost) --count;
  if (count == 0) return {Verdict::kDrop, now_ns};
  Decision d{Verdict::kHold, now_ns};
  d.duplicate = count > 1;
  d.corrupt = corrupt_u32_ && corrupt_u32_ >= static_cast<uint32_t>(rng_());
  // netem with gap 1: reordering needs a delay to overtake.
  if (reorder_u32_ && p_.delay_us && reorder_u32_ >= static_cast<uint32_t>(rng_())) {
    d.verdict = Verdict::kSendNow;
    return d;
  }
  int64_t delay =
      tabledist(static_cast<int64_t>(p_.delay_us) * 1000, static_cast<int64_t>(p_.jitter_us) * 1000,
                delay_rnd_.next(rng_), table_);
  d.send_ns = std::max({now_ns + std::max<int64_t>(delay, 0), last_send_ns_});
  last_send_ns_ = d.send_ns;
  return d;
}

}  // namespace xdc::delayline
