#pragma once
// The contract between the launcher (harness, `xdc run`) and xdc-worker: one JSON file
// per run, written by the launcher into the run directory, read by every rank; and the
// files every rank writes back there.
//
// World layout: world size = pipeline_ranks * data_parallel * tensor_parallel; world rank
// r = (replica * pipeline_ranks + pipeline_rank) * tensor_parallel + tp_index, so a TP
// group (the tensor_parallel ranks holding the same stages of one replica) is a run of
// consecutive world ranks. Every replica runs the same schedule (schedule_csv, PyTorch's
// cell form, workloads/schedule/csv.h) on its own pipeline ranks; every TP rank of a
// pipeline rank runs that rank's action list and exchanges its point-to-point messages
// with the peer pipeline rank's TP rank of the same tp_index (activations are whole on
// every TP rank, Megatron without sequence parallelism: no broadcast inside the group,
// each TP rank sends its own copy). ALLREDUCE of stage s reduces across the replicas'
// ranks holding s with the same tp_index; the TP all-reduces inside F and B
// (workloads/model/stage.h) run on the TP group's communicator.
//
// Outputs, per world rank r, in run_dir:
//   rank<r>.trace.csv   trace::Event CSV (workloads/trace/trace.h) of every measured
//                       iteration, times in ns on the clock of world rank 0 (offsets
//                       measured by ping-pong at start and end), `rank` = world rank
//   rank<r>.json        RankReport below
//   rank<r>.log         stdout/stderr of the rank (the launcher redirects)
//   rank<r>.progress    one line per iteration as it starts (after its barrier): its
//                       number, measured ones from 0, warmup ones below 0 (the harness
//                       fires experiment events anchored to iterations from it)
//   rank<r>.alive       the rank's last sign of life (liveness.h), for naming a stalled
//                       rank when another times out
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace xdc::worker {

struct ModeledCosts {                     // compute = "modeled": sleep, do not compute
  std::vector<int64_t> f_ns, b_ns, w_ns;  // per stage; BW = B + W
  std::vector<int64_t> activation_bytes;  // per stage: its output message (and input grad)
  std::vector<int64_t> grad_bytes;        // per stage: the ALLREDUCE message
  int64_t opt_ns = 0;
  // Tensor parallelism: per stage, the TP all-reduces inside each F and each B (2 per
  // layer; empty or 0: none) and the bytes of each. f_ns and b_ns are the compute only:
  // the worker sleeps them in equal slices between the all-reduces, which it performs
  // over MPI on the TP group (real bytes over the network).
  std::vector<int> tp_allreduces;
  std::vector<int64_t> tp_allreduce_bytes;
  // A node's folded TP all-reduces (one process per node, nobody performs them): per
  // stage, their time inside each F and each B (part of f_ns and b_ns) and how many they
  // are; empty: none. With coexec_interference: how a co-executed pair runs (coexec.h).
  std::vector<int64_t> node_tp_ns;
  std::vector<int> node_tp_allreduces;
  double coexec_interference = 0;
};

// Inference prefill in pipeline bubbles (BubbleTea; workloads/worker/prefill.h), filled in
// by the harness from the experiment's `prefill:` block (harness/experiment/experiment.h) and the
// simulator's prediction of the schedule. Every duration here is already x time_dilation
// and the rate / time_dilation, as the modeled costs.
struct PrefillSpec {
  bool on = false;
  double rate_rps = 0;               // requests per second, the whole run: each world rank
                                     // draws its own Poisson stream of rate_rps / world_size
  std::string dist = "fixed";        // prompt tokens: fixed | uniform | exponential
  double mean_tokens = 512;          // fixed: every prompt; uniform: [1, 2 mean - 1];
  int max_tokens = 2048;             // exponential: mean; all capped at max_tokens
  int64_t deadline_ns = 2000000000;  // a request not served by arrival + deadline is rejected
  uint64_t seed = 1;                 // each world rank's stream: seed and the rank
  std::vector<double> ns_per_token;  // per pipeline rank: its stages' F per token
  // Real compute: a prompt runs as whole forward passes of pass_tokens tokens (the stage's
  // microbatch, B x seq; the last one padded), so a job costs its tokens rounded up to a
  // multiple; and ns_per_token is measured from the jobs run (the largest of the last 8:
  // a job overestimated only loses a bubble, one underestimated would delay training),
  // the planned value above until the first. 0 / false: modeled (a sleep per token).
  int pass_tokens = 0;
  bool calibrate = false;
  // Per pipeline rank, per action index of its action list: the predicted start of that
  // compute action (F, B, W, BW, OPT) from the iteration's start; -1 for other actions.
  std::vector<std::vector<int64_t>> action_start_ns;
  int64_t iteration_ns = 0;    // predicted iteration span (start to the last rank's end)
  int64_t guard_ns = 1000000;  // a job must end this long before the predicted start
};

// How the data-parallel replicas synchronise (the experiment's `dp_sync:`,
// harness/experiment/experiment.h; outer_sync.h). method "sync": the gradient all-reduce
// every iteration; "diloco": none, and after every inner_steps-th iteration (warmup ones
// counted) the pseudo-gradients are averaged in `payload` (model/payload.h) and the outer
// Nesterov step applied; "streaming": the same per fragment (model/fragments.h), each
// fragment's all-reduce applied overlap_steps iterations after it started and merged as
// merge * local + (1 - merge) * outer; eager: applied when the fragment's next sync
// starts, the outer step taken at each start (outer_sync.h). diloco is streaming with 1
// fragment, no overlap, merge 0. With sync_steps N > 0 the first N iterations (warmup counted)
// all-reduce the gradients as "sync" does, and the outer loop starts from the parameters they
// reached, its inner steps counted from iteration N.
struct DpSyncSpec {
  std::string method = "sync";  // "sync" | "diloco" | "streaming"
  int inner_steps = 1;
  int sync_steps = 0;
  int overlap_steps = 0;
  double merge = 0;
  bool eager = false;
  double outer_lr = 0.7, outer_momentum = 0.9;
  std::string payload = "fp32";
  // Per schedule stage, per fragment: the [offset, size) runs of the stage's parameter
  // buffer (modeled: gradient scratch) the fragment synchronises; empty: one fragment, the
  // whole stage.
  std::vector<std::vector<std::vector<std::pair<int64_t, int64_t>>>> fragment_runs;
  bool outer_loop() const { return method == "diloco" || method == "streaming"; }
};

struct RunSpec {
  std::string run_dir;  // absolute; every rank writes its files here
  std::string schedule_name;
  std::string schedule_csv;  // absolute path of the schedule all replicas run
  int pipeline_ranks = 1;
  int data_parallel = 1;
  int tensor_parallel = 1;              // TP ranks per pipeline rank (layout above)
  std::vector<std::string> rank_hosts;  // world rank -> emulated host (for messages)
  int microbatches = 1;
  int microbatch_size = 1;
  int iterations = 1;  // measured iterations
  int warmup = 0;      // iterations run before, not measured
  uint64_t seed = 1;
  std::string compute = "real";  // "real" | "modeled"
  nlohmann::json model;          // real: model::ModelConfig fields (vocab, dim, layers, ...)
  std::vector<std::pair<int, int>> stage_layers;  // real: per stage [begin, end) layers
  ModeledCosts modeled;
  std::string data_glob = "/usr/share/common-licenses/*";  // real: training text
  double learning_rate = 3e-3;
  int threads = 1;             // OpenBLAS / compute threads per rank
  std::vector<int> rank_gpus;  // real: world rank -> GPU of its CUDA stage; empty: CPU
  int timeout_s = 600;         // a rank that waits longer than this aborts the run
  double time_dilation = 1;    // k of the run (harness/experiment/experiment.h): the durations and
                               // timeout_s above are already x k; the worker only divides
                               // the iteration times it prints by it

  // ---- added by the worker (xdc-worker reads them; all optional)
  double grad_clip = 1.0;           // real: max global L2 grad norm over all stages (the
                                    // single-process reference clips alike); <= 0 = off
  std::string progress = "thread";  // "thread": a comm thread keeps MPI progressing while
                                    // compute runs; "none": MPI progresses only inside the
                                    // executor's waits or while an Isend is pending, so a
                                    // computing receiver stalls a rendezvous (comm.h)
  int progress_poll_us = 100;       // comm thread: MPI_Testsome period while requests pend
  bool iteration_barrier = true;    // all ranks start each iteration together (an
                                    // MPI_Ibarrier outside the iteration windows), as
                                    // the simulator does; false: iterations run free
                                    // and may overlap across ranks
  // Point-to-point messages over the worker's own TCP connections (stripes.h), per peer
  // class: a peer in another DC (rank_dcs) gets connections_wan sockets, one in this DC
  // connections_dc; 0 = OpenMPI's btl/tcp as usual (the default).
  std::vector<std::string> rank_dcs;  // world rank -> DC of its host
  int connections_wan = 0;
  int connections_dc = 0;
  std::string data_cidr = "10.0.0.0/8";  // where the stripes listen (the shaped network)
  // Temporal WAN sharing (arbiter.h; empty: fair, the default): per pipeline rank, per
  // action index of its list, the order key of that SEND (its predicted start in ns in
  // one replica's simulated iteration), -1 for other actions. Needs progress "thread".
  std::vector<std::vector<int64_t>> wan_send_order_ns;
  // With it and stripes: per WAN direction ("east->west"), the bytes it carries in one
  // round trip (rate x 2 x one-way delay, as built): a receiver over the stripes releases
  // the direction when a message has that many bytes left to arrive (stripes.h).
  std::map<std::string, int64_t> wan_release_ahead_bytes;
  PrefillSpec prefill;  // off unless the experiment has `prefill:`
  DpSyncSpec dp_sync;   // synchronous unless the experiment has `dp_sync:`
  // Ranks on several machines (a lab run): the offsets to rank 0's clock are measured over
  // 24 round trips instead of 8, and a third time right after the end-of-run measurement;
  // the change between the two (the measurement's repeatability) is clock_residual_ns.
  bool clock_check = false;
  int debug_exit_rank = -1;             // test only: this world rank exits (code 3, no MPI
  int debug_exit_after_iteration = -1;  // finalize) after this many measured iterations

  int world_size() const { return pipeline_ranks * data_parallel * tensor_parallel; }
};

inline constexpr int kEvalBatches = 16;  // RankReport::eval_loss's validation batches

struct RankReport {
  int world_rank = 0, replica = 0, pipeline_rank = 0, tp_index = 0;
  std::string host;
  std::vector<int> stages;                  // the stages this rank holds
  std::vector<int64_t> iteration_start_ns;  // per measured iteration, common clock
  std::vector<int64_t> iteration_end_ns;
  std::vector<double> loss;                  // per measured iteration (ranks with the
                                             // last stage; empty elsewhere)
  std::vector<std::string> param_checksums;  // per iteration, after OPT (hex of a hash
                                             // of the stage parameters)
  int64_t clock_offset_ns = 0;               // added to local times to get rank 0's clock
  int64_t clock_offset_drift_ns = 0;         // end-of-run offset minus start-of-run offset
  int64_t clock_residual_ns = -1;            // clock_check: |offset measured twice at the
                                             // end, difference|; -1 = not measured
  nlohmann::json waits;                      // {"RECV_F": ns, "RECV_B": ns, "ALLREDUCE": ns, ...}
  int64_t peak_activation_bytes = 0;
  // Real compute on a rank holding every stage: the mean loss of its final parameters on
  // kEvalBatches fixed validation batches (StageCompute::eval_loss); -1: not evaluated.
  double eval_loss = -1;
  std::string compute;  // what ran: "real (cpu)", "modeled", ...
  // ---- added by the worker
  bool complete = false;     // false in the partial report rewritten after every
                             // iteration; true once the run ended normally
  int iterations_done = 0;   // measured iterations finished
  std::string progress;      // "thread (poll 100 us)" or "none"
  int mpi_thread_level = 0;  // MPI_THREAD_* the library provided
  struct Connection {        // one socket of the stripes (stripes.h), this rank's side
    int peer = -1, index = 0;
    int64_t bytes_sent = 0, bytes_received = 0;              // over the whole run, headers included
    int64_t kernel_bytes_acked = 0, kernel_retransmits = 0;  // TCP_INFO at the end
  };
  std::vector<Connection> connections;  // empty without stripes
  int64_t wan_grants_served = 0;        // temporal WAN sharing: grants this rank's arbiter
                                        // gave (0 on ranks that are no DC's arbiter)
  // With prefill (PrefillSpec.on): {"arrived", "served", "rejected", "unfinished" (queued
  // at the end), "busy_ns", "ttft_ns": [per served request, arrival to prefill end],
  // "overruns", "overrun_ns" (waits whose data arrived while a job ran; the delay)}.
  nlohmann::json prefill;
};

void to_json(nlohmann::json& j, const ModeledCosts& c);
void from_json(const nlohmann::json& j, ModeledCosts& c);
void to_json(nlohmann::json& j, const PrefillSpec& p);
void from_json(const nlohmann::json& j, PrefillSpec& p);
void to_json(nlohmann::json& j, const DpSyncSpec& d);
void from_json(const nlohmann::json& j, DpSyncSpec& d);
void to_json(nlohmann::json& j, const RunSpec& s);
void from_json(const nlohmann::json& j, RunSpec& s);
void to_json(nlohmann::json& j, const RankReport::Connection& c);
void from_json(const nlohmann::json& j, RankReport::Connection& c);
void to_json(nlohmann::json& j, const RankReport& r);
void from_json(const nlohmann::json& j, RankReport& r);

// Throws xdc::InputError "PATH:LINE:COL: ..." (LINE:COL where the JSON is malformed) on a
// file that cannot be read or is not a run spec.
RunSpec read_run_spec(const std::string& path);
void write_run_spec(const std::string& path, const RunSpec& s);

}  // namespace xdc::worker
