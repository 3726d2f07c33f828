#pragma once
// One parameter record for every schedule generator (registry in generators.h).
// Times are in one unit of the caller's choice (ms, or units of T_F); generators that
// plan around latency (crosspipe-greedy, overlap, optimal) use them, the classic
// ones ignore them.
#include <vector>

namespace xdc::sched {

// One message over one link direction: transfer = latency + bytes / bandwidth, FIFO.
struct LinkDelay {
  double latency = 0;   // one-way propagation
  double transfer = 0;  // bytes / bandwidth of one activation (or gradient) message
};

struct Params {
  int ranks = 4;
  int microbatches = 8;
  int chunks = 1;  // model chunks per rank for `interleaved` (zbv always uses 2)
  // Compute cost of one microbatch through all of a rank's layers; a stage (chunk)
  // costs 1/chunks of it. Per-stage vectors, when given, override these (per stage).
  double t_f = 1, t_b = 1, t_w = 1;
  std::vector<double> stage_f, stage_b, stage_w;
  // links[from][to] between ranks; empty = zero delay everywhere.
  std::vector<std::vector<LinkDelay>> links;
  // Peak activations per rank in microbatches (a rank's full share of layers);
  // 0 = the generator's own default (1F1B-like: ranks).
  double memory_cap = 0;
  double milp_seconds = 10;        // `optimal`: CBC time limit
  int milp_max_variables = 20000;  // `optimal`: bigger models keep the greedy schedule
  bool optimizer = true;           // append ALLREDUCE and OPT per stage
};

// Throws std::invalid_argument unless ranks >= 1 and microbatches >= 1.
void check_sizes(const Params& p);

LinkDelay link_delay(const Params& p, int from, int to);
// Ranks [0, split) in one DC, [split, ranks) in the other, `wan` between them both ways.
std::vector<std::vector<LinkDelay>> two_dc_links(int ranks, int split, LinkDelay wan);

// Per-stage costs for a placement with `stages` stages (t_x / chunks unless overridden).
struct StageCosts {
  std::vector<double> f, b, w;
};
StageCosts stage_costs(const Params& p, int stages);

}  // namespace xdc::sched
