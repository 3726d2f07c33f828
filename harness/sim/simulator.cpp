#include "harness/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "common/mix64.h"
#include "workloads/schedule/engine.h"

namespace xdc::sim {

using sched::Action;
using sched::Kind;

namespace {
// The link model as the engine's message hook: LinkState (link_model.h) times each
// message on its pair's link and channel (latency + bytes / bandwidth, or OpenMPI over
// one TCP connection per pair when the model has TCP paths).
class LinkTiming : public sched::MessageTiming {
 public:
  LinkTiming(const LinkModel& links, const IterationSetup& it)
      : wire_(links, it.tcp_history), priority_(it.send_priority) {}
  std::vector<TcpConn> history() { return wire_.history(); }
  sched::Transfer send(int from, int to, int64_t bytes, double ready, const Action& a) override {
    return convert(wire_.post(from, to, bytes, static_cast<int64_t>(ready),
                              priority_ ? priority_(from, a) : -1));
  }
  sched::Transfer current(int64_t ticket) override { return convert(wire_.current(ticket)); }
  double port_drop_chance(int rank, double at, int64_t bytes) override {
    return wire_.port_drop_chance(rank, static_cast<int64_t>(at), bytes);
  }
  void note_port_backlog(int rank, double at, int64_t window, int64_t bdp, int64_t skb) override {
    wire_.note_port_backlog(rank, 0, {static_cast<int64_t>(at), window, bdp, skb});
  }

 private:
  static sched::Transfer convert(const Transfer& x) {
    return {static_cast<double>(x.start_ns), static_cast<double>(x.end_ns),
            static_cast<double>(x.arrival_ns), x.ticket};
  }
  LinkState wire_;
  std::function<int64_t(int, const Action&)> priority_;
};
}  // namespace

trace::Trace simulate(const sched::Schedule& s, const CostModel& costs, const LinkModel& links,
                      const IterationSetup& it) {
  LinkTiming timing(links, it);
  trace::Trace t = simulate(s, costs, links, it, timing);
  if (it.tcp_after) *it.tcp_after = timing.history();
  return t;
}

trace::Trace simulate(const sched::Schedule& s, const CostModel& costs, const LinkModel& links,
                      const IterationSetup& it, sched::MessageTiming& timing) {
  if (costs.stages() != s.stages)
    throw std::invalid_argument("cost model has " + std::to_string(costs.stages()) +
                                " stages, the schedule " + std::to_string(s.stages));
  if (links.ranks != s.ranks)
    throw std::invalid_argument("link model has " + std::to_string(links.ranks) +
                                " ranks, the schedule " + std::to_string(s.ranks));
  sched::Costs c;
  const uint64_t noise = costs.noisy() ? it.noise_key : 0;
  c.duration = [&costs, noise](int rank, const Action& a) {
    const auto mean = static_cast<double>(costs.duration_ns(a));
    if (noise == 0) return mean;
    const uint64_t key = noise ^ (kGoldenGamma * static_cast<uint64_t>(rank + 1));
    return std::round(mean * costs.noise_factor(a, key, noise));  // integer ns, as the rest
  };
  c.bytes = [&costs](const Action& a) { return costs.message_bytes(a); };
  // A pair's plan depends only on its halves' stages and kinds: one per combination.
  std::map<std::tuple<int, int, Kind>, double> pair_ns;
  c.pair = [&costs, &pair_ns](int, const Action& f, const Action& b) {
    auto [it, fresh] = pair_ns.try_emplace({f.stage, b.stage, b.kind}, 0.0);
    if (fresh) it->second = static_cast<double>(costs.pair_ns(f, b));
    return it->second;
  };
  if (!costs.tp_port_wait_ns.empty())
    c.end = [&costs, &timing](int rank, const Action& a, double start, double d) {
      const double end = costs.end_ns(a, start, d, [&](double at) {
        return timing.port_drop_chance(rank, at, costs.tp_first_bytes[a.stage]);
      });
      if (costs.tp_root_backlog(a))
        timing.note_port_backlog(rank, end, costs.tp_window_bytes[a.stage],
                                 costs.tp_bdp_bytes[a.stage], costs.tp_first_bytes[a.stage]);
      return end;
    };
  if (!it.start_ns.empty() && static_cast<int>(it.start_ns.size()) != s.ranks)
    throw std::invalid_argument("start times for " + std::to_string(it.start_ns.size()) +
                                " ranks, the schedule has " + std::to_string(s.ranks));
  sched::Iteration iteration;
  iteration.start.assign(it.start_ns.begin(), it.start_ns.end());
  if (it.grad_norm)
    iteration.gate = [&it](const std::vector<double>& enter) {
      const std::vector<int64_t> done =
          it.grad_norm(std::vector<int64_t>(enter.begin(), enter.end()));
      return std::vector<double>(done.begin(), done.end());
    };
  const sched::Execution x = sched::execute(s, c, timing, iteration);
  if (!x.ok()) throw std::invalid_argument("simulate: " + x.deadlock_message());

  trace::Trace t;
  t.name = s.name;
  t.ranks = s.ranks;
  t.microbatches = s.microbatches;
  t.events.reserve(x.order.size());
  for (const auto& [r, i] : x.order) {  // in execution order, as ranks acted
    const Action& a = s.actions[r][i];
    const sched::Record& rec = x.records[r][i];
    int64_t bytes = 0;
    if (sched::is_send(a.kind)) bytes = costs.message_bytes(a);
    if (a.kind == Kind::RECV_F) bytes = costs.activation_bytes[a.stage - 1];
    if (a.kind == Kind::RECV_B) bytes = costs.activation_bytes[a.stage];
    // Integer ns in, so every time is an integer below 2^53: the casts are exact.
    int connections = 0;  // trace.h: a message's connections
    if (a.peer >= 0) {
      const bool send = sched::is_send(a.kind);
      const TcpPath* path = links.tcp.empty() ? nullptr
                            : send            ? &links.path(r, a.peer)
                                              : &links.path(a.peer, r);
      connections = path ? std::max(path->connections, 1) : 1;
    }
    t.events.push_back({r, a.kind, a.stage, a.microbatch, static_cast<int64_t>(rec.start),
                        static_cast<int64_t>(rec.end), bytes, a.peer, connections});
  }
  return t;
}

}  // namespace xdc::sim
