// ZB-H2 and crosspipe-greedy: the list scheduler of greedy.h under different memory caps
// and link knowledge (ZB-H1 and ZB-V, as published: gen_zero_bubble.cpp).
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "workloads/schedule/generators.h"
#include "workloads/schedule/greedy.h"

namespace xdc::sched {

namespace {
PlanModel plan_model(const Params& p, std::vector<int> stage_rank, bool with_links) {
  PlanModel md;
  md.costs = stage_costs(p, static_cast<int>(stage_rank.size()));
  md.stage_rank = std::move(stage_rank);
  md.microbatches = p.microbatches;
  if (with_links) md.links = p.links;
  return md;
}

void check(const Params& p) {
  check_sizes(p);
  if (!p.links.empty() && static_cast<int>(p.links.size()) != p.ranks)
    throw std::invalid_argument("links: expected a ranks x ranks matrix");
}

Schedule run(const char* name, const Params& p, std::vector<int> placement, bool links,
             std::vector<int> cap) {
  check(p);
  PlanModel md = plan_model(p, placement, links);
  GreedyOptions o;
  o.cap_units = std::move(cap);
  auto order = greedy_order(md, o);
  return lower(name, p.ranks, p.microbatches, std::move(placement), order, p.optimizer);
}

// A user cap in microbatches -> stage units per rank; 0 keeps `dflt`.
std::vector<int> caps(const Params& p, int chunks, std::vector<int> dflt) {
  if (p.memory_cap <= 0) return dflt;
  const int units = std::max(chunks, static_cast<int>(std::floor(p.memory_cap * chunks + 1e-9)));
  return std::vector<int>(p.ranks, units);
}
}  // namespace

// ZB-H2: 2p - 1 microbatches on every rank; extra warm-up forwards fill the start and
// deferred W fill the end.
Schedule gen_zbh2(const Params& p) {
  return run("zbh2", p, plain_placement(p.ranks), false,
             caps(p, 1, std::vector<int>(p.ranks, 2 * p.ranks - 1)));
}

// CrossPipe's greedy: knows every link; same cap on every rank (default: 1F1B's peak p).
Schedule gen_crosspipe_greedy(const Params& p) {
  return run("crosspipe-greedy", p, plain_placement(p.ranks), true,
             caps(p, 1, std::vector<int>(p.ranks, p.ranks)));
}

}  // namespace xdc::sched
