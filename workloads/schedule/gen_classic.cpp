// GPipe, 1F1B and interleaved 1F1B (Megatron-LM's order): latency-oblivious orders.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "workloads/schedule/generators.h"

namespace xdc::sched {

std::vector<std::vector<Action>> one_f_one_b_order(int ranks, int m,
                                                   const std::vector<int>& warmup) {
  std::vector<std::vector<Action>> order(ranks);
  for (int r = 0; r < ranks; ++r) {
    const int w = std::clamp(warmup[r], 0, m);
    auto& o = order[r];
    for (int i = 0; i < w; ++i) o.push_back({Kind::F, r, i});
    for (int i = 0; i < m - w; ++i) {
      o.push_back({Kind::F, r, w + i});
      o.push_back({Kind::BW, r, i});
    }
    for (int i = m - w; i < m; ++i) o.push_back({Kind::BW, r, i});
  }
  return order;
}

Schedule gen_gpipe(const Params& p) {
  check_sizes(p);
  std::vector<std::vector<Action>> order(p.ranks);
  for (int r = 0; r < p.ranks; ++r) {
    for (int i = 0; i < p.microbatches; ++i) order[r].push_back({Kind::F, r, i});
    for (int i = 0; i < p.microbatches; ++i) order[r].push_back({Kind::BW, r, i});
  }
  return lower("gpipe", p.ranks, p.microbatches, plain_placement(p.ranks), order, p.optimizer);
}

Schedule gen_1f1b(const Params& p) {
  check_sizes(p);
  std::vector<int> warmup(p.ranks);
  for (int r = 0; r < p.ranks; ++r) warmup[r] = p.ranks - r - 1;
  return lower("1f1b", p.ranks, p.microbatches, plain_placement(p.ranks),
               one_f_one_b_order(p.ranks, p.microbatches, warmup), p.optimizer);
}

Schedule gen_interleaved(const Params& p) {
  check_sizes(p);
  if (p.chunks < 1)
    throw std::invalid_argument("interleaved: chunks (" + std::to_string(p.chunks) +
                                ") must be at least 1");
  const int P = p.ranks, v = p.chunks, m = p.microbatches;
  if (m % P != 0)
    throw std::invalid_argument("interleaved: microbatches (" + std::to_string(m) +
                                ") must be a multiple of stages (" + std::to_string(P) + ")");
  const int total = m * v;
  auto chunk_of = [&](int k, bool fwd) {
    const int c = (k % (P * v)) / P;
    return fwd ? c : v - 1 - c;
  };
  auto mb_of = [&](int k) { return (k / (P * v)) * P + k % P; };
  std::vector<std::vector<Action>> order(P);
  for (int r = 0; r < P; ++r) {
    const int warm =
        v == 1 ? std::min(P - r - 1, total) : std::min((P - r - 1) * 2 + (v - 1) * P, total);
    auto F = [&](int k) { order[r].push_back({Kind::F, chunk_of(k, true) * P + r, mb_of(k)}); };
    auto B = [&](int k) { order[r].push_back({Kind::BW, chunk_of(k, false) * P + r, mb_of(k)}); };
    for (int k = 0; k < warm; ++k) F(k);
    for (int i = 0; i < total - warm; ++i) {
      F(warm + i);
      B(i);
    }
    for (int k = total - warm; k < total; ++k) B(k);
  }
  return lower("interleaved", P, m, looped_placement(P, v), order, p.optimizer);
}

}  // namespace xdc::sched
