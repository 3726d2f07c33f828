// Static routes between DCs: one shortest-path tree per destination (Dijkstra on the
// reversed graph), so hop-by-hop forwarding always follows the path that path() reports.
#include <limits>
#include <stdexcept>

#include "harness/topology/topology.h"

namespace xdc::topo {
namespace {

struct Label {
  uint64_t delay_us = std::numeric_limits<uint64_t>::max();
  size_t hops = 0;
  bool operator<(const Label& o) const {
    return delay_us != o.delay_us ? delay_us < o.delay_us : hops < o.hops;
  }
  bool operator==(const Label& o) const { return delay_us == o.delay_us && hops == o.hops; }
};

}  // namespace

Routes compute_routes(const Topology& t) {
  const size_t n = t.dcs.size();
  auto index = [&](const std::string& name) {
    for (size_t i = 0; i < n; ++i)
      if (t.dcs[i].name == name) return i;
    throw std::out_of_range("compute_routes: unknown DC " + name);
  };
  // out[u] = (v, one-way delay u -> v)
  std::vector<std::vector<std::pair<size_t, uint64_t>>> out(n);
  for (const WanLink& l : t.wan) {
    size_t a = index(l.a), b = index(l.b);
    out[a].push_back({b, l.a_to_b.delay_us});
    out[b].push_back({a, l.b_to_a.delay_us});
  }
  Routes r;
  for (size_t dst = 0; dst < n; ++dst) {
    // label[u]: best (delay, hops) from u to dst; next[u]: u's first hop on it.
    std::vector<Label> label(n);
    std::vector<size_t> next(n, n);
    std::vector<bool> done(n, false);
    label[dst] = Label{0, 0};
    for (;;) {
      size_t v = n;
      for (size_t i = 0; i < n; ++i)
        if (!done[i] && label[i].delay_us != std::numeric_limits<uint64_t>::max() &&
            (v == n || label[i] < label[v]))
          v = i;
      if (v == n) break;
      done[v] = true;
      // Every u with an edge u -> v may reach dst through v. All candidate next hops of u
      // carry smaller labels than u's, so they are settled before u and the
      // smallest-name tie-break sees all of them.
      for (size_t u = 0; u < n; ++u) {
        if (done[u]) continue;
        for (auto [w, d] : out[u]) {
          if (w != v) continue;
          Label cand{label[v].delay_us + d, label[v].hops + 1};
          if (cand < label[u] || (cand == label[u] && t.dcs[v].name < t.dcs[next[u]].name)) {
            label[u] = cand;
            next[u] = v;
          }
        }
      }
    }
    for (size_t u = 0; u < n; ++u)
      if (u != dst && next[u] != n) r.next[{t.dcs[u].name, t.dcs[dst].name}] = t.dcs[next[u]].name;
  }
  return r;
}

const std::string& Routes::next_hop(const std::string& from, const std::string& to) const {
  auto it = next.find({from, to});
  if (it == next.end()) throw std::out_of_range("no route from " + from + " to " + to);
  return it->second;
}

std::vector<std::string> Routes::path(const std::string& from, const std::string& to) const {
  std::vector<std::string> p = {from};
  while (p.back() != to) {
    p.push_back(next_hop(p.back(), to));
    if (p.size() > next.size() + 2) throw std::logic_error("routing loop towards " + to);
  }
  return p;
}

}  // namespace xdc::topo
