#include "harness/sim/simulator.h"

#include <functional>
#include <queue>
#include <stdexcept>
#include <string>

namespace xdc::sim {

using sched::Action;
using sched::Kind;

namespace {
// Arrival time of each message, by (direction, receiving stage, microbatch); -1 = not sent.
struct Mailbox {
  int m;
  std::vector<int64_t> at;
  Mailbox(int stages, int mbs) : m(mbs), at(2 * static_cast<size_t>(stages) * mbs, -1) {}
  int64_t& slot(bool grad, int stage, int mb) {
    return at[(static_cast<size_t>(grad) * (at.size() / 2)) + static_cast<size_t>(stage) * m + mb];
  }
};
}  // namespace

trace::Trace simulate(const sched::Schedule& s, const CostModel& costs, const LinkModel& links) {
  if (costs.stages() != s.stages)
    throw std::invalid_argument("cost model has " + std::to_string(costs.stages()) +
                                " stages, the schedule " + std::to_string(s.stages));
  if (links.ranks != s.ranks)
    throw std::invalid_argument("link model has " + std::to_string(links.ranks) +
                                " ranks, the schedule " + std::to_string(s.ranks));
  trace::Trace t;
  t.name = s.name;
  t.ranks = s.ranks;
  t.microbatches = s.microbatches;
  size_t total = 0;
  for (const auto& row : s.actions) total += row.size();
  t.events.reserve(total);

  // Ranks act in global time order (a min-heap on each rank's clock), so that messages
  // from different ranks enter a shared channel in the order they were sent.
  Mailbox mail(s.stages, s.microbatches);
  LinkState wire(links);
  std::vector<int64_t> now(s.ranks, 0);
  std::vector<size_t> pc(s.ranks, 0);
  std::vector<char> waiting(s.ranks, 0);
  using Entry = std::pair<int64_t, int>;  // (time, rank)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (int r = 0; r < s.ranks; ++r) ready.push({0, r});

  while (!ready.empty()) {
    const int r = ready.top().second;
    ready.pop();
    const auto& row = s.actions[r];
    if (pc[r] >= row.size()) continue;
    const Action& a = row[pc[r]];
    trace::Event e{r, a.kind, a.stage, a.microbatch, now[r], now[r], 0, a.peer};
    if (a.kind == Kind::RECV_F || a.kind == Kind::RECV_B) {
      const int64_t arrival = mail.slot(a.kind == Kind::RECV_B, a.stage, a.microbatch);
      if (arrival < 0) {
        waiting[r] = 1;  // resumed by the matching SEND
        continue;
      }
      e.end_ns = std::max(now[r], arrival);
      e.bytes = a.kind == Kind::RECV_F ? costs.activation_bytes[a.stage - 1]
                                       : costs.activation_bytes[a.stage];
      now[r] = e.end_ns;
    } else if (a.kind == Kind::SEND_F || a.kind == Kind::SEND_B) {
      const bool grad = a.kind == Kind::SEND_B;
      const int to_stage = grad ? a.stage - 1 : a.stage + 1;
      e.bytes = costs.message_bytes(a);
      const Transfer x = wire.send(r, a.peer, e.bytes, now[r]);
      e.start_ns = x.start_ns;
      e.end_ns = x.end_ns;
      const int64_t arrival = x.arrival_ns;
      mail.slot(grad, to_stage, a.microbatch) = arrival;
      if (waiting[a.peer]) {
        const Action& w = s.actions[a.peer][pc[a.peer]];
        if (w.stage == to_stage && w.microbatch == a.microbatch &&
            (w.kind == Kind::RECV_B) == grad) {
          waiting[a.peer] = 0;
          ready.push({std::max(now[a.peer], arrival), a.peer});
        }
      }
    } else {
      e.end_ns = now[r] + costs.duration_ns(a);
      now[r] = e.end_ns;
    }
    t.events.push_back(e);
    ++pc[r];
    ready.push({now[r], r});
  }
  for (int r = 0; r < s.ranks; ++r)
    if (pc[r] < s.actions[r].size())
      throw std::invalid_argument("simulate: deadlock: rank " + std::to_string(r) +
                                  " waits forever at action " + std::to_string(pc[r]) + " (" +
                                  sched::to_string(s.actions[r][pc[r]]) + ")");
  return t;
}

}  // namespace xdc::sim
