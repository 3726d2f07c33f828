#pragma once
// Link model between ranks, per direction: a message takes latency + bytes / bandwidth,
// and messages queue FIFO on their channel. By default every ordered rank pair is its
// own channel; pairs that cross one physical link (all traffic from DC A to DC B goes
// through one WAN direction) share a channel id and so queue behind each other.
// A plain record: the topology loader (or a CLI flag) fills it; no YAML here.
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
  std::vector<Link> links;   // [from * ranks + to]
  std::vector<int> channel;  // [from * ranks + to]: FIFO shared by equal ids; empty = per pair

  const Link& at(int from, int to) const { return links[from * ranks + to]; }
  Link& at(int from, int to) { return links[from * ranks + to]; }
  int channel_of(int from, int to) const {
    return channel.empty() ? from * ranks + to : channel[from * ranks + to];
  }
  int channels() const;  // 1 + the largest channel id

  static LinkModel uniform(int ranks, Link l);
  // dc_of[r] = DC of rank r: `wan` between DCs, one shared FIFO per (DC, DC) direction;
  // `lan` inside a DC, one FIFO per rank pair.
  static LinkModel dcs(const std::vector<int>& dc_of, Link wan, Link lan = {});
  // Ranks [0, split) in DC A, the rest in DC B.
  static LinkModel two_dc(int ranks, int split, Link wan, Link lan = {});
};

}  // namespace xdc::sim
