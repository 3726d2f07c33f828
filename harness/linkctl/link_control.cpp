#include "harness/linkctl/link_control.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <map>

#include "common/input_error.h"
#include "harness/common/units.h"
#include "harness/network/names.h"
#include "harness/network/shaping.h"
#include "harness/network/teardown.h"
#include "netem/shaper/qdisc.h"

namespace xdc::linkctl {
namespace {

int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::string wan_links_of(const Wan& w) {
  std::string out;
  for (const auto& d : w.directions)
    if (d.from < d.to) out += (out.empty() ? "" : ", ") + d.from + "<->" + d.to;
  return out.empty() ? "none" : out;
}

void require_dc(const Wan& w, const std::string& dc) {
  if (std::find(w.dcs.begin(), w.dcs.end(), dc) == w.dcs.end()) {
    std::string dcs;
    for (const auto& d : w.dcs) dcs += (dcs.empty() ? "" : ", ") + d;
    throw InputError(fmt::format("network {} has no DC named '{}' (its DCs: {})", w.name, dc, dcs));
  }
}

net::ShapedLink& find_link(net::NetworkState& s, const Direction& d) {
  for (auto& l : s.links)
    if (l.from == d.from && l.to == d.to) return l;
  throw InputError(fmt::format("network {} has no WAN link {}", s.name, d.name()));
}

// The change applied to what a direction runs without it (dilated by k).
netem::LinkParams changed(const netem::LinkParams& p, const topo::WanChange& c, double k) {
  return topo::applied(p, topo::time_dilated(c, k));
}

}  // namespace

void append_event(const std::string& net, const nlohmann::json& line) {
  std::ofstream out(events_path(net), std::ios::app);
  out << line.dump() << "\n";
  if (!out) throw std::runtime_error("cannot append to " + events_path(net));
}

Wan wan_of(const net::NetworkState& s) {
  Wan w{s.name, s.dcs, {}};
  for (const auto& l : s.links) w.directions.push_back({l.from, l.to});
  return w;
}

Wan wan_of(const topo::Topology& t) {
  Wan w{t.name, {}, {}};
  for (const auto& d : t.dcs) w.dcs.push_back(d.name);
  for (const auto& l : t.wan) {
    w.directions.push_back({l.a, l.b});
    w.directions.push_back({l.b, l.a});
  }
  return w;
}

std::vector<Direction> link_directions(const Wan& w, const std::string& a, const std::string& b,
                                       const std::string& only) {
  require_dc(w, a);
  require_dc(w, b);
  bool linked = std::any_of(w.directions.begin(), w.directions.end(),
                            [&](const Direction& d) { return d.from == a && d.to == b; });
  if (!linked)
    throw InputError(fmt::format("network {} has no WAN link between {} and {} (its links: {})",
                                 w.name, a, b, wan_links_of(w)));
  if (only.empty()) return {{a, b}, {b, a}};
  for (const Direction& d : {Direction{a, b}, Direction{b, a}})
    if (only == d.name()) return {d};
  throw InputError(
      fmt::format("--direction: expected {}->{} or {}->{}, got \"{}\"", a, b, b, a, only));
}

std::vector<Direction> dc_directions(const Wan& w, const std::string& dc) {
  require_dc(w, dc);
  std::vector<Direction> out;
  for (const auto& d : w.directions)
    if (d.from == dc || d.to == dc) out.push_back(d);
  if (out.empty()) throw InputError(fmt::format("DC {} of network {} has no WAN link", dc, w.name));
  return out;
}

net::NetworkState load_network(const std::string& net) {
  auto present = net::networks_present();
  if (std::find(present.begin(), present.end(), net) == present.end())
    throw InputError("no network named '" + net + "' is up");
  auto s = net::load_state(net);
  if (!s) throw InputError("network '" + net + "' has no state (half-built? xdc down " + net + ")");
  return *s;
}

netem::LinkParams running_params(const net::ShapedLink& l) {
  netem::LinkParams p = l.configured;
  if (l.down) {
    p.loss = {};
    p.loss.kind = netem::LossModel::Kind::kRandom;
    p.loss.p_pct = 100;
  }
  return p;
}

nlohmann::json AppliedChange::to_json(const topo::WanChange& c) const {
  nlohmann::json given = nlohmann::json::object();
  if (c.delay_us) given["delay_us"] = *c.delay_us;
  if (c.jitter_us) given["jitter_us"] = *c.jitter_us;
  if (c.loss_pct) given["loss_pct"] = *c.loss_pct;
  if (c.rate_bps) given["rate_bps"] = *c.rate_bps;
  return {{"t_ns", t_ns},         {"kind", kind},     {"link", dir.name()}, {"from", dir.from},
          {"to", dir.to},         {"changed", given}, {"params", params},   {"down", down},
          {"apply_ms", apply_ms}, {"source", source}};
}

std::vector<AppliedChange> change_links(const std::string& net, const std::vector<Direction>& dirs,
                                        const topo::WanChange& c,
                                        std::map<std::string, netem::ReshapeHandle>* ready) {
  if (c.empty()) throw InputError("nothing to change: give --delay, --jitter, --loss or --rate");
  net::StateLock lock;
  net::NetworkState s = load_network(net);
  const double k = s.time_dilation;
  netem::Backend backend = s.shaping == "kernel"      ? netem::Backend::kKernel
                           : s.shaping == "userspace" ? netem::Backend::kUserspace
                                                      : netem::Backend::kAuto;
  // Rates the links cannot take in place are refused before any direction changes.
  for (const Direction& d : dirs) {
    const net::ShapedLink& l = find_link(s, d);
    const uint64_t was = running_params(l).rate_bps, now = changed(l.configured, c, k).rate_bps;
    if (!c.rate_bps || now == was) continue;
    if (now < kMinRateBps)
      throw InputError(fmt::format("--rate: expected at least 8kbit{}, got {} on {}",
                                   k != 1 ? " once dilated" : "", format_rate(now), d.name()));
    if (was && std::string(netem::rate_qdisc_kind(was)) != netem::rate_qdisc_kind(now))
      throw InputError(fmt::format(
          "--rate: {} runs {} with {}; {} needs {}, which cannot replace it in "
          "place (the two meet at ~17 Gbit/s): give a rate on the same side, or build the "
          "network with it (xdc down, then xdc up)",
          d.name(), format_rate(was), netem::rate_qdisc_kind(was), format_rate(now),
          netem::rate_qdisc_kind(now)));
  }
  std::vector<AppliedChange> out;
  for (const Direction& d : dirs) {
    net::ShapedLink& l = find_link(s, d);
    int64_t t_request = realtime_ns();
    netem::LinkParams was = running_params(l);
    net::ShapedLink next = l;
    next.configured = changed(l.configured, c, k);
    if (c.down) next.down = *c.down;
    netem::ShapeRecord r;  // an unimpaired direction has none: nothing installed
    if (l.record.is_object() && !l.record.empty())
      r = netem::ShapeRecord::from_json(l.record);
    else
      r.netns = l.netns, r.ifname = l.ifname, r.tag = d.name();
    if (c.down && *c.down != l.down && r.active) {  // a cut begins or ends: its drops so far
      const uint64_t loss = netem::shape_counters(r).loss_drops;
      if (*c.down)
        next.loss_drops_at_down = loss;
      else
        next.down_drops += loss > l.loss_drops_at_down ? loss - l.loss_drops_at_down : 0;
    }
    AppliedChange a;
    a.t_ns = netem::reshape_egress(r, was, running_params(next), backend, net::shape_options(l),
                                   ready ? &(*ready)[d.name()] : nullptr);
    next.record = r.to_json();
    next.backend = r.active ? netem::to_string(r.backend) : "none";
    l = next;
    net::save_state(s);
    a.dir = d;
    a.kind = !c.down ? "link_set" : *c.down ? "link_down" : "link_up";
    if (c.params) a.kind = "link_restore";
    a.apply_ms = static_cast<double>(a.t_ns - t_request) / 1e6;
    a.params = netem::time_dilated(l.configured, 1 / k);
    a.down = l.down;
    a.source = c.source;
    nlohmann::json line = a.to_json(c);
    line["backend"] = l.backend;
    append_event(net, line);
    out.push_back(a);
  }
  return out;
}

void prepare_links(const std::string& net, const std::vector<Direction>& dirs,
                   std::map<std::string, netem::ReshapeHandle>& ready) {
  net::StateLock lock;
  net::NetworkState s;
  try {
    s = load_network(net);
  } catch (const std::exception&) {
    return;  // no network: change_links will say so
  }
  for (const Direction& d : dirs) try {
      const net::ShapedLink& l = find_link(s, d);
      if (l.record.is_object() && !l.record.empty())
        netem::prepare_reshape(netem::ShapeRecord::from_json(l.record), ready[d.name()]);
    } catch (const std::exception&) {
      ready.erase(d.name());
    }
}

std::vector<LinkStatus> link_status(const net::NetworkState& s) {
  std::vector<LinkStatus> out;
  for (const auto& l : s.links) {
    LinkStatus st{&l, netem::time_dilated(l.configured, 1 / s.time_dilation), {}, 0};
    if (!l.record.is_null() && !l.record.empty())
      st.counters = netem::shape_counters(netem::ShapeRecord::from_json(l.record));
    uint64_t& loss = st.counters.loss_drops;  // the cuts' drops out of the loss model's
    st.down_drops =
        l.down_drops + (l.down && loss > l.loss_drops_at_down ? loss - l.loss_drops_at_down : 0);
    loss -= std::min(loss, st.down_drops);
    out.push_back(st);
  }
  return out;
}

std::string down_links_note(const std::vector<nlohmann::json>& events, int64_t start_ns,
                            int64_t at_ns) {
  std::map<std::string, const nlohmann::json*> cut;  // link -> its link_down event
  for (const auto& e : events) {
    if (e.value("t_ns", int64_t{0}) > at_ns) break;
    std::string link = e.value("link", "");
    if (e.value("down", false))
      cut.emplace(link, &e);  // the first cut of a stretch
    else
      cut.erase(link);
  }
  std::string out;
  for (const auto& [link, e] : cut)
    out += fmt::format(
        "{}WAN link {} was down from {:.1f} s into the run until it failed {:.1f} s later, cut by "
        "{}",
        out.empty() ? "" : "; ", link, ((*e)["t_ns"].get<int64_t>() - start_ns) / 1e9,
        (at_ns - (*e)["t_ns"].get<int64_t>()) / 1e9, e->value("source", "?"));
  return out;
}

std::string events_path(const std::string& net) {
  return net::state_dir(net) + "/events.jsonl";
}

std::vector<nlohmann::json> read_link_events(const std::string& net, int64_t from_ns,
                                             int64_t to_ns) {
  std::vector<nlohmann::json> out;
  std::ifstream in(events_path(net));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("t_ns")) continue;  // a line cut by a crash
    int64_t t = j["t_ns"].get<int64_t>();
    if (t >= from_ns && t <= to_ns) out.push_back(std::move(j));
  }
  return out;
}

}  // namespace xdc::linkctl
