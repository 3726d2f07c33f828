#pragma once
// Loss models shared by both backends.
#include "netem/shaper/link_params.h"

namespace xdc::netem {

// Random loss of mean p with lag-1 correlation c, as a Gilbert model (h 0, k 100: a packet
// is lost iff the chain is in the bad state): P(good->bad) = (1-c) p,
// P(bad->good) = (1-c)(1-p). Both backends realise correlated random loss this way:
// netem's own `loss p c` (get_crandom) pulls each draw towards the previous one and so
// lowers the loss rate itself (10% at 75% correlation loses almost nothing).
LossModel correlated_loss_model(const LossModel& random);

}  // namespace xdc::netem
