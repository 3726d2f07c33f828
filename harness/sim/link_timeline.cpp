#include "harness/sim/link_timeline.h"

#include <algorithm>
#include <cmath>

#include "workloads/worker/poll.h"

namespace xdc::sim {

void LinkTimeline::add(LinkSnapshot s) {
  if (!snaps_.empty() && snaps_.back().at_ns == s.at_ns) {
    snaps_.back() = std::move(s);
    return;
  }
  snaps_.push_back(std::move(s));
}

const LinkSnapshot* LinkTimeline::at(int64_t t) const {
  auto it = std::upper_bound(snaps_.begin(), snaps_.end(), t,
                             [](int64_t x, const LinkSnapshot& s) { return x < s.at_ns; });
  return it == snaps_.begin() ? nullptr : &*(it - 1);
}

bool LinkTimeline::down(int from, int to, int64_t t) const {
  const LinkSnapshot* s = at(t);
  return s && s->down[static_cast<size_t>(from) * ranks_ + to];
}

int64_t LinkTimeline::next_down(int from, int to, int64_t t) const {
  if (down(from, to, t)) return t;
  const size_t i = static_cast<size_t>(from) * ranks_ + to;
  for (const auto& s : snaps_)
    if (s.at_ns > t && s.down[i]) return s.at_ns;
  return kNeverNs;
}

int64_t LinkTimeline::next_up(int from, int to, int64_t t) const {
  if (!down(from, to, t)) return t;
  const size_t i = static_cast<size_t>(from) * ranks_ + to;
  for (const auto& s : snaps_)
    if (s.at_ns > t && !s.down[i]) return s.at_ns;
  return kNeverNs;
}

TimedLinks::TimedLinks(const LinkModel& base, const LinkTimeline& timeline, int64_t origin_ns,
                       const std::vector<TcpConn>& history,
                       std::function<int64_t(int, const sched::Action&)> priority)
    : own_(timeline.empty() ? LinkModel{} : base.by_rank()),
      cur_(timeline.empty() ? base : own_),
      tl_(timeline),
      origin_(origin_ns),
      wire_(cur_, history),
      priority_(std::move(priority)) {}

void TimedLinks::bind(const sched::Engine* e) {
  if (e == nullptr || poll_ns_ <= 0) {
    wire_.set_acts(nullptr);
    return;
  }
  wire_.set_acts(
      [e, poll = poll_ns_, slack = slack_ns_](int rank, int64_t at, LinkState::Arrival what) {
        // The sender of an answered request has that send pending: its comm thread polls fast.
        if (what == LinkState::Arrival::kAnswer)
          return at + worker::expected_poll_wait_ns(true, 0, at, poll, slack);
        const sched::Engine::Activity a = e->activity(rank, static_cast<double>(at));
        // A message complete while its receiver computes is taken at the receiver's wait.
        if (what == LinkState::Arrival::kLastByte && a.computing) return at;
        // The comm thread's backoff restarts at each submission or completion: the compute's
        // start, or a send of the rank completing during it.
        const double since = std::max(a.since, a.last_send_end);
        return at + worker::expected_poll_wait_ns(!a.computing || a.sending,
                                                  static_cast<int64_t>(since), at, poll, slack);
      });
}

sched::Transfer TimedLinks::send(int from, int to, int64_t bytes, double ready,
                                 const sched::Action& a) {
  return timed(from, to, bytes, static_cast<int64_t>(ready), priority_ ? priority_(from, a) : -1,
               std::numeric_limits<int64_t>::max());
}

sched::Transfer TimedLinks::send_requested(int from, int to, int64_t bytes, double requested,
                                           double ready) {
  return timed(from, to, bytes, static_cast<int64_t>(ready), -1, static_cast<int64_t>(requested));
}

sched::Transfer TimedLinks::timed(int from, int to, int64_t bytes, int64_t ready_ns,
                                  int64_t priority, int64_t requested_ns) {
  if (tl_.empty()) {  // unchanging links: revised by later sends, as LinkState answers
    const Transfer x = wire_.post(from, to, bytes, ready_ns, priority, requested_ns);
    return {static_cast<double>(x.start_ns), static_cast<double>(x.end_ns),
            static_cast<double>(x.arrival_ns), x.ticket};
  }
  const Transfer x = send(from, to, bytes, ready_ns, priority, requested_ns);
  return {static_cast<double>(x.start_ns), static_cast<double>(x.end_ns),
          static_cast<double>(x.arrival_ns)};
}

sched::Transfer TimedLinks::current(int64_t ticket) {
  const Transfer x = wire_.current(ticket);
  return {static_cast<double>(x.start_ns), static_cast<double>(x.end_ns),
          static_cast<double>(x.arrival_ns), x.ticket};
}

Transfer TimedLinks::send(int from, int to, int64_t bytes, int64_t ready_ns, int64_t priority,
                          int64_t requested_ns) {
  if (const LinkSnapshot* s = tl_.at(ready_ns + origin_)) {
    const size_t i = static_cast<size_t>(from) * cur_.ranks + to;
    const size_t back = static_cast<size_t>(to) * cur_.ranks + from;
    own_.links[i] = s->links[i];
    own_.links[back] = s->links[back];
    if (!s->tcp.empty() && !cur_.tcp.empty()) {
      wire_.set_path(from, to, s->tcp[i]);
      wire_.set_path(to, from, s->tcp[back]);
    }
  }
  Transfer x = wire_.send(from, to, bytes, ready_ns, priority, requested_ns);
  hold_up(from, to, bytes, x);
  return x;
}

int64_t TimedLinks::arrival(int from, int to, int64_t bytes, int64_t ready_ns) {
  if (from == to) return ready_ns;
  const LinkSnapshot* s = tl_.at(ready_ns + origin_);
  const Link& l = s ? s->links[static_cast<size_t>(from) * cur_.ranks + to] : cur_.at(from, to);
  Transfer x{ready_ns, ready_ns + l.transfer_ns(bytes),
             ready_ns + l.transfer_ns(bytes) + l.latency_ns};
  hold_up(from, to, bytes, x);
  return x.arrival_ns;
}

void TimedLinks::hold_up(int from, int to, int64_t bytes, Transfer& x) {
  const size_t i = static_cast<size_t>(from) * cur_.ranks + to;
  const int64_t a0 = x.start_ns + origin_;
  const int64_t serial = x.end_ns - x.start_ns;
  const int64_t latency = x.arrival_ns - x.end_ns;
  // A connection still recovering from an outage: this message goes after the recovery.
  int64_t& recovered = recovered_[i];
  if (recovered > a0) {
    const int64_t shift = recovered - a0;
    x.start_ns += shift, x.end_ns += shift, x.arrival_ns += shift;
  }
  const int64_t cut = tl_.next_down(from, to, x.start_ns + origin_);
  if (cut < x.arrival_ns + origin_) {
    const int64_t up = tl_.next_up(from, to, cut);
    const LinkSnapshot* s = tl_.at(cut);
    const size_t back = static_cast<size_t>(to) * cur_.ranks + from;
    const int64_t rtt = s ? s->links[i].latency_ns + s->links[back].latency_ns : 2 * latency;
    const int64_t sent = std::clamp<int64_t>(cut - (x.start_ns + origin_), 0, serial);
    const TcpPath path = s && !s->tcp.empty() ? s->tcp[i]
                         : cur_.tcp.empty()   ? TcpPath{}
                                              : cur_.path(from, to);
    // What the cut first meets is one segment when the message is (or while a put's request
    // with no data awaits its answer, a round trip from the first byte); else many. The
    // probe timer runs from the last transmission or ACK: with many segments out, the ACKs
    // of what crossed before the cut still come back (and clock out more data) until the
    // reverse direction is cut too.
    const int64_t lat_cut = s ? s->links[i].latency_ns : latency;
    const bool tcp = !cur_.tcp.empty() || (s && !s->tcp.empty());  // phases modelled
    const bool one_segment =
        bytes <= kTcpMss || (tcp && put_protocol(path, bytes) && cut < a0 + rtt);
    int64_t last = cut;
    if (!one_segment) {
      const int64_t acked =
          std::min({cut, x.end_ns + origin_, tl_.next_down(to, from, a0) - lat_cut});
      if (acked > a0) last = std::max(cut, acked + rtt);
    }
    const double rate_cut = s ? s->links[i].bandwidth_bps : cur_.at(from, to).bandwidth_bps;
    const int64_t retx = tcp_retransmit_after(path, tcp_message_srtt_ns(rtt, bytes, rate_cut),
                                              one_segment, last, up);
    const LinkSnapshot* after = up < kNeverNs ? tl_.at(up) : nullptr;
    const int64_t lat = after ? after->links[i].latency_ns : latency;
    // What the cut left of the message (its time on the wire can include a rendezvous
    // round trip: the share of time, not time x rate, gives the bytes).
    const int64_t left = serial - sent;
    const double rate = after ? after->links[i].bandwidth_bps : cur_.at(from, to).bandwidth_bps;
    const int64_t left_bytes =
        serial > 0 ? static_cast<int64_t>(static_cast<double>(bytes) * static_cast<double>(left) /
                                          static_cast<double>(serial))
                   : bytes;
    x.end_ns = retx - origin_ + std::max(left, tcp_slow_start_ns(left_bytes, rtt, rate));
    x.arrival_ns = x.end_ns + lat;
    recovered = std::max(recovered, retx);
  }
  int64_t& last = last_arrival_[i];
  x.arrival_ns = std::max(x.arrival_ns, last);
  last = x.arrival_ns;
}

}  // namespace xdc::sim
