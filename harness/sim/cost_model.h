#pragma once
// Cost model: how long each compute action of each stage takes and how many bytes cross
// a stage boundary. Three sources: constants, a per-stage profile CSV, or a model shape
// on a device (FLOPs / (peak FLOP/s x efficiency)). The worker's `modeled` compute mode
// sleeps for these same durations.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "workloads/schedule/coexec.h"
#include "workloads/schedule/schedule.h"

namespace xdc::sim {

struct CostModel {
  std::vector<int64_t> f_ns, b_ns, w_ns;    // per stage; BW = B + W
  std::vector<int64_t> activation_bytes;    // per stage: its output (and input-grad) message
  int64_t allreduce_ns = 0;                 // per stage per iteration (0 with no data parallel)
  std::vector<int64_t> allreduce_stage_ns;  // per stage: overrides allreduce_ns (empty: none)
  std::vector<int64_t> grad_bytes;          // per stage: what its ALLREDUCE sums (empty: unknown)
  // An outer loop's first iterations as synchronous data parallelism (WorkerSetup::
  // outer_from): their grad_bytes and allreduce_ns (empty, 0: none).
  std::vector<int64_t> sync_grad_bytes;
  int64_t sync_allreduce_ns = 0;
  // Per stage, per fragment: the outer sync's encoded payload (0: the stage holds none of
  // the fragment; WorkerModel::outer_every; empty: no outer loop).
  std::vector<std::vector<int64_t>> outer_bytes;
  int64_t opt_ns = 0;  // per stage per iteration
  // Modeled compute: each sleep of an action (clock_nanosleep, workloads/worker/compute.cpp:
  // one per F or B slice between TP all-reduces, one per W and OPT) ends this much after
  // its deadline, the process's timer slack (the kernel fires the timer at the end of its
  // slack when nothing else wakes the CPU sooner). duration_ns adds it; the workers sleep
  // f_ns, b_ns and w_ns as they are. 0: real compute, or none.
  int64_t sleep_slack_ns = 0;
  // Tensor parallelism, per stage (empty without): the TP all-reduces inside each F and
  // each B (2 per layer, workloads/model/stage.h), the bytes of one (a microbatch's hidden
  // state) and the time of one. f_ns and b_ns include tp_allreduces x tp_allreduce_ns; the
  // modeled worker sleeps the rest and performs the all-reduces over MPI.
  std::vector<int> tp_allreduces;
  std::vector<int64_t> tp_allreduce_bytes, tp_allreduce_ns;
  // Per stage (empty: never): how long a TP all-reduce waits first when the first TSO
  // aggregate of its data finds no room at its host's port (a pipeline message queued
  // there). Its connection has nothing in flight then, so the dropped aggregate waits for
  // Linux's probe timer (tcp_local_drop_wait_ns of the TP pair's path). That aggregate's
  // payload, and the TP group's hosts: each sends one through its own port, in the state
  // of the modeled rank's (every TP rank of a stage sends the stage's pipeline messages).
  std::vector<int64_t> tp_port_wait_ns;
  std::vector<int64_t> tp_first_bytes;
  std::vector<int> tp_hosts;
  // Per stage (empty: none): the TP pair's connection's window where it overflows its
  // port (the port's bandwidth-delay product and queue) and that product. The root of an
  // all-reduce (libnbc's binomial tree: the group's first rank, which sends the sum last)
  // is done when the sum is in its socket, still queued at its port behind that window,
  // and its next WAN send queues behind it (tp_root_backlog).
  std::vector<int64_t> tp_window_bytes, tp_bdp_bytes;
  // A TP group inside one node (ShapeWorkload::node_tp): per stage, the node's TP
  // all-reduce time inside each F and each B, folded into f_ns and b_ns (one process
  // stands for the node; nobody performs them). Empty otherwise.
  std::vector<int64_t> node_tp_ns;
  std::vector<int> node_tp_allreduces;  // per stage: how many all-reduces node_tp_ns holds
  // Co-executed pairs (schedule.h, workloads/schedule/coexec.h): how much computation
  // slows while the other half's communication runs beside it (assumed by default).
  static constexpr double kAssumedCoexecInterference = 0.1;
  double coexec_interference = kAssumedCoexecInterference;
  // False where the workers run a pair's halves one after the other (real compute on the
  // CPU, whose threads the stage already keeps busy): a pair then lasts their sum.
  bool coexec_overlaps = true;
  // The launched TP ranks' all-reduce time inside one F (= one B): what they perform.
  int64_t tp_comm_ns(int stage) const {
    return tp_allreduces.empty() ? 0 : tp_allreduces[stage] * tp_allreduce_ns[stage];
  }
  // All TP all-reduce time inside one F (= one B), performed or folded: not computing.
  int64_t tp_time_ns(int stage) const {
    return tp_comm_ns(stage) + (node_tp_ns.empty() ? 0 : node_tp_ns[stage]);
  }

  // Compute noise as a real run measured it (plan.h's measured_costs): per stage, each F,
  // B, W and BW duration of that run over its stage's mean of that kind, grouped by the
  // measured iteration it fell in. Empty: none measured (modeled compute sleeps its
  // durations). A prediction's band replicas draw each compute action's duration as its
  // mean times one of these ratios (noise_factor: the measured spread resampled, no
  // distribution assumed), so where it falls on the schedule's critical path varies as in
  // the run; the point prediction uses the means.
  struct Noise {
    std::vector<double> ratio;
    // Where each measured iteration's ratios begin in `ratio` (ascending; empty: one
    // group). A simulated iteration draws all its actions from one measured iteration:
    // on a shared CPU an iteration's slow actions come together (ranks computing at once
    // share its cores, the machine's other work), and draws made independently per action
    // would average that away.
    std::vector<size_t> iteration_begin;
    bool empty() const { return ratio.empty(); }
    bool operator==(const Noise&) const = default;
  };
  std::vector<Noise> f_ratio, b_ratio, w_ratio, bw_ratio;
  bool noisy() const;
  // The factor for action `a` of a simulated iteration: the measured iteration is picked
  // by a hash of `iteration_key` (!= 0; one per band replica and iteration, the same for
  // every rank), the ratio inside it by a hash of `key` (one per rank as well) and a; 1
  // without any.
  double noise_factor(const sched::Action& a, uint64_t key, uint64_t iteration_key) const;

  int stages() const { return static_cast<int>(f_ns.size()); }
  int64_t duration_ns(const sched::Action& a) const;
  // When compute action `a` (F, B or BW, not co-executed) that starts at `start` and lasts
  // `duration` ends, each TP all-reduce in it having waited tp_port_wait_ns times the chance
  // that one of its hosts drops its first aggregate (`chance(at)`: one host's chance at its
  // port then; the expected wait). The workers' order: n equal slices of compute, each
  // followed by an all-reduce; a BW's weight gradients last. Other actions, or no waits:
  // start + duration.
  double end_ns(const sched::Action& a, double start, double duration,
                const std::function<double(double at)>& chance) const;
  // Whether compute action `a` ends with a TP all-reduce whose root's port still holds its
  // sum (tp_window_bytes): an F or a B (a BW ends with weight gradients).
  bool tp_root_backlog(const sched::Action& a) const;
  // The operators of compute action `a` (F, B or BW) for co-execution: its computation
  // in as many slices as it has TP all-reduces, each followed by one (launched and
  // folded together), and a BW's weight gradients last.
  std::vector<sched::Op> coexec_ops(const sched::Action& a) const;
  // A paired F and its partner together: their co-execution plan, and its time (rounded
  // to ns; the sum of the halves where the workers do not overlap them).
  sched::CoexecPlan pair_plan(const sched::Action& f, const sched::Action& partner) const;
  int64_t pair_ns(const sched::Action& f, const sched::Action& partner) const;
  int64_t message_bytes(const sched::Action& a) const;  // SEND_F/SEND_B, else 0
};

// The costs of sched::replicated(s, replicas) from those of s: every per-stage entry
// repeated for each replica's stages.
CostModel replicated(const CostModel& c, int replicas);

CostModel constant_costs(int stages, int64_t f_ns, int64_t b_ns, int64_t w_ns,
                         int64_t activation_bytes);

// Profile CSV: header "stage,f_ms,b_ms,w_ms[,activation_bytes]", one row per stage.
// Throws xdc::InputError naming file:line on a bad row.
CostModel profile_costs(const std::string& text, const std::string& file = "");

struct ModelShape {
  std::string name;
  int layers = 0, hidden = 0, ffn = 0, heads = 0, kv_heads = 0, vocab = 0;
};
struct Device {
  std::string name;
  double peak_flops = 0;  // dense bf16/fp16 FLOP/s
  // The node's interconnect as an all-reduce among its devices sees it: NCCL-style bus
  // bandwidth (a ring all-reduce of S bytes over t devices takes 2(t-1)/t x S / busbw)
  // and the latency of one of its 2(t-1) steps. Assumed figures, see device_presets().
  double node_busbw = 0;  // bytes/s
  double node_step_s = 0;
};
const std::vector<ModelShape>& model_presets();         // llama2-7b/13b/70b, llama-72b
const std::vector<Device>& device_presets();            // a100, a40, h100, 910b
const ModelShape& find_model(const std::string& name);  // throws InputError listing names
const Device& find_device(const std::string& name);

struct ShapeWorkload {
  int seq = 4096;
  int microbatch_size = 1;
  double efficiency = 0.5;  // achieved / peak FLOP/s
  int bytes_per_element = 2;
  int tensor_parallel = 1;  // t: each rank computes 1/t of every layer (heads, SwiGLU units)
  // node_tp n > 1: each rank stands for a node of n devices that split every layer the
  // same way (Megatron TP over the node's interconnect, Device::node_busbw unless
  // node_busbw is given): FLOPs / n, and the 2 all-reduces per layer in F and in B take
  // node_allreduce_ns each, folded into f_ns and b_ns (CostModel::node_tp_ns).
  int node_tp = 1;
  double node_busbw = 0;  // bytes/s; 0 = the device's
};
// A ring all-reduce of `bytes` among `devices` devices of one node: 2(d-1) steps of
// bytes/d each at the node's bus bandwidth, each step also paying `step_s`.
int64_t node_allreduce_ns(int devices, int64_t bytes, double busbw, double step_s);
// Layers split evenly over `stages` (the first stages take the remainder), LM head on
// the last stage. Per layer and token: F = 2P + 4sh, B = 2P + 8sh, W = 2P FLOPs, P the
// layer's linear weights (Zero Bubble's sbh(24h+4s) etc. for P = 12h^2). With tensor
// parallelism t > 1 a layer's FLOPs are / t (the LM head is replicated, whole), and
// tp_allreduces / tp_allreduce_bytes are set (2 per layer of the hidden state,
// tokens x h x bytes_per_element); tp_allreduce_ns is the caller's (it knows the links).
// With node_tp n > 1 the layer FLOPs and the LM head's are / n as well (the head split
// by vocabulary, as Megatron does) and node_tp_ns is set (above).
CostModel shape_costs(const ModelShape& m, const Device& d, const ShapeWorkload& w, int stages);

}  // namespace xdc::sim
