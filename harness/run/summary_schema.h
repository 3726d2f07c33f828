#pragma once
// summary.json, the results schema of `xdc run` and `xdc simulate` (one layout for both),
// versioned. Written by one writer (results.h run_summary_json), read by one C++ reader
// (report/results_dir.h, which the report and the sweep tables use) and by the Python
// package in python/xdc_results. A reader refuses a version newer than its own.
//
// Version 1. Times in seconds unless the key says otherwise, undilated (a run under time
// dilation k reports its times divided by k). Top level:
//   schema_version, experiment, compute_mode ("real" | "modeled"), compute_costs,
//   time_dilation, stages, data_parallel, tensor_parallel, world_size, microbatches,
//   microbatch_size, mpi_tcp_links, mpi_connections, wan_sharing, interrupted, complete,
//   simulation {grad_norm_allreduce, iteration_barrier, cpus, ranks_per_cpu},
//   schedule_shape {name: {peak_activations, co_executed_pairs, ...}}, backend and network
//   (`xdc run`), simulated: true (`xdc simulate`: no measured figures), schedules: [entry,
//   ...], one per schedule of the experiment.
// complete: every run the experiment asks for (each schedule x `repeat`) has its result
// here. `xdc run` rewrites summary.json as each run starts and ends (run/resume.h), so a
// run killed at any point leaves one with complete false, its entries pooling the runs
// that finished and listing the others in missing_runs; interrupted: SIGINT/SIGTERM
// stopped the run. `xdc run --resume DIR` runs the missing runs and completes it.
// A schedule's entry:
//   schedule, ok, error (when not ok), iterations (measured), iteration_s [per measured
//   iteration], iteration_s_mean / _p50 / _p95, bubble_ratio {megatron, zerobubble,
//   crosspipe} (fractions), loss, waits_s_per_iteration {cause: s}, tokens_per_s, mfu,
//   utilisation {per_rank, mean} (compute busy over the measured span, fractions),
//   series {start_s, wan_bytes, waits_s, bubble_ratio {megatron: [per iteration], ...}},
//   changes [{t_s, what, source}]; eval_loss (replica 0's final parameters on the
//   validation batches, where one rank holds every stage; absent otherwise); dp_sync (a
//   DiLoCo run: results.h dp_sync_json's outer syncs, bytes per outer step measured and
//   analytic, on the WAN measured and analytic, stall per sync); wan_wire_bytes {"from->to":
//   bytes, total} (what each WAN direction's egress sent during the job, as segments on a
//   wire with their headers; absent in a lab run); tcp {sent_segments,
//   retransmitted_segments, fast_recoveries, loss_probes, timeouts, hosts {host: the same}}
//   (the hosts' kernel TCP counters over the job: network/tcp.h TcpCounters; timeouts are
//   retransmission timeouts, each a stall of at least 200 ms; absent in a lab run);
//   tp_stalls {records, stalled, excess_ms} (results.h tp_stalls_json: the measured
//   iterations' tensor-parallel all-reduces at least 200 ms longer than their median, a TCP
//   timer's wait the simulator does not model; absent without tensor parallelism);
//   repeats (the runs pooled in the entry: experiment.h `repeat`, 1 without), run_means_s
//   [per repeat: the mean of its measured iterations, null when it measured none],
//   run_seeds [per repeat: the seed it ran with, the experiment's seed + k for repeat k],
//   iteration_s_ci95 [low, high]: the 95% confidence interval of the mean iteration
//   (run/repeat.h): with m >= 2 repeats that measured (non-null run_means_s), the mean of
//   run_means_s +- t(0.975, m - 1) x sd / sqrt(m); with m = 1, over that run's iterations
//   (t(0.975, n - 1)); null with fewer than 2 values; iteration_s_sd: that sd (of the
//   run means, or of the iterations), null likewise. With repeats > 1 the other measured
//   keys pool the repeats (run/repeat.h pool_repeats: iteration_s, loss and series in
//   repeat order, series and changes laid end to end, the simulated_* keys, the band's ends too,
//   the mean of the repeats' predictions); each repeat's own entry is
//   SCHEDULE/repeat-K/summary.json. simulated_iteration_s (the prediction: plan/predict.h
//   Prediction::iteration_s: the mean over runs whose random losses, jitter lags and
//   measured compute noise are drawn, else the predicted run's measured iterations' mean),
//   simulated_band_s [low, high] (the 90% band of the drawn runs' means, Prediction::band_s; zero
//   width where nothing is drawn), within_band (measured runs: iteration_s_mean inside
//   simulated_band_s), simulated_launch_to_measured_s (the predicted run's launch before its first
//   measured iteration, s; absent: not known), simulated_steady_iteration_s,
//   simulated_bubble_ratio, simulated_costs, simulated_mfu, simulated_series {iteration_s,
//   start_s, changes, ended}, simulated_utilisation {per_rank, mean} (each rank's compute
//   in the steady iteration over simulated_iteration_s; per_rank: the ranks the simulated
//   trace holds, the first replica's where replicas are simulated once).
//   missing_runs [{repeat, seed, state}] (only where runs are missing, complete false): the
//   runs of the schedule with no result here, state "running" (started when this summary
//   was written: where no xdc runs any more, it was killed in that run), "not run" (not
//   reached yet) or "interrupted" (stopped by SIGINT/SIGTERM, or not started because of
//   it; a stopped run's partial files stay in its directory). The entry pools the runs
//   that finished (repeats, run_seeds: those); a failed run is one that finished, its
//   error in the entry's. A schedule none of whose runs finished has repeats 0, ok false
//   and error "no run finished".
// A run of the user's own program (experiment/workload.h, run/workload_run.h) writes
// kind "workload" and, instead of the worker's top-level keys: launcher ("torch" | "mpi"),
// command, hosts, per_host, world_size, backend, network, complete, interrupted,
// processes [{rank, host, local_rank, exit_code (null: unknown), stopped_by_xdc,
// seconds}], events_bad_lines, wan {direction: {samples, interval_p50_s, interval_max_s,
// bytes, drops, mean_mbit_s, peak_mbit_s}}, and one entry in schedules named "workload":
// the keys above with iteration_s = the program's steps after warm-up, loss = the lowest
// rank's that reports one,
// simulated_iteration_s = the prediction of predicted.yaml (0: none), plus steps {all_s,
// warmup, per_rank, compute_s_mean, allreduce_bytes} and prediction {compute_s,
// allreduce_bytes, experiment, simulated_step_s} (or {error}).
// Sign conventions: measured_over_simulated = iteration_s_mean / simulated_iteration_s
// (> 1: the run was slower than predicted). Prediction error, where a benchmark or the
// Python package states one: err_pct = 100 (simulated - measured) / measured (> 0: the
// prediction is slower than the run, pessimistic).
#include <cstdint>
#include <string>

namespace xdc::run {

inline constexpr int kSummarySchemaVersion = 1;

// One entry of missing_runs (above).
struct MissingRun {
  int repeat = 0;
  uint64_t seed = 0;
  std::string state;  // "running" | "not run" | "interrupted"
  bool operator==(const MissingRun&) const = default;
};

}  // namespace xdc::run
