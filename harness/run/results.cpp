#include "harness/run/results.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <tuple>

#include "common/text_file.h"
#include "harness/run/environment.h"
#include "harness/run/prefill_results.h"
#include "harness/run/repeat.h"
#include "harness/sim/tcp_model.h"
#include "harness/trace/iterations.h"
#include "workloads/model/fragments.h"

namespace xdc::run {
namespace fs = std::filesystem;

void undilate(RankFiles& f, double k) {
  if (k == 1) return;
  auto ns = [k](int64_t t) {
    return static_cast<int64_t>(std::llround(static_cast<double>(t) / k));
  };
  for (auto& ev : f.trace.events) {
    ev.start_ns = ns(ev.start_ns);
    ev.end_ns = ns(ev.end_ns);
  }
  for (auto& rep : f.reports) {
    for (auto& t : rep.iteration_start_ns) t = ns(t);
    for (auto& t : rep.iteration_end_ns) t = ns(t);
    if (rep.prefill.is_object()) {
      for (auto& t : rep.prefill["ttft_ns"]) t = ns(t.get<int64_t>());
      rep.prefill["busy_ns"] = ns(rep.prefill.value("busy_ns", int64_t{0}));
      rep.prefill["overrun_ns"] = ns(rep.prefill.value("overrun_ns", int64_t{0}));
    }
    if (rep.waits.is_object())
      for (auto& [cause, v] : rep.waits.items())
        if (v.is_number()) v = v.get<double>() / k;
  }
}

RankFiles read_rank_files(const std::string& run_dir, int world_size, const std::string& name,
                          double time_dilation) {
  RankFiles f;
  f.trace.name = name;
  f.trace.ranks = world_size;
  for (int r = 0; r < world_size; ++r) {
    const fs::path base = fs::path(run_dir) / ("rank" + std::to_string(r));
    if (const auto text = read_text_file(base.string() + ".trace.csv")) {
      try {
        trace::Trace t = trace::from_csv(*text);
        f.trace.microbatches = std::max(f.trace.microbatches, t.microbatches);
        f.trace.events.insert(f.trace.events.end(), t.events.begin(), t.events.end());
      } catch (const std::exception&) {
        // A rank killed while writing leaves a torn file: its report says what finished.
      }
    }
    std::ifstream jin(base.string() + ".json");
    worker::RankReport rep;
    bool have = false;
    if (jin) {
      try {
        rep = nlohmann::json::parse(jin).get<worker::RankReport>();
        have = true;
      } catch (const std::exception&) {
      }
    }
    if (have)
      f.reports.push_back(rep);
    else
      f.missing.push_back(r);
  }
  std::sort(f.trace.events.begin(), f.trace.events.end(),
            [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  undilate(f, time_dilation);
  return f;
}

std::vector<trace::Trace> split_iterations(const RankFiles& f) {
  if (f.reports.empty() || !f.missing.empty()) return {};
  std::vector<std::vector<int64_t>> starts, ends;
  for (const auto& r : f.reports) {
    starts.push_back(r.iteration_start_ns);
    ends.push_back(r.iteration_end_ns);
  }
  return trace::split_iterations(f.trace, starts, ends);
}

double ScheduleResult::mean() const {
  if (iteration_s.empty()) return 0;
  double s = 0;
  for (double x : iteration_s) s += x;
  return s / static_cast<double>(iteration_s.size());
}

double ScheduleResult::percentile(double p) const {
  if (iteration_s.empty()) return 0;
  std::vector<double> v = iteration_s;
  std::sort(v.begin(), v.end());
  const size_t k = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(k, 1, v.size()) - 1];
}

namespace {
nlohmann::json bubble_json(const trace::BubbleRatios& b) {
  return {{"megatron", b.megatron}, {"zerobubble", b.zerobubble}, {"crosspipe", b.crosspipe}};
}
nlohmann::json num(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json();
}
}  // namespace

nlohmann::json transfers_json(const trace::Trace& t, const std::vector<std::string>& rank_dcs,
                              const std::vector<worker::RankReport>& reports) {
  using sched::Kind;
  auto dc = [&](int r) { return r >= 0 && r < (int)rank_dcs.size() ? rank_dcs[r] : ""; };
  // Messages in order per (direction, consumer stage, microbatch, receiver): the k-th
  // SEND matches the k-th RECV.
  using Key = std::tuple<int, int, int, int>;
  std::map<Key, std::vector<const trace::Event*>> sends, recvs;
  for (const trace::Event& e : t.events) {
    if (e.peer < 0 || dc(e.rank) == dc(e.peer)) continue;
    if (e.kind == Kind::SEND_F || e.kind == Kind::SEND_B) {
      const bool f = e.kind == Kind::SEND_F;
      sends[{f ? 0 : 1, e.stage + (f ? 1 : -1), e.microbatch, e.peer}].push_back(&e);
    } else if (e.kind == Kind::RECV_F || e.kind == Kind::RECV_B) {
      recvs[{e.kind == Kind::RECV_F ? 0 : 1, e.stage, e.microbatch, e.rank}].push_back(&e);
    }
  }
  if (sends.empty()) return nullptr;
  int messages = 0, connections = 0;
  std::vector<double> mbit;
  for (auto& [key, ss] : sends) {
    messages += static_cast<int>(ss.size());
    for (const trace::Event* s : ss) connections = std::max(connections, s->connections);
    auto it = recvs.find(key);
    if (it == recvs.end()) continue;
    for (size_t i = 0; i < std::min(ss.size(), it->second.size()); ++i) {
      const trace::Event& s = *ss[i];
      const trace::Event& r = *it->second[i];
      if (r.end_ns <= r.start_ns || r.end_ns <= s.start_ns) continue;  // no wait: not timed
      mbit.push_back(static_cast<double>(s.bytes) * 8e3 /
                     static_cast<double>(r.end_ns - s.start_ns));
    }
  }
  nlohmann::json j = {
      {"wan_messages", messages}, {"connections", connections}, {"timed_messages", mbit.size()}};
  if (!mbit.empty()) {
    std::sort(mbit.begin(), mbit.end());
    j["goodput_mbit_p50"] = mbit.size() % 2
                                ? mbit[mbit.size() / 2]
                                : (mbit[mbit.size() / 2 - 1] + mbit[mbit.size() / 2]) / 2;
    j["goodput_mbit_min"] = mbit.front();
    j["goodput_mbit_max"] = mbit.back();
  }
  nlohmann::json per = nlohmann::json::array();
  for (const worker::RankReport& rep : reports)
    for (const auto& c : rep.connections)
      per.push_back({{"rank", rep.world_rank},
                     {"peer", c.peer},
                     {"index", c.index},
                     {"bytes_sent", c.bytes_sent},
                     {"kernel_bytes_acked", c.kernel_bytes_acked},
                     {"kernel_retransmits", c.kernel_retransmits}});
  if (!per.empty()) j["per_connection"] = per;
  return j;
}

namespace {
nlohmann::json applied_json(const std::vector<RunSeries::Applied>& changes) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : changes)
    out.push_back({{"t_s", c.t_s}, {"what", c.what}, {"source", c.source}});
  return out;
}
}  // namespace

nlohmann::json tp_stalls_json(const std::vector<trace::Trace>& iterations) {
  std::vector<int64_t> ns;
  for (const trace::Trace& it : iterations)
    for (const trace::Event& ev : it.events)
      if (ev.kind == sched::Kind::TP_ALLREDUCE) ns.push_back(ev.end_ns - ev.start_ns);
  if (ns.empty()) return nullptr;
  std::vector<int64_t> sorted = ns;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<ptrdiff_t>(sorted.size() / 2),
                   sorted.end());
  const int64_t median = sorted[sorted.size() / 2];
  int64_t stalled = 0, excess = 0;
  for (const int64_t d : ns)
    if (d - median >= kTpStallNs) {
      ++stalled;
      excess += d - median;
    }
  return {{"records", static_cast<int64_t>(ns.size())},
          {"stalled", stalled},
          {"excess_ms", excess / 1'000'000}};
}

ScheduleResult::Point iteration_point(const trace::Trace& it,
                                      const std::vector<std::string>& rank_dcs) {
  ScheduleResult::Point p;
  int64_t first = INT64_MAX;
  for (const auto& ev : it.events) {
    first = std::min(first, ev.start_ns);
    const double d = static_cast<double>(ev.end_ns - ev.start_ns) / 1e9;
    if (sched::is_send(ev.kind) && ev.peer >= 0 && ev.rank < static_cast<int>(rank_dcs.size()) &&
        ev.peer < static_cast<int>(rank_dcs.size()) && rank_dcs[ev.rank] != rank_dcs[ev.peer])
      p.wan_bytes += ev.bytes;
    if (ev.kind == sched::Kind::RECV_F || ev.kind == sched::Kind::RECV_B ||
        ev.kind == sched::Kind::ALLREDUCE)
      p.waits_s[std::string(sched::kind_name(ev.kind))] += d;
  }
  p.start_s = first == INT64_MAX ? 0 : static_cast<double>(first) / 1e9;
  return p;
}

nlohmann::json dp_sync_json(const Experiment& e,
                            const std::vector<std::vector<int64_t>>& outer_bytes,
                            const RankFiles& f) {
  const DpSync& d = e.dp_sync;
  const int M = e.data_parallel;
  const int job = e.warmup + e.iterations;
  constexpr int64_t kHeaderBytes = 66;  // Ethernet 14 + IPv4 20 + TCP with timestamps 32
  // Per round (every fragment synchronised once): the payload, and with headers; over
  // the whole job: the payload its fragment syncs carry. outer_bytes is one TP rank's
  // shard of each stage; each of the stage's TP ranks syncs its own.
  int64_t analytic = 0, wire = 0, job_payload = 0;
  for (const auto& per : outer_bytes)
    for (size_t p = 0; p < per.size(); ++p) {
      const int64_t shard = per[p], b = shard * e.tensor_parallel;
      analytic += b;
      wire +=
          e.tensor_parallel * (shard + (shard + sim::kTcpMss - 1) / sim::kTcpMss * kHeaderBytes);
      for (int t = 1; t <= job - d.sync_steps; ++t)
        if (model::fragment_due(t, static_cast<int>(p), static_cast<int>(per.size()),
                                d.inner_steps))
          job_payload += b;
    }
  std::map<int, int64_t> syncs, bytes, ns;  // per world rank
  for (const trace::Event& ev : f.trace.events) {
    if (ev.kind != sched::Kind::OUTER_SYNC) continue;
    syncs[ev.rank]++;
    bytes[ev.rank] += ev.bytes;
    ns[ev.rank] += ev.end_ns - ev.start_ns;
  }
  // Replica 0's ranks (the first world_size / M). A round is one record per (stage,
  // fragment) rank 0 holds: the measured rounds are its records over those.
  const int per_replica = e.world_size() / M;
  int64_t replica0_bytes = 0;
  for (int r = 0; r < per_replica; ++r) replica0_bytes += bytes[r];
  int units_on_rank0 = 0;
  for (const auto& rep : f.reports)
    if (rep.world_rank == 0)
      for (int st : rep.stages)
        if (st >= 0 && st < static_cast<int>(outer_bytes.size()))
          for (int64_t b : outer_bytes[st]) units_on_rank0 += b > 0;
  const double rounds = units_on_rank0 > 0 ? static_cast<double>(syncs[0]) / units_on_rank0 : 0.0;
  double stall = 0, busy = 0;
  for (const auto& rep : f.reports) {
    if (rep.waits.is_object() && rep.waits.contains("OUTER_SYNC"))
      stall += rep.waits["OUTER_SYNC"].get<double>() / 1e9;
    busy += static_cast<double>(ns[rep.world_rank]) / 1e9;
  }
  const double ranks = std::max<double>(1, static_cast<double>(f.reports.size()));
  nlohmann::json j = {{"method", d.method_name()},
                      {"inner_steps", d.inner_steps},
                      {"sync_steps", d.sync_steps},
                      {"payload", d.payload},
                      {"outer_lr", d.outer_lr},
                      {"outer_momentum", d.outer_momentum},
                      {"outer_syncs", rounds},
                      {"payload_bytes_analytic", analytic},
                      {"collective_bytes_per_outer_step", 2 * (M - 1) * analytic},
                      {"collective_wire_bytes_analytic", 2 * (M - 1) * wire},
                      {"job_payload_bytes_analytic", job_payload}};
  if (d.method == DpSync::Method::kStreaming) {
    j["fragments"] = d.fragments;
    j["overlap_steps"] = d.overlap_steps;
    j["merge"] = d.merge;
    j["fragment_syncs"] = syncs[0];
  }
  if (d.eager) j["eager"] = true;
  if (rounds > 0) {
    j["payload_bytes_per_outer_step"] = static_cast<double>(replica0_bytes) / rounds;
    j["stall_s_per_sync"] = stall / ranks / rounds;
    j["sync_s_per_sync"] = busy / ranks / rounds;
  }
  return j;
}

void add_wan_bytes(nlohmann::json& d, const Experiment& e, uint64_t total_wan_bytes) {
  const double job = d.value("job_payload_bytes_analytic", 0.0);
  const double round = d.value("payload_bytes_analytic", 0.0);
  // The links count the whole job: with synchronous iterations first (sync_steps) their
  // all-reduces are in the count too, so no share of it is the outer steps'.
  if (job > 0 && e.dp_sync.sync_steps == 0)
    d["wan_wire_bytes_per_outer_step"] = static_cast<double>(total_wan_bytes) * round / job;
}

// {per_rank, mean} of a per-rank figure.
nlohmann::json per_rank_json(const std::vector<double>& v) {
  return {{"per_rank", v}, {"mean", mean_of(v)}};
}

nlohmann::json summary_json(const ScheduleResult& r) {
  nlohmann::json j = {{"schedule", r.schedule},
                      {"ok", r.ok},
                      {"simulated_iteration_s", r.simulated_iteration_s},
                      {"simulated_band_s", r.simulated_band_s},
                      {"simulated_bubble_ratio", bubble_json(r.simulated_bubble)},
                      {"simulated_costs", r.simulated_costs}};
  if (!r.simulated_transfers.is_null()) j["simulated_transfers"] = r.simulated_transfers;
  if (!r.simulated_utilisation.empty())
    j["simulated_utilisation"] = per_rank_json(r.simulated_utilisation);
  if (r.simulated_launch_s >= 0) j["simulated_launch_to_measured_s"] = r.simulated_launch_s;
  if (r.simulated_mfu > 0)  // at the assumed device peak, the prediction's iteration time
    j["simulated_mfu"] = {{"value", r.simulated_mfu}, {"basis", "modeled"}};
  if (r.measured) {
    nlohmann::json loss = nlohmann::json::array();
    for (double x : r.loss) loss.push_back(num(x));
    j.update(
        {{"iterations", r.iteration_s.size()},
         {"iteration_s", r.iteration_s},
         {"iteration_s_mean", r.mean()},
         {"within_band", !r.iteration_s.empty() && r.simulated_band_s[0] <= r.mean() &&
                             r.mean() <= r.simulated_band_s[1]},
         {"iteration_s_p50", r.percentile(50)},
         {"iteration_s_p95", r.percentile(95)},
         {"bubble_ratio", bubble_json(r.bubble)},
         {"measured_over_simulated",
          r.simulated_iteration_s > 0 ? num(r.mean() / r.simulated_iteration_s) : nlohmann::json()},
         {"tokens_per_s", r.tokens_per_s},
         {"loss", loss},
         {"waits_s_per_iteration", r.waits_s}});
    add_spread_json(j, r);
    if (!r.transfers.is_null()) j["transfers"] = r.transfers;
    if (r.clock_residual_us >= 0)
      j.update({{"clock_offset_max_us", r.clock_offset_max_us},
                {"clock_residual_us", r.clock_residual_us}});
    if (!r.series.empty()) {
      nlohmann::json start = nlohmann::json::array(), wan = nlohmann::json::array();
      nlohmann::json waits = nlohmann::json::object();
      for (const auto& pt : r.series) {
        start.push_back(pt.start_s);
        wan.push_back(pt.wan_bytes);
      }
      for (size_t i = 0; i < r.series.size(); ++i)
        for (const auto& [cause, s] : r.series[i].waits_s) {
          if (!waits.contains(cause))
            waits[cause] = nlohmann::json(std::vector<double>(r.series.size(), 0.0));
          waits[cause][i] = s;
        }
      j["series"] = {{"start_s", start}, {"wan_bytes", wan}, {"waits_s", waits}};
      if (r.bubbles.size() == r.series.size()) {
        nlohmann::json b = {{"megatron", nlohmann::json::array()},
                            {"zerobubble", nlohmann::json::array()},
                            {"crosspipe", nlohmann::json::array()}};
        for (const auto& x : r.bubbles) {
          b["megatron"].push_back(x.megatron);
          b["zerobubble"].push_back(x.zerobubble);
          b["crosspipe"].push_back(x.crosspipe);
        }
        j["series"]["bubble_ratio"] = b;
      }
    }
    if (!r.changes.empty()) j["changes"] = applied_json(r.changes);
    if (!r.utilisation.empty()) j["utilisation"] = per_rank_json(r.utilisation);
    if (!r.prefill.is_null()) j["prefill"] = r.prefill;
    if (!r.dp_sync.is_null()) j["dp_sync"] = r.dp_sync;
    if (!r.wan_wire_bytes.is_null()) j["wan_wire_bytes"] = r.wan_wire_bytes;
    if (!r.tcp.is_null()) j["tcp"] = r.tcp;
    if (!r.tp_stalls.is_null()) j["tp_stalls"] = r.tp_stalls;
    if (std::isfinite(r.eval_loss)) j["eval_loss"] = r.eval_loss;
    if (r.peak_flops_per_rank > 0)
      j["mfu"] = {{"value", r.mfu},
                  {"peak_flops_per_rank", r.peak_flops_per_rank},
                  {"basis", r.modeled_compute ? "modeled" : "measured"}};
    j["tokens_per_s_basis"] = r.modeled_compute ? "modeled" : "measured";
  }
  if (r.simulated_series) {
    j["simulated_steady_iteration_s"] = r.simulated_steady_iteration_s;
    j["simulated_series"] = {{"iteration_s", r.simulated_series->iteration_s},
                             {"start_s", r.simulated_series->start_s},
                             {"changes", applied_json(r.simulated_series->changes)}};
    if (!r.simulated_series->ended.empty())
      j["simulated_series"]["ended"] = r.simulated_series->ended;
  }
  if (!r.ok) j["error"] = r.error;
  if (!r.missing_runs.empty()) {
    j["missing_runs"] = nlohmann::json::array();
    for (const MissingRun& m : r.missing_runs)
      j["missing_runs"].push_back({{"repeat", m.repeat}, {"seed", m.seed}, {"state", m.state}});
  }
  return j;
}

nlohmann::json run_summary_json(const Plan& plan, const std::vector<ScheduleResult>& rs,
                                const std::string& backend, const std::string& network,
                                bool interrupted) {
  const Experiment& e = plan.experiment;
  bool measured = false, complete = true;
  for (auto& r : rs) {
    measured = measured || r.measured;
    complete = complete && r.missing_runs.empty();
  }
  nlohmann::json j = {{"schema_version", kSummarySchemaVersion},
                      {"experiment", e.name},
                      {"compute_mode", e.compute.name()},
                      {"compute_costs", e.compute.costs_source()},
                      {"time_dilation", e.time_dilation},
                      {"world_size", e.world_size()},
                      {"stages", e.stages},
                      {"data_parallel", e.data_parallel},
                      {"tensor_parallel", e.tensor_parallel},
                      {"microbatches", e.microbatches},
                      {"microbatch_size", e.microbatch_size},
                      {"mpi_tcp_links", e.tcp_links == 0 ? 1 : e.tcp_links},
                      {"mpi_connections", connections_json(e)},
                      {"wan_sharing", e.wan_temporal ? "temporal" : "fair"},
                      {"interrupted", interrupted},
                      {"complete", complete},
                      {"simulation",
                       {{"grad_norm_allreduce", plan.worker.grad_norm},
                        {"iteration_barrier", plan.worker.iteration_barrier},
                        {"cpus", plan.cpus},
                        {"ranks_per_cpu", plan.ranks_per_cpu()}}},
                      {"schedules", nlohmann::json::array()}};
  if (!backend.empty()) j["backend"] = backend;
  if (!network.empty()) j["network"] = network;
  if (!measured) j["simulated"] = true;
  // Per schedule: its peak activations (the validator's, microbatches of a rank's layers)
  // and co-executed pairs (schedule.h); the share of F + B + W that is TP all-reduce.
  // With pairs: the TP all-reduce time their plans hide (of all in the iteration's
  // compute) and the activations a pair holds beyond one half's at its worst step
  // (CoexecPlan::peak_excess, in microbatches: stage units / chunks).
  bool pairs = false;
  for (const SchedulePlan& sp : plan.schedules) {
    const sched::Schedule& s = sp.schedule;
    int n = 0;
    double comm = 0, hidden = 0, excess = 0;
    for (const auto& row : s.actions)
      for (size_t i = 0; i < row.size(); ++i) {
        const sched::Action& a = row[i];
        if (sched::is_compute(a.kind) && a.kind != sched::Kind::W)
          comm += static_cast<double>(sp.costs.tp_time_ns(a.stage));
        if (!a.paired || i + 1 >= row.size()) continue;
        ++n;
        const sched::CoexecPlan pp = sp.costs.pair_plan(a, row[i + 1]);
        if (sp.costs.coexec_overlaps) hidden += pp.hidden();
        excess = std::max(excess, pp.peak_excess);
      }
    pairs = pairs || n > 0;
    nlohmann::json shape = {{"peak_activations", sp.peak_activations}, {"co_executed_pairs", n}};
    if (n > 0) {
      shape["pair_extra_activations"] = excess / std::max(1, s.chunks());
      if (comm > 0) shape["tp_comm_hidden_pct"] = 100 * hidden / comm;
    }
    j["schedule_shape"][sp.choice.name] = shape;
  }
  if (!plan.schedules.empty()) {
    const sim::CostModel& c = plan.schedules.front().costs;
    double comm = 0, all = 0;
    for (int st = 0; st < c.stages(); ++st) {
      comm += 2.0 * static_cast<double>(c.tp_time_ns(st));
      all += static_cast<double>(c.f_ns[st] + c.b_ns[st] + c.w_ns[st]);
    }
    if (comm > 0) j["tp_comm_fraction"] = comm / all;
    if (pairs) j["coexec_interference"] = c.coexec_interference;
  }
  for (auto& r : rs) j["schedules"].push_back(summary_json(r));
  return j;
}

std::vector<double> simulated_utilisation(const Prediction& p) {
  std::vector<double> out;
  // The predicted run's wall time per iteration, first start to last end (its barriers'
  // waits included, as the measured utilisation has them).
  double iteration = p.iteration_s();
  const auto& r = p.run;
  if (!r.iteration_s.empty() && r.start_s.size() == r.iteration_s.size()) {
    const double wall = r.start_s.back() + r.iteration_s.back() - r.start_s.front();
    if (wall > 0) iteration = wall / static_cast<double>(r.iteration_s.size());
  }
  if (iteration <= 0) return out;
  for (const auto& ev : p.trace.events) {
    if (!(sched::is_compute(ev.kind) || ev.kind == sched::Kind::OPT) || ev.rank < 0) continue;
    if (out.size() <= static_cast<size_t>(ev.rank)) out.resize(ev.rank + 1, 0.0);
    out[ev.rank] += static_cast<double>(ev.end_ns - ev.start_ns) / 1e9 / iteration;
  }
  return out;
}

void set_simulated(ScheduleResult& r, const Prediction& p, const Plan& plan,
                   const SchedulePlan& sp) {
  r.simulated_iteration_s = p.iteration_s();
  r.simulated_steady_iteration_s = p.steady_iteration_s();
  r.simulated_band_s = p.band_s();
  r.simulated_bubble = p.summary.bubble;
  r.simulated_series = p.run;
  r.simulated_utilisation = simulated_utilisation(p);
  const Experiment& e = plan.experiment;
  const double peak = peak_flops_per_rank(e);
  if (peak > 0 && r.simulated_iteration_s > 0)
    r.simulated_mfu =
        iteration_flops(e, sp.costs) / (r.simulated_iteration_s * e.world_size() * peak);
}

std::string simulated_costs_label(const Plan& plan) {
  return plan.experiment.compute.mode == Compute::Mode::kReal
             ? "planned from FLOPs (compute.real.gflops)"
             : "modeled (what the workers sleep)";
}

sim::CostModel run_prediction_costs(const Plan& plan, const SchedulePlan& sp,
                                    const trace::Trace& measured, const std::string& source,
                                    std::string& label) {
  label = simulated_costs_label(plan);
  if (plan.experiment.compute.mode != Compute::Mode::kReal || measured.events.empty())
    return sp.costs;
  label = "measured compute durations (" + source + ")";
  return measured_costs(measured, sp.costs);
}

void set_throughput(ScheduleResult& r, const Plan& plan, const SchedulePlan& sp,
                    double iteration_s) {
  if (iteration_s <= 0) return;
  const Experiment& e = plan.experiment;
  r.tokens_per_s = iteration_tokens(e) / iteration_s;
  r.peak_flops_per_rank = peak_flops_per_rank(e);
  r.modeled_compute = e.compute.mode == Compute::Mode::kModeled;
  if (r.peak_flops_per_rank > 0)
    r.mfu = iteration_flops(e, sp.costs) / (iteration_s * e.world_size() * r.peak_flops_per_rank);
}

std::string iterations_csv_header() {
  return "schedule,iteration,iteration_s,loss,megatron,zerobubble,crosspipe,start_s,wan_bytes,"
         "wait_recv_f_s,wait_recv_b_s,wait_allreduce_s,simulated_s,repeat\n";
}

std::string iterations_csv_rows(const ScheduleResult& r) {
  std::string out;
  size_t first = 0;  // the pooled index of this repeat's iteration 0
  for (size_t i = 0; i < r.iteration_s.size(); ++i) {
    const int k = i < r.iteration_repeat.size() ? r.iteration_repeat[i] : 0;
    if (i > 0 && i < r.iteration_repeat.size() && r.iteration_repeat[i - 1] != k) first = i;
    const double loss = i < r.loss.size() ? r.loss[i] : NAN;
    const auto& b = i < r.bubbles.size() ? r.bubbles[i] : trace::BubbleRatios{};
    out += fmt::format("{},{},{:.6f},{},{:.4f},{:.4f},{:.4f}", r.schedule, i - first,
                       r.iteration_s[i], std::isfinite(loss) ? fmt::format("{:.6f}", loss) : "",
                       b.megatron, b.zerobubble, b.crosspipe);
    if (i < r.series.size()) {
      const auto& pt = r.series[i];
      auto wait = [&pt](const char* cause) {
        auto it = pt.waits_s.find(cause);
        return it == pt.waits_s.end() ? 0.0 : it->second;
      };
      out += fmt::format(",{:.6f},{},{:.6f},{:.6f},{:.6f}", pt.start_s, pt.wan_bytes,
                         wait("RECV_F"), wait("RECV_B"), wait("ALLREDUCE"));
    } else {
      out += ",,,,,";
    }
    const auto* sim = r.simulated_series ? &r.simulated_series->iteration_s : nullptr;
    out += sim && i - first < sim->size() ? fmt::format(",{:.6f}", (*sim)[i - first]) : ",";
    out += fmt::format(",{}\n", k);
  }
  return out;
}

namespace {
// Characters of UTF-8 `text` (a character's continuation bytes take no column).
size_t columns(const std::string& text) {
  size_t n = 0;
  for (char ch : text) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}
// `text` right-aligned in `width` columns.
std::string right(const std::string& text, size_t width) {
  const size_t n = columns(text);
  return std::string(width > n ? width - n : 0, ' ') + text;
}
// The mean column: "1.234 s", or with an interval over repeats "1.234 ± 0.012 s".
std::string mean_cell(const ScheduleResult& r) {
  if (const Spread s = spread(r); s.over_runs && s.ci)
    return fmt::format("{:.3f} \u00b1 {:.3f} s", s.ci->mean, s.ci->half());
  return fmt::format("{:.3f} s", r.mean());
}
// "first -> last" of the finite losses, "" when none.
std::string loss_text(const ScheduleResult& r) {
  std::vector<double> finite;
  for (double x : r.loss)
    if (std::isfinite(x)) finite.push_back(x);
  return finite.empty() ? "" : fmt::format("{:.3f} -> {:.3f}", finite.front(), finite.back());
}
}  // namespace

std::string workload_table(const ScheduleResult& r) {
  std::string out = fmt::format("{:<10} {:>10} {:>10} {:>10} {:>8} {}\n", "program", "step mean",
                                "step p95", "simulated", "meas/sim", "loss");
  if (!r.ok && r.iteration_s.empty()) return out + "FAILED: " + r.error + "\n";
  const std::string loss = loss_text(r);
  const std::string sim = r.simulated_iteration_s > 0
                              ? fmt::format("{:>8.3f} s {:>8.3f}", r.simulated_iteration_s,
                                            r.mean() / r.simulated_iteration_s)
                              : fmt::format("{:>10} {:>8}", "-", "-");
  return out + fmt::format("{:<10} {:>8.3f} s {:>8.3f} s {} {}{}\n", r.schedule, r.mean(),
                           r.percentile(95), sim, loss, r.ok ? "" : "  (FAILED: " + r.error + ")");
}

std::string comparison_table(const std::vector<ScheduleResult>& rs) {
  size_t w = 10;
  for (const auto& r : rs) w = std::max(w, columns(mean_cell(r)));
  std::string out =
      fmt::format("{:<18} {} {:>10} {:>10} {:>8} {:>11} {:>9} {:>9} {:>10} {}\n", "schedule",
                  right("iter mean", w), "iter p95", "simulated", "meas/sim", "bubble/comp",
                  "idle ZB", "idle CP", "tokens/s", "loss");
  for (const auto& r : rs) {
    if (r.repeats == 0) {  // none of its runs finished (summary_schema.h missing_runs)
      out += fmt::format("{:<18} not run\n", r.schedule);
      continue;
    }
    if (!r.ok && r.iteration_s.empty()) {
      out += fmt::format("{:<18} FAILED: {}\n", r.schedule, r.error);
      continue;
    }
    const std::string loss = loss_text(r);
    out += fmt::format(
        "{:<18} {} {:>8.3f} s {:>8.3f} s {:>8.3f} {:>9.2f} x {:>8.1f}% {:>8.1f}% {:>10.0f} "
        "{}{}\n",
        r.schedule, right(mean_cell(r), w), r.percentile(95), r.simulated_iteration_s,
        r.simulated_iteration_s > 0 ? r.mean() / r.simulated_iteration_s : 0.0, r.bubble.megatron,
        100 * r.bubble.zerobubble, 100 * r.bubble.crosspipe, r.tokens_per_s, loss,
        r.ok ? "" : "  (FAILED: " + r.error + ")");
  }
  return out + trace::kBubbleLegend + ci_comparison(rs);
}

}  // namespace xdc::run
