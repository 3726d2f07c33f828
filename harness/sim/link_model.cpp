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
  return LinkModel{ranks, std::vector<Link>(static_cast<size_t>(ranks) * ranks, l), {}, {}};
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

LinkState::LinkState(const LinkModel& m, int64_t idle_before_ns)
    : m_(m), channel_free_(m.channels(), 0) {
  conn_.resize(m.tcp.empty() ? 0 : static_cast<size_t>(m.ranks) * m.ranks);
  for (size_t i = 0; i < conn_.size(); ++i) {
    const int64_t w = m.tcp[i].window_bytes * std::max(m.tcp[i].connections, 1);
    conn_[i].cwnd = w > 0 ? w : int64_t{1} << 40;
    conn_[i].last_send_ns = -idle_before_ns;
    conn_[i].stamp_ns = -idle_before_ns;
  }
}

Transfer LinkState::send(int from, int to, int64_t bytes, int64_t ready_ns) {
  const Link& l = m_.at(from, to);
  int64_t& free = channel_free_[m_.channel_of(from, to)];
  Transfer t;
  t.start_ns = std::max(ready_ns, free);
  if (m_.tcp.empty()) {
    t.end_ns = t.start_ns + l.transfer_ns(bytes);
  } else {
    const size_t i = static_cast<size_t>(from) * m_.ranks + to;
    const size_t back = static_cast<size_t>(to) * m_.ranks + from;
    const Link& rev = m_.at(to, from);
    const int64_t rtt = l.latency_ns + rev.latency_ns;
    const TcpPath& p = m_.tcp[i];
    const int64_t eager = std::max<int64_t>(p.eager_limit - kEagerHeaderBytes, 0);
    if (bytes <= eager) {
      t.end_ns = tcp_transmit(conn_[i], p, l.bandwidth_bps, rtt, t.start_ns, bytes);
    } else {
      // Rendezvous: the first fragment goes with the request; the receiver answers when it
      // has arrived (its receive is posted), and the rest goes when the answer is back.
      const int64_t first_end = tcp_transmit(conn_[i], p, l.bandwidth_bps, rtt, t.start_ns, eager);
      const int64_t answer = first_end + l.latency_ns;
      tcp_note_send(conn_[back], m_.tcp[back], rtt, answer);
      t.end_ns =
          tcp_transmit(conn_[i], p, l.bandwidth_bps, rtt, answer + rev.latency_ns, bytes - eager);
    }
  }
  free = t.end_ns;
  t.arrival_ns = t.end_ns + l.latency_ns;
  return t;
}

int64_t allreduce_ns(const LinkModel& m, int64_t bytes, int64_t idle_before_ns) {
  const int p = m.ranks;
  if (p < 2 || bytes <= 0) return 0;
  int rounds = 0;
  while ((1 << rounds) < p) ++rounds;
  LinkState wire(m, idle_before_ns);
  std::vector<int64_t> t(p, 0);      // when each rank holds its partial sum / the result
  for (int r = 1; r <= rounds; ++r)  // reduce: rank v + 2^(r-1) sends to v
    for (int v = 0; v + (1 << (r - 1)) < p; v += 1 << r) {
      const int from = v + (1 << (r - 1));
      t[v] = std::max(t[v], wire.send(from, v, bytes, t[from]).arrival_ns);
    }
  for (int r = 0; r < rounds; ++r)  // broadcast: v < 2^r sends to v + 2^r
    for (int v = 0; v < (1 << r) && v + (1 << r) < p; ++v)
      t[v + (1 << r)] = wire.send(v, v + (1 << r), bytes, t[v]).arrival_ns;
  return *std::max_element(t.begin(), t.end());
}

}  // namespace xdc::sim
