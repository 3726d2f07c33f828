#pragma once
// An experiment (experiments/*.yaml): a topology, where the pipeline's ranks sit, what
// they compute, which schedules to compare. Loading validates everything `xdc run`
// could trip on (hosts in the topology, schedule names, units, ranges); bad input throws
// InputError "FILE:LINE:COL: KEY: expected ..., got ...". Unknown keys are errors.
//
//   name: two-dc-schedules            # required; names the results directory
//   topology: ../topologies/two-dc.yaml   # relative to this file, or an inline topology map
//   shaping: auto                     # optional: overrides the topology's backend
//   network: {backend: mininet}       # optional: overrides the topology's `network:`
//                                     # (native | mininet, topology.h's NetworkBackend)
//   wan: {loss: 0%, jitter: 0ms}      # optional: WAN link keys applied to every WAN
//                                     # direction (topology.h's keys, same units);
//                                     # `changes: [{at: 5s, down: 2s}]` there replaces
//                                     # every direction's scheduled changes (topology.h)
//   tcp: {congestion: bbr}            # optional: TCP keys (topology.h's `tcp:`) applied to
//                                     # every host, over the topology's per-DC/host values
//   model: {preset: tiny}             # real compute: the mini Llama (model/config.h keys)
//   compute: real                     # real | {real: {gflops: 20, peak_gflops: 95,
//                                     #     device: cpu | cuda, gpus: [0, 1]}}
//                                     # | {modeled: {model: llama2-13b, device: a100,
//                                     #     seq: 1024, efficiency: 0.5,
//                                     #     tensor_parallel: 8, tp_bandwidth: 1600gbit}}
//                                     #     (TP inside each rank's node: Compute below)
//                                     # | {modeled: {f: 300ms, b: 300ms, w: 150ms,
//                                     #     activation: 4mib}}   (w: part of b)
//                                     # | {modeled: {profile: costs.csv}}  (cost_model.h)
//                                     # with constants or a profile and data_parallel > 1:
//                                     # grad: 100mib (gradient bytes each stage
//                                     # all-reduces per iteration; a shape derives them)
//   pipeline:
//     stages: 4                       # pipeline ranks (interleaved/zbv put 2 chunks on each)
//     placement: [east-h1, east-h2, w1, w2]   # rank i on host i; with data_parallel d:
//                                     # one list per replica, or one list for all
//     data_parallel: 1
//     tensor_parallel: 1              # TP ranks per pipeline rank (below)
//     chunks: 2                       # model chunks per rank of `interleaved`
//     memory_cap: 0                   # peak activations per rank (microbatches; 0: none):
//                                     # memory-aware schedules plan within it, others must fit
//     milp_seconds: 10                # `optimal`: the solver's time limit
//   microbatches: 8
//   microbatch_size: 4
//   iterations: 20                    # measured
//   warmup: 2                         # run before, not measured
//   repeat: 1                         # runs of each schedule (below); --repeat N overrides
//   schedules: [1f1b, overlap, crosspipe-greedy]   # names (xdc schedule list) or
//                                     # {csv: file.csv} (PyTorch's form, csv.h)
//   mpi: {tcp_links: 1, timeout_s: 600, progress: thread,
//         connections: {wan: 8, dc: 1},         # optional, below
//         wan_sharing: fair,                    # fair | temporal, below
//         mca: {btl_tcp_eager_limit: 65536}}   # extra OpenMPI MCA parameters
//   seed: 1
//   learning_rate: 0.003              # real compute
//   data: /usr/share/common-licenses/*   # real compute: training text (glob)
//   check: false                      # quick link check before the workers start
//   iteration_barrier: true           # every iteration starts with a barrier of all ranks
//                                     # (false: iterations run free, as a program without
//                                     # one does; the simulator models either)
//   time_dilation: 1                  # k >= 1: run k times slower than real (below)
//   prefill:                          # optional: inference prefill in pipeline bubbles
//     rate_rps: 200                   # (BubbleTea, below); off without the block
//     prompt_tokens: {dist: uniform, mean: 512, max: 2048}   # fixed | uniform | exponential
//     deadline: 2s                    # not served by arrival + deadline: rejected
//     seed: 1                         # default: the experiment's seed
//   dp_sync:                          # optional: how data-parallel replicas synchronise
//     method: diloco                  # sync (default: an all-reduce of the gradients every
//                                     # iteration) | diloco | streaming (DpSync below)
//     inner_steps: 30                 # H iterations between a fragment's outer syncs
//     sync_steps: 0                   # the run's first N iterations (warmup included) all-
//                                     # reduce gradients as sync does; the outer loop
//                                     # starts from where they end (DiLoCo's runs start
//                                     # from a model trained with synchronous DP)
//     fragments: 2                    # streaming: P fragments (model/fragments.h), default 1
//     overlap_steps: 1                # streaming: tau, iterations a sync runs beside the
//                                     # inner steps before it is applied, 0..H-1, default 0
//     merge: 0.5                      # streaming: alpha, local share kept when applied;
//                                     # default 0.5 with overlap_steps > 0, else 0
//     eager: false                    # true: each sync overlaps its fragment's next H
//                                     # steps, the outer step taken at once with the
//                                     # replica's own fresh pseudo-gradient beside the
//                                     # others' last (arXiv 2502.12996); no overlap_steps
//                                     # or merge with it
//     outer: {optimizer: nesterov, lr: 0.7, momentum: 0.9}
//     payload: fp32                   # fp32 | bf16 | fp8 | int8 | fp4 (model/payload.h)
//   workload: {command: [...], hosts: [...]}   # optional: the user's own program instead of
//                                     # xdc-worker (workload.h); the worker's keys are
//                                     # then refused
//   events:                           # optional: WAN changes anchored to training progress
//     - {at_iteration: 5, link: [east, west], down_for: 2s}   # ProgressEvent below
//     - {at_iteration: 8, dc: west, kill_ranks: true}
//
// Repeats (repeat: N, 1..1000; `xdc run --repeat N` overrides it): every schedule runs N
// times on the one network, interleaved (round k runs every schedule once, in `schedules`
// order, before round k + 1; run/repeat.h), repeat k with seed + k (the model's and the
// prefill's seeds + k too), its files in SCHEDULE/repeat-K/ (0-based; N = 1: SCHEDULE/ as
// ever). A failed repeat keeps what it measured and the next ones still run. summary.json
// pools the repeats' iterations and states each run's mean and the 95% confidence
// interval of the mean over them (summary_schema.h); `xdc simulate` ignores the key.
//
// Tensor parallelism (tensor_parallel: t > 1; Megatron-style, workloads/model/stage.h):
// each pipeline rank of each replica is a TP group of t ranks, world size = stages x t x
// data_parallel (world layout: workloads/worker/run_spec.h). A stage entry of `placement`
// is then either a host (all t TP ranks of that stage on it) or a list of t hosts, one per
// TP rank, all in one DC: a TP group spanning DCs is refused (InputError at the list), as
// TP all-reduces run over the intra-DC network. With t > 1, a list of such entries is one
// placement for every replica; per-replica placements nest one level deeper
// ([[[e1, e2], [w1, w2]], [[e3, e4], [w3, w4]]]). Real compute needs t to divide the
// model's heads, kv_heads and ffn, and the CPU stage. Modeled compute divides each
// stage's compute by t (a shape: its layers' FLOPs, the LM head stays whole; constants
// or a profile: the given TP-1 durations, the layers per stage from `model:`'s layers)
// and adds 2 TP all-reduces per layer in F and 2 in B, each of the stage's activation
// (hidden state) bytes, timed on the TP group's intra-DC links (plan/plan.h); a shape's
// gradient bytes are per TP rank (its share of the layers), a constant `grad` is what each
// TP rank all-reduces. The simulator runs one rank per TP group: each TP rank sends its
// own copy of every pipeline message, which across DCs it counts t times on the WAN
// direction (LinkModel::copies, as it counts the replicas that share one).
//
// Connections per transfer (mpi.connections, Atlas): with `wan: N` every point-to-point
// message between ranks in different DCs is striped over N TCP connections the workers
// open themselves (workloads/worker/stripes.h: 256 KiB pieces pulled by whichever
// connection drains, no rendezvous),
// with `dc: N` those between ranks of one DC; a class not named stays on OpenMPI's btl/tcp
// (the default, one connection per message). Each N is 1..64 (1 = the workers' own single
// connection, the baseline to compare N with). Over a WAN one connection is window-limited
// (about 0.68 x wmem_max / 0.58 x rmem_max per round trip, harness/sim/tcp_model.h); N of
// them carry N windows, up to the link's rate. Data-parallel all-reduces stay on OpenMPI.
// `tcp_links` is OpenMPI's btl_tcp_links only: measured, it does not stripe one message
// (docs/history/connections.md). Both are non-default settings, recorded in
// environment.json's non_default_settings and shown in the report.
//
// WAN sharing (mpi.wan_sharing, Atlas): `fair` (the default, stock) lets every transfer
// that crosses a WAN direction go at once, TCP sharing the link between their connections;
// `temporal` gives each WAN direction to one point-to-point transfer at a time: the
// workers' arbiter (workloads/worker/arbiter.h, one per source DC) grants it in the order
// the schedule needs the transfers (each SEND's predicted start in the plan's simulation
// of one replica, then the replica), the next when the holder's send completes. Gradient
// all-reduces stay on OpenMPI's collectives, outside the arbiter. The simulator predicts a
// temporal run with every replica simulated (sched::replicated) and the WAN directions
// granted alike (LinkModel::exclusive). Needs tensor_parallel 1. A non-default setting.
//
// Prefill in bubbles (BubbleTea, Palak et al.; workloads/worker/prefill.h): an inference
// request stream (Poisson, rate_rps over the whole run, each world rank drawing rate_rps /
// world_size), each request a prefill job on one rank placed only into that rank's idle
// time where it ends before the rank's next training action is predicted to start (the
// plan's simulation of the schedule, corrected online by the measured arrivals), so the
// training is not delayed; requests that fit no bubble wait, and those that cannot end by
// arrival + deadline are rejected. Cost: the inference model is one rank's share of the
// training model (one GPU's, as in BubbleTea). Modeled compute: a cost per prompt token
// derived from the rank's forward, f_ns x prompt_tokens / (seq x microbatch_size) summed
// over its stages (seq: compute.modeled.seq for a model shape, model.seq otherwise), slept.
// Real compute: the job runs the rank's stages' forward over the prompt (whole microbatch
// passes of microbatch_size x model.seq tokens, the last padded; the training's state
// untouched), placed with a cost per token measured from the jobs already run (the
// planned one, from FLOPs, until the first). Not with tensor parallelism (the TP group
// would serve each request together; InputError at the block). With the block every schedule runs
// twice, without prefill then with it (named SCHEDULE+prefill), so the training slowdown is
// measured against the same schedule; a non-default setting, recorded and shown in the report.
//
// Time dilation (Gupta et al., NSDI'06; DieCast, NSDI'08) emulates links faster than this
// machine carries: the network is built with every WAN delay and jitter and the intra-DC
// delay x k and every rate / k (topo::time_dilated), modeled compute durations and
// mpi.timeout_s are x k, message sizes are kept; every time the run reports is divided
// back by k where the ranks' files are read (run/results.h), so summary.json, traces and the
// report are in undilated time. TCP then sees the same packets, windows in packets, BDP
// and loss events per message as on the real link. The minimum RTO is stretched too
// (route rto_min = k x 200 ms on the hosts); what does not stretch is the kernel's other
// fixed timers (delayed ACK, pacing/TSQ granularity), CUBIC's window growth and HyStart's
// delay thresholds (wall-clock seconds: CUBIC fills a long fat pipe k x faster in
// emulated time, HyStart leaves slow start earlier), and the OS's and MPI's own timeouts.
// It replaces compute.modeled.message_scale, which kept transfer times by shrinking bytes
// and rates alike and so shrank the BDP in packets (a file that still uses it gets an
// InputError pointing here).
//
// Real compute is refused under dilation (k > 1): a real compute action lasts what the
// CPU takes and cannot be slowed by k; padding it with a sleep of (k - 1) x its measured
// time would make it last k x as long, but the measurement itself is taken on a machine
// that the dilated run loads differently (the delay line and k-times-slower traffic
// compete for the same cores), and a run k x longer buys nothing that modeled compute
// with the measured costs ({modeled: {profile: costs.csv}}) does not give exactly.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/input_error.h"
#include "harness/common/yaml_reader.h"
#include "harness/experiment/workload.h"
#include "harness/sim/cost_model.h"
#include "harness/topology/topology.h"
#include "workloads/model/config.h"

namespace xdc::run {

struct ScheduleChoice {
  std::string name;      // generator name, or the CSV's file stem
  std::string csv_file;  // set for {csv: FILE}: absolute path
  SourcePos pos;         // where the experiment names it (its generator's errors point there)
};

struct Compute {
  enum class Mode { kReal, kModeled };
  Mode mode = Mode::kReal;
  // real: FLOP/s per rank assumed when planning latency-aware schedules (before any
  // measurement), and the peak MFU is stated against.
  double real_gflops = 20, real_peak_gflops = 95;
  // real: where the stages compute. `cuda`: each host's ranks take `gpus` round-robin in
  // rank order (several ranks share a GPU when a host has more ranks than GPUs; xdc run
  // says so); `xdc run` refuses (exit 2, at device_pos) on a machine or build without one.
  std::string real_device = "cpu";
  std::vector<int> gpus = {0};
  SourcePos device_pos, gpus_pos;
  // modeled, one of: a model shape on a device, constants, or a profile CSV.
  enum class Source { kShape, kConstant, kProfile };
  Source source = Source::kShape;
  std::string shape = "llama2-13b", device = "a100";
  int seq = 4096;
  double efficiency = 0.5;
  double f_ms = 0, b_ms = 0, w_ms = -1;
  int64_t activation_bytes = 0;
  int64_t grad_bytes = 0;  // constants / profile: all-reduced per stage (`grad`)
  std::string profile_file, profile_text;
  // model shape: `tensor_parallel: n` -- each pipeline rank stands for a node of n devices
  // splitting every layer (Megatron TP over the node's interconnect, not emulated): one
  // process per node, compute / n, the TP all-reduces timed at the node's bus bandwidth
  // (`tp_bandwidth`, default the device's: cost_model.h) and slept inside F and B.
  int node_tp = 1;
  double node_busbw = 0;  // bytes/s; 0 = the device's
  SourcePos node_tp_pos;
  // Co-executed pairs (the dhelix schedule, workloads/schedule/coexec.h): how much the
  // computation slows while the other half's communication runs beside it. An assumed
  // figure (`coexec_interference`), shown with the dhelix results.
  double coexec_interference = sim::CostModel::kAssumedCoexecInterference;
  std::string name() const { return mode == Mode::kReal ? "real" : "modeled"; }
  // Where the compute costs come from, for summaries and reports: "real on cpu", "real on
  // cuda (GPUs 0, 1)", "modeled: llama2-13b on a100, efficiency 0.5 (assumed)",
  // "modeled: constants", "modeled: profile FILE (xdc profile: measured on ...)" (the
  // profile's first comment line).
  std::string costs_source() const;
};

// `events:`: a change made when measured iteration `at_iteration` (0-based, as
// iterations.csv numbers them) starts, i.e. when the first rank reports starting it
// (each worker writes the iteration's number to its rankR.progress file once the
// iteration barrier has released it). One target:
//   link: [a, b]  (+ optional direction: a->b)  with down_for: D (cut for D, then up) and/or
//                 delay / jitter / loss / rate (topology.h's units; kept until the end of
//                 the schedule's run, when every direction is put back);
//   dc: NAME      with down_for: D (every WAN link of the DC cut for D: `xdc dc isolate`)
//                 or kill_ranks: true (the DC's ranks are killed with SIGKILL: the run ends
//                 with exit 1 naming the DC and this event).
// Checked at load: the link / DC exists, at_iteration < iterations, something to do, no
// kill_ranks on a link; InputError at the key. The simulator plays the same events
// (plan/predict.h), anchored to its own iteration starts.
struct ProgressEvent {
  int at_iteration = 0;
  std::string link_a, link_b;  // link: [a, b]
  std::string direction;       // "" = both, else "a->b"
  std::string dc;              // dc: NAME
  std::optional<uint64_t> down_for_us;
  topo::WanChange change;  // delay/jitter/loss/rate (at_us unused); pos: the event's item
  bool kill_ranks = false;
  // "FILE:LINE:COL (at_iteration 5)": names the event in events.json and in errors.
  std::string source() const;
};

struct Prefill {
  bool on = false;
  double rate_rps = 0;
  std::string dist = "fixed";  // prompt tokens: fixed | uniform | exponential
  double mean_tokens = 512;
  int max_tokens = 2048;
  uint64_t deadline_us = 2000000;
  uint64_t seed = 1;
  std::string describe() const;  // "rate_rps=200 tokens=uniform(512, max 2048) deadline=2s"
};

// `dp_sync:` (DiLoCo, Douillard et al., arXiv 2311.08105; workloads/worker/outer_sync.h):
// with method diloco each replica trains inner_steps iterations with no gradient
// all-reduce, then the replicas average their pseudo-gradients (parameters at the last
// outer step minus their own, encoded in `payload` on the wire) over the DP communicator
// and every replica applies the same outer Nesterov step. Needs data_parallel > 1 and
// real compute on cpu or modeled compute (its payload: the stage's gradient bytes'
// values in the format). Streaming DiLoCo syncs fragments in turn, overlapped with
// overlap_steps inner steps; eager (diloco or streaming) overlaps each sync with its
// fragment's whole next outer step. A non-default setting, recorded.
// diloco is streaming with one fragment, no overlap and merge 0
// (workloads/worker/outer_sync.h says what the workers do).
struct DpSync {
  enum class Method { kSync, kDiloco, kStreaming };
  Method method = Method::kSync;
  // Which library all-reduces the gradients (method sync): OpenMPI's libnbc (xdc-worker's
  // MPI_Iallreduce) or gloo's ring (PyTorch's CPU backend, harness/sim/gloo_ring.h). gloo
  // describes a program of the user's (a `workload:` step's predicted.yaml): only the
  // simulator honours it; `xdc run` refuses it.
  enum class Collective { kOpenMpi, kGloo };
  Collective collective = Collective::kOpenMpi;
  SourcePos collective_pos;
  int inner_steps = 1;
  int sync_steps = 0;  // iterations of synchronous DP before the outer loop starts
  int fragments = 1;
  int overlap_steps = 0;
  double merge = 0;
  bool eager = false;  // the sync applied when its fragment's next starts (outer_sync.h)
  double outer_lr = 0.7, outer_momentum = 0.9;
  std::string payload = "fp32";
  SourcePos pos;  // the block
  // Inner steps between a sync's start and the wait for it: H when eager.
  int apply_after_steps() const { return eager ? inner_steps : overlap_steps; }
  bool outer_loop() const { return method != Method::kSync; }
  const char* method_name() const;
  const char* collective_name() const {
    return collective == Collective::kGloo ? "gloo" : "openmpi";
  }
  // "diloco inner_steps=30 outer=nesterov(lr 0.7, momentum 0.9) payload=fp32"; streaming
  // adds "fragments=P overlap_steps=T merge=A", sync_steps > 0 "sync_steps=N", eager
  // "eager".
  std::string describe() const;
};

struct Experiment {
  std::string name;
  std::string source_file;           // as given
  std::string text;                  // the file as read (written back with the results)
  std::vector<yaml::FileRef> files;  // the files `text` names (topology, profile, schedules)
  topo::Topology topology;           // with the experiment's wan override applied
  std::string topology_file;         // "" when inline
  std::string topology_text;         // that file as read
  std::vector<yaml::FileRef> topology_files;  // the files it names (traces)
  std::optional<netem::Backend> shaping;
  bool wan_override = false;
  bool tcp_override = false;
  model::ModelConfig model;
  Compute compute;
  int stages = 0;  // pipeline ranks
  int data_parallel = 1;
  int tensor_parallel = 1;
  int chunks = 2;            // pipeline.chunks (interleaved)
  double memory_cap = 0;     // pipeline.memory_cap, microbatches; 0: none
  double milp_seconds = 10;  // pipeline.milp_seconds (optimal)
  SourcePos memory_cap_pos;
  // [replica][pipeline rank] -> host of its TP rank 0 (the pipeline's view: TP rank i of
  // every stage is in the same DC as TP rank 0, so the links between stages are these).
  std::vector<std::vector<std::string>> placement;
  // [replica][pipeline rank][tp index] -> host
  std::vector<std::vector<std::vector<std::string>>> tp_placement;
  int microbatches = 8, microbatch_size = 1, iterations = 10, warmup = 1;
  int repeat = 1;  // `repeat`: runs of each schedule (above)
  std::vector<ScheduleChoice> schedules;
  int tcp_links = 0;                            // 0: OpenMPI's default (1)
  int connections_wan = 0, connections_dc = 0;  // mpi.connections; 0: OpenMPI (default)
  bool wan_temporal = false;                    // mpi.wan_sharing: temporal (default fair)
  int timeout_s = 600;
  std::string progress = "thread";
  std::vector<std::pair<std::string, std::string>> mca;  // extra --mca KEY VALUE
  uint64_t seed = 1;
  double learning_rate = 3e-3;
  std::string data_glob = "/usr/share/common-licenses/*";
  bool link_check = false;
  bool iteration_barrier = true;      // workers and simulator: a barrier before every iteration
  double time_dilation = 1;           // k: see above; 1 = off
  SourcePos time_dilation_pos;        // where the experiment sets it (empty: not set)
  std::vector<ProgressEvent> events;  // in at_iteration order (stable)
  Prefill prefill;                    // `prefill:`; off by default
  DpSync dp_sync;                     // `dp_sync:`; synchronous by default
  // `workload:` (workload.h): the user's program instead of xdc-worker; the worker's keys
  // above keep their defaults and are refused in the file.
  std::optional<Workload> workload;

  int world_size() const { return stages * data_parallel * tensor_parallel; }
  // World rank (run_spec.h's layout) of a TP rank of a pipeline rank of a replica.
  int world_rank(int replica, int pipeline_rank, int tp_index = 0) const {
    return (replica * stages + pipeline_rank) * tensor_parallel + tp_index;
  }
  std::vector<std::string> rank_hosts() const;  // world rank -> host
  // (replica * stages + pipeline rank) -> host of its TP rank 0: the world as the
  // simulator sees it (one rank per TP group; TP lives inside F and B).
  std::vector<std::string> pipeline_hosts() const;
  // Real compute on cuda: world rank -> GPU number (each host's ranks take compute.gpus
  // round-robin in rank order); empty for cpu or modeled compute.
  std::vector<int> rank_gpus() const;
};

Experiment parse_experiment(const std::string& text, const std::string& file_label);
// The same from a YAML tree already read (`text` is kept as Experiment::text): a tree
// assembled from parts of another file (harness/placement/) keeps those parts' marks, so
// errors point into that file.
Experiment parse_experiment_tree(const yaml::Value& root, const std::string& text);
Experiment load_experiment(const std::string& path);
// The experiment as a results directory keeps it, files that load from there:
// `experiment` is `text` with its topology file named "topology.yaml" and every other
// relative file path made absolute; `topology` the topology file's text with its own
// relative file paths (traces) made absolute ("" for an inline topology). The rest of
// each text is as it was.
struct Record {
  std::string experiment, topology;
};
Record record(const Experiment& e);
// Writes dir/experiment.yaml and dir/topology.yaml (record()).
void write_experiment(const std::string& dir, const Experiment& e);

// What the experiment changes from stock OpenMPI 4.1 and stock Linux TCP, as "key=value"
// (mpi.mca.*, mpi.tcp_links above 1, mpi.connections, mpi.wan_sharing, the hosts' tcp.*
// unlike topology.h's TcpSettings{}, prefill, the Mininet backend): environment.json's
// non_default_settings, and the report's.
std::vector<std::string> non_default_settings(const Experiment& e);

// The model's keys as the worker's RunSpec takes them (model::ModelConfig fields).
nlohmann::json model_json(const model::ModelConfig& m);

// Real compute on cuda, checked on this machine before anything starts: throws InputError
// at compute.real's device (exit 2) when this build has no CUDA stage, the machine no
// usable GPU, or a GPU number is not present. Returns notes for the user (GPU names, ranks
// sharing a GPU); empty for cpu or modeled compute.
std::vector<std::string> check_gpus_here(const Experiment& e);

}  // namespace xdc::run
