#include "harness/sim/worker_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <stdexcept>
#include <string>
#include <tuple>

#include "harness/sim/gloo_ring.h"
#include "harness/sim/link_timeline.h"
#include "harness/sim/simulator.h"
#include "harness/trace/analysis.h"
#include "workloads/model/fragments.h"

namespace xdc::sim {
namespace {

// One binomial all-reduce among `ranks` (world ranks, comm rank order) with its messages:
// the reduce's (into v in round `half`) and the broadcast's (parent -> v), as
// binomial_allreduce orders them.
struct Collective {
  int stage = 0;
  std::vector<int> ranks;
  std::vector<int64_t> enter;
  int64_t bytes = 0;
  bool rendezvous = false;
};
struct CollectiveMessage {
  int coll = 0, from = 0, to = 0, half = 0;  // members; half 0: the broadcast's
  int64_t ticket = -1;
  int64_t arrival = -1;  // -1: not yet complete
  int64_t gone = -1;     // when its last byte left the sender (its send completes)
  bool posted = false;
};

// When every message msgs[i] (i in `of`) matching `pick` has arrived: the latest arrival,
// at least `floor`; -1 while one has not.
template <class Pick>
int64_t all_arrived(const std::vector<CollectiveMessage>& msgs, const std::vector<size_t>& of,
                    int64_t floor, Pick pick) {
  int64_t t = floor;
  for (size_t i : of) {
    const CollectiveMessage& m = msgs[i];
    if (pick(m)) {
      if (m.arrival < 0) return -1;
      t = std::max(t, m.arrival);
    }
  }
  return t;
}

// The stages' all-reduces as gloo's ring (gloo_ring.h), in dp_allreduce_ns's terms.
std::vector<int64_t> gloo_ring_dp(const std::vector<Collective>& colls, int replicas,
                                  sched::MessageTiming& wire) {
  const int local_stages = static_cast<int>(colls.size());
  std::vector<int64_t> out(static_cast<size_t>(local_stages) * replicas, -1);
  std::vector<GlooCollective> ring;
  std::vector<int> of;  // ring[j] is stage of[j]'s
  for (int k = 0; k < local_stages; ++k) {
    const Collective& c = colls[k];
    if (c.bytes <= 0 || c.ranks.size() < 2 ||
        std::any_of(c.enter.begin(), c.enter.end(), [](int64_t x) { return x < 0; }))
      continue;
    ring.push_back({c.ranks, c.enter, c.bytes});
    of.push_back(k);
  }
  const auto done = gloo_ring_allreduce(ring, wire);
  for (size_t j = 0; j < ring.size(); ++j) {
    const int64_t start = *std::max_element(ring[j].enter.begin(), ring[j].enter.end());
    const int64_t end = *std::max_element(done[j].begin(), done[j].end());
    for (int r = 0; r < replicas; ++r)
      out[static_cast<size_t>(r) * local_stages + of[j]] = end - start;
  }
  return out;
}

// The messages of libnbc's binomial rounds (binomial_allreduce's order) of each collective
// every member entered, which `timed` marks: the reduce's (into v in round `half`), then
// the broadcast's (parent -> v).
std::vector<CollectiveMessage> binomial_messages(const std::vector<Collective>& colls, int members,
                                                 std::vector<char>& timed) {
  std::vector<CollectiveMessage> msgs;
  for (int k = 0; k < static_cast<int>(colls.size()); ++k) {
    const Collective& c = colls[k];
    if (c.bytes <= 0 || members < 2 ||
        std::any_of(c.enter.begin(), c.enter.end(), [](int64_t x) { return x < 0; }))
      continue;
    timed[k] = 1;
    for (int half = 1; half < members; half *= 2)
      for (int v = 0; v + half < members; v += 2 * half) msgs.push_back({k, v + half, v, half});
    for (int v = 1; v < members; ++v) {
      int high = 1;
      while (high * 2 <= v) high *= 2;
      msgs.push_back({k, v - high, v, 0});
    }
  }
  return msgs;
}

// One collective per stage of replica 0 of `s` (`local` pipeline ranks a replica), among
// the ranks of `links` that hold its pipeline rank; members enter at their replica's
// ALLREDUCE in `t` (-1: not in it).
std::vector<Collective> stage_collectives(const trace::Trace& t, const sched::Schedule& s,
                                          const CostModel& costs, const LinkModel& links,
                                          int local) {
  const int replicas = std::max(1, s.replicas);
  const int members = links.ranks / local;
  const int local_stages = s.stages / replicas;
  const int64_t eager = links.tcp.empty() ? kOpenMpiEagerLimit : links.tcp.front().eager_limit;
  std::vector<Collective> colls(local_stages);
  for (int st = 0; st < local_stages; ++st) {
    Collective& c = colls[st];
    c.stage = st;
    c.enter.assign(members, -1);
    c.bytes = costs.grad_bytes.empty() ? 0 : costs.grad_bytes[st];
    c.rendezvous = c.bytes > eager - kEagerHeaderBytes;
    const int rank = s.stage_rank[st];
    for (int q = 0; q < members; ++q) c.ranks.push_back(q * local + rank);
  }
  for (const auto& ev : t.events) {
    if (ev.kind != sched::Kind::ALLREDUCE) continue;
    const int q = ev.rank / local, st = ev.stage % local_stages;
    if (replicas > 1)
      colls[st].enter[q] = ev.start_ns;
    else
      colls[st].enter.assign(members, ev.start_ns);
  }
  return colls;
}

}  // namespace

std::vector<int64_t> dp_allreduce_ns(const trace::Trace& t, const sched::Schedule& s,
                                     const CostModel& costs, const WorkerModel& w,
                                     sched::MessageTiming& wire, std::vector<int64_t>* own_end) {
  std::vector<int64_t> out(s.stages, -1);
  if (own_end) own_end->assign(static_cast<size_t>(w.dp_links.ranks), -1);
  const int replicas = std::max(1, s.replicas);
  const int local = s.ranks / replicas;  // pipeline ranks of one replica
  if (w.dp_links.ranks == 0 || local == 0) return out;
  const int members = w.dp_links.ranks / local;
  const int local_stages = s.stages / replicas;
  const std::vector<Collective> colls = stage_collectives(t, s, costs, w.dp_links, local);
  if (w.dp_collective == WorkerModel::Collective::kGlooRing)
    return gloo_ring_dp(colls, replicas, wire);
  std::vector<char> timed(local_stages, 0);
  std::vector<CollectiveMessage> msgs = binomial_messages(colls, members, timed);
  // Each collective's messages (indices into msgs), and per member those into it and
  // those from it: a message's readiness depends on arrivals into its sender (and, for a
  // rendezvous, into its receiver) alone, so each lookup and each offer scans those.
  std::vector<std::vector<size_t>> of_coll(local_stages);
  std::vector<std::vector<size_t>> into(static_cast<size_t>(local_stages) * members),
      from(static_cast<size_t>(local_stages) * members);
  auto member = [members](int k, int v) { return static_cast<size_t>(k) * members + v; };
  for (size_t i = 0; i < msgs.size(); ++i) {
    of_coll[msgs[i].coll].push_back(i);
    into[member(msgs[i].coll, msgs[i].to)].push_back(i);
    from[member(msgs[i].coll, msgs[i].from)].push_back(i);
  }
  // What member v has summed: its copy (HostMemory), then every reduce message into it
  // (before round `below`), each added once it has arrived; -1 while one has not.
  const HostMemory& mem = w.host_memory;
  auto have = [&](int k, int v, int below) -> int64_t {
    const int64_t sum = mem.sum_ns(colls[k].bytes);
    int64_t t = colls[k].enter[v] + mem.copy_ns(colls[k].bytes, members);
    for (size_t i : into[member(k, v)]) {  // the reduce's in round order
      const CollectiveMessage& m = msgs[i];
      if (m.half == 0 || m.half >= below) continue;
      if (m.arrival < 0) return -1;
      t = std::max(t, m.arrival) + sum;
    }
    return t;
  };
  // When member v has the result: the root once it has summed, others at the broadcast.
  auto result = [&](int k, int v) {
    const int64_t h = have(k, v, members);
    if (v == 0 || h < 0) return h;
    return all_arrived(msgs, into[member(k, v)], h,
                       [&](const CollectiveMessage& m) { return m.half == 0; });
  };
  // When message i may be posted (libnbc's rounds; binomial_allreduce); -1: not yet known.
  auto ready = [&](const CollectiveMessage& m) -> int64_t {
    if (m.half == 0) return result(m.coll, m.from);
    const int64_t sender = have(m.coll, m.from, members);
    if (sender < 0 || !colls[m.coll].rendezvous) return sender;
    const int64_t receiver = have(m.coll, m.to, m.half);
    return receiver < 0 ? -1 : std::max(sender, receiver);
  };
  // Events in time order: a post (kind 0) before an arrival check (kind 1) at one time.
  using Event = std::tuple<int64_t, int, size_t>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> q;
  auto offer = [&](const std::vector<size_t>& candidates, int64_t now) {
    for (size_t i : candidates) {
      if (msgs[i].posted) continue;
      const int64_t r = ready(msgs[i]);
      if (r < 0) continue;
      msgs[i].posted = true;
      q.emplace(std::max(r, now), 0, i);
    }
  };
  for (int k = 0; k < local_stages; ++k) offer(of_coll[k], std::numeric_limits<int64_t>::min());
  const sched::Action none{};
  while (!q.empty()) {
    const auto [now, kind, i] = q.top();
    q.pop();
    CollectiveMessage& m = msgs[i];
    const Collective& c = colls[m.coll];
    if (kind == 0) {
      // A reduce's rendezvous request leaves when its sender reaches the round (ready());
      // the receiver answers once it has posted the receive, in its own round.
      const int64_t asked = m.half > 0 && c.rendezvous ? have(m.coll, m.from, members) : now;
      const sched::Transfer x =
          asked < now
              ? wire.send_requested(c.ranks[m.from], c.ranks[m.to], c.bytes,
                                    static_cast<double>(asked), static_cast<double>(now))
              : wire.send(c.ranks[m.from], c.ranks[m.to], c.bytes, static_cast<double>(now), none);
      m.ticket = x.ticket;
      m.gone = static_cast<int64_t>(x.end);
      q.emplace(static_cast<int64_t>(x.arrival), 1, i);
      continue;
    }
    if (m.ticket >= 0) {
      const sched::Transfer x = wire.current(m.ticket);
      if (static_cast<int64_t>(x.arrival) > now) {  // a later post slowed it
        q.emplace(static_cast<int64_t>(x.arrival), 1, i);
        continue;
      }
      m.gone = static_cast<int64_t>(x.end);
    }
    m.arrival = now;
    offer(from[member(m.coll, m.to)], now);  // its receiver's messages
    if (c.rendezvous) offer(into[member(m.coll, m.to)], now);
  }
  for (int k = 0; k < local_stages; ++k) {
    const Collective& c = colls[k];
    if (!timed[k]) continue;
    const int64_t start = *std::max_element(c.enter.begin(), c.enter.end());
    int64_t done = start;
    for (int v = 0; v < members; ++v) {
      const int64_t has = result(k, v);
      done = std::max(done, has);
      if (!own_end) continue;
      int64_t own = has;  // and its sends gone from its socket
      for (size_t i : from[member(k, v)]) own = std::max(own, msgs[i].gone);
      int64_t& e = (*own_end)[static_cast<size_t>(c.ranks[v])];
      e = std::max(e, own);
    }
    for (int r = 0; r < replicas; ++r) out[r * local_stages + k] = done - start;
  }
  return out;
}

namespace {

// A message of the workers' barrier is a send on its TCP connection too (an empty MPI
// message still carries its header): an idle window restarts then, and the connection has
// not been idle since. `history` is by connection of `links` (the pipeline's, or the
// data-parallel all-reduces' in world ranks), then the stripes' connections, which the
// barrier does not use: it goes on OpenMPI's.
void note_send(std::vector<TcpConn>& history, const LinkModel& links, int from, int to,
               int64_t at) {
  if (links.tcp.empty() || from >= links.ranks || to >= links.ranks ||
      history.size() < links.connections())
    return;
  const size_t i = links.connection(from, to);
  if (i == LinkModel::kNoConnection)  // the pairs (LinkModel::set_pairs) miss the barrier's
    throw std::logic_error("note_send: no connection from rank " + std::to_string(from) + " to " +
                           std::to_string(to));
  TcpPath own = links.path(from, to);  // OpenMPI's one connection (per copy), not the stripes
  own.connections = links.copies_of(from, to) / links.lanes_of(from, to);  // lane 0's
  tcp_note_send(history[i], own, links.at(from, to).latency_ns + links.at(to, from).latency_ns, at);
}

// Whether connections start an iteration alike: equal, a time more than a minute before
// the iteration's start counting as any other such (an idle restart has halved the window
// to its floor by then, an RTO's decay has run, CUBIC's curve is past its clamp).
bool same_state(const std::vector<TcpConn>& a, const std::vector<TcpConn>& b) {
  static constexpr int64_t kLongAgo = -60'000'000'000;
  auto norm = [](TcpConn c) {
    for (int64_t* t : {&c.last_send_ns, &c.round_ns, &c.stamp_ns, &c.epoch_ns})
      *t = std::max(*t, kLongAgo);
    return c;
  };
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(norm(a[i]) == norm(b[i]))) return false;
  return true;
}

// Where the barrier after an iteration (trace `t`, started from `start`) releases each
// rank of replica 0, on the trace's clock: each rank enters it when its last action ends
// (a SEND is posted and left to complete); replicas run alike, but for their own ends of
// the all-reduces (`own_end`, dp_allreduce_ns's, by world rank on the trace's clock; -1 or
// empty: the collective's end), which its OPT follows.
std::vector<int64_t> barrier_release(const trace::Trace& t, const std::vector<int64_t>& start,
                                     int world, const std::vector<int64_t>& own_end,
                                     const MessageArrival& message) {
  const int ranks = static_cast<int>(start.size());
  // Per rank: the end of its other actions, of its all-reduces, and of those and the OPT
  // after them.
  std::vector<int64_t> end = start, collective(ranks, -1), after(ranks, -1);
  for (const auto& ev : t.events) {
    if (ev.kind == sched::Kind::ALLREDUCE)
      collective[ev.rank] = std::max(collective[ev.rank], ev.end_ns);
    if (ev.kind == sched::Kind::ALLREDUCE || ev.kind == sched::Kind::OPT)
      after[ev.rank] = std::max(after[ev.rank], ev.end_ns);
    else if (!sched::is_comm(ev.kind) || ev.kind == sched::Kind::RECV_F ||
             ev.kind == sched::Kind::RECV_B)
      end[ev.rank] = std::max(end[ev.rank], ev.end_ns);
  }
  std::vector<int64_t> enter(world);
  for (int q = 0; q < world; ++q) {
    const int r = q % ranks;
    const int64_t own = static_cast<size_t>(q) < own_end.size() ? own_end[q] : -1;
    const int64_t early =
        own >= 0 && collective[r] >= 0 ? std::max<int64_t>(0, collective[r] - own) : 0;
    enter[q] = after[r] < 0 ? end[r] : std::max(end[r], after[r] - early);
  }
  const std::vector<int64_t> out = dissemination_barrier(enter, message);
  return std::vector<int64_t>(out.begin(), out.begin() + ranks);
}

// The workers' iterations, one at a time: the schedule from each rank's start, every
// message timed on the links in force (TimedLinks over the timelines), then the barrier
// that releases each rank into the next. simulate_iteration and simulate_run both step
// through it.
class Iterations {
 public:
  Iterations(const sched::Schedule& s, const CostModel& costs, const LinkModel& links,
             const WorkerModel& w, const LinkTimeline& pipeline, const LinkTimeline& world_tl,
             const char* who)
      : s_(s),
        costs_(costs),
        links_(links),
        w_(w),
        pipeline_(pipeline),
        world_tl_(world_tl),
        world_(s.ranks * std::max(1, w.replicas)),
        world_links_(w.world.ranks ? w.world : links),
        start_(s.ranks, 0) {
    if (w.iteration_barrier && world_links_.ranks != world_)
      throw std::invalid_argument(std::string(who) + ": world link model has " +
                                  std::to_string(world_links_.ranks) + " ranks, the run " +
                                  std::to_string(world_));
  }
  // Where the next iteration's ranks start (absolute) and its connections (on its clock).
  const std::vector<int64_t>& start() const { return start_; }
  int64_t origin() const { return *std::min_element(start_.begin(), start_.end()); }
  std::vector<int64_t> offsets() const {
    std::vector<int64_t> out;
    for (int64_t x : start_) out.push_back(x - origin());
    return out;
  }
  std::vector<TcpConn>& history() { return history_; }
  std::vector<TcpConn>& dp_history() { return dp_history_; }
  int64_t world_ranks() const { return world_links_.ranks; }

  // Whether iteration `i` (from the first, warmup included) can differ from its
  // neighbours by the outer loop: a sync in flight, one starting after it, or one started
  // or applied after the iteration before.
  bool outer_changes(int64_t i) const {
    if (!outer_ || w_.outer_every <= 0) return false;
    if (i <= w_.outer_from) return i >= w_.outer_from - 1;  // the loop starts after i
    return !pending_.empty() || starts_after(i) || last_outer_ >= i - 1;
  }
  void enable_outer_sync() { outer_ = true; }

  // Runs the next iteration; its trace, times absolute.
  trace::Trace next() {
    const int64_t origin = this->origin();
    const bool loop = outer_ && w_.outer_every > 0;
    const bool outer = loop && static_cast<int64_t>(iteration_) >= w_.outer_from;
    // Before the outer loop starts (WorkerSetup::outer_from): synchronous iterations.
    CostModel sync_phase;
    if (loop && !outer) {
      sync_phase = costs_;
      sync_phase.grad_bytes = costs_.sync_grad_bytes;
      sync_phase.allreduce_ns = costs_.sync_allreduce_ns;
    }
    const CostModel& costs = loop && !outer ? sync_phase : costs_;
    std::vector<TcpConn> pipe, dp_next;
    std::vector<int64_t> own_end;  // each rank's own end of its all-reduces (iteration clock)
    trace::Trace t = once(costs, origin, pipe);
    if (w_.dp_links.ranks > 0) {
      // When a stage enters its all-reduce can depend on an earlier one's time (a rank
      // with several stages): simulate again with the all-reduces' times until they agree.
      CostModel c = costs;
      for (int pass = 0; pass < 4; ++pass) {
        TimedLinks dp(w_.dp_links, world_tl_, origin, dp_history_);
        std::vector<int64_t> ns = dp_allreduce_ns(t, s_, costs, w_, dp, &own_end);
        for (int st = 0; st < s_.stages; ++st)
          if (ns[st] < 0) ns[st] = costs.duration_ns({sched::Kind::ALLREDUCE, st});
        std::vector<TcpConn> dp_after = dp.history();
        const bool agree = ns == c.allreduce_stage_ns;
        c.allreduce_stage_ns = std::move(ns);
        if (agree || pass == 3) {
          dp_next = std::move(dp_after);
          break;
        }
        t = once(c, origin, pipe);
      }
    }
    if (outer) {
      TimedLinks dp(w_.dp_links, world_tl_, origin, dp_next);
      outer_step(t, dp, static_cast<int64_t>(iteration_), origin);
      dp_next = dp.history();
    }
    history_ = std::move(pipe);
    ++iteration_;
    for (auto& ev : t.events) ev.start_ns += origin, ev.end_ns += origin;
    if (w_.iteration_barrier) {
      TimedLinks barrier(world_links_, world_tl_, 0);
      for (int64_t& x : own_end)
        if (x >= 0) x += origin;
      start_ =
          barrier_release(t, start_, world_, own_end, [&](int from, int to, int64_t b, int64_t at) {
            note_send(history_, links_, from, to, at - origin);  // history: this iteration's clock
            // Between a stage's replicas the same connection carries its all-reduces.
            if (w_.dp_links.ranks > 0) note_send(dp_next, w_.dp_links, from, to, at - origin);
            // OpenMPI has one TCP connection per pair of processes: a barrier message queues
            // behind an outer sync's data still in flight between the same two ranks.
            int64_t behind = 0;
            if (const auto q = dp_sent_abs_.find({from, to}); q != dp_sent_abs_.end())
              for (const auto& [sent, arrived] : q->second)
                if (sent <= at) behind = std::max(behind, arrived);
            return std::max(barrier.arrival(from, to, b, at), behind);
          });
    } else {  // every rank starts the next when the last one ends
      std::vector<int64_t> end = start_;
      for (const auto& ev : t.events) end[ev.rank] = std::max(end[ev.rank], ev.end_ns);
      start_.assign(s_.ranks, *std::max_element(end.begin(), end.end()));
    }
    shift_history(history_, this->origin() - origin);
    if (w_.dp_links.ranks > 0) {
      dp_history_ = std::move(dp_next);
      shift_history(dp_history_, this->origin() - origin);
    }
    return t;
  }

  // The last iteration repeated, `period` later (RunTimeline::fixed).
  trace::Trace repeat(trace::Trace t, int64_t period) {
    for (auto& ev : t.events) ev.start_ns += period, ev.end_ns += period;
    for (auto& x : start_) x += period;
    return t;
  }

 private:
  int fragments() const {
    return costs_.outer_bytes.empty() ? 1 : static_cast<int>(costs_.outer_bytes[0].size());
  }
  bool starts_after(int64_t i) const {
    for (int p = 0; p < fragments(); ++p)
      if (model::fragment_due(i - w_.outer_from + 1, p, fragments(), w_.outer_every)) return true;
    return false;
  }

  // The outer loop after iteration `i` (`t`: its trace, times relative to `origin`), on
  // `dp`: see the header.
  void outer_step(trace::Trace& t, TimedLinks& dp, int64_t i, int64_t origin) {
    const int replicas = std::max(1, s_.replicas);
    const int local = s_.ranks / replicas;
    if (w_.dp_links.ranks == 0 || local == 0 || costs_.outer_bytes.empty()) return;
    // Messages that arrived before this iteration began delay no barrier message to come.
    for (auto& [pair, sent] : dp_sent_abs_)
      std::erase_if(sent, [origin](const auto& m) { return m.second < origin; });
    const int members = w_.dp_links.ranks / local;
    const int local_stages = s_.stages / replicas;
    const int64_t eager =
        w_.dp_links.tcp.empty() ? kOpenMpiEagerLimit : w_.dp_links.tcp.front().eager_limit;
    std::vector<int64_t> end(s_.ranks);
    for (int r = 0; r < s_.ranks; ++r) end[r] = start_[r] - origin;
    for (const auto& ev : t.events) end[ev.rank] = std::max(end[ev.rank], ev.end_ns);
    // A rank's collectives go one after another on its connections: those in flight first.
    std::vector<int64_t> busy = end;
    for (const PendingOuter& o : pending_)
      for (int r : o.ranks) busy[r] = std::max(busy[r], o.done_abs - origin);
    for (int p = 0; p < fragments(); ++p) {
      if (!model::fragment_due(i - w_.outer_from + 1, p, fragments(), w_.outer_every)) continue;
      for (int st = 0; st < local_stages; ++st) {
        const int64_t bytes = costs_.outer_bytes[st][p];
        if (bytes == 0) continue;  // the stage holds none of the fragment
        const int rank = s_.stage_rank[st];
        std::vector<int> world;
        std::vector<int64_t> enter;
        for (int q = 0; q < members; ++q) {
          world.push_back(q * local + rank);
          enter.push_back(busy[replicas > 1 ? q * local + rank : rank]);
        }
        const std::vector<int64_t> done = binomial_allreduce(
            enter, bytes, bytes > eager - kEagerHeaderBytes,
            [&](int from, int to, int64_t b, int64_t at) {
              const int64_t arrival = dp.send(world[from], world[to], b, at).arrival_ns;
              auto& q = dp_sent_abs_[{world[from], world[to]}];
              q.emplace_back(origin + at, origin + arrival);
              return arrival;
            },
            w_.host_memory);
        // The members this simulation holds wait for the collective's end (its last
        // member's), standing for every replica; unlike the iteration's all-reduces
        // (dp_allreduce_ns' own_end), no member's own end is taken apart.
        const int64_t last = *std::max_element(done.begin(), done.end());
        PendingOuter o{st, {}, {}, origin + last, bytes, i + w_.outer_overlap};
        for (int q = 0; q < (replicas > 1 ? members : 1); ++q) {
          const int r = q * local + rank;
          o.ranks.push_back(r);
          o.enter_abs.push_back(origin + enter[q]);
          busy[r] = last;
        }
        pending_.push_back(std::move(o));
        last_outer_ = i;
      }
    }
    // Those due now, in the order they started: a rank waits from its iteration's end
    // (or the previous one applied) for the collective's end.
    std::vector<int64_t> at = end;
    while (!pending_.empty() && pending_.front().apply_at <= i) {
      const PendingOuter& o = pending_.front();
      for (size_t k = 0; k < o.ranks.size(); ++k) {
        const int r = o.ranks[k];
        at[r] = std::max(at[r], o.done_abs - origin);
        // Inside this iteration, as the workers trace it.
        const int64_t from = std::max(o.enter_abs[k], start_[r]) - origin;
        t.events.push_back(trace::Event{r, sched::Kind::OUTER_SYNC,
                                        o.stage + static_cast<int>(k) * local_stages, -1, from,
                                        at[r], o.bytes, -1, 0});
      }
      pending_.erase(pending_.begin());
      last_outer_ = i;
    }
  }

  struct PendingOuter {
    int stage;
    std::vector<int> ranks;          // the members this simulation holds
    std::vector<int64_t> enter_abs;  // each one's entry
    int64_t done_abs, bytes, apply_at;
  };
  std::vector<PendingOuter> pending_;
  int64_t last_outer_ = -2;  // the last iteration a sync started or was applied after
  // Per (from, to) world ranks: each outer sync message's send and arrival.
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, int64_t>>> dp_sent_abs_;
  bool outer_ = false;  // simulate_run: outer syncs where due
  const sched::Schedule& s_;
  const CostModel& costs_;
  const LinkModel& links_;
  const WorkerModel& w_;
  const LinkTimeline& pipeline_;
  const LinkTimeline& world_tl_;
  const int world_;
  const LinkModel& world_links_;
  // One pass of the iteration from `origin` with costs `c`: its trace (on its clock) and,
  // in `after`, the pipeline's connections as it leaves them.
  trace::Trace once(const CostModel& c, int64_t origin, std::vector<TcpConn>& after) {
    IterationSetup setup;
    setup.start_ns = offsets();
    // A band replica's compute draws: one stream per replica and iteration.
    if (w_.loss_seed != 0) setup.noise_key = tcp_loss_stream(~w_.loss_seed, iteration_);
    TimedLinks wire(links_, pipeline_, origin, history_, w_.send_priority);
    wire.set_comm_poll(w_.poll_ns, w_.poll_slack_ns);
    TimedLinks small(links_, pipeline_, origin);  // the gradient norm's few bytes
    const int per_replica = s_.ranks / std::max(1, s_.replicas);
    if (w_.grad_norm && per_replica > 1)
      setup.grad_norm = [&small, per_replica](const std::vector<int64_t>& enter) {
        // Each replica's ranks among themselves (replica q's are q * per_replica + r).
        std::vector<int64_t> done(enter.size());
        for (size_t q = 0; q < enter.size() / per_replica; ++q) {
          const auto base = static_cast<int>(q) * per_replica;
          const auto first = enter.begin() + base;
          const std::vector<int64_t> part =
              binomial_allreduce(std::vector<int64_t>(first, first + per_replica), sizeof(double),
                                 false, [&small, base](int from, int to, int64_t b, int64_t at) {
                                   return small.arrival(base + from, base + to, b, at);
                                 });
          std::copy(part.begin(), part.end(), done.begin() + base);
        }
        return done;
      };
    trace::Trace t = simulate(s_, c, links_, setup, wire);
    after = wire.history();
    return t;
  }

  std::vector<int64_t> start_;    // absolute
  uint64_t iteration_ = 0;        // iterations run (the compute draws' stream index)
  std::vector<TcpConn> history_;  // empty: warm, just used (LinkState)
  // The data-parallel all-reduces' connections (WorkerModel::dp_links), as history_.
  std::vector<TcpConn> dp_history_;
};

}  // namespace

trace::Trace simulate_iteration(const sched::Schedule& s, const CostModel& costs,
                                const LinkModel& links, const WorkerModel& w) {
  // Iterate until the start offsets repeat; when they cycle through several (they can
  // alternate), the member of the cycle closest to the cycle's mean time. Each iteration's
  // TCP connections start as the previous one left them (a direction idle since then
  // restarts its window: tcp_model.h); the first iteration, from warm connections, only
  // provides that history and is not a candidate. Links do not change: empty timelines.
  const LinkTimeline pipeline(s.ranks);
  const LinkTimeline world(w.world.ranks ? w.world.ranks : links.ranks);
  Iterations it(s, costs, links, w, pipeline, world, "simulate_iteration");
  std::vector<std::vector<int64_t>> starts;  // [k]: the offsets traces[k] started from
  std::vector<trace::Trace> traces;
  for (int i = 0; i < 17; ++i) {
    std::vector<int64_t> offsets = it.offsets();
    const int64_t origin = it.origin();
    trace::Trace t = it.next();
    if (i == 0) continue;
    for (auto& ev : t.events) ev.start_ns -= origin, ev.end_ns -= origin;
    starts.push_back(std::move(offsets));
    traces.push_back(std::move(t));
    if (!w.iteration_barrier) break;
    const auto again = std::find(starts.begin(), starts.end(), it.offsets());
    if (again == starts.end()) continue;
    const size_t from = static_cast<size_t>(again - starts.begin());
    std::vector<double> ns;
    for (size_t k = from; k < traces.size(); ++k)
      ns.push_back(static_cast<double>(trace::analyze(traces[k]).iteration_ns));
    double mean = 0;
    for (double x : ns) mean += x / static_cast<double>(ns.size());
    size_t best = 0;
    for (size_t k = 1; k < ns.size(); ++k)
      if (std::abs(ns[k] - mean) < std::abs(ns[best] - mean)) best = k;
    return traces[from + best];
  }
  return traces.back();
}

std::vector<trace::Trace> simulate_run(const sched::Schedule& s, const CostModel& costs,
                                       const LinkModel& links, const WorkerModel& w, int iterations,
                                       RunTimeline& tl) {
  Iterations it(s, costs, links, w, tl.pipeline, tl.world, "simulate_run");
  if (tl.pipeline.ranks() != s.ranks || tl.world.ranks() != it.world_ranks())
    throw std::invalid_argument(
        "simulate_run: timelines for " + std::to_string(tl.pipeline.ranks()) + " and " +
        std::to_string(tl.world.ranks()) + " ranks, the run " + std::to_string(s.ranks) + " and " +
        std::to_string(it.world_ranks()));
  // At the launch: new connections, no loss met yet.
  it.enable_outer_sync();
  it.history() = LinkState::launch(links, w.loss_seed);
  if (w.dp_links.ranks > 0)
    it.dp_history() = LinkState::launch(w.dp_links, w.loss_seed ? ~w.loss_seed : 0);
  std::vector<trace::Trace> out;
  // The state the previous iteration started from (RunTimeline::fixed).
  std::vector<int64_t> prev_offsets;
  std::vector<TcpConn> prev_history, prev_dp;
  int64_t prev_origin = 0;
  for (int i = 0; i < iterations; ++i) {
    const int64_t origin = it.origin();
    if (tl.on_start && !tl.on_start(i, origin, tl)) break;
    const std::vector<int64_t> offsets = it.offsets();
    // Drawn compute (a band replica over noisy costs) never repeats an iteration.
    const bool drawn = w.loss_seed != 0 && costs.noisy();
    const bool outer = it.outer_changes(i);
    if (tl.fixed && !drawn && !outer && !out.empty() && offsets == prev_offsets &&
        same_state(it.history(), prev_history) && same_state(it.dp_history(), prev_dp)) {
      out.push_back(it.repeat(out.back(), origin - prev_origin));  // repeats the previous one
      prev_origin = origin;
      continue;
    }
    prev_offsets = offsets;
    prev_history = it.history();
    prev_dp = it.dp_history();
    prev_origin = origin;
    out.push_back(it.next());
  }
  return out;
}

}  // namespace xdc::sim
