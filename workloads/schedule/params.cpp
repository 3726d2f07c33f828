#include "workloads/schedule/params.h"

#include <cstddef>
#include <stdexcept>

namespace xdc::sched {

void check_sizes(const Params& p) {
  if (p.ranks < 1) throw std::invalid_argument("ranks (stages) must be >= 1");
  if (p.microbatches < 1) throw std::invalid_argument("microbatches must be >= 1");
}

LinkDelay link_delay(const Params& p, int from, int to) {
  if (from == to || p.links.empty()) return {};
  return p.links.at(from).at(to);
}

std::vector<std::vector<LinkDelay>> two_dc_links(int ranks, int split, LinkDelay wan) {
  std::vector<std::vector<LinkDelay>> l(ranks, std::vector<LinkDelay>(ranks));
  for (int a = 0; a < ranks; ++a)
    for (int b = 0; b < ranks; ++b)
      if ((a < split) != (b < split)) l[a][b] = wan;
  return l;
}

StageCosts stage_costs(const Params& p, int stages) {
  const double v = p.ranks > 0 ? static_cast<double>(stages) / p.ranks : 1;
  StageCosts c;
  auto fill = [&](std::vector<double>& out, const std::vector<double>& given, double t) {
    out = given.size() == static_cast<std::size_t>(stages) ? given
                                                           : std::vector<double>(stages, t / v);
  };
  fill(c.f, p.stage_f, p.t_f);
  fill(c.b, p.stage_b, p.t_b);
  fill(c.w, p.stage_w, p.t_w);
  return c;
}

}  // namespace xdc::sched
