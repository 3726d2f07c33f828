// DHelix (Wang et al. 2024): model folding (the W-shaped pipeline) and strand
// interleaving, as one schedule.
#include <algorithm>
#include <string>
#include <tuple>

#include "workloads/schedule/generators.h"

namespace xdc::sched {

// Folding: rank r holds stage r and stage 2P-1-r (v_placement), so a microbatch goes
// down the ranks and back up in its forward, and again in its backward: a W over time.
// Slots: microbatch i enters at slot 2i; its F of stage s runs in slot 2i + s and its
// backward (BW) of stage s in slot 2i + 4P-1-s, right after the stage above it. On rank
// r the two stages' F fall in slots of opposite parity (r + (2P-1-r) is odd), and so do
// their backwards, so every slot of a rank holds at most one F and one backward, of two
// different microbatches (s + s' = 4P-1 would be needed for the same one): the two
// strands. Each rank's list is its actions in slot order, and a slot with both runs them
// as a co-executed pair (schedule.h, coexec.h). Every dependency lies in an earlier
// slot, so the lists cannot deadlock (the engine times them as they run; a slot is an
// order, not a clock). In the steady state a rank runs one pair per slot, a microbatch
// every two. Its peak is 1F1B's, 2P stage units (P microbatches): a pair's BW frees as
// its F fills (validate.h).
Schedule gen_dhelix(const Params& p) {
  check_sizes(p);
  const int P = p.ranks, S = 2 * P, m = p.microbatches;
  const std::vector<int> placement = v_placement(P);
  std::vector<std::vector<std::tuple<int, int, int, int>>> slots(P);  // slot, kind, stage, mb
  for (int i = 0; i < m; ++i)
    for (int s = 0; s < S; ++s) {
      slots[placement[s]].push_back({2 * i + s, 0, s, i});
      slots[placement[s]].push_back({2 * i + 2 * S - 1 - s, 1, s, i});
    }
  std::vector<std::vector<Action>> order(P);
  for (int r = 0; r < P; ++r) {
    std::sort(slots[r].begin(), slots[r].end());
    const auto& v = slots[r];
    for (size_t k = 0; k < v.size(); ++k) {
      const auto [slot, kind, stage, mb] = v[k];
      Action a{kind == 0 ? Kind::F : Kind::BW, stage, mb};
      a.paired = kind == 0 && k + 1 < v.size() && std::get<0>(v[k + 1]) == slot;
      order[r].push_back(a);
    }
  }
  return lower("dhelix", P, m, placement, order, p.optimizer);
}

}  // namespace xdc::sched
