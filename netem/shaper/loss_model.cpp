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

}  // namespace xdc::netem
