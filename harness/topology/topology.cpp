// Lookups on the validated model, and loading a topology file.
#include "harness/topology/topology.h"

#include "harness/common/yaml_reader.h"
#include "harness/topology/parse.h"
#include "netem/shaper/queue_sizing.h"

namespace xdc::topo {

const Dc* Topology::find_dc(const std::string& name) const {
  for (const Dc& d : dcs)
    if (d.name == name) return &d;
  return nullptr;
}

const Host* Topology::find_host(const std::string& name) const {
  for (const Dc& d : dcs)
    for (const Host& h : d.hosts)
      if (h.name == name) return &h;
  return nullptr;
}

std::vector<const Host*> Topology::hosts() const {
  std::vector<const Host*> out;
  for (const Dc& d : dcs)
    for (const Host& h : d.hosts) out.push_back(&h);
  return out;
}

const WanLink* Topology::find_link(const std::string& x, const std::string& y) const {
  for (const WanLink& l : wan)
    if (l.joins(x, y)) return &l;
  return nullptr;
}

Topology load_topology(const std::string& path) {
  return parse_topology_node(yaml::load_file(path));  // InputError when unreadable
}

}  // namespace xdc::topo

namespace xdc::topo {

Topology parse_topology(const std::string& yaml_text, const std::string& file_label) {
  return parse_topology_node(yaml::parse(yaml_text, file_label));
}

Topology time_dilated(Topology t, double k) {
  if (k == 1) return t;
  t.intra_dc.rate_bps = netem::time_dilated_rate_bps(t.intra_dc.rate_bps, k);
  t.intra_dc.delay_us = netem::time_dilated_us(t.intra_dc.delay_us, k);
  for (auto& w : t.wan)
    for (auto* p : {&w.a_to_b, &w.b_to_a}) {
      // The bottleneck queue in packets is the undilated link's: an automatic size has a
      // 1 ms floor (queue_sizing.h), a duration that dilation would shrink by k.
      if (p->rate_bps && !p->queue_pkts) p->queue_pkts = netem::rate_queue_pkts(*p);
      *p = netem::time_dilated(*p, k);
    }
  return t;
}

}  // namespace xdc::topo
