// libnbc's collectives as the workers' OpenMPI runs them (worker_model.h): the binomial
// all-reduce with its host memory work (HostMemory) and the dissemination barrier.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "harness/sim/link_model.h"
#include "harness/sim/worker_model.h"

namespace xdc::sim {
namespace {

int64_t message_ns(const LinkModel& l, int from, int to, int64_t bytes) {
  if (from == to) return 0;
  const Link& k = l.at(from, to);
  return k.latency_ns + k.transfer_ns(bytes);
}

}  // namespace

int64_t HostMemory::copy_ns(int64_t bytes, int members) const {
  int rounds = 0;
  while ((1 << rounds) < members) ++rounds;
  const double rate = bytes >= kFreshBufferBytes ? fresh_copy_bps : warm_copy_bps;
  if (rounds % 2 == 0 || bytes <= 0 || !(rate > 0)) return 0;
  return std::llround(static_cast<double>(bytes) * 1e9 / rate);
}

int64_t HostMemory::sum_ns(int64_t bytes) const {
  if (bytes <= 0 || !(sum_bps > 0)) return 0;
  return std::llround(static_cast<double>(bytes) * 1e9 / sum_bps);
}

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
                                        bool rendezvous, const MessageArrival& message,
                                        const HostMemory& memory) {
  const int p = static_cast<int>(enter.size());
  // Reduce: in round r (1-based) a rank at a multiple of 2^r receives the partial sum of
  // the rank 2^(r-1) above it and adds it to its own; the others have sent theirs and left.
  std::vector<int64_t> have = enter;
  const int64_t copy = memory.copy_ns(bytes, p), sum = memory.sum_ns(bytes);
  for (int64_t& h : have) h += copy;
  for (int half = 1; half < p; half *= 2)
    for (int v = 0; v + half < p; v += 2 * half) {
      const int64_t sent = rendezvous ? std::max(have[v + half], have[v]) : have[v + half];
      have[v] = std::max(have[v], message(v + half, v, bytes, sent)) + sum;
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

int64_t allreduce_ns(const LinkModel& m, int64_t bytes, int64_t idle_before_ns,
                     const HostMemory& memory) {
  if (m.ranks < 2 || bytes <= 0) return 0;
  const int64_t eager = m.tcp.empty() ? kOpenMpiEagerLimit : m.tcp.front().eager_limit;
  LinkState wire(m, idle_before_ns);
  const auto done = binomial_allreduce(
      std::vector<int64_t>(static_cast<size_t>(m.ranks), 0), bytes,
      bytes > eager - kEagerHeaderBytes,
      [&wire](int from, int to, int64_t b, int64_t at) {
        return wire.send(from, to, b, at).arrival_ns;
      },
      memory);
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

}  // namespace xdc::sim
