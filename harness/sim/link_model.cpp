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
  const int most = 1 + *std::max_element(channel.begin(), channel.end());
  return host.empty() ? most : std::max(most, ranks * ranks);
}

void LinkModel::set_pairs(std::vector<std::pair<int, int>> pairs) {
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  pairs_ = std::move(pairs);
}

size_t LinkModel::connection(int from, int to) const {
  if (pairs_.empty()) return static_cast<size_t>(from) * ranks + to;
  const auto it = std::lower_bound(pairs_.begin(), pairs_.end(), std::make_pair(from, to));
  return it != pairs_.end() && *it == std::make_pair(from, to)
             ? static_cast<size_t>(it - pairs_.begin())
             : kNoConnection;
}

int LinkModel::lanes_of(int from, int to) const {
  const int n = lanes.empty() ? 1 : lanes[cell(from, to)];
  if (n <= 1 || exclusive_channel(channel_of(from, to)) || copies_of(from, to) % n != 0) return 1;
  return n;
}

LinkModel LinkModel::by_rank() const {
  if (host.empty()) return *this;
  LinkModel m = *this;
  m.host.clear();
  m.hosts = 0;
  const auto n = static_cast<size_t>(ranks);
  m.links.assign(n * n, {});
  if (!channel.empty()) m.channel.assign(n * n, 0);
  if (!tcp.empty()) m.tcp.assign(n * n, {});
  if (!copies.empty()) m.copies.assign(n * n, 1);
  if (!lanes.empty()) m.lanes.assign(n * n, 1);
  for (int a = 0; a < ranks; ++a)
    for (int b = 0; b < ranks; ++b) {
      const size_t i = static_cast<size_t>(a) * n + b;
      m.links[i] = at(a, b);
      if (!channel.empty()) m.channel[i] = channel_of(a, b);
      if (!tcp.empty()) m.tcp[i] = path(a, b);
      if (!copies.empty()) m.copies[i] = copies_of(a, b);
      if (!lanes.empty()) m.lanes[i] = lanes[cell(a, b)];
    }
  return m;
}

LinkModel LinkModel::uniform(int ranks, Link l) {
  LinkModel m;
  m.ranks = ranks;
  m.links.assign(static_cast<size_t>(ranks) * ranks, l);
  return m;
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
