#pragma once
// netem's per-packet decisions, in userspace: what sch_netem's enqueue decides for each
// packet, with the kernel's algorithms (get_crandom, tabledist, loss_gilb_ell), so that
// the userspace backend realises the same LinkParams the same way.
//
//   loss    decided at enqueue: random (+ correlation) or Gilbert-Elliott; a lost packet
//           gets an NF_DROP verdict at once.
//   reorder with probability reorder_pct a packet is sent at once, ahead of those held.
//   delay   delay + jitter drawn from the distribution table (uniform without a table),
//           never negative, and never before the previous packet's send time: order is
//           preserved (as netem does when a rate is set), so jitter does not reorder.
// Pure logic: time is passed in (ns, CLOCK_MONOTONIC), the RNG is seeded by the caller.
#include <cstdint>
#include <random>
#include <vector>

#include "netem/shaper/link_params.h"

namespace xdc::delayline {

// netem's u32 scale for a percentage.
uint32_t probability_u32(double pct);

// netem's correlated random number (get_crandom): rho = 0 gives plain uniform u32.
class CorrelatedRandom {
 public:
  explicit CorrelatedRandom(uint32_t rho = 0) : rho_(rho) {}
  uint32_t next(std::mt19937& rng);

 private:
  uint32_t rho_;
  uint32_t last_ = 0;
};

// netem's Gilbert-Elliott model (loss_gilb_ell); LossModel's h and k are the classic
// ones: P(loss | bad) = 1 - h, P(loss | good) = 1 - k.
class GilbertElliott {
 public:
  explicit GilbertElliott(const netem::LossModel& m);
  bool lose(std::mt19937& rng);
  bool bad() const { return bad_; }
  // Stationary loss probability, for tests: pi_bad (1-h) + pi_good (1-k).
  static double expected_loss(const netem::LossModel& m);

 private:
  uint32_t a1_, a2_, a3_, a4_;  // p, r, h, 1-k as netem names them
  bool bad_ = false;
};

// netem's tabledist: mu + sigma * table[rnd % size] / 8192, or uniform in
// [mu - sigma, mu + sigma) without a table. In ns.
int64_t tabledist(int64_t mu_ns, int64_t sigma_ns, uint32_t rnd, const std::vector<int16_t>& table);

class Impairment {
 public:
  enum class Verdict { kHold, kDrop, kSendNow };
  struct Decision {
    Verdict verdict;
    int64_t send_ns;  // kHold: when to release it
  };

  Impairment(const netem::LinkParams& p, std::vector<int16_t> dist_table, uint64_t seed);
  // One packet arriving at now_ns, in arrival order.
  Decision on_packet(int64_t now_ns);

 private:
  netem::LinkParams p_;
  std::vector<int16_t> table_;
  std::mt19937 rng_;
  CorrelatedRandom delay_rnd_, loss_rnd_, reorder_rnd_;
  GilbertElliott ge_;
  uint32_t loss_u32_, reorder_u32_;
  int64_t last_send_ns_ = 0;
};

}  // namespace xdc::delayline
