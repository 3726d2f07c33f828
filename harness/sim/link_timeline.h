#pragma once
// Links that change while a run is simulated: the WAN's delay, rate and loss (through the
// TCP path each gives: tcp_model.h) as functions of time, and a down link as an infinite
// delay until it is up, played against the link model (link_model.h) that times each
// message.
//
// A LinkTimeline is a list of snapshots of every ordered rank pair's link, each in force
// from its time until the next (before the first: the model's own links). plan.cpp builds
// them from the topology's `changes:` / `trace:` and the experiment's `events:`.
//
// TimedLinks times a message as LinkState does on the links in force when it is ready,
// as LinkState knows it at the send: a later send that shares the channel does not revise
// it here (no tickets). Over a timeline with no snapshot the links are the model's
// throughout, and it answers with tickets as LinkState does.
// A message whose route is down while it is on the wire (from its first byte leaving to its
// last arriving), or that is sent while it is down, is held up as Linux TCP holds it: what
// was sent before the cut is delivered; the first segment lost at the cut (or at the send)
// goes again as Linux sends it, a tail loss probe and then the retransmission timeout
// doubling, until one goes out with the route up (tcp_retransmit_after, from the srtt the
// pair's messages give, tcp_message_srtt_ns); the rest of the message follows in slow start
// from one segment (tcp_slow_start_ns). Later messages of the same pair wait for that
// recovery (one connection, in order).
#include <cstdint>
#include <functional>
#include <limits>
#include <unordered_map>
#include <vector>

#include "harness/sim/link_model.h"
#include "workloads/schedule/engine.h"

namespace xdc::sim {

inline constexpr int64_t kNeverNs = kTcpNever;

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

class TimedLinks : public sched::MessageTiming {
 public:
  // Times relative to `origin_ns` on the timeline's clock (an iteration's start):
  // LinkState runs in the iteration's own time.
  // `history`: the connections as the previous iteration left them (LinkState).
  // `priority`: a send's grant order on an exclusive channel (IterationSetup::send_priority).
  // `base` and `timeline` must outlive it, and the timeline gains no snapshot meanwhile.
  TimedLinks(const LinkModel& base, const LinkTimeline& timeline, int64_t origin_ns,
             const std::vector<TcpConn>& history = {},
             std::function<int64_t(int rank, const sched::Action& send)> priority = {});
  TimedLinks(const TimedLinks&) = delete;
  TimedLinks& operator=(const TimedLinks&) = delete;
  sched::Transfer send(int from, int to, int64_t bytes, double ready,
                       const sched::Action&) override;
  sched::Transfer send_requested(int from, int to, int64_t bytes, double requested,
                                 double ready) override;
  sched::Transfer current(int64_t ticket) override;
  double port_drop_chance(int rank, double at, int64_t bytes) override {
    return wire_.port_drop_chance(rank, static_cast<int64_t>(at), bytes);
  }
  void note_port_backlog(int rank, double at, int64_t window, int64_t bdp, int64_t skb) override {
    wire_.note_port_backlog(rank, 0, {static_cast<int64_t>(at), window, bdp, skb});
  }
  Transfer send(int from, int to, int64_t bytes, int64_t ready_ns, int64_t priority = -1,
                int64_t requested_ns = std::numeric_limits<int64_t>::max());
  // A small message of a collective (barrier, gradient norm): latency in force + bytes at
  // the rate, held up by an outage as above; no channel.
  int64_t arrival(int from, int to, int64_t bytes, int64_t ready_ns);
  // The connections after every message sent (LinkState::history, relative times).
  std::vector<TcpConn> history() { return wire_.history(); }
  // The workers' comm thread polls OpenMPI every `poll_ns` (RunSpec::progress_poll_us over
  // the time dilation; 0: its ranks act on what arrives at once), each wait lasting
  // `slack_ns` more (the threads' timer slack, dilated alike): bound to an engine, each
  // rank acts on a rendezvous request or answer at its next poll as the engine's record of
  // that rank has it (Engine::activity; workloads/worker/poll.h).
  void set_comm_poll(int64_t poll_ns, int64_t slack_ns) {
    poll_ns_ = poll_ns;
    slack_ns_ = slack_ns;
  }
  void bind(const sched::Engine* e) override;

 private:
  // send() and send_requested(): through LinkState's tickets while the links do not change,
  // else worked out at once (send() below).
  sched::Transfer timed(int from, int to, int64_t bytes, int64_t ready_ns, int64_t priority,
                        int64_t requested_ns);
  // Moves `x` (relative times) past an outage of the pair's route, if any.
  void hold_up(int from, int to, int64_t bytes, Transfer& x);

  // With snapshots, the base with the links in force (LinkState reads it), a row per rank;
  // without, nothing changes and cur_ is the base itself (a world's model is too large to
  // copy per use).
  LinkModel own_;
  const LinkModel& cur_;
  const LinkTimeline& tl_;
  int64_t origin_;
  LinkState wire_;
  std::function<int64_t(int, const sched::Action&)> priority_;
  int64_t poll_ns_ = 0, slack_ns_ = 0;
  // [from * ranks + to], pairs that sent so far: absolute time its last outage's data went
  // out, and its last message's arrival (a connection delivers in order).
  std::unordered_map<size_t, int64_t> recovered_, last_arrival_;
};

}  // namespace xdc::sim
