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

// The stationary probability that a packet is lost (0..1): random p; Gilbert-Elliott
// pi_bad (1-h) + pi_good (1-k), pi_bad = p / (p + r); none 0.
double stationary_loss(const LossModel& m);

// How often a loss episode starts, per packet (0..1): what a TCP sender answers with one
// window reduction (one fast recovery, however many segments of its window it retransmits).
// A loss the chain draws independently (random loss, the good state's 1-k) is an episode
// of its own; a stay in the bad state (n packets, P(n) = r (1-r)^(n-1), as netem draws the
// transition before the loss) that loses at least one of them is one episode. Correlated
// random loss is its Gilbert chain (correlated_loss_model). Not covered: a stay longer
// than the sender's window, which TCP meets with a retransmission timeout.
double loss_episodes_per_packet(const LossModel& m);

}  // namespace xdc::netem
