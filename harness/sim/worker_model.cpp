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

}  // namespace

trace::Trace simulate_iteration(const sched::Schedule& s, const CostModel& costs,
                                const LinkModel& links, const WorkerModel& w) {
  IterationSetup setup;
  setup.send_priority = w.send_priority;
  const int per_replica = s.ranks / std::max(1, s.replicas);
  if (w.grad_norm && per_replica > 1)
    setup.grad_norm = [&links, per_replica](const std::vector<int64_t>& enter) {
      if (static_cast<int>(enter.size()) == per_replica)
        return binomial_allreduce(enter, links, sizeof(double));
      // Replicated: each replica's ranks among themselves (their links: the model's
      // between replica q's ranks, which are q * per_replica + r).
      std::vector<int64_t> done(enter.size());
      for (size_t q = 0; q < enter.size() / per_replica; ++q) {
        LinkModel sub = LinkModel::uniform(per_replica, {});
        for (int a = 0; a < per_replica; ++a)
          for (int b = 0; b < per_replica; ++b)
            sub.at(a, b) = links.at(static_cast<int>(q) * per_replica + a,
                                    static_cast<int>(q) * per_replica + b);
        const auto first = enter.begin() + static_cast<std::ptrdiff_t>(q * per_replica);
        const std::vector<int64_t> part = binomial_allreduce(
            std::vector<int64_t>(first, first + per_replica), sub, sizeof(double));
        std::copy(part.begin(), part.end(),
                  done.begin() + static_cast<std::ptrdiff_t>(q * per_replica));
      }
      return done;
    };
  const int world = s.ranks * std::max(1, w.replicas);
  const LinkModel& world_links = w.world.ranks ? w.world : links;
  if (w.iteration_barrier && world_links.ranks != world)
    throw std::invalid_argument("simulate_iteration: world link model has " +
                                std::to_string(world_links.ranks) + " ranks, the run " +
                                std::to_string(world));
  // Iterate until the start offsets repeat; when they cycle through several (they can
  // alternate), the member of the cycle closest to the cycle's mean time. Each iteration's
  // TCP connections start as the previous one left them (a direction idle since then
  // restarts its window: tcp_model.h); the first iteration, from warm connections, only
  // provides that history and is not a candidate.
  setup.start_ns.assign(s.ranks, 0);
  std::vector<TcpConn> after;
  setup.tcp_after = &after;
  std::vector<std::vector<int64_t>> starts;  // [k]: the offsets traces[k] started from
  std::vector<trace::Trace> traces;
  for (int i = 0; i < 17; ++i) {
    trace::Trace t = simulate(s, costs, links, setup);
    std::vector<int64_t> next(s.ranks, 0);
    int64_t first = 0;           // where the next iteration's clock starts on this one's
    if (!w.iteration_barrier) {  // every rank starts the next when the last one ends
      for (const auto& ev : t.events) first = std::max(first, ev.end_ns);
    } else {
      next =
          barrier_release(t, setup.start_ns, world, [&](int from, int to, int64_t b, int64_t at) {
            note_send(after, links, from, to, at);
            return at + message_ns(world_links, from, to, b);
          });
      first = *std::min_element(next.begin(), next.end());
      for (auto& x : next) x -= first;
    }
    shift_history(after, first);
    setup.tcp_history = after;
    if (i == 0) {
      setup.start_ns = std::move(next);
      continue;
    }
    starts.push_back(setup.start_ns);
    traces.push_back(std::move(t));
    if (!w.iteration_barrier) break;
    const auto again = std::find(starts.begin(), starts.end(), next);
    if (again == starts.end()) {
      setup.start_ns = std::move(next);
      continue;
    }
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

}  // namespace xdc::sim

namespace xdc::sim {

std::vector<trace::Trace> simulate_run(const sched::Schedule& s, const CostModel& costs,
                                       const LinkModel& links, const WorkerModel& w, int iterations,
                                       RunTimeline& tl) {
  const int world = s.ranks * std::max(1, w.replicas);
  const LinkModel& world_links = w.world.ranks ? w.world : links;
  if (w.iteration_barrier && world_links.ranks != world)
    throw std::invalid_argument("simulate_run: world link model has " +
                                std::to_string(world_links.ranks) + " ranks, the run " +
                                std::to_string(world));
  if (tl.pipeline.ranks() != s.ranks || tl.world.ranks() != world_links.ranks)
    throw std::invalid_argument(
        "simulate_run: timelines for " + std::to_string(tl.pipeline.ranks()) + " and " +
        std::to_string(tl.world.ranks()) + " ranks, the run " + std::to_string(s.ranks) + " and " +
        std::to_string(world_links.ranks));
  std::vector<trace::Trace> out;
  std::vector<int64_t> start(s.ranks, 0);  // absolute
  // As the previous iteration left them; at the launch, no loss met yet.
  std::vector<TcpConn> history = LinkState::launch(links);
  // The state the previous iteration started from (RunTimeline::fixed).
  std::vector<int64_t> prev_offsets;
  std::vector<TcpConn> prev_history;
  int64_t prev_origin = 0;
  for (int i = 0; i < iterations; ++i) {
    const int64_t origin = *std::min_element(start.begin(), start.end());
    if (tl.on_start && !tl.on_start(i, origin, tl)) break;
    IterationSetup setup;
    for (int64_t x : start) setup.start_ns.push_back(x - origin);
    if (tl.fixed && !out.empty() && setup.start_ns == prev_offsets &&
        same_state(history, prev_history)) {
      const int64_t period = origin - prev_origin;  // this one repeats the previous one
      trace::Trace t = out.back();
      for (auto& ev : t.events) ev.start_ns += period, ev.end_ns += period;
      for (auto& x : start) x += period;
      prev_origin = origin;
      out.push_back(std::move(t));
      continue;
    }
    prev_offsets = setup.start_ns;
    prev_history = history;
    prev_origin = origin;
    TimedLinks wire(links, tl.pipeline, origin, history, w.send_priority);
    TimedLinks small(links, tl.pipeline, origin);  // the gradient norm's few bytes
    const int per_replica = s.ranks / std::max(1, s.replicas);
    if (w.grad_norm && per_replica > 1)
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
    trace::Trace t = simulate(s, costs, links, setup, wire);
    history = wire.history();
    for (auto& ev : t.events) ev.start_ns += origin, ev.end_ns += origin;
    if (w.iteration_barrier) {
      TimedLinks barrier(world_links, tl.world, 0);
      start = barrier_release(t, start, world, [&](int from, int to, int64_t b, int64_t at) {
        note_send(history, links, from, to, at - origin);  // history: this iteration's clock
        return barrier.arrival(from, to, b, at);
      });
    } else {
      std::vector<int64_t> end = start;
      for (const auto& ev : t.events) end[ev.rank] = std::max(end[ev.rank], ev.end_ns);
      const int64_t last = *std::max_element(end.begin(), end.end());
      start.assign(s.ranks, last);
    }
    shift_history(history, *std::min_element(start.begin(), start.end()) - origin);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace xdc::sim
