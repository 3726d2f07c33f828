#include "harness/sim/worker_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "harness/sim/link_timeline.h"
#include "harness/sim/simulator.h"
#include "harness/trace/analysis.h"

namespace xdc::sim {
namespace {

int64_t message_ns(const LinkModel& l, int from, int to, int64_t bytes) {
  if (from == to) return 0;
  const Link& k = l.at(from, to);
  return k.latency_ns + k.transfer_ns(bytes);
}

}  // namespace

std::vector<int64_t> binomial_allreduce(const std::vector<int64_t>& enter, const LinkModel& links,
                                        int64_t bytes) {
  const int p = static_cast<int>(enter.size());
  if (links.ranks != p)
    throw std::invalid_argument("binomial_allreduce: " + std::to_string(p) + " ranks, links for " +
                                std::to_string(links.ranks));
  return binomial_allreduce(enter, bytes, false, [&links](int from, int to, int64_t b, int64_t at) {
    return at + message_ns(links, from, to, b);
  });
}

std::vector<int64_t> binomial_allreduce(const std::vector<int64_t>& enter, int64_t bytes,
                                        bool rendezvous, const MessageArrival& message) {
  const int p = static_cast<int>(enter.size());
  // Reduce: in round r (1-based) a rank at a multiple of 2^r receives the partial sum of
  // the rank 2^(r-1) above it; the others have sent theirs and left.
  std::vector<int64_t> have = enter;
  for (int half = 1; half < p; half *= 2)
    for (int v = 0; v + half < p; v += 2 * half) {
      const int64_t sent = rendezvous ? std::max(have[v + half], have[v]) : have[v + half];
      have[v] = std::max(have[v], message(v + half, v, bytes, sent));
    }
  // Broadcast: rank v != 0 receives from v minus its highest bit, which sends to all its
  // children at once when it has the result (its receive is posted from the start).
  std::vector<int64_t> done(p);
  done[0] = have[0];
  for (int v = 1; v < p; ++v) {
    int high = 1;
    while (high * 2 <= v) high *= 2;
    const int parent = v - high;
    done[v] = std::max(have[v], message(parent, v, bytes, done[parent]));
  }
  return done;
}

int64_t allreduce_ns(const LinkModel& m, int64_t bytes, int64_t idle_before_ns) {
  if (m.ranks < 2 || bytes <= 0) return 0;
  const int64_t eager = m.tcp.empty() ? kOpenMpiEagerLimit : m.tcp.front().eager_limit;
  LinkState wire(m, idle_before_ns);
  const auto done = binomial_allreduce(std::vector<int64_t>(static_cast<size_t>(m.ranks), 0), bytes,
                                       bytes > eager - kEagerHeaderBytes,
                                       [&wire](int from, int to, int64_t b, int64_t at) {
                                         return wire.send(from, to, b, at).arrival_ns;
                                       });
  return *std::max_element(done.begin(), done.end());
}

std::vector<int64_t> dissemination_barrier(const std::vector<int64_t>& enter,
                                           const LinkModel& links) {
  const int p = static_cast<int>(enter.size());
  if (links.ranks != p)
    throw std::invalid_argument("dissemination_barrier: " + std::to_string(p) +
                                " ranks, links for " + std::to_string(links.ranks));
  return dissemination_barrier(enter, [&links](int from, int to, int64_t b, int64_t at) {
    return at + message_ns(links, from, to, b);
  });
}

std::vector<int64_t> dissemination_barrier(const std::vector<int64_t>& enter,
                                           const MessageArrival& message) {
  const int p = static_cast<int>(enter.size());
  std::vector<int64_t> t = enter;
  for (int step = 1; step < p; step *= 2) {
    std::vector<int64_t> next(p);
    for (int r = 0; r < p; ++r) {
      const int from = (r - step % p + p) % p;
      next[r] = std::max(t[r], from == r ? t[from] : message(from, r, 0, t[from]));
    }
    t = std::move(next);
  }
  return t;
}

namespace {

// A message of the workers' barrier is a send on its TCP connection too (an empty MPI
// message still carries its header): an idle window restarts then, and the connection has
// not been idle since. Pipeline ranks only (history is [from * ranks + to] of `links`).
void note_send(std::vector<TcpConn>& history, const LinkModel& links, int from, int to,
               int64_t at) {
  if (links.tcp.empty() || from >= links.ranks || to >= links.ranks ||
      history.size() != links.tcp.size())
    return;
  const size_t i = static_cast<size_t>(from) * links.ranks + to;
  tcp_note_send(history[i], links.tcp[i],
                links.at(from, to).latency_ns + links.at(to, from).latency_ns, at);
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
// (a SEND is posted and left to complete); replicas run alike.
std::vector<int64_t> barrier_release(const trace::Trace& t, const std::vector<int64_t>& start,
                                     int world, const MessageArrival& message) {
  const int ranks = static_cast<int>(start.size());
  std::vector<int64_t> end = start;
  for (const auto& ev : t.events)
    if (!sched::is_comm(ev.kind) || ev.kind == sched::Kind::RECV_F ||
        ev.kind == sched::Kind::RECV_B)
      end[ev.rank] = std::max(end[ev.rank], ev.end_ns);
  std::vector<int64_t> enter(world);
  for (int q = 0; q < world; ++q) enter[q] = end[q % ranks];
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
  int64_t world_ranks() const { return world_links_.ranks; }

  // Runs the next iteration; its trace, times absolute.
  trace::Trace next() {
    const int64_t origin = this->origin();
    IterationSetup setup;
    setup.start_ns = offsets();
    TimedLinks wire(links_, pipeline_, origin, history_, w_.send_priority);
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
    trace::Trace t = simulate(s_, costs_, links_, setup, wire);
    history_ = wire.history();
    for (auto& ev : t.events) ev.start_ns += origin, ev.end_ns += origin;
    if (w_.iteration_barrier) {
      TimedLinks barrier(world_links_, world_tl_, 0);
      start_ = barrier_release(t, start_, world_, [&](int from, int to, int64_t b, int64_t at) {
        note_send(history_, links_, from, to, at - origin);  // history: this iteration's clock
        return barrier.arrival(from, to, b, at);
      });
    } else {  // every rank starts the next when the last one ends
      std::vector<int64_t> end = start_;
      for (const auto& ev : t.events) end[ev.rank] = std::max(end[ev.rank], ev.end_ns);
      start_.assign(s_.ranks, *std::max_element(end.begin(), end.end()));
    }
    shift_history(history_, this->origin() - origin);
    return t;
  }

  // The last iteration repeated, `period` later (RunTimeline::fixed).
  trace::Trace repeat(trace::Trace t, int64_t period) {
    for (auto& ev : t.events) ev.start_ns += period, ev.end_ns += period;
    for (auto& x : start_) x += period;
    return t;
  }

 private:
  const sched::Schedule& s_;
  const CostModel& costs_;
  const LinkModel& links_;
  const WorkerModel& w_;
  const LinkTimeline& pipeline_;
  const LinkTimeline& world_tl_;
  const int world_;
  const LinkModel& world_links_;
  std::vector<int64_t> start_;    // absolute
  std::vector<TcpConn> history_;  // empty: warm, just used (LinkState)
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
  it.history() = LinkState::launch(links);
  std::vector<trace::Trace> out;
  // The state the previous iteration started from (RunTimeline::fixed).
  std::vector<int64_t> prev_offsets;
  std::vector<TcpConn> prev_history;
  int64_t prev_origin = 0;
  for (int i = 0; i < iterations; ++i) {
    const int64_t origin = it.origin();
    if (tl.on_start && !tl.on_start(i, origin, tl)) break;
    const std::vector<int64_t> offsets = it.offsets();
    if (tl.fixed && !out.empty() && offsets == prev_offsets &&
        same_state(it.history(), prev_history)) {
      out.push_back(it.repeat(out.back(), origin - prev_origin));  // repeats the previous one
      prev_origin = origin;
      continue;
    }
    prev_offsets = offsets;
    prev_history = it.history();
    prev_origin = origin;
    out.push_back(it.next());
  }
  return out;
}

}  // namespace xdc::sim
