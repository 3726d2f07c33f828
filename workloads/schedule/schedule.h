#pragma once
// Schedule IR: a pipeline schedule is data. For each rank, an ordered list of actions;
// the MPI executor runs exactly these lists, the simulator predicts them, the validator
// checks them. Contract:
//  - `stages` model chunks numbered 0..stages-1 in pipeline order; stage s lives on rank
//    stage_rank[s] (plain: s; looped/interleaved: s % ranks; V-shaped: v_placement below).
//  - Compute: F (forward), B (input grad), W (weight grad), BW (full backward). A
//    microbatch's stage either runs B then W or runs BW.
//  - Communication follows PyTorch pipelining: SEND_F on stage s sends s's output to
//    stage s+1 (RECV_F on stage s+1); SEND_B on stage s sends the input grad to s-1
//    (RECV_B on stage s-1). `peer` is the other rank. Sends are non-blocking (Isend);
//    a RECV blocks until the message is there. Consecutive stages on one rank exchange
//    nothing.
//    An executor may post a RECV earlier than its place in the list (it should: large
//    messages only progress once posted); the place is where the data must be complete.
//  - ALLREDUCE and OPT carry a stage and microbatch -1 (one per stage per iteration); the
//    data-parallel group is not part of the schedule (ranks here are the pipeline ranks
//    of one replica; the executor maps them onto replicas).
//  - Activation memory: F of (stage, mb) holds one stage-unit until its W or BW ends.
//  - Co-execution (DHelix's strand interleaving, coexec.h): an F with `paired` set runs
//    together with the B or BW right after it in the rank's list (another microbatch: the
//    opposite strand). The pair starts when both have their inputs (lower() puts both
//    RECVs before the F and both SENDs after the B) and lasts the pair's time, recorded on
//    the F; its partner is a zero-length record at the pair's end, so busy time counts the
//    pair once. (Workers that run the halves in turn, real compute, record each half.)
//  - TP_ALLREDUCE is a trace record only, never a schedule action: a tensor-parallel
//    all-reduce inside an F or B (workloads/model/stage.h), traced on its own lane with
//    that action's stage and microbatch. The validator refuses it in a schedule.
#include <string>
#include <string_view>
#include <vector>

namespace xdc::sched {

// PREFILL is a trace kind only too (workloads/worker/prefill.h: an inference prefill run
// in a bubble), never an action of a schedule: the validator refuses it. So is
// OUTER_SYNC (workloads/worker/outer_sync.h: a DiLoCo outer sync of one stage after the
// iteration's last action, its pseudo-gradient's encoded bytes in `bytes`).
enum class Kind {
  F,
  B,
  W,
  BW,
  SEND_F,
  RECV_F,
  SEND_B,
  RECV_B,
  ALLREDUCE,
  OPT,
  TP_ALLREDUCE,
  PREFILL,
  OUTER_SYNC
};

struct Action {
  Kind kind = Kind::F;
  int stage = 0;
  int microbatch = 0;   // -1 for ALLREDUCE / OPT
  int peer = -1;        // comm actions: the other rank; -1 otherwise
  bool paired = false;  // F only: co-executed with the B / BW that follows it (above)

  bool operator==(const Action&) const = default;
};

struct Schedule {
  std::string name;
  int ranks = 0;
  int stages = 0;  // ranks * chunks
  int microbatches = 0;
  std::vector<int> stage_rank;                            // stage -> rank
  std::vector<std::vector<Action>> actions;               // per rank, in execution order
  std::vector<std::pair<std::string, std::string>> info;  // generator notes (e.g. MILP gap)
  // 1, or the schedule is `replicas` data-parallel copies of one pipeline (replicated()):
  // stages [q * S, (q + 1) * S) are replica q's S stages, messages stay inside a replica and
  // a stage's ALLREDUCE is one collective with the same stage of every replica.
  int replicas = 1;

  int chunks() const { return ranks > 0 ? stages / ranks : 0; }
  bool operator==(const Schedule& o) const {
    return ranks == o.ranks && stages == o.stages && microbatches == o.microbatches &&
           replicas == o.replicas && stage_rank == o.stage_rank && actions == o.actions;
  }
};

// `replicas` data-parallel copies of `s` as one schedule of replicas x s.ranks ranks
// (rank q * s.ranks + r is replica q's rank r; stage q * s.stages + t its stage t), so
// that the replicas can be simulated together: their messages on links they share, each
// replica's gradient all-reduce waiting for the slowest (engine.h). Throws
// std::invalid_argument for replicas < 1 or a schedule that is already replicated.
Schedule replicated(const Schedule& s, int replicas);

bool is_compute(Kind k);
bool is_comm(Kind k);
bool is_send(Kind k);  // SEND_F, SEND_B
bool is_recv(Kind k);  // RECV_F, RECV_B
// Our name of a kind ("F", "B", "W", "BW", "SEND_F", ...).
std::string_view kind_name(Kind k);
// "2F3", "1SEND_F0", "2F3+" for a paired F (our names; csv.h has PyTorch's spelling).
std::string to_string(const Action& a);

// Stage -> rank maps for the three placements.
std::vector<int> plain_placement(int ranks);
std::vector<int> looped_placement(int ranks, int chunks);  // stage s on rank s % ranks
std::vector<int> v_placement(int ranks);  // 2 chunks: stage r and 2*ranks-1-r on rank r

// The compute actions (F, B, W, BW) of each rank, in order: lower()'s input.
std::vector<std::vector<Action>> compute_order(const Schedule& s);

// Compute-only order per rank -> full action lists: RECV right before the consumer,
// SEND right after the producer (a pair: both RECVs before it, both SENDs after it), then
// ALLREDUCE and OPT per stage when `optimizer`. Throws std::invalid_argument for a paired
// F not followed by a B / BW.
// lower_action appends what one compute action on `rank` becomes.
void lower_action(const std::vector<int>& stage_rank, int rank, const Action& compute,
                  std::vector<Action>& out);
// A pair (F `f` paired with the B / BW `b`): both RECVs, F, B, both SENDs.
void lower_pair(const std::vector<int>& stage_rank, int rank, const Action& f, const Action& b,
                std::vector<Action>& out);
Schedule lower(std::string name, int ranks, int microbatches, std::vector<int> stage_rank,
               const std::vector<std::vector<Action>>& compute_order, bool optimizer = true);

}  // namespace xdc::sched
