#include "harness/plan/predict.h"

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "harness/common/units.h"
#include "harness/sim/link_timeline.h"
#include "harness/topology/topology.h"

namespace xdc::run {

namespace {

// The TP all-reduces inside each simulated F, B and BW, as the modeled worker runs them:
// after each of tp_allreduces equal compute slices (its own trace lane, like the run's).
void add_tp_records(const sim::CostModel& c, trace::Trace& t) {
  if (c.tp_allreduces.empty()) return;
  std::vector<trace::Event> tp;
  for (const trace::Event& e : t.events) {
    if (e.kind != sched::Kind::F && e.kind != sched::Kind::B && e.kind != sched::Kind::BW) continue;
    const int n = c.tp_allreduces[e.stage];
    const int64_t ar = c.tp_allreduce_ns[e.stage];
    const int64_t compute = (e.kind == sched::Kind::F ? c.f_ns : c.b_ns)[e.stage] - n * ar;
    for (int i = 0; i < n; ++i) {
      trace::Event r = e;
      r.kind = sched::Kind::TP_ALLREDUCE;
      r.start_ns = e.start_ns + compute * (i + 1) / n + ar * i;
      r.end_ns = r.start_ns + ar;
      r.bytes = c.tp_allreduce_bytes[e.stage];
      tp.push_back(r);
    }
  }
  t.events.insert(t.events.end(), tp.begin(), tp.end());
}

}  // namespace

std::vector<std::vector<int64_t>> action_starts(const trace::Trace& t, const sched::Schedule& s) {
  std::map<std::tuple<int, int, int, int>, int64_t> start;  // rank, kind, stage, mb
  for (const auto& ev : t.events)
    if (ev.rank < s.ranks)
      start[{ev.rank, static_cast<int>(ev.kind), ev.stage, ev.microbatch}] = ev.start_ns;
  std::vector<std::vector<int64_t>> out(s.ranks);
  for (int r = 0; r < s.ranks; ++r)
    for (const sched::Action& a : s.actions[r]) {
      const auto it = start.find({r, static_cast<int>(a.kind), a.stage, a.microbatch});
      out[r].push_back(it == start.end() ? -1 : it->second);
    }
  return out;
}

std::vector<std::vector<int64_t>> send_order(const Plan& p, const SchedulePlan& s) {
  std::vector<std::vector<int64_t>> out =
      action_starts(sim::simulate_iteration(s.schedule, s.costs, p.links, p.worker), s.schedule);
  for (int r = 0; r < s.schedule.ranks; ++r)
    for (size_t i = 0; i < out[r].size(); ++i)
      if (!sched::is_send(s.schedule.actions[r][i].kind)) out[r][i] = -1;
  return out;
}

namespace {
// Every replica simulated together (Plan::all_replicas), the WAN directions granted in
// send_order, then by replica: the replicated schedule and costs, and the worker model with
// that grant order (its events' stages are then stage % stages, as the workers trace them).
struct AllReplicas {
  sched::Schedule schedule;
  sim::CostModel costs;
  sim::WorkerModel worker;
};
AllReplicas all_replicas(const Plan& p, const SchedulePlan& s, const sim::CostModel& costs) {
  const int D = p.experiment.data_parallel, P = s.schedule.ranks, S = s.schedule.stages;
  auto key = std::make_shared<std::map<std::tuple<int, int, int>, int64_t>>();  // kind, stage, mb
  const std::vector<std::vector<int64_t>> order = send_order(p, s);
  for (int r = 0; r < P; ++r)
    for (size_t i = 0; i < order[r].size(); ++i) {
      const sched::Action& a = s.schedule.actions[r][i];
      if (order[r][i] >= 0) (*key)[{static_cast<int>(a.kind), a.stage, a.microbatch}] = order[r][i];
    }
  AllReplicas out{sched::replicated(s.schedule, D), sim::replicated(costs, D), p.worker};
  out.worker.replicas = 1;
  out.worker.send_priority = [key, D, P, S](int rank, const sched::Action& a) -> int64_t {
    const auto it = key->find({static_cast<int>(a.kind), a.stage % S, a.microbatch});
    return (it == key->end() ? 0 : it->second) * D + rank / P;
  };
  return out;
}
}  // namespace

bool changes_over_time(const Experiment& e) {
  if (!e.events.empty()) return true;
  for (const auto& l : e.topology.wan)
    if (!l.a_to_b_changes.empty() || !l.b_to_a_changes.empty()) return true;
  return false;
}

std::vector<linkctl::Direction> event_directions(const linkctl::Wan& w, const ProgressEvent& ev) {
  return ev.dc.empty() ? linkctl::link_directions(w, ev.link_a, ev.link_b, ev.direction)
                       : linkctl::dc_directions(w, ev.dc);
}

namespace {

// One change of one WAN direction at a time of the simulated run.
struct TimedChange {
  int64_t at_ns;
  std::string from, to;
  topo::WanChange change;
  std::string source;
};

// The links of the run from each change's time on: the experiment's topology with every
// change up to then applied, as link_model / world_link_model see it, and which rank
// pairs' routes cross a down direction (routes as built: the topology's, fixed).
void build_timelines(const Experiment& e, std::vector<TimedChange> changes, sim::RunTimeline& tl) {
  std::stable_sort(changes.begin(), changes.end(),
                   [](const TimedChange& a, const TimedChange& b) { return a.at_ns < b.at_ns; });
  const topo::Routes routes = topo::compute_routes(e.topology);
  const std::vector<std::string>& pipe_hosts = e.placement[0];
  const std::vector<std::string> world_hosts = e.pipeline_hosts();
  Experiment cur = e;
  std::set<std::string> down;  // "a->b"
  auto params_of = [&cur](const std::string& from, const std::string& to) -> netem::LinkParams& {
    for (auto& l : cur.topology.wan) {
      if (l.a == from && l.b == to) return l.a_to_b;
      if (l.b == from && l.a == to) return l.b_to_a;
    }
    throw std::logic_error("no WAN direction " + from + "->" + to);
  };
  auto down_flags = [&](const std::vector<std::string>& hosts) {
    const size_t n = hosts.size();
    std::vector<char> out(n * n, 0);
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < n; ++b) {
        const std::string& da = e.topology.find_host(hosts[a])->dc;
        const std::string& db = e.topology.find_host(hosts[b])->dc;
        if (da == db) continue;
        const auto path = routes.path(da, db);
        for (size_t i = 0; i + 1 < path.size(); ++i)
          if (down.count(path[i] + "->" + path[i + 1])) out[a * n + b] = 1;
      }
    return out;
  };
  tl.pipeline = sim::LinkTimeline(static_cast<int>(pipe_hosts.size()));
  tl.world = sim::LinkTimeline(static_cast<int>(world_hosts.size()));
  for (size_t i = 0; i < changes.size();) {
    const int64_t at = changes[i].at_ns;
    for (; i < changes.size() && changes[i].at_ns == at; ++i) {
      const TimedChange& c = changes[i];
      netem::LinkParams& p = params_of(c.from, c.to);
      p = topo::applied(p, c.change);
      if (c.change.down) {
        if (*c.change.down)
          down.insert(c.from + "->" + c.to);
        else
          down.erase(c.from + "->" + c.to);
      }
    }
    sim::LinkModel pipe = link_model(cur), world = world_link_model(cur).by_rank();
    tl.pipeline.add({at, std::move(pipe.links), std::move(pipe.tcp), down_flags(pipe_hosts)});
    tl.world.add({at, std::move(world.links), std::move(world.tcp), down_flags(world_hosts)});
  }
}

}  // namespace

namespace {

// The run from new connections (Prediction::run), the steady state's iteration time given.
// loss_seed: as sim::WorkerModel's (0: random losses evenly spaced).
RunSeries predict_series(const Plan& p, const SchedulePlan& s, const sim::CostModel& costs,
                         const std::optional<AllReplicas>& all, int64_t launch_to_measured_ns,
                         int64_t steady_ns, uint64_t loss_seed = 0) {
  const Experiment& e = p.experiment;
  RunSeries out;
  // The launch on the simulated clock: the warmup iterations at their steady-state time.
  int64_t launch_ns = 0;
  if (launch_to_measured_ns >= 0) {
    const int64_t warm = e.warmup * steady_ns;
    launch_ns = std::min<int64_t>(0, warm - launch_to_measured_ns);
  }
  std::vector<TimedChange> changes;
  for (const auto& l : e.topology.wan)
    for (int dir = 0; dir < 2; ++dir)
      for (const auto& c : dir ? l.b_to_a_changes : l.a_to_b_changes)
        changes.push_back({launch_ns + static_cast<int64_t>(c.at_us) * 1000, dir ? l.b : l.a,
                           dir ? l.a : l.b, c,
                           c.pos.file + ":" + std::to_string(c.pos.line) + " (at " +
                               format_duration(c.at_us) + ")"});
  // Every replica together (Plan::all_replicas): its timeline is the world's.
  auto timelines = [&](sim::RunTimeline& t) {
    build_timelines(e, changes, t);
    if (all) t.pipeline = t.world;
  };
  sim::RunTimeline tl;
  timelines(tl);
  tl.fixed = !changes_over_time(e);  // the topology's changes and the events: none
  const linkctl::Wan wan = linkctl::wan_of(e.topology);
  size_t next_event = 0;
  int64_t t0 = 0;  // measured iteration 0's start on the simulated clock
  tl.on_start = [&](int iteration, int64_t start_ns, sim::RunTimeline& t) {
    const int measured = iteration - e.warmup;
    if (measured == 0) t0 = start_ns;  // also when the run ends here (a kill at iteration 0)
    bool added = false;
    for (; next_event < e.events.size() && e.events[next_event].at_iteration <= measured;
         ++next_event) {
      const ProgressEvent& ev = e.events[next_event];
      if (ev.kill_ranks) {
        out.ended = "DC " + ev.dc + "'s ranks killed by the event at " + ev.source();
        out.changes.push_back(
            {static_cast<double>(start_ns) / 1e9, "dc_kill_ranks " + ev.dc, ev.source()});
        return false;
      }
      for (const auto& [from, to] : event_directions(wan, ev)) {
        topo::WanChange c = ev.change;
        if (ev.down_for_us) c.down = true;
        changes.push_back({start_ns, from, to, c, ev.source()});
        if (ev.down_for_us) {
          topo::WanChange up;
          up.down = false;
          changes.push_back({start_ns + static_cast<int64_t>(*ev.down_for_us) * 1000, from, to, up,
                             ev.source() + " (up after " + format_duration(*ev.down_for_us) + ")"});
        }
      }
      added = true;
    }
    if (added) timelines(t);
    return true;
  };
  sim::WorkerModel worker = all ? all->worker : p.worker;
  worker.loss_seed = loss_seed;
  std::vector<trace::Trace> its =
      all ? sim::simulate_run(all->schedule, all->costs, p.world_links, worker,
                              e.warmup + e.iterations, tl)
          : sim::simulate_run(s.schedule, costs, p.links, worker, e.warmup + e.iterations, tl);
  if (all)
    for (trace::Trace& t : its)
      for (trace::Event& ev : t.events) ev.stage %= s.schedule.stages;
  for (size_t i = 0; i < its.size(); ++i) {
    const int64_t start = std::min_element(its[i].events.begin(), its[i].events.end(),
                                           [](const trace::Event& a, const trace::Event& b) {
                                             return a.start_ns < b.start_ns;
                                           })
                              ->start_ns;
    if (static_cast<int>(i) < e.warmup) continue;
    out.iteration_s.push_back(static_cast<double>(trace::analyze(its[i]).iteration_ns) / 1e9);
    out.start_s.push_back(static_cast<double>(start) / 1e9);
  }
  for (double& x : out.start_s) x -= static_cast<double>(t0) / 1e9;
  std::stable_sort(changes.begin(), changes.end(),
                   [](const TimedChange& a, const TimedChange& b) { return a.at_ns < b.at_ns; });
  // The changes made while the simulated run lasted (a looped trace goes on for an hour).
  const int64_t end_ns = its.empty() ? 0 : [&] {
    int64_t e = 0;
    for (const auto& ev : its.back().events) e = std::max(e, ev.end_ns);
    return e;
  }();
  std::vector<RunSeries::Applied> applied;
  for (const auto& c : changes) {
    if (c.at_ns > end_ns) continue;
    const std::string kind =
        c.change.down ? (*c.change.down ? "link_down" : "link_up") : "link_set";
    applied.push_back(
        {static_cast<double>(c.at_ns - t0) / 1e9, kind + " " + c.from + "->" + c.to, c.source});
  }
  for (auto& k : out.changes) k.t_s -= static_cast<double>(t0) / 1e9;  // absolute before
  applied.insert(applied.end(), out.changes.begin(), out.changes.end());
  out.changes = std::move(applied);
  return out;
}

}  // namespace

double Prediction::iteration_s() const {
  if (!band_runs_s.empty())
    return std::accumulate(band_runs_s.begin(), band_runs_s.end(), 0.0) /
           static_cast<double>(band_runs_s.size());
  if (run.iteration_s.empty()) return steady_iteration_s();
  return std::accumulate(run.iteration_s.begin(), run.iteration_s.end(), 0.0) /
         static_cast<double>(run.iteration_s.size());
}

double Prediction::steady_iteration_s() const {
  return static_cast<double>(summary.iteration_ns) / 1e9;
}

Prediction predict(const Plan& p, const SchedulePlan& s, const sim::CostModel& costs,
                   const PredictOptions& o) {
  Prediction out;
  std::optional<AllReplicas> all;
  if (!p.all_replicas) {
    out.trace = sim::simulate_iteration(s.schedule, costs, p.links, p.worker);
  } else {
    all = all_replicas(p, s, costs);
    out.trace = sim::simulate_iteration(all->schedule, all->costs, p.world_links, all->worker);
    for (trace::Event& ev : out.trace.events) ev.stage %= s.schedule.stages;
  }
  out.summary = trace::analyze(out.trace);
  add_tp_records(costs, out.trace);
  if (o.run)
    out.run = predict_series(p, s, costs, all, o.launch_to_measured_ns, out.summary.iteration_ns);
  const bool drawn = random_loss(p) || jittered(p) || (all ? all->costs : costs).noisy();
  if (o.run && o.band_runs > 0 && drawn)
    for (int k = 1; k <= o.band_runs; ++k) {
      const RunSeries r = predict_series(p, s, costs, all, o.launch_to_measured_ns,
                                         out.summary.iteration_ns, static_cast<uint64_t>(k));
      if (!r.iteration_s.empty())
        out.band_runs_s.push_back(std::accumulate(r.iteration_s.begin(), r.iteration_s.end(), 0.0) /
                                  static_cast<double>(r.iteration_s.size()));
    }
  return out;
}

std::array<double, 2> Prediction::band_s() const {
  if (band_runs_s.size() < 2) return {iteration_s(), iteration_s()};
  std::vector<double> v = band_runs_s;
  std::sort(v.begin(), v.end());
  auto at = [&v](double q) {  // linear between order statistics
    const double x = q * static_cast<double>(v.size() - 1);
    const auto i = static_cast<size_t>(x);
    return i + 1 < v.size() ? v[i] + (x - static_cast<double>(i)) * (v[i + 1] - v[i]) : v[i];
  };
  return {at(0.05), at(0.95)};
}

bool random_loss(const Plan& p) {
  auto lossy = [](const sim::LinkModel& m) {
    return std::any_of(m.tcp.begin(), m.tcp.end(),
                       [](const sim::TcpPath& t) { return t.loss > 0; });
  };
  return lossy(p.links) || lossy(p.world_links) || lossy(p.worker.dp_links);
}

bool jittered(const Plan& p) {
  auto any = [](const sim::LinkModel& m) {
    return std::any_of(m.tcp.begin(), m.tcp.end(),
                       [](const sim::TcpPath& t) { return !t.jitter_hops.empty(); });
  };
  return any(p.links) || any(p.world_links) || any(p.worker.dp_links);
}

}  // namespace xdc::run
