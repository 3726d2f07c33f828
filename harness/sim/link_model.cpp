#include "harness/sim/link_model.h"

#include <algorithm>
#include <cmath>

namespace xdc::sim {

int64_t Link::transfer_ns(int64_t bytes) const {
  if (bandwidth_bps <= 0 || bytes <= 0) return 0;
  return std::llround(static_cast<double>(bytes) * 8e9 / bandwidth_bps);
}

int LinkModel::channels() const {
  if (channel.empty()) return ranks * ranks;
  return 1 + *std::max_element(channel.begin(), channel.end());
}

LinkModel LinkModel::uniform(int ranks, Link l) {
  return LinkModel{ranks, std::vector<Link>(static_cast<size_t>(ranks) * ranks, l), {}, {}, {}, {},
                   {}};
}

LinkModel LinkModel::dcs(const std::vector<int>& dc_of, Link wan, Link lan) {
  const int ranks = static_cast<int>(dc_of.size());
  const int n = ranks == 0 ? 0 : 1 + *std::max_element(dc_of.begin(), dc_of.end());
  LinkModel m = uniform(ranks, lan);
  m.channel.resize(static_cast<size_t>(ranks) * ranks);
  for (int a = 0; a < ranks; ++a)
    for (int b = 0; b < ranks; ++b) {
      const size_t i = static_cast<size_t>(a) * ranks + b;
      if (dc_of[a] != dc_of[b]) {
        m.links[i] = wan;
        m.channel[i] = ranks * ranks + dc_of[a] * n + dc_of[b];  // after the pair ids
      } else {
        m.channel[i] = static_cast<int>(i);
      }
    }
  return m;
}

LinkModel LinkModel::two_dc(int ranks, int split, Link wan, Link lan) {
  std::vector<int> dc(ranks);
  for (int r = 0; r < ranks; ++r) dc[r] = r < split ? 0 : 1;
  return dcs(dc, wan, lan);
}

}  // namespace xdc::sim
