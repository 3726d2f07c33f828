#include "harness/sim/setup.h"

#include <algorithm>
#include <cmath>

#include "common/input_error.h"

namespace xdc::sim {

CostModel make_costs(const CostSpec& spec, int ranks, const std::vector<int>& stage_rank) {
  const int stages = static_cast<int>(stage_rank.size());
  const double v = static_cast<double>(stages) / ranks;
  if (spec.source == CostSpec::Source::kShape)
    return shape_costs(find_model(spec.model), find_device(spec.device), spec.workload, stages);
  CostModel c;
  if (spec.source == CostSpec::Source::kProfile) {
    CostModel p = profile_costs(spec.profile_text, spec.profile_file);
    if (p.stages() == stages) return p;
    if (p.stages() != ranks)
      throw InputError(SourcePos{spec.profile_file, 1, 1},  // the profile as a whole
                       "profile has " + std::to_string(p.stages()) +
                           " rows, expected one per rank (" + std::to_string(ranks) +
                           ") or per stage (" + std::to_string(stages) + ")");
    for (int s = 0; s < stages; ++s) {  // a rank's row shared by its chunks
      const int r = stage_rank[s];
      c.f_ns.push_back(std::llround(p.f_ns[r] / v));
      c.b_ns.push_back(std::llround(p.b_ns[r] / v));
      c.w_ns.push_back(std::llround(p.w_ns[r] / v));
      c.activation_bytes.push_back(p.activation_bytes[r]);
    }
    return c;
  }
  const double w = spec.w_ms < 0 ? spec.b_ms / 2 : spec.w_ms;
  const double b = spec.b_ms - w;
  return constant_costs(stages, std::llround(spec.f_ms / v * 1e6), std::llround(b / v * 1e6),
                        std::llround(w / v * 1e6), spec.activation_bytes);
}

LinkModel make_links(const Network& n, int ranks) {
  std::vector<int> dc(ranks);
  for (int r = 0; r < ranks; ++r) dc[r] = n.dc_of(r, ranks);
  return LinkModel::dcs(dc, n.wan, n.lan);
}

sched::Params make_params(const CostSpec& spec, const Network& n, int ranks, int microbatches,
                          int chunks, double memory_cap) {
  sched::Params p;
  p.ranks = ranks;
  p.microbatches = microbatches;
  p.chunks = chunks;
  p.memory_cap = memory_cap;
  const CostModel c = make_costs(spec, ranks, sched::plain_placement(ranks));
  auto slowest = [](const std::vector<int64_t>& v) {
    return static_cast<double>(*std::max_element(v.begin(), v.end())) / 1e6;
  };
  p.t_f = slowest(c.f_ns);
  p.t_b = slowest(c.b_ns);
  p.t_w = slowest(c.w_ns);
  const LinkModel l = make_links(n, ranks);
  const int64_t bytes = c.activation_bytes.empty() ? 0 : c.activation_bytes[0];
  p.links.assign(ranks, std::vector<sched::LinkDelay>(ranks));
  for (int a = 0; a < ranks; ++a)
    for (int b = 0; b < ranks; ++b)
      if (a != b)
        p.links[a][b] = {static_cast<double>(l.at(a, b).latency_ns) / 1e6,
                         static_cast<double>(l.at(a, b).transfer_ns(bytes)) / 1e6};
  p.channel = l.channel;  // the planner queues on the shared WAN as the simulator does
  return p;
}

}  // namespace xdc::sim
