#include "harness/sim/link_model.h"

#include <cmath>

namespace xdc::sim {

int64_t Link::transfer_ns(int64_t bytes) const {
  if (bandwidth_bps <= 0 || bytes <= 0) return 0;
  return std::llround(static_cast<double>(bytes) * 8e9 / bandwidth_bps);
}

LinkModel LinkModel::uniform(int ranks, Link l) {
  return LinkModel{ranks, std::vector<Link>(static_cast<size_t>(ranks) * ranks, l)};
}

LinkModel LinkModel::two_dc(int ranks, int split, Link wan, Link lan) {
  LinkModel m = uniform(ranks, lan);
  for (int a = 0; a < ranks; ++a)
    for (int b = 0; b < ranks; ++b)
      if ((a < split) != (b < split)) m.at(a, b) = wan;
  return m;
}

}  // namespace xdc::sim
