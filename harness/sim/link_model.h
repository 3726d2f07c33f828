#pragma once
// Link model between ranks, per direction: latency and rate per ordered rank pair, and
// messages queue FIFO on their channel. By default every ordered rank pair is its own
// channel; pairs that cross one physical link (all traffic from DC A to DC B goes through
// one WAN direction) share a channel id and so queue behind each other.
// Without `tcp` a message takes latency + bytes / bandwidth. With it (one TcpPath per
// ordered pair, as plan.cpp's link_model() fills it from the experiment) each pair is one
// TCP connection carrying OpenMPI's protocol: rendezvous, slow start after idle and the
// socket-buffer window (tcp_model.h).
// A plain record: the topology loader (or a CLI flag) fills it; no YAML here. LinkState
// holds what the links remember while a run is simulated.
#include <cstdint>
#include <vector>

#include "harness/sim/tcp_model.h"

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
  std::vector<TcpPath> tcp;  // [from * ranks + to]; empty = latency + bytes / bandwidth

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

// One message on the wire: its first byte starts serialising at start_ns, its last byte
// at end_ns, and the receiver has all of it at arrival_ns.
struct Transfer {
  int64_t start_ns = 0, end_ns = 0, arrival_ns = 0;
};

// The links during one simulated run: when each channel is free again and, with a TCP
// model, each connection's congestion window and last send. Sends must come in
// nondecreasing ready time per channel (the simulator advances ranks in time order).
// The run is one iteration of many: every connection starts warm, its window at the
// socket-buffer limit, having last sent `idle_before_ns` before time 0 (0: the previous
// iteration ended then; a connection used once per iteration passes its idle time).
class LinkState {
 public:
  explicit LinkState(const LinkModel& m, int64_t idle_before_ns = 0);
  // A message of `bytes` from rank `from` to `to`, ready to go at ready_ns.
  Transfer send(int from, int to, int64_t bytes, int64_t ready_ns);

 private:
  const LinkModel& m_;
  std::vector<int64_t> channel_free_;
  std::vector<TcpConn> conn_;  // [from * ranks + to]
};

// MPI_Iallreduce of `bytes` among the ranks of `m`, in place, as OpenMPI 4.1's coll/libnbc
// runs it (the worker's gradient all-reduce): libnbc takes its binomial algorithm for
// every in-place call (nbc_iallreduce.c: `inplace` selects NBC_ARED_BINOMIAL whatever the
// size), so the whole buffer goes up a binomial tree to rank 0 (ceil(log2 d) rounds) and
// back down a binomial broadcast (as many rounds), every message a full-size transfer
// over LinkState::send from connections idle for `idle_before_ns` (they carry one
// all-reduce per iteration). Returns when the last rank has the sum.
int64_t allreduce_ns(const LinkModel& m, int64_t bytes, int64_t idle_before_ns);

}  // namespace xdc::sim
