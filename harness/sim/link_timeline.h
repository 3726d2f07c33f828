#pragma once
// Links that change while a run is simulated (issue 14): the WAN's delay, rate and loss
// (through the TCP path each gives: tcp_model.h) as functions of time, and a down link as an
// infinite delay until it is up, played against the link model (link_model.h) that times each
// message.
//
// A LinkTimeline is a list of snapshots of every ordered rank pair's link, each in force
// from its time until the next (before the first: the model's own links). plan.cpp builds
// them from the topology's `changes:` / `trace:` and the experiment's `events:`.
//
// TimedLinks times a message as LinkState does on the links in force when it is ready,
// as LinkState knows it at the send: a later send that shares the channel does not revise
// it here (no tickets). Over a timeline with no snapshot (links that never change: a run
// predicted for its random loss, plan.h) the links are the model's throughout, and it
// answers with tickets as simulate_iteration's timing does.
// A message whose route is down while it is on the wire (from its first byte leaving to its
// last arriving), or that is sent while it is down, is held up as Linux TCP holds it: what
// was sent before the cut is delivered, the first segment lost at the cut (or at the send,
// when the route was already down) is retransmitted after the retransmission timeout and
// again after each doubling (RFC 6298 backoff) until one goes out with the route up; the
// rest of the message follows from there in slow start (the timeout leaves a window of one
// segment, doubled every round trip: slow_start_ns). The timeout is Linux's srtt +
// max(4 rttvar, rto_min) with rttvar settled: srtt + 200 ms (rto_min; x k on a dilated
// network, which the undilated simulation does not need), srtt being the path's round trip
// plus kAckDelayNs: the RTT samples of pipeline messages (request / response traffic whose
// last segment's ACK is delayed, bursts queued at the bottleneck) run longer than the
// path's. kAckDelayNs = 60 ms is measured, not derived: on experiments/flap.yaml (40 ms
// round trip) a 1 s cut was first crossed 0.98-1.03 s after the lost send (3 x RTO, so
// RTO >= 0.30 s) and a 2 s cut 2.03-2.11 s after it (7 x RTO, RTO <= 0.30 s). A cut whose
// end falls within a few ms of a retransmission can land either side of it: the
// prediction is then off by one backoff step. Later messages of the same pair wait for
// that recovery (one connection, in order).
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "harness/sim/link_model.h"
#include "workloads/schedule/engine.h"

namespace xdc::sim {

inline constexpr int64_t kNeverNs = std::numeric_limits<int64_t>::max() / 4;

struct LinkSnapshot {
  int64_t at_ns = 0;
  std::vector<Link> links;  // [from * ranks + to]
  // [from * ranks + to]: the TCP paths over those links (a loss change's window, a rate
  // or delay change's bottleneck); empty: the model's own.
  std::vector<TcpPath> tcp;
  std::vector<char> down;  // [from * ranks + to]: the route has a down WAN direction
};

class LinkTimeline {
 public:
  explicit LinkTimeline(int ranks = 0) : ranks_(ranks) {}
  int ranks() const { return ranks_; }
  bool empty() const { return snaps_.empty(); }
  // Snapshots in nondecreasing at_ns; one at an equal time replaces the earlier one.
  void add(LinkSnapshot s);
  // The snapshot in force at t; nullptr before the first.
  const LinkSnapshot* at(int64_t t) const;
  bool down(int from, int to, int64_t t) const;
  // The first time >= t at which the pair is down (t itself when down at t); kNeverNs.
  int64_t next_down(int from, int to, int64_t t) const;
  // The first time >= t at which the pair is up; kNeverNs when it stays down.
  int64_t next_up(int from, int to, int64_t t) const;

 private:
  int ranks_;
  std::vector<LinkSnapshot> snaps_;
};

inline constexpr int64_t kAckDelayNs = 60'000'000;
inline constexpr int64_t kMss = 1448;
// Linux's retransmission timeout of a path with this round trip (above).
int64_t tcp_rto_ns(int64_t rtt_ns);
// `bytes` sent from a window of one segment doubling every `rtt_ns`: a round trip per
// doubling until the last window holds the rest, plus the bytes' serialisation at the rate
// (not overlapped with the round trips: an upper bound once a window outlasts one).
int64_t slow_start_ns(int64_t bytes, int64_t rtt_ns, double bandwidth_bps);
// When a segment first lost at `lost_ns`, retransmitted at lost + rto, + 3 rto, + 7 rto,
// ... (doubling), first goes out at or after `up_ns`.
int64_t retransmit_after(int64_t lost_ns, int64_t up_ns, int64_t rto_ns);

class TimedLinks : public sched::MessageTiming {
 public:
  // Times relative to `origin_ns` on the timeline's clock (an iteration's start):
  // LinkState runs in the iteration's own time.
  // `history`: the connections as the previous iteration left them (LinkState).
  // `priority`: a send's grant order on an exclusive channel (IterationSetup::send_priority).
  TimedLinks(const LinkModel& base, const LinkTimeline& timeline, int64_t origin_ns,
             const std::vector<TcpConn>& history = {},
             std::function<int64_t(int rank, const sched::Action& send)> priority = {});
  TimedLinks(const TimedLinks&) = delete;
  TimedLinks& operator=(const TimedLinks&) = delete;
  sched::Transfer send(int from, int to, int64_t bytes, double ready,
                       const sched::Action&) override;
  sched::Transfer current(int64_t ticket) override;
  Transfer send(int from, int to, int64_t bytes, int64_t ready_ns, int64_t priority = -1);
  // A small message of a collective (barrier, gradient norm): latency in force + bytes at
  // the rate, held up by an outage as above; no channel.
  int64_t arrival(int from, int to, int64_t bytes, int64_t ready_ns);
  // The connections after every message sent (LinkState::history, relative times).
  std::vector<TcpConn> history() { return wire_.history(); }

 private:
  // Moves `x` (relative times) past an outage of the pair's route, if any.
  void hold_up(int from, int to, int64_t bytes, Transfer& x);

  LinkModel cur_;  // the base with the links in force (LinkState reads it)
  const LinkTimeline& tl_;
  int64_t origin_;
  LinkState wire_;
  std::function<int64_t(int, const sched::Action&)> priority_;
  std::vector<int64_t> recovered_;  // [pair]: absolute time its last outage's data went out
  std::vector<int64_t> last_arrival_;
};

}  // namespace xdc::sim
