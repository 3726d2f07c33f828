#pragma once
// netem's per-packet decisions, in userspace: what sch_netem's enqueue decides for each
// packet, with the kernel's algorithms (get_crandom, tabledist, loss_gilb_ell), so that
// the userspace backend realises the same LinkParams the same way.
//
//   loss    decided at enqueue: random or Gilbert-Elliott; a lost packet gets an
//           NF_DROP verdict at once. Random loss with correlation c is the two-state
//           chain with mean p and lag-1 correlation c (netem::correlated_loss_model), not
//           netem's get_crandom, which pulls every draw towards the previous one and so
//           lowers the loss rate (10% at 75% correlation loses almost nothing).
//   reorder with probability reorder_pct a packet is sent at once, ahead of those held.
//   duplicate / corrupt  decided at enqueue as in netem (the delay line does the work).
//   delay   delay + jitter drawn from the distribution table (uniform without a table);
//           jitter correlation c makes successive draws an AR(1) Gaussian copula of
//           correlation c, which keeps the distribution (netem's narrows it);
//           never negative, and never before the previous packet's send time: order is
//           preserved (as netem does when a rate is set), so jitter does not reorder.
// Pure logic: time is passed in (ns, CLOCK_MONOTONIC), the RNG is seeded by the caller.
#include <cstdint>
#include <random>
#include <vector>

#include "netem/shaper/link_params.h"
#include "netem/shaper/loss_model.h"

namespace xdc::delayline {

// netem's u32 scale for a percentage.
uint32_t probability_u32(double pct);

// netem's Gilbert-Elliott model (loss_gilb_ell); LossModel's h and k are the classic
// ones: P(loss | bad) = 1 - h, P(loss | good) = 1 - k.
class GilbertElliott {
 public:
  explicit GilbertElliott(const netem::LossModel& m);
  bool lose(std::mt19937& rng);
  bool bad() const { return bad_; }

 private:
  uint32_t a1_, a2_, a3_, a4_;  // p, r, h, 1-k as netem names them
  bool bad_ = false;
};

// Successive uniform u32 draws whose normal scores follow z' = c z + sqrt(1-c^2) e:
// each draw is uniform, neighbours are correlated (about c for normal jitter).
class CopulaRandom {
 public:
  explicit CopulaRandom(double correlation) : c_(correlation) {}
  uint32_t next(std::mt19937& rng);

 private:
  double c_, z_ = 0;
  std::normal_distribution<double> normal_;
};

// netem's tabledist: mu + sigma * table[rnd * size / 2^32] / 8192, or uniform in
// [mu - sigma, mu + sigma) without a table. In ns.
int64_t tabledist(int64_t mu_ns, int64_t sigma_ns, uint32_t rnd, const std::vector<int16_t>& table);

class Impairment {
 public:
  enum class Verdict { kHold, kDrop, kSendNow };
  struct Decision {
    Verdict verdict;
    int64_t send_ns;         // kHold: when to release it
    bool duplicate = false;  // send a copy too (it takes its own way through the line)
    bool corrupt = false;    // flip one random bit of this packet
  };

  Impairment(const netem::LinkParams& p, std::vector<int16_t> dist_table, uint64_t seed);
  // One packet arriving at now_ns, in arrival order. As netem: a duplicate is not
  // duplicated again (`is_copy`), and a packet both duplicated and lost goes once.
  Decision on_packet(int64_t now_ns, bool is_copy = false);
  // Takes `p` (and its jitter table) for the packets that arrive from now on, in place:
  // the random stream goes on, and so does FIFO order (a packet is never sent before
  // one decided earlier, so after a delay decrease new packets wait behind held ones).
  // A Gilbert-Elliott chain restarts in the good state when the loss model changes.
  void change(const netem::LinkParams& p, std::vector<int16_t> dist_table);
  const netem::LinkParams& params() const { return p_; }

 private:
  void derive();  // the draws' thresholds from p_
  netem::LinkParams p_;
  std::vector<int16_t> table_;
  std::mt19937 rng_;
  CopulaRandom delay_rnd_;
  GilbertElliott ge_;  // Gilbert-Elliott, or correlated random loss
  bool use_ge_ = false;
  uint32_t loss_u32_ = 0, reorder_u32_ = 0, duplicate_u32_ = 0, corrupt_u32_ = 0;
  int64_t last_send_ns_ = 0;
};

}  // namespace xdc::delayline
