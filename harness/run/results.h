#pragma once
// What one schedule's run measured, read back from the files every rank wrote
// (rank<r>.trace.csv, rank<r>.json; run_spec.h), split into iterations by the ranks'
// own iteration bounds and analysed with the simulator's analysis (harness/trace):
// iteration time, the three bubble ratios, loss, waits by cause; beside it the
// simulator's prediction of the same schedule. run_summary_json() writes summary.json
// (summary_schema.h: its keys, units and sign conventions).
#include <array>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/plan/predict.h"
#include "harness/run/summary_schema.h"
#include "harness/trace/analysis.h"
#include "workloads/trace/trace.h"
#include "workloads/worker/run_spec.h"

namespace xdc::run {

struct RankFiles {
  trace::Trace trace;                       // every rank's events, all measured iterations
  std::vector<worker::RankReport> reports;  // those present, by world rank
  std::vector<int> missing;                 // ranks with no report
};
// Under time dilation k (experiment/experiment.h) the ranks ran k times slower than the run they
// emulate: every time read here (events, iteration bounds, waits) is divided by k, the
// one place where dilation is undone, so everything derived (analysis, Chrome trace,
// summary.json, report) is in undilated time.
RankFiles read_rank_files(const std::string& run_dir, int world_size, const std::string& name,
                          double time_dilation = 1);
// Divides every time in `f` by `k` (what read_rank_files does with its time_dilation).
void undilate(RankFiles& f, double k);

struct ScheduleResult {
  std::string schedule;
  bool measured = true;  // false: `xdc simulate`, only the simulated fields mean anything
  bool ok = false;
  std::string error;                         // why the run failed ("" when ok)
  std::vector<double> iteration_s;           // per measured iteration completed by all ranks
  std::vector<trace::BubbleRatios> bubbles;  // per iteration
  trace::BubbleRatios bubble;                // mean over iterations
  std::vector<double> loss;                  // replica 0's last stage, per iteration
  // The prediction of the measured iterations (plan/predict.h Prediction::iteration_s: the mean
  // of the predicted run's, as iteration_s_mean is the mean of the measured ones), and the
  // steady state's.
  double simulated_iteration_s = 0;
  double simulated_steady_iteration_s = 0;
  // When the predicted run was launched before its first measured iteration (plan/predict.h
  // PredictOptions::launch_to_measured_ns, s); < 0: not known (the first iteration at the
  // launch). `xdc simulate --measured` reads it back to predict the run again.
  double simulated_launch_s = -1;
  std::array<double, 2> simulated_band_s{};  // Prediction::band_s (0, 0: not predicted)
  trace::BubbleRatios simulated_bubble;
  std::string simulated_costs;  // "modeled" | "measured compute" | ...
  double tokens_per_s = 0;
  double mfu = 0, peak_flops_per_rank = 0;  // 0 when not known
  double simulated_mfu = 0;  // the same at the simulated iteration time; 0 when not known
  // Modeled compute: the ranks slept the cost model's durations, which assume the peak, so
  // MFU (and the compute in tokens/s) is arithmetic on that assumption, not a measurement.
  bool modeled_compute = false;
  nlohmann::json waits_s;              // per cause, seconds per iteration, all ranks summed
  nlohmann::json transfers;            // transfers_json of the measured run (null: none)
  nlohmann::json simulated_transfers;  // the same of the simulated trace
  // Per measured iteration (the report's series): when it started (s from iteration 0's
  // first event), the bytes its SENDs put on the WAN (between ranks of different DCs), and
  // the ranks' waits by cause (RECV_F, RECV_B, ALLREDUCE: seconds, all ranks summed).
  struct Point {
    double start_s = 0;
    int64_t wan_bytes = 0;
    std::map<std::string, double> waits_s;
  };
  std::vector<Point> series;
  // The WAN changes applied during the run (events.json), t_s from measured iteration 0's
  // start as series' start_s.
  std::vector<RunSeries::Applied> changes;
  // When the WAN changes under the run (plan/plan.h's changes_over_time): the run predicted
  // with the same changes (plan/predict.h), per iteration.
  std::optional<RunSeries> simulated_series;
  // Per world rank: compute busy (PREFILL included) / the measured span (prefill_results.h).
  std::vector<double> utilisation;
  // The same predicted: per rank of the simulated steady iteration (the first replica's
  // ranks where the replicas are alike and simulated once), its compute there (the costs
  // repeat every iteration) over simulated_iteration_s (the run's mean, which carries what
  // the steady iteration does not: DiLoCo's outer syncs, the WAN's changes).
  std::vector<double> simulated_utilisation;
  nlohmann::json prefill;  // a run with prefill: prefill_results.h's prefill_json (+ baseline)
  nlohmann::json dp_sync;  // DiLoCo (experiment.h dp_sync): dp_sync_json below; null: sync
  // What every WAN direction's egress sent while the job ran (as segments on a wire: each
  // with its Ethernet, IP and TCP headers; every message, ACKs, MPI's start-up and the
  // barriers; runner.cpp wan_tx_bytes), "from->to" -> bytes and "total"; null where not
  // read (a lab run).
  nlohmann::json wan_wire_bytes;
  // What the hosts' TCP did while the job ran (net::TcpCounters, runner.cpp tcp_during):
  // sent_segments, retransmitted_segments, fast_recoveries, loss_probes, timeouts, and
  // hosts {host: the same, for each host that sent}; null where not read (a lab run).
  nlohmann::json tcp;
  // The measured iterations' tensor-parallel all-reduces that took at least TCP_RTO_MIN longer
  // than their median (tp_stalls_json); null without tensor parallelism.
  nlohmann::json tp_stalls;
  // Replica 0's final parameters on the validation batches (RankReport::eval_loss, a rank
  // holding every stage); NaN: not evaluated.
  double eval_loss = std::numeric_limits<double>::quiet_NaN();
  // Ranks on several machines (RunSpec::clock_check): the largest offset to rank 0's clock
  // that was applied, and the largest residual (the offset measured twice, difference).
  double clock_offset_max_us = -1, clock_residual_us = -1;  // -1: not measured
  // Repeats (repeat.h): how many runs are pooled here, each one's mean measured iteration
  // (NaN: it measured none) and seed, and per pooled iteration the repeat it is from
  // (empty: every one from repeat 0).
  int repeats = 1;
  std::vector<double> run_means_s;
  std::vector<uint64_t> run_seeds;
  std::vector<int> iteration_repeat;
  // The runs of this schedule the experiment asks for that have no result here (a run
  // killed or stopped part way, run/resume.h); empty when every one finished.
  std::vector<MissingRun> missing_runs;
  double mean() const;
  double percentile(double p) const;  // nearest rank
};

// The WAN's point-to-point messages (between ranks of different DCs, rank_dcs: world rank
// -> DC): how many, over how many connections each (trace.h), and their goodput, bytes x 8
// / (receiver's completion - sender's post) over the messages the receiver waited for
// (its RECV ends when the data was all there): p50, min, max in Mbit/s. With `reports`,
// the bytes every stripe connection carried (run_spec.h RankReport::connections).
// Null when the trace has no such message.
nlohmann::json transfers_json(const trace::Trace& t, const std::vector<std::string>& rank_dcs,
                              const std::vector<worker::RankReport>& reports = {});

// The tensor-parallel all-reduces (TP_ALLREDUCE records, one per member of the group) that
// took at least kTpStallNs longer than the median of all of them: a wait as long as a TCP
// timer (a probe timer after a local drop, a retransmission timeout), which the simulator
// does not model (docs/history/predictions.md). {"records", "stalled", "excess_ms": their
// time beyond the median, summed}; counts, so repeats add up. Null when there are none.
inline constexpr int64_t kTpStallNs = 200'000'000;  // Linux's TCP_RTO_MIN
nlohmann::json tp_stalls_json(const std::vector<trace::Trace>& iterations);

// One iteration's series point (start_s: its first event, s on the trace's clock).
ScheduleResult::Point iteration_point(const trace::Trace& iteration,
                                      const std::vector<std::string>& rank_dcs);

// The outer loop as measured (Experiment::dp_sync diloco or streaming), from the ranks'
// files, `outer_bytes` the plan's (CostModel::outer_bytes, per stage and fragment). A round
// is every fragment synchronised once (diloco: one outer step):
// {method, inner_steps, payload, outer_syncs (rounds in the measured iterations: rank 0's
// OUTER_SYNC records over the (stage, fragment) pairs it holds), payload_bytes_per_outer_step
// (replica 0's OUTER_SYNC records' bytes per round, its stages summed: what each message of
// the all-reduce carries), payload_bytes_analytic (outer_bytes summed, x tensor_parallel:
// each TP rank syncs its own shard), collective_bytes_per_outer_step (2 (M - 1) x
// payload_bytes_analytic: the binomial all-reduce's M - 1 reduce and M - 1 broadcast
// messages among M replicas, TCP/IP headers not counted), collective_wire_bytes_analytic
// (the same with each message cut into 1448-byte TCP segments of 66 header bytes:
// Ethernet, IP, TCP with timestamps; ACKs and MPI's own fragment headers not counted),
// job_payload_bytes_analytic (the payload every fragment sync of the job carries, warmup
// included), stall_s_per_sync (OUTER_SYNC waits per round, mean over ranks),
// sync_s_per_sync (OUTER_SYNC records' time per round, mean over ranks: encode, wait,
// decode, step; with overlap, the inner steps beside it too)};
// streaming adds fragments, overlap_steps, merge and fragment_syncs (rank 0's records);
// eager: eager true.
nlohmann::json dp_sync_json(const Experiment& e,
                            const std::vector<std::vector<int64_t>>& outer_bytes,
                            const RankFiles& f);
// Adds to dp_sync_json's object the WAN's measured bytes per round:
// wan_wire_bytes_per_outer_step = `total_wan_bytes` (ScheduleResult::wan_wire_bytes' total,
// the whole job's) x payload_bytes_analytic / job_payload_bytes_analytic; none with
// dp_sync.sync_steps (the job's count holds the synchronous iterations' all-reduces).
void add_wan_bytes(nlohmann::json& dp_sync, const Experiment& e, uint64_t total_wan_bytes);

// Per-iteration traces from the merged trace and the reports.
std::vector<trace::Trace> split_iterations(const RankFiles& f);

// One schedule's entry of summary.json; a result that was not measured has only the
// simulated fields (the measured ones are absent).
nlohmann::json summary_json(const ScheduleResult& r);
// The whole summary.json of `xdc run` (backend and network as run) and of `xdc simulate`
// (no backend or network, "simulated": true when no result was measured).
nlohmann::json run_summary_json(const Plan& plan, const std::vector<ScheduleResult>& rs,
                                const std::string& backend, const std::string& network,
                                bool interrupted);
// Each rank's compute (and OPT) in the predicted steady iteration over the predicted run's
// wall time per iteration (first start to last end over its iterations, as utilisation()
// measures it; the steady iteration without a run): ScheduleResult::simulated_utilisation.
std::vector<double> simulated_utilisation(const Prediction& p);
// The prediction's iteration time, run series and bubbles, and its MFU where the peak is
// known (modeled, like every simulated figure).
void set_simulated(ScheduleResult& r, const Prediction& p, const Plan& plan,
                   const SchedulePlan& sp);
// What the prediction's costs are when none were measured (simulated_costs).
std::string simulated_costs_label(const Plan& plan);
// The costs the prediction beside a run takes, and their label: real compute as the run
// measured it (`measured`, its trace: the same CPU sharing; labelled with `source`),
// modeled compute as planned (what the ranks slept).
sim::CostModel run_prediction_costs(const Plan& plan, const SchedulePlan& sp,
                                    const trace::Trace& measured, const std::string& source,
                                    std::string& label);
// tokens/s and MFU (with its peak) for iterations of `iteration_s` (0: left at 0).
void set_throughput(ScheduleResult& r, const Plan& plan, const SchedulePlan& sp,
                    double iteration_s);
// One CSV row per measured iteration: schedule,iteration,iteration_s,loss,megatron,...,
// then the series (start_s, wan_bytes, wait_recv_f_s, wait_recv_b_s, wait_allreduce_s),
// simulated_s (the predicted run's iteration, plan/predict.h) and repeat (repeat.h; iteration
// counts from 0 in each repeat).
std::string iterations_csv_header();
std::string iterations_csv_rows(const ScheduleResult& r);
// The comparison table printed at the end of `xdc run` (with repeats, the mean is the
// centre of its 95% interval +- the half-width), then repeat.h's ci_comparison lines.
std::string comparison_table(const std::vector<ScheduleResult>& rs);
// The same for a `workload:` run (its one entry): the program's step, mean and p95,
// beside the predicted step, and its loss; no pipeline columns (nothing of it ran).
std::string workload_table(const ScheduleResult& r);

}  // namespace xdc::run
