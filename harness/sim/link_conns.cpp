// LinkState's connections: their state at a run's start (warm, as a run left them, or new at
// launch) and at its end (link_model.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "harness/sim/link_model.h"

namespace xdc::sim {

LinkState::LinkState(const LinkModel& m, int64_t idle_before_ns) : m_(m) {
  const size_t pairs = m.tcp.empty() ? 0 : m.connections();
  pair_of_.resize(pairs);
  std::iota(pair_of_.begin(), pair_of_.end(), size_t{0});
  path_.assign(pairs, -1);
  stripe0_.assign(pairs, 0);
  stripes_.assign(pairs, 1);
  next_stripe_.assign(pairs, 0);
  lanes_.assign(pairs, 1);
  lane1_.assign(pairs, 0);
  auto add_stripes = [&](size_t pair, size_t group, int n) {  // a stripe group's connections
    stripe0_[group] = pair_of_.size();
    stripes_[group] = n;
    for (int k = 0; k < n; ++k) {
      pair_of_.push_back(pair);
      path_.push_back(path_[pair]);
      group_of_.push_back(group);
    }
  };
  group_of_ = pair_of_;
  for (size_t i = 0; i < pairs; ++i) {
    const auto [from, to] = m.pair_of(i);
    const TcpPath& path = m.path(from, to);
    const int n = std::max(path.connections, 1);
    const int lanes = m.lanes_of(from, to);
    const int copies = m.copies_of(from, to) / lanes;
    if (n == 1 && lanes == 1 && path.connections == copies) continue;  // the model's path
    TcpPath own = path;
    own.connections = copies;
    path_[i] = static_cast<int>(paths_.size());
    paths_.push_back(own);
    lanes_[i] = lanes;
    if (n > 1) add_stripes(i, i, n);  // lane 0's stripes: the pair's group
    if (lanes == 1) continue;
    if (n == 1) {  // lanes 1, 2, ...: connections after the pair's own (lane 0)
      lane1_[i] = pair_of_.size();
      for (int k = 1; k < lanes; ++k) {
        pair_of_.push_back(i);
        path_.push_back(path_[i]);
        group_of_.push_back(i);
      }
      continue;
    }
    lane1_[i] = stripe0_.size();  // lanes 1, 2, ...: stripe groups of their own
    for (int k = 1; k < lanes; ++k) {
      stripe0_.push_back(0);
      stripes_.push_back(1);
      next_stripe_.push_back(0);
      add_stripes(i, stripe0_.size() - 1, n);
    }
  }
  conn_.resize(pair_of_.size());
  pending_.resize(pair_of_.size());
  tickets_.resize(pair_of_.size());
  settled_.resize(pair_of_.size());
  for (size_t i = 0; i < conn_.size(); ++i) {
    const TcpPath& p = tcp(i);
    const int n = std::max(p.connections, 1);
    int64_t w = p.window_bytes > 0 ? p.window_bytes * n : int64_t{1} << 40;
    if (const int64_t mathis = tcp_loss_window_bytes(p.loss) * n; mathis > 0) {
      w = std::min(w, mathis);  // long in use over a lossy path: its losses left it there
      conn_[i].ssthresh = w;
    }
    if (p.port_bottleneck && p.queue_bytes > 0) {
      // Long in use inside a DC: each overflow of its hosts' port cut it to kCubicBeta of
      // the most the port holds, and it regrows towards that.
      w = std::min<int64_t>(
          w, std::llround(kCubicBeta * static_cast<double>((p.bdp_bytes + p.queue_bytes) * n)));
      conn_[i].ssthresh = w;
    }
    conn_[i].cwnd = w;
    conn_[i].hystart_found = true;  // its first slow start is long past
    conn_[i].last_send_ns = -idle_before_ns;
    conn_[i].stamp_ns = -idle_before_ns;
  }
}

LinkState::LinkState(const LinkModel& m, const std::vector<TcpConn>& history) : LinkState(m, 0) {
  if (history.size() == conn_.size()) conn_ = history;
}

std::vector<TcpConn> LinkState::history() {
  for (auto& [id, ch] : channels_) run_channel(ch, std::numeric_limits<int64_t>::max(), true);
  for (size_t i = 0; i < conn_.size(); ++i) {
    size_t applied = 0;
    take_answers(i, conn_[i], std::numeric_limits<int64_t>::max(), &applied);
    pending_[i].clear();
  }
  return conn_;
}

std::vector<TcpConn> LinkState::launch(const LinkModel& m, uint64_t loss_seed) {
  LinkState s(m);
  for (size_t i = 0; i < s.conn_.size(); ++i) {
    TcpConn& c = s.conn_[i];
    if (loss_seed != 0) {
      c.loss_draws = tcp_loss_stream(loss_seed, s.stream_of(i));
      c.jitter_draws = tcp_loss_stream(~loss_seed, s.stream_of(i));
    }
    c.cwnd = kTcpInitialWindow * std::max(s.tcp(i).connections, 1);
    c.ssthresh = 0;
    c.hystart_found = false;
    c.carried = 0;
    c.last_send_ns = std::numeric_limits<int64_t>::min();
  }
  return s.conn_;
}

void shift_history(std::vector<TcpConn>& h, int64_t origin_ns) {
  for (TcpConn& c : h) {
    if (c.last_send_ns != std::numeric_limits<int64_t>::min()) c.last_send_ns -= origin_ns;
    if (c.round_ns != std::numeric_limits<int64_t>::min()) c.round_ns -= origin_ns;
    c.stamp_ns -= origin_ns;
    c.epoch_ns -= origin_ns;
  }
}

void LinkState::set_path(int from, int to, const TcpPath& p) {
  const size_t i = m_.connection(from, to);
  if (i == LinkModel::kNoConnection || i >= lanes_.size()) return;
  TcpPath q = p;
  q.connections = m_.copies_of(from, to) / lanes_[i];
  if (path_[i] >= 0) {  // the pair's stripes share it
    paths_[static_cast<size_t>(path_[i])] = q;
    return;
  }
  path_[i] = static_cast<int>(paths_.size());
  paths_.push_back(q);
}

uint64_t LinkState::host_key(int rank, int lane) const {
  const int host = m_.port.empty() ? rank : m_.port[static_cast<size_t>(rank)];
  return static_cast<uint64_t>(host) << 16 | static_cast<uint64_t>(lane);
}

int LinkState::lane_of(size_t conn) const {
  const size_t pair = pair_of_[conn];
  if (lanes_[pair] <= 1 || conn == pair) return 0;
  if (stripes_[pair] <= 1) return static_cast<int>(conn - lane1_[pair]) + 1;
  const size_t g = group_of_[conn];  // lane 0's stripes are the pair's group
  return g == pair ? 0 : static_cast<int>(g - lane1_[pair]) + 1;
}

uint64_t LinkState::host_of(size_t conn) const {
  return host_key(m_.pair_of(pair_of_[conn]).first, lane_of(conn));
}

size_t LinkState::back_of(size_t conn, int from, int to) const {
  const size_t back = connection(to, from);
  const int lane = stripes_[pair_of_[conn]] > 1 ? 0 : lane_of(conn);  // stripes: no rendezvous
  if (lane == 0 || stripes_[back] > 1 || lane >= lanes_[back]) return back;
  return lane1_[back] + static_cast<size_t>(lane - 1);  // the same lane the other way
}

size_t LinkState::connection(int from, int to) const {
  const size_t i = m_.connection(from, to);
  if (i == LinkModel::kNoConnection)
    throw std::logic_error("LinkState: ranks " + std::to_string(from) + " and " +
                           std::to_string(to) + " have no connection in the link model");
  return i;
}

uint64_t LinkState::stream_of(size_t i) const {
  const size_t pairs = lanes_.size();
  if (i >= pairs) return static_cast<uint64_t>(m_.ranks) * m_.ranks + (i - pairs);
  const auto [a, b] = m_.pair_of(i);
  return static_cast<uint64_t>(a) * m_.ranks + b;
}

void LinkState::note_answer(size_t back, int64_t when) {
  const auto [a, b] = m_.pair_of(pair_of_[back]);
  const int id = m_.channel_of(a, b);
  channels_[id].settled = -1;  // its worked-out end did not know of this
  if (const auto o = lan_rounds_.find(id); o != lan_rounds_.end()) o->second.ahead_valid = false;
  auto& q = pending_[back];
  q.insert(std::upper_bound(q.begin(), q.end(), when), when);
}

int64_t LinkState::queued_until(size_t i, int64_t when, int64_t* lag) {
  // The leading messages of the connection that are complete and final (their places in
  // the queue cannot change) fold into one summary, so a query reads only the rest.
  Settled& s = settled_[i];
  const std::vector<int64_t>& mine = tickets_[i];
  for (; s.count < mine.size(); ++s.count) {
    const auto x = static_cast<size_t>(mine[s.count]);
    if (!jobs_[x].done || known_[x] != -1) break;
    const Queued& q = queued_[x];
    s.latest_queued = std::max({s.latest_queued, q.post, q.data_ready});
    s.latest_end = std::max({s.latest_end, q.first_end, q.data_end});
    s.latest_lagged =
        std::max({s.latest_lagged, q.first_end + q.first_lag, q.data_end + q.data_lag});
  }
  int64_t until = when, lagged = when;  // lagged: the latest a phase ahead arrives, less the delay
  size_t from = 0;
  if (s.count > 0 && s.latest_queued < when) {  // every settled phase was queued before
    until = std::max(until, s.latest_end);
    lagged = std::max(lagged, s.latest_lagged);
    from = s.count;
  }
  for (size_t n = from; n < mine.size(); ++n) {
    const Queued& q = queued_[static_cast<size_t>(mine[n])];
    if (q.post < when) {
      until = std::max(until, q.first_end);
      lagged = std::max(lagged, q.first_end + q.first_lag);
    }
    if (q.data_ready < when) {
      until = std::max(until, q.data_end);
      lagged = std::max(lagged, q.data_end + q.data_lag);
    }
  }
  if (lag) *lag = lagged - until;
  return until;
}

void LinkState::answer_early(size_t k, int64_t requested_ns, int64_t ready_ns) {
  Job& j = jobs_[k];
  const Link& l = m_.at(j.from, j.to);
  const int64_t out = requested_ns + l.transfer_ns(j.left);  // the request's last byte
  if (out + l.latency_ns > ready_ns) return;  // not there yet: it goes with the data's post
  note_answer(j.conn, requested_ns);
  const size_t back = back_of(j.conn, j.from, j.to);
  int64_t lag = 0;
  const int64_t answer = queued_until(back, acts(j.to, ready_ns, Arrival::kRequest), &lag);
  note_answer(back, answer);
  j.ready = acts(j.from, answer + m_.at(j.to, j.from).latency_ns + lag, Arrival::kAnswer);
  j.left = j.rest;
  j.rest = 0;
  queued_[k] = {requested_ns, j.ready, out, j.ready};
}

}  // namespace xdc::sim
