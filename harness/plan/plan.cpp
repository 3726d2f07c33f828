#include "harness/plan/plan.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "common/input_error.h"
#include "harness/common/units.h"
#include "harness/launch/launcher.h"
#include "harness/plan/links.h"
#include "harness/plan/predict.h"
#include "harness/plan/prefill.h"
#include "harness/sim/link_timeline.h"
#include "harness/sim/setup.h"
#include "netem/shaper/loss_model.h"
#include "netem/shaper/queue_sizing.h"
#include "workloads/model/fragments.h"
#include "workloads/model/payload.h"
#include "workloads/model/stage.h"
#include "workloads/schedule/csv.h"
#include "workloads/schedule/generators.h"
#include "workloads/schedule/validate.h"
#include "workloads/worker/poll.h"

namespace xdc::run {
namespace {

// Of one TP rank of t: its share of the layers' matrices, the norms, embedding and head whole.
int64_t shape_layer_params(const sim::ModelShape& m, int t) {
  const int64_t h = m.hidden, kv = static_cast<int64_t>(m.hidden) / m.heads * m.kv_heads;
  return (2 * h * h + 2 * h * kv + 3 * h * m.ffn) / t + 2 * h;
}
int64_t shape_stage_params(const sim::ModelShape& m, int layers, bool first, bool last, int t) {
  const int64_t h = m.hidden;
  return shape_layer_params(m, t) * layers + (first ? int64_t{m.vocab} * h : 0) +
         (last ? int64_t{m.vocab} * h : 0);
}

// bf16 gradients of each stage's parameters (layers split as shape_costs splits them).
std::vector<int64_t> shape_grad_bytes(const Experiment& e, int stages) {
  const sim::ModelShape& m = sim::find_model(e.compute.shape);
  std::vector<int64_t> out;
  for (int st = 0; st < stages; ++st) {
    const int layers = m.layers / stages + (st < m.layers % stages ? 1 : 0);
    out.push_back(2 * shape_stage_params(m, layers, st == 0, st == stages - 1, e.tensor_parallel));
  }
  return out;
}

}  // namespace

std::vector<int64_t> outer_sync_values(const Experiment& e, int stages) {
  std::vector<int64_t> out;
  if (e.compute.mode == Compute::Mode::kReal) {
    for (const auto& range : model::split_layers(e.model, stages)) {
      int64_t n = 0;
      for (const auto& t :
           model::stage_tensors(e.model, range, model::TensorParallel{e.tensor_parallel, 0}))
        n += t.size;
      out.push_back(n);
    }
    return out;
  }
  if (e.compute.source == Compute::Source::kShape) {
    for (int64_t bf16 : shape_grad_bytes(e, stages)) out.push_back(bf16 / 2);
    return out;
  }
  return std::vector<int64_t>(stages, e.compute.grad_bytes / 4);
}

std::vector<std::vector<FragmentRuns>> outer_sync_runs(const Experiment& e, int stages) {
  const int P = e.dp_sync.fragments;
  std::vector<std::vector<FragmentRuns>> out;
  if (e.compute.mode == Compute::Mode::kReal) {
    for (const auto& range : model::split_layers(e.model, stages)) {
      const auto tensors =
          model::stage_tensors(e.model, range, model::TensorParallel{e.tensor_parallel, 0});
      auto& per = out.emplace_back();
      for (int f = 0; f < P; ++f) per.push_back(model::fragment_runs(e.model, tensors, P, f));
    }
    return out;
  }
  // Modeled compute: each fragment's values of a stage, one run each in fragment order.
  std::vector<std::vector<int64_t>> counts;
  if (e.compute.source == Compute::Source::kShape) {  // the shape's own layers and tensors
    const sim::ModelShape& m = sim::find_model(e.compute.shape);
    if (P > m.layers)
      throw InputError(e.dp_sync.pos, fmt::format("dp_sync.fragments: at most {}'s {} layers "
                                                  "(a fragment is whole layers)",
                                                  e.compute.shape, m.layers));
    const int64_t layer = shape_layer_params(m, e.tensor_parallel);
    const int64_t embedding = int64_t{m.vocab} * m.hidden;
    for (int st = 0, begin = 0; st < stages; ++st) {
      const int layers = m.layers / stages + (st < m.layers % stages ? 1 : 0);
      auto& c = counts.emplace_back(P, 0);
      for (int l = begin; l < begin + layers; ++l) c[l % P] += layer;
      if (st == 0) c[0] += embedding;
      if (st == stages - 1) c[(m.layers - 1) % P] += embedding;  // the LM head
      begin += layers;
    }
  } else {  // P > 1 needs the model's layers >= stages (dp_sync_parser.cpp)
    const std::vector<int64_t> values = outer_sync_values(e, stages);
    const auto ranges = P > 1 ? model::split_layers(e.model, stages)
                              : std::vector<model::StageRange>(stages, model::StageRange{0, 1});
    for (int st = 0; st < stages; ++st)
      counts.push_back(model::modeled_fragment_elements(values[st], ranges[st], P));
  }
  for (const auto& c : counts) {
    auto& per = out.emplace_back();
    int64_t at = 0;
    for (int64_t n : c) {
      per.push_back(n > 0 ? FragmentRuns{{at, n}} : FragmentRuns{});
      at += n;
    }
  }
  return out;
}

std::vector<std::vector<int64_t>> outer_sync_bytes(const Experiment& e, int stages) {
  std::vector<std::vector<int64_t>> out;
  const model::Payload p = model::payload_from_name(e.dp_sync.payload);
  for (const auto& per : outer_sync_runs(e, stages)) {
    auto& bytes = out.emplace_back();
    for (const FragmentRuns& runs : per) {
      int64_t n = 0;
      for (auto [off, len] : runs) n += len;
      bytes.push_back(n > 0 ? model::payload_bytes(p, n) : 0);
    }
  }
  return out;
}

namespace {

// Gradient bytes each stage all-reduces across the replicas: from the model shape, or
// the experiment's `grad` (the parser requires one of them when data_parallel > 1).
std::vector<int64_t> grad_bytes(const Experiment& e, int stages) {
  if (e.compute.source == Compute::Source::kShape) return shape_grad_bytes(e, stages);
  return std::vector<int64_t>(stages, e.compute.grad_bytes);
}

// The synchronous gradient all-reduce of each stage (`grads` bytes) across the replicas,
// planned: its bytes and the slowest stage's time (sim::allreduce_ns) as every stage's.
void add_dp_allreduce(const Experiment& e, const std::vector<int>& stage_rank,
                      const std::vector<int64_t>& grads, sim::CostModel& costs) {
  costs.grad_bytes = grads;
  for (size_t st = 0; st < grads.size(); ++st) {
    std::vector<std::string> replicas;
    for (const auto& r : e.placement) replicas.push_back(r[stage_rank[st]]);
    // The replicas' connections idle since the last all-reduce: an iteration's compute.
    const int64_t idle = e.microbatches * (costs.f_ns[st] + costs.b_ns[st] + costs.w_ns[st]);
    // A row per host and the all-reduce's connections alone (all replicas' would not fit).
    sim::LinkModel links = links_between(e, replicas, false, true);
    links.set_pairs(sim::dp_pairs(links.ranks, 1, false, false));
    costs.allreduce_ns = std::max(costs.allreduce_ns, sim::allreduce_ns(links, grads[st], idle));
  }
}

// An outer loop after dp_sync.sync_steps synchronous iterations: those iterations'
// all-reduces (CostModel::sync_grad_bytes, sync_allreduce_ns).
void sync_phase(const Experiment& e, const std::vector<int>& stage_rank,
                const std::vector<int64_t>& grads, sim::CostModel& costs) {
  sim::CostModel sync = costs;
  add_dp_allreduce(e, stage_rank, grads, sync);
  costs.sync_grad_bytes = sync.grad_bytes;
  costs.sync_allreduce_ns = sync.allreduce_ns;
}

// The DC of each of `hosts` (ranks), looked up once per rank.
std::vector<const std::string*> rank_dcs(const Experiment& e,
                                         const std::vector<std::string>& hosts) {
  std::vector<const std::string*> out;
  out.reserve(hosts.size());
  for (const std::string& h : hosts) out.push_back(&e.topology.find_host(h)->dc);
  return out;
}

}  // namespace

sim::CostModel planned_costs(const Experiment& e, const std::vector<int>& stage_rank) {
  const int stages = static_cast<int>(stage_rank.size());
  const Compute& c = e.compute;
  if (c.mode == Compute::Mode::kModeled) {
    sim::CostSpec spec;
    switch (c.source) {
      case Compute::Source::kShape:
        spec.source = sim::CostSpec::Source::kShape;
        spec.model = c.shape;
        spec.device = c.device;
        spec.workload = {c.seq,     e.microbatch_size, c.efficiency, 2, e.tensor_parallel,
                         c.node_tp, c.node_busbw};
        break;
      case Compute::Source::kConstant:
        spec.source = sim::CostSpec::Source::kConstant;
        spec.f_ms = c.f_ms;
        spec.b_ms = c.b_ms;
        spec.w_ms = c.w_ms;
        spec.activation_bytes = c.activation_bytes;
        break;
      case Compute::Source::kProfile:
        spec.source = sim::CostSpec::Source::kProfile;
        spec.profile_text = c.profile_text;
        spec.profile_file = c.profile_file;
        break;
    }
    sim::CostModel costs = sim::make_costs(spec, e.stages, stage_rank);
    costs.coexec_interference = c.coexec_interference;
    if (e.tensor_parallel > 1 && c.source != Compute::Source::kShape) {
      // TP-1 durations: each TP rank computes 1/t; the layers per stage from `model:`.
      const auto ranges = model::split_layers(e.model, stages);
      for (int st = 0; st < stages; ++st) {
        costs.f_ns[st] /= e.tensor_parallel;
        costs.b_ns[st] /= e.tensor_parallel;
        costs.w_ns[st] /= e.tensor_parallel;
        costs.tp_allreduces.push_back(2 * (ranges[st].end - ranges[st].begin));
        costs.tp_allreduce_bytes.push_back(costs.activation_bytes[st]);
        costs.tp_allreduce_ns.push_back(0);
      }
    }
    add_tp_allreduces(e, stage_rank, costs);
    if (e.dp_sync.outer_loop()) {
      costs.outer_bytes = outer_sync_bytes(e, stages);
      if (e.dp_sync.sync_steps > 0) {  // the workers all-reduce their fp32 scratch of it
        std::vector<int64_t> scratch;
        for (int64_t n : outer_sync_values(e, stages)) scratch.push_back(4 * n);
        sync_phase(e, stage_rank, scratch, costs);
      }
    } else if (e.data_parallel > 1) {
      add_dp_allreduce(e, stage_rank, grad_bytes(e, stages), costs);
    }
    return costs;
  }
  // Real compute, planned from FLOPs (a TP rank computes 1/t of them).
  const model::ModelConfig& m = e.model;
  const auto ranges = model::split_layers(m, stages);
  const double tokens = static_cast<double>(e.microbatch_size) * m.seq;
  sim::CostModel costs;
  costs.coexec_overlaps = false;  // the CPU worker runs a pair's halves in turn
  for (int s = 0; s < stages; ++s) {
    const int layers = ranges[s].end - ranges[s].begin;
    const double frac = static_cast<double>(layers) / m.layers / e.tensor_parallel;
    const double f_s = m.train_flops_per_token() / 3 * tokens * frac / (c.real_gflops * 1e9);
    const auto f_ns = static_cast<int64_t>(std::llround(f_s * 1e9));
    costs.f_ns.push_back(f_ns);
    costs.b_ns.push_back(f_ns);
    costs.w_ns.push_back(f_ns);
    costs.activation_bytes.push_back(static_cast<int64_t>(tokens * m.dim * 4));  // float32
    if (e.tensor_parallel > 1) {
      costs.tp_allreduces.push_back(2 * layers);
      costs.tp_allreduce_bytes.push_back(costs.activation_bytes.back());
      costs.tp_allreduce_ns.push_back(0);
    }
  }
  add_tp_allreduces(e, stage_rank, costs);
  std::vector<int64_t> grads;  // the fp32 gradients of every parameter of the stage
  if (e.data_parallel > 1)
    for (int64_t n : outer_sync_values(e, stages)) grads.push_back(4 * n);
  if (e.dp_sync.outer_loop()) {
    costs.outer_bytes = outer_sync_bytes(e, stages);
    if (e.dp_sync.sync_steps > 0) sync_phase(e, stage_rank, grads, costs);
  } else if (e.data_parallel > 1) {
    add_dp_allreduce(e, stage_rank, grads, costs);
  }
  return costs;
}

sched::Params schedule_params(const Experiment& e) {
  sched::Params p;
  p.ranks = e.stages;
  p.microbatches = e.microbatches;
  p.chunks = e.chunks;
  p.memory_cap = e.memory_cap;
  p.milp_seconds = e.milp_seconds;
  const sim::CostModel c = planned_costs(e, sched::plain_placement(e.stages));
  auto slowest = [](const std::vector<int64_t>& v) {
    return static_cast<double>(*std::max_element(v.begin(), v.end())) / 1e6;
  };
  p.t_f = slowest(c.f_ns);
  p.t_b = slowest(c.b_ns);
  p.t_w = slowest(c.w_ns);
  const sim::LinkModel l = link_model(e);
  const int64_t bytes = static_cast<int64_t>(
      static_cast<double>(c.activation_bytes.empty() ? 0 : c.activation_bytes[0]));
  p.links.assign(e.stages, std::vector<sched::LinkDelay>(e.stages));
  for (int a = 0; a < e.stages; ++a)
    for (int b = 0; b < e.stages; ++b)
      if (a != b)
        p.links[a][b] = {static_cast<double>(l.at(a, b).latency_ns) / 1e6,
                         static_cast<double>(l.at(a, b).transfer_ns(bytes)) / 1e6};
  p.channel = l.channel;  // the planner queues on the shared WAN as the simulator does
  return p;
}

sched::Schedule make_schedule(const Experiment& e, const sched::Params& params,
                              const ScheduleChoice& c, double* peak) {
  // Where the experiment names the schedule (its file when the choice has no position).
  const SourcePos at = c.pos.file.empty() ? SourcePos{e.source_file, 0, 0} : c.pos;
  sched::Schedule s;
  if (!c.csv_file.empty()) {
    s = sched::read_csv_file(c.csv_file);
    s.name = c.name;
    if (s.ranks != e.stages || s.microbatches != e.microbatches)
      throw InputError(SourcePos{c.csv_file, 0, 0},
                       "schedule has " + std::to_string(s.ranks) + " ranks and " +
                           std::to_string(s.microbatches) + " microbatches; the experiment has " +
                           std::to_string(e.stages) + " and " + std::to_string(e.microbatches));
  } else {
    try {
      s = sched::generate(c.name, params);
    } catch (const std::invalid_argument& err) {
      std::string why = err.what();  // the generators' messages start with their name
      if (why.rfind(c.name + ": ", 0) == 0) why.erase(0, c.name.size() + 2);
      throw InputError(at, "schedules: " + c.name + ": " + why);
    }
  }
  const auto rep = sched::validate(s, e.memory_cap);
  if (!rep.ok())  // a fixed schedule (1f1b, gpipe, ...) does not adapt to a memory cap
    throw InputError(e.memory_cap > 0 ? e.memory_cap_pos : at,
                     (e.memory_cap > 0 ? "pipeline.memory_cap: schedule " : "schedule ") + c.name +
                         (e.memory_cap > 0 ? " does not fit:\n" : " is not valid:\n") +
                         rep.message());
  if (peak) {
    *peak = 0;
    for (double x : rep.peak_activations) *peak = std::max(*peak, x);
  }
  bool pairs = false;
  for (const auto& row : s.actions)
    for (const sched::Action& a : row) pairs = pairs || a.paired;
  if (pairs && e.compute.mode == Compute::Mode::kModeled && e.tensor_parallel > 1)
    throw InputError(at, "schedule " + c.name +
                             " co-executes pairs: with modeled compute their TP all-reduces are "
                             "modelled for a node's TP (compute.modeled.tensor_parallel), not for "
                             "TP ranks run as processes (pipeline.tensor_parallel " +
                             std::to_string(e.tensor_parallel) + ")");
  const bool layers_matter =  // real compute, or modeled TP taking its layers from `model:`
      e.compute.mode == Compute::Mode::kReal ||
      (e.tensor_parallel > 1 && e.compute.source != Compute::Source::kShape);
  if (layers_matter && s.stages > e.model.layers)
    throw InputError(at, "schedule " + c.name + " has " + std::to_string(s.stages) +
                             " stages; the model has only " + std::to_string(e.model.layers) +
                             " layers");
  return s;
}

sim::CostModel measured_costs(const trace::Trace& t, const sim::CostModel& planned) {
  sim::CostModel c = planned;
  const int S = planned.stages();
  struct Acc {
    double sum = 0;
    int n = 0;
    std::vector<std::pair<int, double>> seen;  // (measured iteration, duration)
    void add(int iteration, int64_t d) {
      sum += static_cast<double>(d), ++n, seen.emplace_back(iteration, static_cast<double>(d));
    }
    int64_t mean(int64_t fallback) const { return n ? std::llround(sum / n) : fallback; }
    // Each duration over the mean (CostModel's measured noise), by iteration; empty below two.
    sim::CostModel::Noise ratios() const {
      sim::CostModel::Noise r;
      if (n < 2 || !(sum > 0)) return r;
      std::vector<std::pair<int, double>> by = seen;
      std::stable_sort(by.begin(), by.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      for (size_t i = 0; i < by.size(); ++i) {
        if (i == 0 || by[i].first != by[i - 1].first) r.iteration_begin.push_back(i);
        r.ratio.push_back(by[i].second * n / sum);
      }
      return r;
    }
  };
  std::vector<Acc> f(S), b(S), w(S), bw(S);
  Acc opt, ar;
  // A co-executed pair (schedule.h): both halves' time on its F, none on its partner.
  const auto pair_ends = trace::pair_partners(t);
  // An action's measured iteration: how many times its rank ran the same action before.
  std::vector<size_t> order(t.events.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&t](size_t x, size_t y) {
    return t.events[x].start_ns < t.events[y].start_ns;
  });
  std::vector<int> iteration(t.events.size(), 0);
  std::map<std::tuple<int, int, sched::Kind, int>, int> runs;
  for (size_t i : order) {
    const auto& ev = t.events[i];
    iteration[i] = runs[{ev.rank, ev.stage, ev.kind, ev.microbatch}]++;
  }
  for (size_t i = 0; i < t.events.size(); ++i) {
    const auto& ev = t.events[i];
    const int it = iteration[i];
    if (ev.stage < 0 || ev.stage >= S) continue;
    if (pair_ends.count({ev.rank, ev.end_ns}) &&
        (ev.kind == sched::Kind::F || ev.start_ns == ev.end_ns))
      continue;
    const int64_t d = ev.end_ns - ev.start_ns;
    switch (ev.kind) {
      case sched::Kind::F:
        f[ev.stage].add(it, d);
        break;
      case sched::Kind::B:
        b[ev.stage].add(it, d);
        break;
      case sched::Kind::W:
        w[ev.stage].add(it, d);
        break;
      case sched::Kind::BW:
        bw[ev.stage].add(it, d);
        break;
      case sched::Kind::OPT:
        opt.add(it, d);
        break;
      case sched::Kind::ALLREDUCE:
        ar.add(it, d);
        break;
      default:
        break;
    }
  }
  c.f_ratio.assign(S, {});
  c.b_ratio.assign(S, {});
  c.w_ratio.assign(S, {});
  c.bw_ratio.assign(S, {});
  for (int s = 0; s < S; ++s) {
    c.f_ratio[s] = f[s].ratios();
    c.b_ratio[s] = b[s].ratios();
    c.w_ratio[s] = w[s].ratios();
    c.bw_ratio[s] = bw[s].ratios();
    c.f_ns[s] = f[s].mean(c.f_ns[s]);
    if (b[s].n || w[s].n) {
      c.b_ns[s] = b[s].mean(c.b_ns[s]);
      c.w_ns[s] = w[s].mean(c.w_ns[s]);
    } else if (bw[s].n) {
      const int64_t full = bw[s].mean(c.b_ns[s] + c.w_ns[s]);
      c.b_ns[s] = full / 2;
      c.w_ns[s] = full - full / 2;
    }
  }
  c.opt_ns = opt.mean(c.opt_ns);
  c.allreduce_ns = ar.mean(c.allreduce_ns);
  return c;
}

Plan make_plan(const Experiment& e) {
  if (e.workload)  // the program's step is known only once it ran (run/workload_run.h)
    throw InputError(e.workload->pos,
                     "workload: the program's step is predicted from a run of it: `xdc run` "
                     "it, then `xdc simulate RESULTS/predicted.yaml` predicts the step again");
  Plan p;
  p.experiment = e;
  p.params = schedule_params(e);
  p.links = link_model(e);
  // What the workers do besides the schedule (executor.cpp): the gradient-norm all-reduce
  // when real compute clips gradients, the barrier before every iteration.
  const worker::RunSpec defaults;
  p.worker.grad_norm =
      e.compute.mode == Compute::Mode::kReal && defaults.grad_clip > 0 && e.stages > 1;
  p.worker.iteration_barrier = defaults.iteration_barrier && e.iteration_barrier;
  // time_dilation (>= 1): the workers run that many times slower. Their timer slack is this
  // process's (inherited), read once: it makes their polls and modeled compute's sleeps late.
  static const int64_t slack_ns = worker::timer_slack_ns();
  const int64_t slack = std::llround(static_cast<double>(slack_ns) / e.time_dilation);
  if (e.progress != "none") {
    p.worker.poll_ns = std::llround(defaults.progress_poll_us * 1e3 / e.time_dilation);
    p.worker.poll_slack_ns = slack;
  }
  p.worker.replicas = e.data_parallel;
  p.worker.world = world_link_model(e);
  if (e.dp_sync.outer_loop()) {
    p.worker.outer_every = e.dp_sync.inner_steps;
    p.worker.outer_overlap = e.dp_sync.apply_after_steps();
    p.worker.outer_from = e.dp_sync.sync_steps;
  }
  const bool gloo = e.dp_sync.collective == DpSync::Collective::kGloo;
  if (e.data_parallel > 1 &&
      (e.compute.mode == Compute::Mode::kModeled || e.dp_sync.outer_loop() || gloo)) {
    // OpenMPI's connections between world ranks (not the workers' stripes); across DCs
    // each TP rank of a stage all-reduces its own share at once with its peers.
    const std::vector<std::string> hosts = e.pipeline_hosts();
    sim::LinkModel& dp = p.worker.dp_links;
    dp = links_between(e, hosts, false, true);
    if (e.tensor_parallel > 1) {  // per row of the model (a host)
      std::vector<const std::string*> dc(static_cast<size_t>(dp.hosts));
      for (size_t r = 0; r < hosts.size(); ++r)
        dc[static_cast<size_t>(dp.host[r])] = &e.topology.find_host(hosts[r])->dc;
      const int h = dp.hosts;
      dp.copies.assign(static_cast<size_t>(h) * h, 1);
      for (int a = 0; a < h; ++a)
        for (int b = 0; b < h; ++b)
          if (*dc[a] != *dc[b]) dp.copies[static_cast<size_t>(a) * h + b] = e.tensor_parallel;
    }
    if (gloo) {  // gloo's own handshake (gloo_ring.h), no MPI rendezvous
      p.worker.dp_collective = sim::WorkerModel::Collective::kGlooRing;
      for (sim::TcpPath& t : dp.tcp) t.eager_limit = sim::kNoRendezvous;
    }
    // Connections only where the collectives and the barrier send (a world's ranks^2
    // would not fit).
    dp.set_pairs(sim::dp_pairs(dp.ranks, e.stages, gloo, p.worker.iteration_barrier));
  }
  if (e.data_parallel > 1 || e.tensor_parallel > 1) {
    // For each pair of replica 0, the replicas whose same pair takes the same channel (one
    // WAN direction) as replica 0's: identical replicas send on it at once; across DCs each
    // of a stage's TP ranks sends its own copy to its peer TP rank, too, on a connection of
    // its own (a lane), and the stage goes on at the latest. Between world ranks a pair in a
    // DC is a channel of its own, pairs across DCs share their (DC, DC) direction's.
    const std::vector<const std::string*> dc = rank_dcs(e, e.pipeline_hosts());
    const int S = e.stages;
    p.links.copies.assign(static_cast<size_t>(S) * S, 1);
    p.links.lanes.assign(static_cast<size_t>(S) * S, 1);
    for (int a = 0; a < S; ++a)
      for (int b = 0; b < S; ++b) {
        if (a == b) continue;
        // A replica whose pair crosses a WAN direction replica 0's does not (a mirrored
        // placement) meets other pairs' traffic there and stands for nobody: every replica
        // is simulated, each pair across DCs on its direction's channel.
        for (int r = 1; r < e.data_parallel; ++r)
          if (*dc[r * S + a] != *dc[r * S + b] &&
              (*dc[r * S + a] != *dc[a] || *dc[r * S + b] != *dc[b]))
            p.all_replicas = true;
        if (*dc[a] == *dc[b]) continue;  // replica 0's pair inside a DC: no copies
        int k = 0;
        for (int r = 0; r < e.data_parallel; ++r)
          k += *dc[r * S + a] == *dc[a] && *dc[r * S + b] == *dc[b];
        p.links.copies[static_cast<size_t>(a) * S + b] = k * e.tensor_parallel;
        p.links.lanes[static_cast<size_t>(a) * S + b] = e.tensor_parallel;
      }
    if (p.all_replicas && !e.wan_temporal)
      p.world_links = links_between(e, e.pipeline_hosts(), true);
  }
  if (e.wan_temporal) {
    p.all_replicas = true;
    p.world_links = links_between(e, e.pipeline_hosts(), true);
    const int n = p.world_links.ranks;
    p.world_links.exclusive.assign(static_cast<size_t>(p.world_links.channels()), 0);
    const std::vector<std::string> hosts = e.pipeline_hosts();
    for (int a = 0; a < n; ++a)  // the WAN directions' channels (LinkModel::dcs)
      for (int b = 0; b < n; ++b)
        if (e.topology.find_host(hosts[a])->dc != e.topology.find_host(hosts[b])->dc)
          p.world_links.exclusive[p.world_links.channel_of(a, b)] = 1;
  }
  p.cpus = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  p.dp_groups.assign(e.stages, {});
  for (int r = 0; r < e.data_parallel; ++r)
    for (int st = 0; st < e.stages; ++st) p.dp_groups[st].push_back(e.world_rank(r, st));
  for (const auto& c : e.schedules) {
    SchedulePlan sp;
    sp.choice = c;
    sp.schedule = make_schedule(e, p.params, c, &sp.peak_activations);
    sp.costs = planned_costs(e, sp.schedule.stage_rank);
    if (e.compute.mode == Compute::Mode::kModeled) sp.costs.sleep_slack_ns = slack;
    p.schedules.push_back(std::move(sp));
    if (e.prefill.on) {  // the same schedule again, with prefill in its bubbles
      SchedulePlan with = p.schedules.back();
      with.choice.name = prefill_run_name(with.choice.name);
      with.prefill = true;
      p.schedules.push_back(std::move(with));
    }
  }
  return p;
}

worker::RunSpec run_spec(const Plan& p, const SchedulePlan& sp, const std::string& run_dir,
                         const std::string& schedule_csv) {
  const Experiment& e = p.experiment;
  const sched::Schedule& s = sp.schedule;
  const sim::CostModel& costs = sp.costs;
  worker::RunSpec r;
  r.run_dir = run_dir;
  r.schedule_name = s.name;
  r.schedule_csv = schedule_csv;
  r.pipeline_ranks = e.stages;
  r.data_parallel = e.data_parallel;
  r.tensor_parallel = e.tensor_parallel;
  r.rank_hosts = e.rank_hosts();
  r.iteration_barrier = p.worker.iteration_barrier;
  r.microbatches = e.microbatches;
  r.microbatch_size = e.microbatch_size;
  r.iterations = e.iterations;
  r.warmup = e.warmup;
  r.seed = e.seed;
  r.compute = e.compute.name();
  // Under time dilation k every duration the workers act on lasts k times longer
  // (experiment.h); the trace they write is divided back when it is read (run/results.h).
  const double k = e.time_dilation;
  r.time_dilation = k;
  r.timeout_s = static_cast<int>(std::ceil(e.timeout_s * k));
  r.progress = e.progress;
  r.connections_wan = e.connections_wan;
  r.connections_dc = e.connections_dc;
  if (e.wan_temporal) {
    r.wan_send_order_ns = send_order(p, sp);
    // Per WAN direction, the bytes it carries in one round trip (invariant under dilation).
    const std::vector<std::string> hosts = e.pipeline_hosts();
    const sim::LinkModel& w = p.world_links;
    for (size_t a = 0; a < hosts.size(); ++a)
      for (size_t b = 0; b < hosts.size(); ++b) {
        const std::string& da = e.topology.find_host(hosts[a])->dc;
        const std::string& db = e.topology.find_host(hosts[b])->dc;
        if (da == db) continue;
        const int x = static_cast<int>(a), y = static_cast<int>(b);
        const double rtt_s =
            1e-9 * static_cast<double>(w.at(x, y).latency_ns + w.at(y, x).latency_ns);
        const auto bytes = static_cast<int64_t>(w.at(x, y).bandwidth_bps / 8 * rtt_s);
        int64_t& v = r.wan_release_ahead_bytes[da + "->" + db];
        v = std::max(v, bytes);
      }
  }
  r.data_cidr = launch::kDataCidr;
  for (const std::string& h : r.rank_hosts) r.rank_dcs.push_back(e.topology.find_host(h)->dc);
  if (e.compute.mode == Compute::Mode::kReal) {
    r.model = model_json(e.model);
    for (auto& range : model::split_layers(e.model, s.stages))
      r.stage_layers.emplace_back(range.begin, range.end);
    r.data_glob = e.data_glob;
    r.learning_rate = e.learning_rate;
    r.rank_gpus = e.rank_gpus();
  } else {
    auto dilate = [k](int64_t ns) { return static_cast<int64_t>(std::llround(ns * k)); };
    auto dilate_all = [&](std::vector<int64_t> v) {
      for (auto& ns : v) ns = dilate(ns);
      return v;
    };
    // The workers sleep the compute (with a node's folded TP all-reduces) and perform the
    // launched TP ranks' all-reduces (cost_model.h).
    std::vector<int64_t> f = costs.f_ns, b = costs.b_ns;
    for (int st = 0; st < costs.stages(); ++st) {
      f[st] -= costs.tp_comm_ns(st);
      b[st] -= costs.tp_comm_ns(st);
    }
    r.modeled.f_ns = dilate_all(f);
    r.modeled.b_ns = dilate_all(b);
    r.modeled.tp_allreduces = costs.tp_allreduces;
    r.modeled.tp_allreduce_bytes = costs.tp_allreduce_bytes;
    r.modeled.node_tp_ns = dilate_all(costs.node_tp_ns);
    r.modeled.node_tp_allreduces = costs.node_tp_allreduces;
    r.modeled.coexec_interference = costs.coexec_interference;
    r.modeled.w_ns = dilate_all(costs.w_ns);
    r.modeled.activation_bytes = costs.activation_bytes;
    r.modeled.opt_ns = dilate(costs.opt_ns);
    if (e.data_parallel > 1) r.modeled.grad_bytes = grad_bytes(e, s.stages);
    if (e.dp_sync
            .outer_loop()) {  // no per-iteration all-reduce: the scratch is the outer payload's
      r.modeled.grad_bytes.clear();
      for (int64_t n : outer_sync_values(e, s.stages)) r.modeled.grad_bytes.push_back(4 * n);
    }
  }
  if (sp.prefill) r.prefill = prefill_spec(p, sp);
  const DpSync& d = e.dp_sync;
  if (d.outer_loop()) {
    r.dp_sync.method = d.method_name();
    r.dp_sync.inner_steps = d.inner_steps;
    r.dp_sync.sync_steps = d.sync_steps;
    r.dp_sync.overlap_steps = d.overlap_steps;
    r.dp_sync.merge = d.merge;
    r.dp_sync.eager = d.eager;
    r.dp_sync.outer_lr = d.outer_lr;
    r.dp_sync.outer_momentum = d.outer_momentum;
    r.dp_sync.payload = d.payload;
    if (d.fragments > 1) r.dp_sync.fragment_runs = outer_sync_runs(e, s.stages);
  }
  return r;
}

double peak_flops_per_rank(const Experiment& e) {
  if (e.compute.mode == Compute::Mode::kReal) return e.compute.real_peak_gflops * 1e9;
  if (e.compute.source == Compute::Source::kShape)  // a rank stands for node_tp devices
    return sim::find_device(e.compute.device).peak_flops * e.compute.node_tp;
  return 0;  // constants and profiles carry no FLOPs
}

double iteration_tokens(const Experiment& e) {
  const int seq = e.compute.mode == Compute::Mode::kReal        ? e.model.seq
                  : e.compute.source == Compute::Source::kShape ? e.compute.seq
                                                                : 0;
  return static_cast<double>(e.microbatches) * e.microbatch_size * seq * e.data_parallel;
}

double iteration_flops(const Experiment& e, const sim::CostModel& costs) {
  if (e.compute.mode == Compute::Mode::kReal)
    return e.model.train_flops_per_token() * iteration_tokens(e);
  if (e.compute.source != Compute::Source::kShape) return 0;
  // The cost model's durations are FLOPs / (peak x efficiency).
  const double rate = sim::find_device(e.compute.device).peak_flops * e.compute.efficiency;
  // A TP rank computes 1/t of its stage's layers, and its F and B include its all-reduces.
  double ns = 0;
  for (int s = 0; s < costs.stages(); ++s)
    ns += static_cast<double>(costs.f_ns[s] + costs.b_ns[s] + costs.w_ns[s] -
                              2 * costs.tp_time_ns(s));
  return ns * 1e-9 * rate * e.microbatches * e.data_parallel * e.tensor_parallel *
         e.compute.node_tp;
}

}  // namespace xdc::run
