#pragma once
// One description of a simulated run -> what the generators and the simulator take:
// a cost source (constants, profile CSV or model shape on a device) and a network of
// DCs (ranks in contiguous blocks, one WAN link model between DCs, one LAN inside).
// `xdc simulate` fills it from flags; the experiment YAML will fill it later.
#include <string>
#include <vector>

#include "harness/sim/cost_model.h"
#include "harness/sim/link_model.h"
#include "workloads/schedule/params.h"
#include "workloads/schedule/schedule.h"

namespace xdc::sim {

struct CostSpec {
  enum class Source { kConstant, kProfile, kShape };
  Source source = Source::kConstant;
  // kConstant: per microbatch through one rank's share of layers. b_ms is the full
  // backward; a split backward runs B = b_ms - w_ms and W = w_ms (w_ms < 0: half each).
  double f_ms = 1, b_ms = 2, w_ms = -1;
  int64_t activation_bytes = 0;
  // kProfile: CSV text (cost_model.h), one row per rank or per stage.
  std::string profile_text, profile_file;
  // kShape
  std::string model, device;
  ShapeWorkload workload;
};

// Costs for a schedule with `stages` stages placed by `stage_rank` on `ranks` ranks.
CostModel make_costs(const CostSpec& spec, int ranks, const std::vector<int>& stage_rank);

struct Network {
  int dcs = 1;    // ranks split into this many contiguous blocks
  Link wan, lan;  // between DCs, inside a DC
  int dc_of(int rank, int ranks) const { return rank * dcs / ranks; }
};
LinkModel make_links(const Network& n, int ranks);

// Generator parameters in ms: per-rank costs (the slowest rank), the same links with
// the message of `costs`' first boundary.
sched::Params make_params(const CostSpec& spec, const Network& n, int ranks, int microbatches,
                          int chunks, double memory_cap);

}  // namespace xdc::sim
