#include "harness/sim/link_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
  if (!m.tcp.empty()) channels_.resize(m.channels());
}

Transfer LinkState::send(int from, int to, int64_t bytes, int64_t ready_ns) {
  const Link& l = m_.at(from, to);
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
  Channel& ch = channels_[m_.channel_of(from, to)];
  run_channel(ch, ready_ns, true);  // what happened before this send cannot change
  const TcpPath& p = m_.tcp[static_cast<size_t>(from) * m_.ranks + to];
  // Rendezvous: the first fragment goes with the request; the receiver answers when it has
  // arrived (its receive is posted), and the rest goes when the answer is back.
  const int64_t eager = std::max<int64_t>(p.eager_limit - kEagerHeaderBytes, 1);
  Job j;
  j.from = from;
  j.to = to;
  j.left = std::min(bytes, eager);
  j.rest = bytes - j.left;
  j.ready = ready_ns;
  const auto ticket = static_cast<int64_t>(jobs_.size());
  jobs_.push_back(j);
  result_.push_back({});
  ch.jobs.push_back(ticket);
  run_channel(ch, std::numeric_limits<int64_t>::max(), false);
  return result_[static_cast<size_t>(ticket)];
}

void LinkState::run_channel(Channel& ch, int64_t until, bool commit) {
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  const size_t n = ch.jobs.size();
  if (n == 0) return;
  std::vector<Job> jobs(n);
  std::vector<size_t> conn_of(n);                 // index into conns
  std::vector<std::pair<size_t, TcpConn>> conns;  // (from * ranks + to, state)
  for (size_t a = 0; a < n; ++a) {
    jobs[a] = jobs_[static_cast<size_t>(ch.jobs[a])];
    const size_t i = static_cast<size_t>(jobs[a].from) * m_.ranks + jobs[a].to;
    size_t c = 0;
    while (c < conns.size() && conns[c].first != i) ++c;
    if (c == conns.size()) conns.push_back({i, conn_[i]});
    conn_of[a] = c;
  }
  std::vector<std::pair<size_t, int64_t>> answers;  // (back connection, when it answered)
  std::vector<int64_t> sent(n), offered(conns.size()), given(conns.size());
  std::vector<size_t> ready;
  int64_t t = ch.t;
  for (;;) {
    ready.clear();
    int64_t next = kNone;
    for (size_t a = 0; a < n; ++a) {
      if (jobs[a].done) continue;
      if (jobs[a].ready <= t) {
        ready.push_back(a);
      } else {
        next = std::min(next, jobs[a].ready);
      }
    }
    if (ready.empty()) {
      if (next == kNone || next >= until) break;
      t = next;
      continue;
    }
    if (t >= until) break;
    // Each connection sends what its window allows, split evenly among its messages.
    std::fill(offered.begin(), offered.end(), 0);
    std::fill(sent.begin(), sent.end(), 0);
    for (size_t a : ready) offered[conn_of[a]] += jobs[a].left;
    int64_t rtt = 0, total = 0;
    double bandwidth = 0;
    for (size_t c = 0; c < conns.size(); ++c) {
      given[c] = 0;
      if (offered[c] == 0) continue;
      const auto from = static_cast<int>(conns[c].first / m_.ranks);
      const auto to = static_cast<int>(conns[c].first % m_.ranks);
      const int64_t r = m_.at(from, to).latency_ns + m_.at(to, from).latency_ns;
      rtt = std::max(rtt, r);
      bandwidth = m_.at(from, to).bandwidth_bps;
      given[c] = tcp_round(conns[c].second, m_.tcp[conns[c].first], r, t, offered[c]);
      total += given[c];
      // Water-filling: messages with less left than an even share take what they have.
      std::vector<size_t> mine;
      for (size_t a : ready)
        if (conn_of[a] == c) mine.push_back(a);
      std::sort(mine.begin(), mine.end(),
                [&](size_t x, size_t y) { return jobs[x].left < jobs[y].left; });
      int64_t budget = given[c];
      for (size_t k = 0; k < mine.size(); ++k) {
        const auto share = budget / static_cast<int64_t>(mine.size() - k);
        sent[mine[k]] = std::min(jobs[mine[k]].left, std::max<int64_t>(share, 1));
        budget -= sent[mine[k]];
      }
    }
    auto serialise = [&](int64_t b) -> int64_t {
      return bandwidth <= 0 ? 0 : std::llround(static_cast<double>(b) * 8e9 / bandwidth);
    };
    bool more = false;
    for (size_t a : ready) {
      Job& j = jobs[a];
      if (sent[a] == 0) continue;
      if (j.start < 0) j.start = t;
      j.left -= sent[a];
      if (j.left > 0) {
        more = true;
        continue;
      }
      int64_t upto = 0;  // round robin: every message's bytes up to this one's
      for (size_t b : ready) upto += std::min(sent[b], sent[a]);
      const int64_t finish = t + serialise(upto);
      const Link& l = m_.at(j.from, j.to);
      if (j.rest > 0) {  // the request is there: the receiver answers, the rest follows
        const int64_t answer = finish + l.latency_ns;
        answers.push_back({static_cast<size_t>(j.to) * m_.ranks + j.from, answer});
        j.ready = answer + m_.at(j.to, j.from).latency_ns;
        j.left = j.rest;
        j.rest = 0;
      } else {
        j.done = true;
        const int64_t ticket = ch.jobs[a];
        result_[static_cast<size_t>(ticket)] = {j.start, finish, finish + l.latency_ns, ticket};
      }
    }
    const int64_t end = t + serialise(total);
    for (size_t c = 0; c < conns.size(); ++c)
      if (given[c] > 0) conns[c].second.last_send_ns = std::max(conns[c].second.last_send_ns, end);
    t = more ? t + std::max(rtt, serialise(total)) : end;
  }
  if (!commit) return;
  ch.t = t;
  for (auto& [i, c] : conns) conn_[i] = c;
  for (const auto& [back, when] : answers) {
    const Link& l = m_.at(static_cast<int>(back / m_.ranks), static_cast<int>(back % m_.ranks));
    const Link& r = m_.at(static_cast<int>(back % m_.ranks), static_cast<int>(back / m_.ranks));
    tcp_note_send(conn_[back], m_.tcp[back], l.latency_ns + r.latency_ns, when);
  }
  std::vector<int64_t> still;
  for (size_t a = 0; a < n; ++a) {
    jobs_[static_cast<size_t>(ch.jobs[a])] = jobs[a];
    if (!jobs[a].done) still.push_back(ch.jobs[a]);
  }
  ch.jobs.swap(still);
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
