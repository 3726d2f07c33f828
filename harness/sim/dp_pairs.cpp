// dp_pairs (worker_model.h): the pairs of world ranks that the data-parallel collectives
// and the iteration barrier send between, as worker_model.cpp runs them.
#include <utility>
#include <vector>

#include "harness/sim/worker_model.h"

namespace xdc::sim {

std::vector<std::pair<int, int>> dp_pairs(int world, int local, bool ring, bool barrier) {
  std::vector<std::pair<int, int>> out;
  if (local <= 0) return out;
  const int members = world / local;
  auto both = [&](int r, int a, int b) {  // comm ranks a and b of pipeline rank r's group
    out.emplace_back(a * local + r, b * local + r);
    out.emplace_back(b * local + r, a * local + r);
  };
  for (int r = 0; r < local; ++r) {
    for (int half = 1; half < members; half *= 2)  // binomial_allreduce's reduce
      for (int v = 0; v + half < members; v += 2 * half) both(r, v + half, v);
    for (int v = 1; v < members; ++v) {  // and its broadcast
      int high = 1;
      while (high * 2 <= v) high *= 2;
      both(r, v - high, v);
    }
    if (ring && members > 1)
      for (int v = 0; v < members; ++v) both(r, v, (v + 1) % members);
  }
  if (barrier)  // dissemination_barrier's rounds
    for (int step = 1; step < world; step *= 2)
      for (int r = 0; r < world; ++r)
        if (const int from = (r - step % world + world) % world; from != r)
          out.emplace_back(from, r);
  return out;
}

}  // namespace xdc::sim
