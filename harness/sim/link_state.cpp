// LinkState: the timing of messages over a LinkModel's TCP connections (link_model.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "common/mix64.h"
#include "harness/sim/link_model.h"
#include "workloads/worker/stripe_pieces.h"

namespace xdc::sim {

Transfer LinkState::send(int from, int to, int64_t bytes, int64_t ready_ns, int64_t priority,
                         int64_t requested_ns) {
  const Transfer x = post(from, to, bytes, ready_ns, priority, requested_ns);
  return x.ticket < 0 ? x : current(x.ticket);
}

Transfer LinkState::post(int from, int to, int64_t bytes, int64_t ready_ns, int64_t priority,
                         int64_t requested_ns) {
  const Link& l = m_.at(from, to);
  const int copies = m_.copies_of(from, to);
  bytes *= copies;
  if (m_.tcp.empty()) {
    int64_t& free = channel_free_[m_.channel_of(from, to)];
    Transfer t;
    t.start_ns = std::max(ready_ns, free);
    t.end_ns = t.start_ns + l.transfer_ns(bytes);
    free = t.end_ns;
    t.arrival_ns = t.end_ns + l.latency_ns;
    return t;
  }
  if (bytes <= 0) return {ready_ns, ready_ns, ready_ns + l.latency_ns};
  const int c = m_.channel_of(from, to);
  // What happened before this send cannot change, in either direction (commit_both).
  commit_both(c, m_.channel_of(to, from), ready_ns,
              std::min(l.latency_ns, m_.at(to, from).latency_ns));
  const size_t pair = connection(from, to);
  const auto msg = static_cast<int64_t>(msgs_.size());
  const size_t first = jobs_.size();
  const int lanes = lanes_[pair];
  if (stripes_[pair] > 1) {  // the worker's pieces, pulled by each lane's stripes (pull_pieces)
    const int64_t one = bytes / copies, per_lane = copies / lanes;
    for (int q = 0; q < lanes; ++q) {
      const size_t group = q == 0 ? pair : lane1_[pair] + static_cast<size_t>(q - 1);
      for (int64_t at = 0; at < one; at += worker::kStripePieceBytes) {
        const int64_t piece = std::min(worker::kStripePieceBytes, one - at);
        const size_t k =
            add_job(stripe0_[group], from, to, c, (piece + worker::kStripeHeaderBytes) * per_lane,
                    ready_ns, priority, msg);
        jobs_[k].pull = true;
      }
    }
  } else {  // OpenMPI's connection, or each lane's with its share of the copies
    add_job(pair, from, to, c, bytes / lanes, ready_ns, priority, msg, requested_ns);
    for (int q = 1; q < lanes; ++q)
      add_job(lane1_[pair] + static_cast<size_t>(q - 1), from, to, c, bytes / lanes, ready_ns,
              priority, msg, requested_ns);
  }
  msgs_.emplace_back(first, jobs_.size() - first);
  // The other direction's rendezvous answers queue behind this message's data (queued_until).
  Channel& back = channels_[m_.channel_of(to, from)];
  ++back.version;
  back.settled = -1;
  return {ready_ns, ready_ns, ready_ns + l.transfer_ns(bytes) + l.latency_ns, msg};
}

size_t LinkState::add_job(size_t conn, int from, int to, int channel, int64_t bytes,
                          int64_t ready_ns, int64_t priority, int64_t msg, int64_t requested_ns) {
  const TcpPath& p = tcp(conn);
  const int copies = std::max(p.connections, 1);
  // Rendezvous: the first fragment goes with the request; the receiver answers when it has
  // arrived (its receive is posted), and the rest goes when the answer is back.
  const int64_t one = std::max<int64_t>(p.eager_limit - kEagerHeaderBytes, 1);
  const int64_t eager =  // a request with its first fragment per copy
      one > std::numeric_limits<int64_t>::max() / copies ? one : one * copies;
  Job j;
  j.from = from;
  j.to = to;
  j.channel = channel;
  j.conn = conn;
  j.msg = msg;
  j.put = put_protocol(p, bytes / copies);
  j.left = j.put ? kPutRequestBytes * copies : std::min(bytes, eager);
  j.rest = j.put ? bytes : bytes - j.left;
  j.ready = ready_ns;
  j.priority = priority < 0 ? ready_ns : priority;
  j.bytes = bytes;
  const size_t k = jobs_.size();
  jobs_.push_back(j);
  Channel& ch = channels_[channel];
  ch.jobs.push_back(static_cast<int64_t>(k));
  ++ch.version;
  note_ports(channel, from, to, p);
  tickets_[conn].push_back(static_cast<int64_t>(k));
  // On an exclusive channel the worker issues the message only at the arbiter's grant: until
  // then nothing of it is queued (run_channel sets these at the grant).
  const bool held = m_.exclusive_channel(channel);
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  queued_.push_back(
      {held ? kNever : ready_ns, j.rest > 0 || held ? kNever : ready_ns, ready_ns, ready_ns});
  if (!held && requested_ns < ready_ns && j.rest > 0) answer_early(k, requested_ns, ready_ns);
  const Link& l = m_.at(from, to);
  result_.push_back({ready_ns, ready_ns, ready_ns + l.transfer_ns(bytes) + l.latency_ns,
                     static_cast<int64_t>(k)});
  known_.push_back(ch.version - 1);  // not known yet: a lower bound
  return k;
}

void LinkState::adopt(const std::vector<std::pair<size_t, TcpConn>>& conns,
                      const std::vector<size_t>& applied) {
  for (size_t c = 0; c < conns.size(); ++c) {
    const size_t i = conns[c].first;
    conn_[i] = conns[c].second;
    pending_[i].erase(pending_[i].begin(),
                      pending_[i].begin() + static_cast<std::ptrdiff_t>(applied[c]));
  }
}

int64_t LinkState::round_trip(size_t i) const {
  const auto [a, b] = m_.pair_of(pair_of_[i]);
  return m_.at(a, b).latency_ns + m_.at(b, a).latency_ns;
}

void LinkState::take_answers(size_t i, TcpConn& c, int64_t now, size_t* applied) const {
  const auto& q = pending_[i];
  for (; *applied < q.size() && q[*applied] <= now; ++*applied)
    tcp_note_send(c, tcp(i), round_trip(i), q[*applied]);
}

Transfer LinkState::current(int64_t ticket) {
  const auto [first, count] = msgs_.at(static_cast<size_t>(ticket));
  Transfer x{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
             std::numeric_limits<int64_t>::min(), ticket};
  for (size_t k = first; k < first + count; ++k) {  // a striped message: its pieces
    Channel& ch = channels_[jobs_[k].channel];
    if (known_[k] >= 0 && known_[k] != ch.version)
      run_channel(ch, std::numeric_limits<int64_t>::max(), false, static_cast<int64_t>(k));
    x.start_ns = std::min(x.start_ns, result_[k].start_ns);
    x.end_ns = std::max(x.end_ns, result_[k].end_ns);
    x.arrival_ns = std::max(x.arrival_ns, result_[k].arrival_ns);
  }
  return x;
}

namespace {
constexpr int64_t kNone = std::numeric_limits<int64_t>::max();  // no time yet

// Whether `b`, a connection's state before a round, is `a`, its state before the previous
// round, moved `step` later: the times the rounds set (the last send, the full window's
// stamp, the bottleneck's round when it is read) moved by `step`, all else equal. CUBIC's
// epoch may stay: with the window unchanged by a round that grew it, the window's cap
// decided (kCwndOverWindow), and it decides again.
bool moved_by(const TcpConn& a, const TcpConn& b, int64_t step, bool bottleneck) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::min();
  if (a.last_send_ns == kNever || b.last_send_ns != a.last_send_ns + step ||
      b.stamp_ns != a.stamp_ns + step)
    return false;
  if (a.round_ns == kNever
          ? b.round_ns != kNever
          : b.round_ns != a.round_ns + step && (bottleneck || b.round_ns != a.round_ns))
    return false;
  TcpConn x = a;
  x.last_send_ns = b.last_send_ns;
  x.stamp_ns = b.stamp_ns;
  x.round_ns = b.round_ns;
  return x == b;
}
}  // namespace

int64_t LinkState::lone_rounds(Job& j, std::pair<size_t, TcpConn>& conn, size_t* applied, int64_t t,
                               int64_t until) {
  if (j.done || j.pull || j.fin() || j.ready > t) return t;
  const size_t i = conn.first;
  TcpConn& c = conn.second;
  const TcpPath& p = tcp(i);
  const int64_t rtt = round_trip(i);
  const Link& link = m_.at(j.from, j.to);
  const int64_t room = p.window_bytes * std::max(p.connections, 1);
  const bool bottleneck = p.queue_bytes > 0 && p.loss_based;
  TcpConn last{};  // the state before the previous round, which sent last_given bytes
  int64_t last_t = -1, last_given = -1;
  while (t < until) {
    if (j.fin_queues(j.left, room)) j.fin_ready = t;
    // The previous round left the connection as it found it, moved by the round's length:
    // every round up to the phase's last, an answer's arrival or `until` does the same.
    // A round of no length (no latency, no rate limit: two ranks of one host) stays at t,
    // which neither `until` nor a later answer is reached from.
    if (last_given > 0 && t >= last_t && moved_by(last, c, t - last_t, bottleneck)) {
      const int64_t step = t - last_t;
      int64_t k = (j.left - 1) / last_given;        // each leaves bytes to send
      if (j.put && j.rest == 0 && j.fin_ready < 0)  // and does not yet queue the FIN
        k = std::min(k, (j.left - room - 1) / last_given + 1);
      if (until > t && step > 0) k = std::min(k, (until - t - 1) / step + 1);
      const auto& q = pending_[i];
      if (*applied < q.size() && q[*applied] <= t) k = 0;
      if (*applied < q.size() && q[*applied] > t && step > 0)
        k = std::min(k, (q[*applied] - t - 1) / step + 1);
      if (k > 1 && step > 0)  // rounds before the next LAN round at its ports
        if (const int64_t e = next_port_event(i, t, t + k * step); e != kNone)
          k = std::min(k, (e - t) / step);
      if (k > 1) {
        --k;  // the last of them runs below, as a check that it does repeat
        if (p.port_bottleneck && !run_rounds_.empty()) {  // the same round k times more
          PortRound r = run_rounds_.back();
          for (int64_t n = 1; n <= k; ++n) {
            r.start += step;
            r.end += step;
            r.dropped = 0;
            run_rounds_.push_back(r);
          }
        }
        t += k * step;
        j.left -= k * last_given;
        c.last_send_ns += k * step;
        c.stamp_ns += k * step;
        if (c.round_ns != last.round_ns) c.round_ns += k * step;
        last_given = -1;
        continue;
      }
    }
    const TcpConn before = c;
    const size_t taken = *applied;
    take_answers(i, c, t, applied);
    int64_t overflow = 0;
    int64_t given = tcp_round(c, p, rtt, t, j.left, &overflow);
    given -= port_losses(i, c, t, given, given / std::max(p.connections, 1));
    if (given >= j.left) {  // the phase ends in this round: run_channel's own round does it
      c = before;
      *applied = taken;
      return t;
    }
    note_lan_round(i, p, t, given, link.transfer_ns(given), overflow, c, rtt);
    if (given > 0 && j.start < 0) j.start = t;
    j.left -= given;
    const int64_t wire = link.transfer_ns(given);
    if (given > 0) c.last_send_ns = std::max(c.last_send_ns, t + wire);
    last = before;
    last_t = t;
    last_given = *applied == taken ? given : -1;  // a round that took an answer is no model
    t += std::max(rtt, wire);
  }
  return t;
}

void LinkState::run_channel(Channel& ch, int64_t until, bool commit, int64_t target) {
  if (ch.jobs.empty()) return;
  const int id = jobs_[static_cast<size_t>(ch.jobs[0])].channel;
  if (commit && ch.settled == ch.version && take_end(ch, id, until)) return;
  if (!ch.crosses.empty()) refresh_ports(ch);
  run_rounds_.clear();
  load_channel(ch);
  Run r{ch, id, commit, m_.exclusive_channel(id), target, ch.free_at, {}, false};
  const size_t n = ch.jobs.size();
  int64_t t = ch.t;
  while (!r.target_done) {
    if (n == 1 && !r.exclusive)
      t = lone_rounds(jobs_scratch_[0], conns_[conn_of_[0]], &applied_[conn_of_[0]], t, until);
    int64_t next = ready_at(t, r.exclusive);
    if (r.exclusive && !grant(r, t, until, next)) break;
    if (ready_.empty()) {
      if (next == kNone || next >= until) break;
      t = next;
      continue;
    }
    if (t >= until) break;
    t = run_round(r, t);
  }
  if (commit) {
    commit_run(r, t);
  } else {
    keep_end(r, t);
  }
  if (ch.fills_ports) keep_lan_rounds(ch, id, commit);
}

void LinkState::commit_both(int c, int back, int64_t until, int64_t step) {
  Channel& own = channels_[c];
  Channel& other = channels_[back];
  if (c != back && step > 0) {
    // A channel that ran no round up to t (its messages wait for a grant or are not ready
    // yet) changes nothing before its next message is ready, and its rounds before the
    // other's `t` meet no answer of the other's: the steps go on from the earlier of the
    // two frontiers, not a step at a time through time in which nothing happens.
    auto frontier = [this](const Channel& ch, int64_t was, int64_t t) {
      if (ch.t > was) return ch.t;
      int64_t next = kNone;
      for (const int64_t k : ch.jobs) {
        const Job& j = jobs_[static_cast<size_t>(k)];
        if (!j.done && j.ready > t) next = std::min(next, j.ready);
      }
      return std::max(next, ch.t);
    };
    int64_t skip = 0;
    for (int64_t t = std::min(own.t, other.t);
         t < until && !own.jobs.empty() && !other.jobs.empty();) {
      t = std::min(until, std::max({t + step, std::min(own.t, other.t), skip}));
      const int64_t own_was = own.t, other_was = other.t;
      if (t > other.t) run_channel(other, t, true);
      if (t > own.t) run_channel(own, t, true);
      skip = std::min(frontier(own, own_was, t), frontier(other, other_was, t));
    }
  }
  run_channel(other, until, true);
  run_channel(own, until, true);
}

bool LinkState::take_end(Channel& ch, int id, int64_t until) {
  const End& e = ends_[id];
  if (until < e.t) return false;
  if (ch.fills_ports) {  // the run that reached the end met these
    LanRounds& o = lan_rounds_[id];
    o.final.insert(o.final.end(), o.ahead.begin(), o.ahead.end());
    o.ahead.clear();
  }
  adopt(e.conns, e.applied);
  for (const auto& [pair, next] : e.next_stripe) next_stripe_[pair] = next;
  for (const auto& [back, when] : e.answers) note_answer(back, when);
  for (int64_t k : ch.jobs) {
    jobs_[static_cast<size_t>(k)].done = true;
    known_[static_cast<size_t>(k)] = -1;
  }
  ch.jobs.clear();
  ch.t = e.t;
  ch.free_at = e.free_at;
  return true;
}

void LinkState::load_channel(const Channel& ch) {
  const size_t n = ch.jobs.size();
  std::vector<Job>& jobs = jobs_scratch_;
  jobs.resize(n);
  conn_of_.resize(n);
  conns_.clear();
  rotation_.clear();
  for (size_t a = 0; a < n; ++a) {
    jobs[a] = jobs_[static_cast<size_t>(ch.jobs[a])];
    if (jobs[a].pull) {
      load_stripes(a);
      continue;
    }
    const size_t i = jobs[a].conn;
    size_t c = 0;
    while (c < conns_.size() && conns_[c].first != i) ++c;
    if (c == conns_.size()) conns_.push_back({i, conn_[i]});
    conn_of_[a] = c;
  }
  applied_.assign(conns_.size(), 0);
  sent_.assign(n, 0);
  done_t_.assign(n, std::numeric_limits<int64_t>::min());  // its last phase done in this call
  done_ready_.assign(n, kNone);                            // that phase's place in the queue
  done_lag_.assign(n, 0);                                  // and its jitter lag
  given_.assign(conns_.size(), 0);
}

int64_t LinkState::ready_at(int64_t t, bool exclusive) {
  pull_pieces(t, exclusive);
  const std::vector<Job>& jobs = jobs_scratch_;
  ready_.clear();
  int64_t next = kNone;
  for (size_t a = 0; a < jobs.size(); ++a) {
    if (jobs[a].done || jobs[a].fin()) continue;  // a FIN waits on the data ahead of it
    // A piece not taken yet goes once a stripe takes it (the holder's: once granted).
    if (jobs[a].pull && (!exclusive || jobs[a].granted)) {
      if (jobs[a].ready > t) next = std::min(next, jobs[a].ready);
      continue;
    }
    if (jobs[a].ready <= t) {
      ready_.push_back(a);
    } else {
      next = std::min(next, jobs[a].ready);
    }
  }
  return next;
}

bool LinkState::grant(Run& r, int64_t t, int64_t until, int64_t& next) {
  std::vector<Job>& jobs = jobs_scratch_;
  const size_t n = jobs.size();
  size_t holder = n;
  for (size_t a = 0; a < n && holder == n; ++a)
    if (jobs[a].granted && !jobs[a].done) holder = a;
  if (holder == n && !ready_.empty() && t < r.free_at) {  // wait for the release
    next = std::min(next, r.free_at);
    ready_.clear();
  }
  if (holder == n && !ready_.empty() && t >= until) return false;  // decided with later posts
  if (holder == n && !ready_.empty()) {
    holder = ready_[0];
    for (size_t a : ready_)
      if (jobs[a].priority < jobs[holder].priority) holder = a;  // ties: posted first
    for (size_t a = 0; a < n; ++a) {  // a striped message's pieces hold it together
      if (jobs[a].msg != jobs[holder].msg) continue;
      jobs[a].granted = true;
      const auto k = static_cast<size_t>(r.ch.jobs[a]);  // issued now (post())
      queued_[k].post = t;
      if (jobs[a].rest == 0) queued_[k].data_ready = t;
    }
  }
  ready_.clear();
  if (holder == n) return true;
  pull_pieces(t, true);
  for (size_t a = 0; a < n; ++a)
    if (jobs[a].msg == jobs[holder].msg && !jobs[a].done && !jobs[a].pull && jobs[a].ready <= t)
      ready_.push_back(a);
  if (ready_.empty()) next = jobs[holder].ready;  // its rendezvous answer
  return true;
}

int64_t LinkState::run_round(Run& r, int64_t t) {
  queue_ready(t);
  const Round s = send_round(t);
  const bool phases_left = end_phases(r, t, s);
  const bool fins_wait = send_fins(r);
  const int64_t wire = s.link ? s.link->transfer_ns(s.total) : 0;
  const int64_t end = t + wire;
  for (size_t c = 0; c < conns_.size(); ++c)
    if (given_[c] > 0) {
      conns_[c].second.last_send_ns = std::max(conns_[c].second.last_send_ns, end);
      given_[c] = 0;
    }
  return phases_left || fins_wait ? t + std::max(s.rtt, wire) : end;
}

void LinkState::queue_ready(int64_t t) {
  std::vector<Job>& jobs = jobs_scratch_;
  offered_.assign(conns_.size(), 0);
  for (size_t a : ready_) offered_[conn_of_[a]] += jobs[a].left;
  order_ = ready_;
  if (order_.size() > 1)
    std::sort(order_.begin(), order_.end(), [&](size_t x, size_t y) {
      if (conn_of_[x] != conn_of_[y]) return conn_of_[x] < conn_of_[y];
      return jobs[x].ready != jobs[y].ready ? jobs[x].ready < jobs[y].ready : x < y;
    });
  // A put's last byte is in the socket once what is queued up to it fits the socket
  // buffer: its FIN is queued then, behind whatever is queued by that time.
  int64_t queued = 0;  // on the current connection, up to and including phase a
  for (size_t k = 0; k < order_.size(); ++k) {
    const size_t a = order_[k];
    const size_t c = conn_of_[a];
    queued = (k > 0 && conn_of_[order_[k - 1]] == c ? queued : 0) + jobs[a].left;
    const TcpPath& p = tcp(conns_[c].first);
    const int64_t room = p.window_bytes * std::max(p.connections, 1);
    if (jobs[a].fin_queues(queued, room)) jobs[a].fin_ready = t;
  }
}

LinkState::Round LinkState::send_round(int64_t t) {
  const std::vector<Job>& jobs = jobs_scratch_;
  Round s;
  // The connections sending in this round share the channel's bottleneck queue: each
  // overflows at its share (by connections) of the bandwidth-delay product and the queue.
  int weight = 0;
  for (size_t k = 0; k < order_.size(); ++k)
    if (k == 0 || conn_of_[order_[k]] != conn_of_[order_[k - 1]])
      weight += std::max(tcp(conns_[conn_of_[order_[k]]].first).connections, 1);
  for (size_t k = 0; k < order_.size();) {
    const size_t c = conn_of_[order_[k]];
    size_t e = k;
    while (e < order_.size() && conn_of_[order_[e]] == c) ++e;
    const auto [from, to] = m_.pair_of(pair_of_[conns_[c].first]);
    const int64_t r = round_trip(conns_[c].first);
    s.rtt = std::max(s.rtt, r);
    s.link = &m_.at(from, to);
    take_answers(conns_[c].first, conns_[c].second, t, &applied_[c]);
    const TcpPath& own = tcp(conns_[c].first);
    int64_t overflow = 0;
    if (const int n = std::max(own.connections, 1); n < weight && own.queue_bytes > 0)
      given_[c] =
          tcp_round(conns_[c].second, tcp_share(own, n, weight), r, t, offered_[c], &overflow);
    else
      given_[c] = tcp_round(conns_[c].second, own, r, t, offered_[c], &overflow);
    note_lan_round(conns_[c].first, own, t, given_[c], s.link->transfer_ns(given_[c]), overflow,
                   conns_[c].second, r);
    k = e;
  }
  burst_.clear();
  if (!backlogs_.empty())  // what each host's connections send in the round (one copy's)
    for (size_t c = 0; c < conns_.size(); ++c)
      if (given_[c] > 0)
        burst_[host_of(conns_[c].first)] +=
            given_[c] / std::max(tcp(conns_[c].first).connections, 1);
  for (size_t k = 0; k < order_.size();) {
    const size_t c = conn_of_[order_[k]];
    size_t e = k;
    while (e < order_.size() && conn_of_[order_[e]] == c) ++e;
    int64_t burst = 0;
    if (!burst_.empty())
      if (const auto b = burst_.find(host_of(conns_[c].first)); b != burst_.end())
        burst = b->second;
    given_[c] -= port_losses(conns_[c].first, conns_[c].second, t, given_[c], burst);
    s.total += given_[c];
    int64_t budget = given_[c];
    for (size_t q = k; q < e; ++q) {
      sent_[order_[q]] = std::min(jobs[order_[q]].left, budget);
      budget -= sent_[order_[q]];
    }
    k = e;
  }
  return s;
}

bool LinkState::end_phases(Run& r, int64_t t, const Round& s) {
  std::vector<Job>& jobs = jobs_scratch_;
  // The connections share the link round robin: a phase's last byte leaves once every
  // connection has sent as many bytes of this round as its own connection up to it (or
  // all of its own).
  bool more = false;
  int64_t cum = 0;  // bytes of this connection's round up to the current phase
  for (size_t q = 0; q < order_.size(); ++q) {
    const size_t a = order_[q];
    Job& j = jobs[a];
    if (q > 0 && conn_of_[order_[q - 1]] != conn_of_[a]) cum = 0;
    cum += sent_[a];
    if (sent_[a] > 0 && j.start < 0) j.start = t;
    j.left -= sent_[a];
    if (j.left > 0) {
      more = true;
      continue;
    }
    int64_t upto = 0;
    for (size_t c = 0; c < conns_.size(); ++c) upto += std::min(cum, given_[c]);
    const int64_t finish = t + (s.link ? s.link->transfer_ns(upto) : 0);
    // The round's packets up to this phase's last one cross the delay lines together.
    // A band replica draws it (TcpConn::jitter_draws), one draw a phase.
    const TcpPath& path = tcp(j.conn);
    TcpConn& conn = conns_[conn_of_[a]].second;
    const uint64_t draw = path.jitter_hops.empty() || conn.jitter_draws == 0
                              ? 0
                              : mix64(conn.jitter_draws += kGoldenGamma) | 1;
    const int64_t lag =
        path.jitter_hops.empty()
            ? 0
            : tcp_jitter_lag_ns(path, upto, tcp_tso_segments(conn, path, round_trip(j.conn)),
                                s.link ? s.link->bandwidth_bps : 0, draw);
    const auto k = static_cast<size_t>(r.ch.jobs[a]);
    done_t_[a] = finish;
    done_ready_[a] = j.ready;
    done_lag_[a] = lag;
    if (j.rest > 0) {
      queued_[k].first_end = finish;
      queued_[k].first_lag = lag;
    } else {
      queued_[k].data_end = finish;
      queued_[k].data_lag = lag;
    }
    if (j.fin()) {  // the receiver completes at its FIN
      if (j.fin_ready < 0) j.fin_ready = t;
      continue;
    }
    const Link& l = m_.at(j.from, j.to);
    if (j.rest > 0) {  // the request is there: the receiver answers, the rest follows
      const size_t back = back_of(j.conn, j.from, j.to);
      int64_t answer_lag = 0;
      const int64_t answer = queued_until(
          back, acts(j.to, finish + l.latency_ns + lag, Arrival::kRequest), &answer_lag);
      r.answers.push_back({back, answer});
      j.ready =
          acts(j.from, answer + m_.at(j.to, j.from).latency_ns + answer_lag, Arrival::kAnswer);
      queued_[k].data_ready = j.ready;
      j.left = j.rest;
      j.rest = 0;
    } else {
      complete(r, a, finish, lag);
    }
  }
  return more;
}

bool LinkState::send_fins(Run& r) {
  const std::vector<Job>& jobs = jobs_scratch_;
  const size_t n = jobs.size();
  bool more = false;
  for (size_t a = 0; a < n; ++a) {
    if (!jobs[a].fin() || jobs[a].done) continue;
    bool blocked = false;
    // The FIN follows the last data queued ahead of it, as late as that for jitter.
    const Queued& own = queued_[static_cast<size_t>(r.ch.jobs[a])];
    int64_t finish = std::max(done_t_[a], own.data_end);
    int64_t lag = done_t_[a] >= own.data_end ? done_lag_[a] : own.data_lag;
    for (size_t b = 0; b < n && !blocked; ++b) {
      // On an exclusive channel a message not granted yet is not issued (the worker holds
      // it until the arbiter's grant): nothing of it is queued.
      if (b == a || conn_of_[b] != conn_of_[a] || (r.exclusive && !jobs[b].granted)) continue;
      if (!jobs[b].done && !jobs[b].fin() && jobs[b].ready <= jobs[a].fin_ready)
        blocked = true;  // queued ahead of the FIN, bytes still to send
      else if (done_ready_[b] <= jobs[a].fin_ready && done_t_[b] > finish) {
        finish = done_t_[b];
        lag = done_lag_[b];
      }
    }
    if (blocked) {
      more = true;
    } else {
      complete(r, a, finish, lag);
    }
  }
  return more;
}

void LinkState::complete(Run& r, size_t a, int64_t finish, int64_t lag) {
  Job& j = jobs_scratch_[a];
  j.done = true;
  const Link& l = m_.at(j.from, j.to);
  if (r.exclusive && j.granted) {  // the receiver's release arrives back then
    const int64_t rtt = l.latency_ns + m_.at(j.to, j.from).latency_ns;
    const TcpPath& p = tcp(j.conn);
    // Early: the byte a round trip of bytes before the end arrives (at the link's
    // rate, as the holder leaves it) a one-way delay before `finish`, or the first
    // piece when the whole message is shorter; the release takes one back. A striped
    // message's last piece releases it.
    r.free_at =
        std::max(r.free_at, p.early_release ? std::max(j.start + rtt, finish) : finish + rtt);
  }
  const auto k = static_cast<size_t>(r.ch.jobs[a]);
  result_[k] = {j.start, finish, acts(j.to, finish + l.latency_ns + lag, Arrival::kLastByte),
                r.ch.jobs[a]};
  known_[k] = r.commit ? -1 : r.ch.version;
  if (r.ch.jobs[a] == r.target) r.target_done = true;
}

void LinkState::keep_end(Run& r, int64_t t) {
  const std::vector<Job>& jobs = jobs_scratch_;
  if (!std::all_of(jobs.begin(), jobs.end(), [](const Job& j) { return j.done; })) return;
  End& e = ends_[r.id];
  e.t = t;
  e.free_at = r.free_at;
  e.conns = conns_;
  e.applied = applied_;
  e.answers = std::move(r.answers);
  keep_rotations(&e.next_stripe);
  r.ch.settled = r.ch.version;
}

void LinkState::commit_run(Run& r, int64_t t) {
  Channel& ch = r.ch;
  const std::vector<Job>& jobs = jobs_scratch_;
  ch.t = t;
  ch.free_at = r.free_at;
  ch.settled = -1;  // a kept end counted the pending answers these rounds now take
  adopt(conns_, applied_);
  keep_rotations(nullptr);
  for (const auto& [back, when] : r.answers) note_answer(back, when);
  size_t w = 0;
  for (size_t a = 0; a < jobs.size(); ++a) {
    jobs_[static_cast<size_t>(ch.jobs[a])] = jobs[a];
    if (!jobs[a].done) ch.jobs[w++] = ch.jobs[a];
  }
  ch.jobs.resize(w);
}

}  // namespace xdc::sim
