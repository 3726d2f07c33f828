#include "netem/shaper/loss_model.h"

namespace xdc::netem {

LossModel correlated_loss_model(const LossModel& random) {
  double p = random.p_pct / 100, c = random.correlation_pct / 100;
  LossModel m;
  m.kind = LossModel::Kind::kGilbertElliott;
  m.p_pct = 100 * (1 - c) * p;
  m.r_pct = 100 * (1 - c) * (1 - p);
  m.h_pct = 0;
  m.k_pct = 100;
  return m;
}

namespace {
// A random loss with correlation is the Gilbert chain both backends run.
LossModel as_chain(const LossModel& m) {
  return m.kind == LossModel::Kind::kRandom && m.correlation_pct > 0 ? correlated_loss_model(m) : m;
}
}  // namespace

double stationary_loss(const LossModel& m0) {
  const LossModel m = as_chain(m0);
  if (m.kind == LossModel::Kind::kNone) return 0;
  if (m.kind == LossModel::Kind::kRandom) return m.p_pct / 100;
  const double p = m.p_pct / 100, r = m.r_pct / 100;
  const double bad = p + r > 0 ? p / (p + r) : 0;
  return bad * (1 - m.h_pct / 100) + (1 - bad) * (1 - m.k_pct / 100);
}

double loss_episodes_per_packet(const LossModel& m0) {
  const LossModel m = as_chain(m0);
  if (m.kind != LossModel::Kind::kGilbertElliott) return stationary_loss(m);
  const double p = m.p_pct / 100, r = m.r_pct / 100;
  const double lose_bad = 1 - m.h_pct / 100, lose_good = 1 - m.k_pct / 100;
  if (!(r > 0)) return p > 0 ? lose_bad : lose_good;  // never leaves: independent losses
  const double good = r / (p + r);
  // A stay of n packets in the bad state keeps all of them with (1-b)^n; summed over n.
  const double none = r * (1 - lose_bad) / (1 - (1 - r) * (1 - lose_bad));
  return good * (lose_good + p * (1 - none));
}

}  // namespace xdc::netem
