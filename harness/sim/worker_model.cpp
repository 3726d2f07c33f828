#include "harness/sim/worker_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

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
  // Reduce: in round r (1-based) a rank at a multiple of 2^r receives the partial sum of
  // the rank 2^(r-1) above it; the others have sent theirs and left.
  std::vector<int64_t> have = enter;
  for (int half = 1; half < p; half *= 2)
    for (int v = 0; v + half < p; v += 2 * half)
      have[v] = std::max(have[v], have[v + half] + message_ns(links, v + half, v, bytes));
  // Broadcast: rank v != 0 receives from v minus its highest bit, which sends to all its
  // children at once when it has the result.
  std::vector<int64_t> done(p);
  done[0] = have[0];
  for (int v = 1; v < p; ++v) {
    int high = 1;
    while (high * 2 <= v) high *= 2;
    const int parent = v - high;
    done[v] = std::max(have[v], done[parent] + message_ns(links, parent, v, bytes));
  }
  return done;
}

std::vector<int64_t> dissemination_barrier(const std::vector<int64_t>& enter,
                                           const LinkModel& links) {
  const int p = static_cast<int>(enter.size());
  if (links.ranks != p)
    throw std::invalid_argument("dissemination_barrier: " + std::to_string(p) +
                                " ranks, links for " + std::to_string(links.ranks));
  std::vector<int64_t> t = enter;
  for (int step = 1; step < p; step *= 2) {
    std::vector<int64_t> next(p);
    for (int r = 0; r < p; ++r) {
      const int from = (r - step % p + p) % p;
      next[r] = std::max(t[r], t[from] + message_ns(links, from, r, 0));
    }
    t = std::move(next);
  }
  return t;
}

trace::Trace simulate_iteration(const sched::Schedule& s, const CostModel& costs,
                                const LinkModel& links, const WorkerModel& w) {
  IterationSetup setup;
  if (w.grad_norm && s.ranks > 1)
    setup.grad_norm = [&links](const std::vector<int64_t>& enter) {
      return binomial_allreduce(enter, links, sizeof(double));
    };
  const int world = s.ranks * std::max(1, w.replicas);
  const LinkModel& world_links = w.world.ranks ? w.world : links;
  if (w.iteration_barrier && world_links.ranks != world)
    throw std::invalid_argument("simulate_iteration: world link model has " +
                                std::to_string(world_links.ranks) + " ranks, the run " +
                                std::to_string(world));
  // Iterate until the start offsets repeat; when they cycle through several (they can
  // alternate), the member of the cycle closest to the cycle's mean time.
  setup.start_ns.assign(s.ranks, 0);
  std::vector<std::vector<int64_t>> starts;  // [k]: the offsets traces[k] started from
  std::vector<trace::Trace> traces;
  for (int i = 0; i < 16; ++i) {
    starts.push_back(setup.start_ns);
    traces.push_back(simulate(s, costs, links, setup));
    if (!w.iteration_barrier) break;
    // Each rank enters the barrier when its last action ends (a SEND is posted and left
    // to complete); replicas run alike.
    std::vector<int64_t> end = setup.start_ns;
    for (const auto& ev : traces.back().events)
      if (!sched::is_comm(ev.kind) || ev.kind == sched::Kind::RECV_F ||
          ev.kind == sched::Kind::RECV_B)
        end[ev.rank] = std::max(end[ev.rank], ev.end_ns);
    std::vector<int64_t> enter(world);
    for (int q = 0; q < world; ++q) enter[q] = end[q % s.ranks];
    const std::vector<int64_t> out = dissemination_barrier(enter, world_links);
    std::vector<int64_t> next(out.begin(), out.begin() + s.ranks);  // replica 0
    const int64_t first = *std::min_element(next.begin(), next.end());
    for (auto& x : next) x -= first;
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
