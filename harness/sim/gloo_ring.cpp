#include "harness/sim/gloo_ring.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <tuple>

namespace xdc::sim {

namespace {

int64_t round_up(int64_t x, int64_t to) {
  return (x + to - 1) / to * to;
}

// Rank r's step i of one phase: what it posts, and what its waits need.
struct Step {
  int64_t send_bytes = 0, recv_bytes = 0;  // <= 0: nothing to send / receive
  int64_t post = -1;
  int64_t notified = -1;  // the send's receiver's NOTIFY_RECV_READY arrived
  bool data_queued = false;
  int64_t departed = -1;  // the data left (waitSend)
  int64_t received = -1;  // the data from r + 1 arrived (waitRecv)
  int64_t complete = -1;
};

struct Ring {
  const GlooCollective* c = nullptr;
  int n = 0;
  int steps = 0;                  // S - 2 posting steps per phase
  std::vector<Step> step;         // [phase][i][r]
  std::vector<int> cursor;        // [phase][r]: the next step to post
  std::vector<int64_t> phase_at;  // [phase][r]: when the phase's loop starts, -1 unknown
  std::vector<int64_t> done;      // [r]
  Step& at(int p, int i, int r) { return step[(static_cast<size_t>(p) * steps + i) * n + r]; }
};

enum Kind { kPost, kSendData, kNotifyArrives, kDataArrives };
// (time, kind, ring, phase, step, rank, ticket): posts before arrivals at one time.
using Event = std::tuple<int64_t, int, size_t, int, int, int, int64_t>;

// One collective's ring: each rank's steps of both phases, their sizes, and phase 0
// starting on each rank at its entry.
Ring make_ring(const GlooCollective& c) {
  Ring g;
  g.c = &c;
  g.n = static_cast<int>(c.ranks.size());
  g.done = c.enter;
  if (g.n < 2 || c.bytes <= 0) return g;
  const GlooRingShape s = gloo_ring_shape(c.bytes, g.n, 4);
  const int64_t per_rank = s.segments / g.n;
  g.steps = static_cast<int>(s.segments - 2);
  g.step.resize(static_cast<size_t>(2) * g.steps * g.n);
  g.cursor.assign(static_cast<size_t>(2) * g.n, 0);
  g.phase_at.assign(static_cast<size_t>(2) * g.n, -1);
  auto length = [&](int64_t segment) {
    return std::min(s.segment_bytes, c.bytes - (segment % s.segments) * s.segment_bytes);
  };
  for (int r = 0; r < g.n; ++r) {
    for (int i = 0; i < g.steps; ++i) {
      // Reduce-scatter: send segment (r+1)*per_rank + i, receive (r+2)*per_rank + i;
      // allgather: send r*per_rank + i, receive (r+1)*per_rank + i (allreduce.cc).
      g.at(0, i, r).send_bytes = length((r + 1) * per_rank + i);
      g.at(0, i, r).recv_bytes = length((r + 2) * per_rank + i);
      g.at(1, i, r).send_bytes = length(r * per_rank + i);
      g.at(1, i, r).recv_bytes = length((r + 1) * per_rank + i);
    }
    g.phase_at[r] = c.enter[static_cast<size_t>(r)];
  }
  return g;
}

}  // namespace

GlooRingShape gloo_ring_shape(int64_t bytes, int ranks, int64_t element_bytes) {
  GlooRingShape s;
  const int64_t e = std::max<int64_t>(element_bytes, 1), n = std::max(ranks, 1);
  const int64_t most = e * (kGlooMaxSegmentBytes / e);
  s.segment_bytes = round_up(std::min((bytes + 2 * n - 1) / (2 * n), most), e);
  s.segments = round_up(
      std::max(s.segment_bytes > 0 ? (bytes + s.segment_bytes - 1) / s.segment_bytes : int64_t{0},
               2 * n),
      n);
  return s;
}

std::vector<std::vector<int64_t>> gloo_ring_allreduce(const std::vector<GlooCollective>& colls,
                                                      sched::MessageTiming& wire) {
  std::vector<Ring> rings;
  rings.reserve(colls.size());
  for (const GlooCollective& c : colls) rings.push_back(make_ring(c));
  std::priority_queue<Event, std::vector<Event>, std::greater<>> q;
  const sched::Action none{};

  // Posts rank r's steps of phase p that its waits allow; ends the phase (and starts the
  // next, or leaves the collective) once every step has completed.
  std::function<void(size_t, int, int)> advance = [&](size_t k, int p, int r) {
    Ring& g = rings[k];
    int& i = g.cursor[static_cast<size_t>(p) * g.n + r];
    for (; i < g.steps; ++i) {
      int64_t t = g.phase_at[static_cast<size_t>(p) * g.n + r];
      if (i >= 1) t = std::max(t, g.at(p, i - 1, r).post);
      if (i >= 2) {
        if (g.at(p, i - 2, r).complete < 0) return;
        t = std::max(t, g.at(p, i - 2, r).complete);
      }
      g.at(p, i, r).post = t;
      q.emplace(t, kPost, k, p, i, r, -1);
    }
    int64_t end = g.phase_at[static_cast<size_t>(p) * g.n + r];
    for (int j = 0; j < g.steps; ++j) {
      if (g.at(p, j, r).complete < 0) return;
      end = std::max(end, g.at(p, j, r).complete);
    }
    if (p == 1) {
      g.done[static_cast<size_t>(r)] = end;
    } else if (g.phase_at[static_cast<size_t>(g.n) + r] < 0) {
      g.phase_at[static_cast<size_t>(g.n) + r] = end;
      advance(k, 1, r);
    }
  };
  auto check_complete = [&](size_t k, int p, int i, int r) {
    Step& x = rings[k].at(p, i, r);
    if (x.complete >= 0 || x.post < 0) return;
    if (x.recv_bytes > 0 && x.received < 0) return;
    if (x.send_bytes > 0 && x.departed < 0) return;
    x.complete = std::max({x.post, x.received, x.departed});
    advance(k, p, r);
  };
  auto try_send = [&](size_t k, int p, int i, int r) {
    Step& x = rings[k].at(p, i, r);
    if (x.post < 0 || x.notified < 0 || x.data_queued) return;
    x.data_queued = true;
    q.emplace(std::max(x.post, x.notified), kSendData, k, p, i, r, -1);
  };

  for (size_t k = 0; k < rings.size(); ++k)
    if (rings[k].steps > 0)
      for (int r = 0; r < rings[k].n; ++r) advance(k, 0, r);
  while (!q.empty()) {
    const auto [now, kind, k, p, i, r, ticket] = q.top();
    q.pop();
    Ring& g = rings[k];
    Step& x = g.at(p, i, r);
    const int up = g.c->ranks[static_cast<size_t>((r + 1) % g.n)];
    const int down = g.c->ranks[static_cast<size_t>((r + g.n - 1) % g.n)];
    const int self = g.c->ranks[static_cast<size_t>(r)];
    if ((kind == kNotifyArrives || kind == kDataArrives) && ticket >= 0) {
      const auto at = static_cast<int64_t>(wire.current(ticket).arrival);
      if (at > now) {  // a later send slowed it
        q.emplace(at, kind, k, p, i, r, ticket);
        continue;
      }
    }
    switch (kind) {
      case kPost:
        if (x.recv_bytes > 0) {  // NOTIFY_RECV_READY to the rank that sends it
          const sched::Transfer n =
              wire.send(self, up, kGlooPreambleBytes, static_cast<double>(now), none);
          q.emplace(static_cast<int64_t>(n.arrival), kNotifyArrives, k, p, i, r, n.ticket);
        }
        if (x.send_bytes > 0) {  // NOTIFY_SEND_READY, then the data once notified
          wire.send(self, down, kGlooPreambleBytes, static_cast<double>(now), none);
          try_send(k, p, i, r);
        }
        check_complete(k, p, i, r);
        break;
      case kSendData: {
        const sched::Transfer d = wire.send(self, down, x.send_bytes + kGlooPreambleBytes,
                                            static_cast<double>(now), none);
        x.departed = now;
        q.emplace(static_cast<int64_t>(d.arrival), kDataArrives, k, p, i, r, d.ticket);
        check_complete(k, p, i, r);
        break;
      }
      case kNotifyArrives: {  // at r + 1, whose send of this step waited for it
        const int s = (r + 1) % g.n;
        g.at(p, i, s).notified = now;
        try_send(k, p, i, s);
        break;
      }
      case kDataArrives: {  // at r - 1
        const int to = (r + g.n - 1) % g.n;
        g.at(p, i, to).received = now;
        check_complete(k, p, i, to);
        break;
      }
      default:
        break;
    }
  }
  std::vector<std::vector<int64_t>> out;
  out.reserve(rings.size());
  for (Ring& g : rings) out.push_back(std::move(g.done));
  return out;
}

}  // namespace xdc::sim
