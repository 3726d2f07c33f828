// topologies/*.yaml -> validated Topology: names, DCs and hosts, WAN links, connectivity.
#include <algorithm>
#include <charconv>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include "harness/common/units.h"
#include "harness/topology/parse.h"

namespace xdc::topo {
namespace {

const std::vector<std::string> kTopKeys = {"name",     "description", "shaping", "network",
                                           "intra_dc", "dcs",         "wan",     "tcp"};
// Words people reach for, mapped to our keys, for "did you mean".
const std::map<std::string, std::string> kSynonyms = {
    {"latency", "delay"}, {"bandwidth", "rate"},  {"bw", "rate"},         {"limit", "queue"},
    {"links", "wan"},     {"backend", "shaping"}, {"datacenters", "dcs"}, {"nodes", "hosts"},
    {"dc", "dcs"},        {"loss_rate", "loss"},  {"peers", "between"},   {"ends", "between"}};

const char* const kIfnameWhy = "Linux interface names have at most 15 characters";

bool valid_name_chars(const std::string& s) {
  if (s.empty() || s[0] < 'a' || s[0] > 'z') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

// `what` like "DC name"; `why` explains the length limit.
std::string read_name(const yaml::Value& v, const std::string& what, size_t max_len,
                      const std::string& why) {
  std::string s = v.scalar("a " + what);
  if (!valid_name_chars(s))
    v.fail("a " + what + " of lowercase letters, digits and '-', starting with a letter");
  if (s.size() > max_len)
    v.error("expected a " + what + " of at most " + std::to_string(max_len) +
            " characters, got \"" + s + "\" (" + std::to_string(s.size()) + "): " + why);
  return s;
}

std::string at_line(const SourcePos& p) {
  return "line " + std::to_string(p.line);
}

class Parser {
 public:
  explicit Parser(const yaml::Value& root) : root_(root) {}

  Topology run() {
    yaml::Map top = root_.map({}, "a topology map with keys " + yaml::join(kTopKeys));
    top.check_keys(kTopKeys, kSynonyms);
    t_.source_file = root_.file();
    t_.name = read_name(
        top.require("name"), "network name", kMaxNetworkName,
        "the root namespace's management port is \"xdc-<name>\" and " + std::string(kIfnameWhy));
    if (auto d = top.get("description")) t_.description = d->scalar();
    if (auto s = top.get("shaping")) {
      std::string b = s->choice({"auto", "kernel", "userspace"});
      t_.shaping = b == "auto"     ? netem::Backend::kAuto
                   : b == "kernel" ? netem::Backend::kKernel
                                   : netem::Backend::kUserspace;
    }
    if (auto v = top.get("network")) read_network_block(*v, &t_.backend);
    if (auto v = top.get("intra_dc")) read_intra_dc(*v);
    if (auto v = top.get("tcp")) apply_tcp_block(*v, &t_.tcp);
    read_dcs(top.require("dcs"));
    if (auto w = top.get("wan")) read_wan(*w);
    check_connected();
    return std::move(t_);
  }

 private:
  void read_intra_dc(const yaml::Value& v) {
    yaml::Map m = v.map({"rate", "delay"}, "a map like {rate: 10gbit, delay: 50us}");
    if (auto r = m.get("rate")) t_.intra_dc.rate_bps = r->rate_bps();
    if (auto d = m.get("delay")) t_.intra_dc.delay_us = d->duration_us();
  }

  void read_dcs(const yaml::Value& v) {
    const std::string like = "a list of DCs like [{name: east, hosts: 2}]";
    std::vector<yaml::Value> items = v.list(like);
    if (items.empty()) v.fail("at least one DC, " + like);
    if (items.size() > static_cast<size_t>(kMaxDcs))
      v.error("expected at most " + std::to_string(kMaxDcs) + " DCs (one /24 each), got " +
              std::to_string(items.size()));
    // DC names first, so that a host may be checked against a DC declared after it.
    std::vector<yaml::Map> maps;
    for (const yaml::Value& item : items) {
      maps.push_back(item.map({}, "a DC like {name: east, hosts: 2}"));
      maps.back().check_keys({"name", "hosts", "tcp"}, kSynonyms);
      yaml::Value name_v = maps.back().require("name");
      Dc dc;
      dc.name = read_name(
          name_v, "DC name", kMaxDcName,
          "each gateway names its WAN port \"wan-<peer DC>\" and " + std::string(kIfnameWhy));
      dc.pos = name_v.pos();
      dc.tcp = t_.tcp;
      if (auto v = maps.back().get("tcp")) apply_tcp_block(*v, &dc.tcp);
      if (const Dc* first = t_.find_dc(dc.name))
        name_v.error("duplicate DC name \"" + dc.name + "\" (first at " + at_line(first->pos) +
                     ")");
      t_.dcs.push_back(std::move(dc));
    }
    for (size_t d = 0; d < maps.size(); ++d) read_hosts(maps[d].require("hosts"), &t_.dcs[d]);
  }

  void read_hosts(const yaml::Value& v, Dc* dc) {
    const std::string like =
        "a host count like 2 or a list of host names like [w1, w2, {name: w3, tcp: {...}}]";
    if (v.is_scalar()) {
      int64_t n = 0;
      const std::string& s = v.node().Scalar();
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
      if (ec != std::errc() || end != s.data() + s.size() || n < 1 || n > kMaxHostsPerDc)
        v.fail("a host count in 1.." + std::to_string(kMaxHostsPerDc) +
               " or a list of host names like [w1, w2]");
      std::string last = dc->name + "-h" + std::to_string(n);
      if (last.size() > kMaxHostName)
        v.error("expected a host count whose generated names \"" + dc->name + "-h<i>\" fit in " +
                std::to_string(kMaxHostName) + " characters, got " + std::to_string(n) + " (\"" +
                last + "\" has " + std::to_string(last.size()) +
                "): a host's port is named after it and " + kIfnameWhy +
                "; shorten the DC name or list the hosts by name");
      for (int64_t i = 1; i <= n; ++i)
        add_host(dc, dc->name + "-h" + std::to_string(i), v, /*generated=*/true);
    } else if (v.is_list()) {
      std::vector<yaml::Value> names = v.list();
      if (names.empty()) v.fail(like);
      if (names.size() > static_cast<size_t>(kMaxHostsPerDc))
        v.error("expected at most " + std::to_string(kMaxHostsPerDc) + " hosts in a DC, got " +
                std::to_string(names.size()));
      for (const yaml::Value& item : names) {
        // A host is its name, or {name: w1, tcp: {...}} for its own TCP settings.
        std::optional<yaml::Map> m;
        if (item.is_map()) {
          m.emplace(item.map({}, "a host name or {name: w1, tcp: {...}}"));
          m->check_keys({"name", "tcp"}, kSynonyms);
        }
        const yaml::Value n = m ? m->require("name") : item;
        add_host(dc,
                 read_name(n, "host name", kMaxHostName,
                           "a host's port is named after it and " + std::string(kIfnameWhy)),
                 n, /*generated=*/false);
        if (m)
          if (auto v = m->get("tcp")) apply_tcp_block(*v, &dc->hosts.back().tcp);
      }
    } else {
      v.fail(like);
    }
  }

  void add_host(Dc* dc, const std::string& name, const yaml::Value& where, bool generated) {
    // "generated by hosts: 2" tells the user why a name they never wrote is there.
    const std::string origin = generated ? "generated by hosts: " + where.node().Scalar() : "";
    std::vector<std::string> reserved(std::begin(kReservedHostNames), std::end(kReservedHostNames));
    if (std::find(reserved.begin(), reserved.end(), name) != reserved.end() ||
        name.rfind(kReservedHostPrefix, 0) == 0)
      where.error("expected a host name other than " + yaml::join(reserved) +
                  " and not starting with \"" + kReservedHostPrefix + "\", got \"" + name + "\"" +
                  (generated ? " " + origin : "") +
                  ": the network builder gives these names to its own interfaces and namespaces");
    auto seen = hosts_.find(name);
    if (seen != hosts_.end())
      where.error("duplicate host name \"" + name + "\"" + (generated ? " " + origin : "") +
                  " (first at " + at_line(seen->second.pos) +
                  (seen->second.origin.empty() ? "" : ", " + seen->second.origin) + ")");
    if (t_.find_dc(name))
      where.error("host name \"" + name + "\" is also a DC name (at " +
                  at_line(t_.find_dc(name)->pos) + "); host and DC names must differ");
    if (++host_count_ > kMaxHosts)
      where.error("expected at most " + std::to_string(kMaxHosts) +
                  " hosts in a topology (the management network is at most a /20), got more");
    hosts_[name] = SeenHost{where.pos(), origin};
    dc->hosts.push_back(
        Host{name, dc->name, static_cast<int>(dc->hosts.size()), where.pos(), dc->tcp});
  }

  void read_wan(const yaml::Value& v) {
    std::vector<yaml::Value> items =
        v.list("a list of WAN links like [{between: [east, west], delay: 20ms}]");
    if (items.size() > static_cast<size_t>(kMaxWanLinks))
      v.error("expected at most " + std::to_string(kMaxWanLinks) + " WAN links, got " +
              std::to_string(items.size()));
    for (const yaml::Value& item : items) read_link(item);
  }

  void read_link(const yaml::Value& item) {
    yaml::Map m = item.map({}, "a WAN link like {between: [east, west], delay: 20ms}");
    yaml::Value between = m.require("between");
    const std::string pair_like = "a pair of DC names like [east, west]";
    std::vector<yaml::Value> ends = between.list(pair_like);
    if (ends.size() != 2)
      between.error("expected " + pair_like + ", got " + std::to_string(ends.size()) + " names");
    WanLink link;
    link.pos = item.pos();
    link.a = read_dc_ref(ends[0]);
    link.b = read_dc_ref(ends[1]);
    if (link.a == link.b)
      ends[1].error("expected two different DCs, got a link from \"" + link.a + "\" to itself");
    for (const WanLink& other : t_.wan)
      if (other.joins(link.a, link.b))
        between.error("duplicate link between \"" + link.a + "\" and \"" + link.b +
                      "\" (first at " + at_line(other.pos) +
                      "); give one link per pair, with \"<a>_to_<b>\" overrides for "
                      "asymmetric parameters");

    const std::string ab = link.a + "_to_" + link.b, ba = link.b + "_to_" + link.a;
    for (const yaml::Map::Entry& e : m.entries())
      if (e.key.find("_to_") != std::string::npos && e.key != ab && e.key != ba)
        e.key_node.error("expected a direction of this link, " + ab + " or " + ba + ", got \"" +
                         e.key + "\"");
    std::vector<std::string> allowed = {"between", "changes", "trace"};
    allowed.insert(allowed.end(), kLinkKeys.begin(), kLinkKeys.end());
    allowed.push_back(ab);
    allowed.push_back(ba);
    m.check_keys(allowed, kSynonyms);

    netem::LinkParams shared;
    LinkOrigin shared_origin;
    apply_link_keys(m, &shared, &shared_origin);
    link.a_to_b = read_direction(m, ab, shared, shared_origin);
    link.b_to_a = read_direction(m, ba, shared, shared_origin);
    std::vector<WanChange> both = read_timeline(m);
    link.a_to_b_changes = both;
    link.b_to_a_changes = both;
    if (auto o = m.get(ab)) link.a_to_b_changes = read_timeline(o->map(), both);
    if (auto o = m.get(ba)) link.b_to_a_changes = read_timeline(o->map(), both);
    t_.wan.push_back(std::move(link));
  }

  // `changes:` or `trace:` of a link or direction (not both); `inherited` when neither.
  std::vector<WanChange> read_timeline(const yaml::Map& m,
                                       const std::vector<WanChange>& inherited = {}) {
    auto changes = m.get("changes"), trace = m.get("trace");
    if (changes && trace)
      trace->error("expected either changes or trace, got both (changes at " +
                   at_line(changes->pos()) + ")");
    if (changes) return read_changes(*changes);
    if (trace) return read_trace(*trace);
    return inherited;
  }

  netem::LinkParams read_direction(const yaml::Map& m, const std::string& key,
                                   const netem::LinkParams& shared, LinkOrigin origin) {
    netem::LinkParams p = shared;
    if (auto o = m.get(key)) {
      yaml::Map om = o->map({}, "a map of overrides like {delay: 25ms}");
      std::vector<std::string> allowed = kLinkKeys;
      allowed.push_back("changes");
      allowed.push_back("trace");
      om.check_keys(allowed, kSynonyms);
      apply_link_keys(om, &p, &origin);
    }
    if (p.reorder_pct > 0 && origin.reorder) {
      if (p.delay_us == 0)
        origin.reorder->error("expected a delay in direction " + key +
                              " for reorder (netem reorders by sending some packets without "
                              "the delay), got none");
      if (t_.shaping == netem::Backend::kUserspace)
        origin.reorder->error(
            "reorder needs shaping: kernel or auto; the userspace delay line keeps FIFO order");
    }
    return p;
  }

  std::string read_dc_ref(const yaml::Value& v) {
    std::vector<std::string> names;
    for (const Dc& d : t_.dcs) names.push_back(d.name);
    std::string s = v.scalar("a DC name");
    if (!t_.find_dc(s)) v.fail("one of the DCs " + yaml::join(names));
    return s;
  }

  void check_connected() {
    std::set<std::string> reached = {t_.dcs[0].name};
    std::vector<std::string> todo = {t_.dcs[0].name};
    while (!todo.empty()) {
      std::string d = todo.back();
      todo.pop_back();
      for (const WanLink& l : t_.wan)
        if ((l.a == d || l.b == d) && reached.insert(l.peer(d)).second) todo.push_back(l.peer(d));
    }
    for (size_t i = 0; i < t_.dcs.size(); ++i) {
      const Dc& dc = t_.dcs[i];
      if (reached.count(dc.name)) continue;
      throw InputError(dc.pos, "dcs[" + std::to_string(i) + "].name: DC \"" + dc.name +
                                   "\" is not reachable from \"" + t_.dcs[0].name +
                                   "\": expected a chain of wan links joining it, like "
                                   "{between: [" +
                                   t_.dcs[0].name + ", " + dc.name + "], delay: 20ms}");
    }
  }

  struct SeenHost {
    SourcePos pos;
    std::string origin;
  };

  const yaml::Value& root_;
  Topology t_;
  std::map<std::string, SeenHost> hosts_;
  int host_count_ = 0;
};

}  // namespace

void read_network_block(const yaml::Value& v, NetworkBackend* backend) {
  yaml::Map m = v.map({"backend"}, "a map like {backend: mininet}");
  if (auto b = m.get("backend"))
    *backend = b->choice({"native", "mininet"}) == "mininet" ? NetworkBackend::kMininet
                                                             : NetworkBackend::kNative;
}

std::string to_string(NetworkBackend b) {
  return b == NetworkBackend::kMininet ? "mininet" : "native";
}

Topology parse_topology_node(const yaml::Value& root) {
  return Parser(root).run();
}

}  // namespace xdc::topo
