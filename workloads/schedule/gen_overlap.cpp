// overlap (GeoPipe-style): non-blocking transfers (schedule.h), and ranks at or before a
// WAN hop run extra warm-up forwards, as many as the round trip of the hops downstream
// of them takes in compute time, within the memory cap. The backward is split (B, W) so
// that weight grads run while a rank waits on the WAN. Built with the list scheduler of
// greedy.h, limited to 1F1B's in-flight forwards plus those extra ones.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "workloads/schedule/generators.h"
#include "workloads/schedule/greedy.h"

namespace xdc::sched {

std::vector<int> overlap_warmup(const Params& p) {
  const int P = p.ranks;
  const StageCosts c = stage_costs(p, P);
  std::vector<double> rtt(P, 0);  // every hop downstream of rank r, both directions
  for (int r = P - 2; r >= 0; --r) {
    const LinkDelay fw = link_delay(p, r, r + 1), bw = link_delay(p, r + 1, r);
    rtt[r] = rtt[r + 1] + fw.latency + fw.transfer + bw.latency + bw.transfer;
  }
  const int cap = p.memory_cap > 0 ? static_cast<int>(std::floor(p.memory_cap + 1e-9)) : P + 2;
  std::vector<int> warmup(P);
  for (int r = 0; r < P; ++r) {
    const double per_mb = c.f[r] + c.b[r] + c.w[r];
    const int extra = per_mb > 0 ? static_cast<int>(std::ceil(rtt[r] / per_mb - 1e-9)) : 0;
    warmup[r] = std::clamp(P - r - 1 + extra, 0, std::max(0, cap - 1));
  }
  return warmup;
}

Schedule gen_overlap(const Params& p) {
  if (p.ranks < 1 || p.microbatches < 1)
    throw std::invalid_argument("overlap: ranks and microbatches must be >= 1");
  if (!p.links.empty() && static_cast<int>(p.links.size()) != p.ranks)
    throw std::invalid_argument("links: expected a ranks x ranks matrix");
  const int P = p.ranks;
  const int cap = p.memory_cap > 0 ? static_cast<int>(std::floor(p.memory_cap + 1e-9)) : P + 2;
  PlanModel md;
  md.stage_rank = plain_placement(P);
  md.microbatches = p.microbatches;
  md.costs = stage_costs(p, P);
  md.links = p.links;
  md.channel = p.channel;
  GreedyOptions o;
  o.cap_units.assign(P, std::max(1, cap));
  o.max_inflight = overlap_warmup(p);
  for (int& w : o.max_inflight) w += 1;
  return lower("overlap", P, p.microbatches, md.stage_rank, greedy_order(md, o), p.optimizer);
}

}  // namespace xdc::sched
