// LinkState's hosts' ports (LinkModel::port): the rounds of LAN connections that fill them,
// and what WAN connections crossing them meet there (link_model.h, tcp_port_loss).
#include <algorithm>
#include <limits>

#include "harness/sim/link_model.h"

namespace xdc::sim {
namespace {
constexpr int64_t kNone = std::numeric_limits<int64_t>::max();  // no time
}  // namespace

void LinkState::keep_lan_rounds(const Channel& ch, int id, bool commit) {
  LanRounds& o = lan_rounds_[id];
  for (const PortRound& x : run_rounds_) o.longest = std::max(o.longest, x.end - x.start);
  if (commit) {  // final; those `ahead` held before the rounds' end are these
    o.final.insert(o.final.end(), run_rounds_.begin(), run_rounds_.end());
    o.ahead.erase(o.ahead.begin(),
                  std::lower_bound(o.ahead.begin(), o.ahead.end(), ch.t,
                                   [](const PortRound& x, int64_t at) { return x.start < at; }));
  } else if (std::all_of(jobs_scratch_.begin(), jobs_scratch_.end(),
                         [](const Job& j) { return j.done; })) {  // run to completion
    o.ahead = run_rounds_;
    o.ahead_valid = true;
  }
}

void LinkState::note_lan_round(size_t i, const TcpPath& p, int64_t t, int64_t given,
                               int64_t wire_ns, int64_t overflow, const TcpConn& c,
                               int64_t rtt_ns) {
  if (!p.port_bottleneck || given <= 0 || ports_.empty()) return;
  const int to = m_.port[static_cast<size_t>(m_.pair_of(pair_of_[i]).second)];
  // Its round trip with the port's queue standing: the round's bytes at the port's rate.
  const int64_t srtt = std::max(rtt_ns, wire_ns);
  const int64_t held = std::min(std::max<int64_t>(0, given - p.bdp_bytes),
                                std::max(p.connections, 1) * tcp_small_queue_bytes(c, p, srtt));
  run_rounds_.push_back({t, t + std::max<int64_t>(wire_ns, 1), (overflow + kTcpMss - 1) / kTcpMss,
                         to, given, p.bdp_bytes, p.queue_bytes,
                         tcp_tso_segments(c, p, rtt_ns) * kTcpMss, held});
}

void LinkState::note_ports(int channel, int from, int to, const TcpPath& p) {
  if (m_.port.empty()) return;
  const int a = m_.port[static_cast<size_t>(from)], b = m_.port[static_cast<size_t>(to)];
  if (a == b) return;
  auto add = [](std::vector<int>& v, int x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  };
  Channel& ch = channels_[channel];
  if (p.port_bottleneck) {
    LanRounds& o = lan_rounds_[channel];
    ch.fills_ports = true;  // its sender's port; the receivers' of each pair it carries
    add(ports_[a].lan_out, channel);
    add(ports_[b].lan_in, channel);
    o.ahead_valid = false;
    for (const int port : {a, b})
      for (const int w : ports_[port].wan) {
        Channel& crossing = channels_[w];
        ++crossing.version;
        crossing.settled = -1;
      }
    return;
  }
  if (p.host_queue_bytes > 0 && p.feed_bps > 0 && p.loss_based) {
    add(ch.crosses, a);
    add(ch.crosses, b);
    add(ports_[a].wan, channel);
    add(ports_[b].wan, channel);
  }
}

void LinkState::refresh_ports(const Channel& ch) {
  for (const int port : ch.crosses) {
    const Port at = ports_[port];  // a copy: running a channel can add ports
    refresh_lans(at.lan_out);
    refresh_lans(at.lan_in);
  }
}

void LinkState::refresh_lans(const std::vector<int>& lans) {
  for (const int l : lans) {
    LanRounds& o = lan_rounds_[l];
    if (o.ahead_valid) continue;
    Channel& lan = channels_[l];
    if (lan.jobs.empty()) {
      o.ahead.clear();
      o.ahead_valid = true;
      continue;
    }
    run_channel(lan, kNone, false);  // to completion: sets `ahead`
  }
}

template <typename F>
void LinkState::lan_rounds_at(int port, bool out, int64_t a, int64_t b, const F& f) const {
  const auto at = ports_.find(port);
  if (at == ports_.end() || b <= a) return;
  for (const int l : out ? at->second.lan_out : at->second.lan_in) {
    const LanRounds& o = lan_rounds_.at(l);
    for (const std::vector<PortRound>* v : {&o.final, &o.ahead}) {
      auto it = std::lower_bound(v->begin(), v->end(), a - o.longest,
                                 [](const PortRound& x, int64_t t) { return x.start < t; });
      for (; it != v->end() && it->start < b; ++it)
        if (it->end > a && (out || it->to == port)) f(*it);
    }
  }
}

int64_t LinkState::next_port_event(size_t i, int64_t t, int64_t until) const {
  if (ports_.empty()) return kNone;
  const auto [from, to] = m_.pair_of(pair_of_[i]);
  const int a = m_.port[static_cast<size_t>(from)], b = m_.port[static_cast<size_t>(to)];
  const int64_t lat = m_.at(from, to).latency_ns;
  int64_t first = kNone;
  lan_rounds_at(a, true, t, until, [&](const PortRound& r) {
    if (r.dropped > 0) first = std::min(first, std::max(r.start, t));
  });
  lan_rounds_at(b, false, t + lat, until + lat,
                [&](const PortRound& r) { first = std::min(first, std::max(r.start - lat, t)); });
  if (backlogs_.empty()) return first;
  if (const auto it = backlogs_.find(host_of(i)); it != backlogs_.end()) {
    const auto x = std::lower_bound(it->second.begin(), it->second.end(), t,
                                    [](const PortBacklog& b, int64_t at) { return b.at < at; });
    if (x != it->second.end() && x->at < until) first = std::min(first, x->at);
  }
  return first;
}

void LinkState::note_port_backlog(int rank, int lane, const PortBacklog& b) {
  if (m_.tcp.empty() || b.window <= b.bdp) return;
  const uint64_t key = host_key(rank, lane);
  std::vector<PortBacklog>& v = backlogs_[key];
  v.insert(std::upper_bound(v.begin(), v.end(), b.at,
                            [](int64_t at, const PortBacklog& x) { return at < x.at; }),
           b);
  for (size_t i = 0; i < lanes_.size(); ++i) {  // the pairs' channels leaving that host
    const auto [from, to] = m_.pair_of(i);
    if (lanes_[i] <= lane || host_key(from, lane) != key) continue;
    Channel& ch = channels_[m_.channel_of(from, to)];
    ++ch.version;
    ch.settled = -1;
  }
}

double LinkState::backlog_chance(size_t i, int64_t t, int64_t burst) const {
  if (backlogs_.empty() || burst <= 0) return 0;
  const auto it = backlogs_.find(host_of(i));
  const TcpPath& p = tcp(i);
  if (it == backlogs_.end() || !(p.feed_bps > 0)) return 0;
  // The latest backlog noted by `t`: what the port holds on top (an earlier one has drained
  // into it).
  const std::vector<PortBacklog>& v = it->second;
  const auto after = std::upper_bound(v.begin(), v.end(), t,
                                      [](int64_t at, const PortBacklog& x) { return at < x.at; });
  if (after == v.begin()) return 0;
  const PortBacklog& b = *(after - 1);
  const auto drain = static_cast<int64_t>(static_cast<double>(b.window) * 8e9 / p.feed_bps);
  if (t >= b.at + drain) return 0;
  return tcp_sawtooth_drop_chance(b.window, b.bdp, b.skb, p.host_queue_bytes, burst);
}

int64_t LinkState::port_losses(size_t i, TcpConn& c, int64_t t, int64_t given, int64_t burst) {
  if (given <= 0 || ports_.empty()) return 0;
  const TcpPath& p = tcp(i);
  if (p.host_queue_bytes <= 0 || !(p.feed_bps > 0) || !p.loss_based) return 0;
  const auto [from, to] = m_.pair_of(pair_of_[i]);
  const int a = m_.port[static_cast<size_t>(from)], b = m_.port[static_cast<size_t>(to)];
  if (a == b) return 0;
  const Link& link = m_.at(from, to);
  // One of its n connections' bytes (each crosses its own hosts' ports). They leave the
  // sender's port as fast as it passes them (TCP small queues refill its qdisc as it
  // drains) and reach the receiver's at the route's rate, a one-way delay later.
  const double bytes = static_cast<double>(given / std::max(p.connections, 1));
  const double feed = p.feed_bps / 8e9;  // bytes per ns
  const double neck = link.bandwidth_bps > 0 ? std::min(link.bandwidth_bps / 8e9, feed) : feed;
  const auto out_ns = static_cast<int64_t>(bytes / feed) + 1;
  const auto in_ns = static_cast<int64_t>(bytes / neck) + 1;
  // The sender's port: a LAN connection there that overflows it drops what arrives while
  // its queue is full, both flows' packets alike; the two arrive as fast as the port passes
  // them, so the WAN connection's expected share of the drops is a half.
  double expected = 0;
  lan_rounds_at(a, true, t, t + out_ns, [&](const PortRound& r) {
    if (r.start >= t) expected += 0.5 * static_cast<double>(r.dropped);
  });
  // Below their own overflows the LAN connections leaving the port keep what TCP small
  // queues let them hold in its queue (PortRound::held), and each of this round's TSO
  // aggregates, queued unrelated to their ACKs, is dropped whole where it finds no room
  // (tcp_port_drop_chance): NET_XMIT_DROP, CWR.
  if (const PortQueue q = port_queue(a, t); q.held > 0) {
    const int64_t skb = tcp_tso_segments(c, p, round_trip(i)) * kTcpMss;
    expected +=
        tcp_port_drop_chance(q.held, q.skb, q.limit, skb) * bytes / static_cast<double>(skb);
  }
  if (const double chance = backlog_chance(i, t, burst); chance > 0)
    expected += chance * static_cast<double>(given / std::max(p.connections, 1)) /
                static_cast<double>(burst);
  // The receiver's port: its packets arrive at the route's rate while a LAN connection's
  // arrive there too. The two share the port's rate and queue, each half; the WAN
  // connection's packets queue at the difference between their rate and its half, and
  // overflow its half of the queue once the two have arrived together long enough.
  int64_t together = 0;  // ns
  const int64_t arrive = t + link.latency_ns;
  lan_rounds_at(b, false, arrive, arrive + in_ns, [&](const PortRound& r) {
    together += std::min(r.end, arrive + in_ns) - std::max(r.start, arrive);
  });
  const bool full = (neck - feed / 2) * static_cast<double>(together) >
                    static_cast<double>(p.host_queue_bytes) / 2;
  if (!tcp_port_loss(c, p, full ? 1.0 : expected, t)) return 0;
  return full ? std::min(given, kTcpMss) : 0;  // lost at the receiver's port: sent again
}

LinkState::PortQueue LinkState::port_queue(int port, int64_t at_ns) const {
  PortQueue q;
  lan_rounds_at(port, true, at_ns, at_ns + 1, [&](const PortRound& r) {
    q.held += r.held;
    q.skb = std::max(q.skb, r.skb);
    q.limit = std::max(q.limit, r.limit);
    q.overflowed = q.overflowed || r.dropped > 0;
  });
  q.held = std::min(q.held, q.limit);
  return q;
}

double LinkState::port_drop_chance(int rank, int64_t at_ns, int64_t bytes) {
  if (ports_.empty() || m_.port.empty()) return 0;
  const int port = m_.port[static_cast<size_t>(rank)];
  const auto at = ports_.find(port);
  if (at == ports_.end()) return 0;
  refresh_lans(std::vector<int>(at->second.lan_out));
  const PortQueue q = port_queue(port, at_ns);
  if (q.overflowed) return 1;  // the queue is full, whatever arrives
  return tcp_port_drop_chance(q.held, q.skb, q.limit, bytes);
}

}  // namespace xdc::sim
