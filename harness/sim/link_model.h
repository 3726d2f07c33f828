#pragma once
// Link model between ranks, per direction: a message takes latency + bytes / bandwidth,
// and messages on one direction queue FIFO behind each other. A plain record: the
// topology loader (or a CLI flag) fills it; the simulator knows nothing of YAML.
#include <cstdint>
#include <vector>

namespace xdc::sim {

struct Link {
  int64_t latency_ns = 0;    // one-way
  double bandwidth_bps = 0;  // bits per second; 0 = infinite
  int64_t transfer_ns(int64_t bytes) const;
};

struct LinkModel {
  int ranks = 0;
  std::vector<Link> links;  // [from * ranks + to]

  const Link& at(int from, int to) const { return links[from * ranks + to]; }
  Link& at(int from, int to) { return links[from * ranks + to]; }

  static LinkModel uniform(int ranks, Link l);
  // Ranks [0, split) in DC A, the rest in DC B: `wan` between DCs, `lan` inside.
  static LinkModel two_dc(int ranks, int split, Link wan, Link lan = {});
};

}  // namespace xdc::sim
