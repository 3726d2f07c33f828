#include "harness/placement/search.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/text_file.h"
#include "harness/common/yaml_reader.h"
#include "harness/plan/predict.h"
#include "harness/sim/worker_model.h"
#include "harness/topology/parse.h"

namespace xdc::placement {
namespace {

// The search's own keys; the rest are the experiment keys it passes through (experiment.h)
// but those a placement generates or that name DCs it may leave out.
const std::vector<std::string> kSearchKeys = {"dcs", "wan", "intra_dc", "gpus", "constraints"};
const std::vector<std::string> kExperimentKeys = {
    "name",    "description",  "shaping",         "network",    "tcp",    "model",
    "compute", "microbatches", "microbatch_size", "iterations", "warmup", "schedules",
    "mpi",     "seed",         "learning_rate",   "data",       "check",  "time_dilation"};
const std::map<std::string, std::string> kGenerated = {
    {"topology", "the topology is generated from dcs, wan and intra_dc"},
    {"pipeline", "the pipeline (stages, placement, data_parallel) is what the search chooses"},
    {"events", "events name DCs a placement may leave out; add them to the written experiment"}};
// A search file's DCs at most: the routing closure of DC sets is a table of 2^N.
constexpr size_t kMaxSearchDcs = 16;
// The generated topology's name (and so the network's, topology.h's kMaxNetworkName).
constexpr const char* kTopologyName = "plan";

std::string host_name(const std::string& dc, int i) {
  return dc + "-h" + std::to_string(i + 1);
}

// Host names per replica and stage: each DC's hosts taken in order, replica by replica.
std::vector<std::vector<std::string>> placement_hosts(const Search& s, const Placement& p) {
  std::vector<int> next(s.dcs.size(), 0);
  std::vector<std::vector<std::string>> out;
  for (const auto& replica : p.replicas) {
    out.emplace_back();
    for (const Segment& seg : replica)
      for (int i = 0; i < seg.stages; ++i)
        out.back().push_back(host_name(s.dcs[seg.dc].name, next[seg.dc]++));
  }
  return out;
}

// `hosts_per_dc[i]` hosts in DC i (0: the DC is left out), the WAN links among those kept.
YAML::Node topology_tree(const Search& s, const std::vector<int>& hosts_per_dc) {
  YAML::Node t(YAML::NodeType::Map);
  t["name"] = kTopologyName;
  if (s.root["intra_dc"]) t["intra_dc"] = s.root["intra_dc"];
  std::set<std::string> left_out;
  YAML::Node dcs(YAML::NodeType::Sequence);
  for (size_t i = 0; i < s.dcs.size(); ++i) {
    if (hosts_per_dc[i] == 0) {
      left_out.insert(s.dcs[i].name);
      continue;
    }
    YAML::Node d(YAML::NodeType::Map);
    d["name"] = s.root["dcs"][i]["name"];
    d["hosts"] = hosts_per_dc[i];
    dcs.push_back(d);
  }
  t["dcs"] = dcs;
  // A link with an end left out goes; the rest as written (the topology checks them).
  YAML::Node wan(YAML::NodeType::Sequence);
  for (const YAML::Node& link : s.root["wan"]) {
    bool keep = true;
    if (const YAML::Node ends = link["between"]; ends.IsSequence())
      for (const YAML::Node& end : ends)
        if (end.IsScalar() && left_out.count(end.Scalar())) keep = false;
    if (keep) wan.push_back(link);
  }
  if (wan.size() > 0) t["wan"] = wan;
  return t;
}

YAML::Node pipeline_tree(const std::vector<std::vector<std::string>>& hosts) {
  YAML::Node p(YAML::NodeType::Map);
  p["stages"] = hosts.front().size();
  p["data_parallel"] = hosts.size();
  YAML::Node placement(YAML::NodeType::Sequence);
  for (const auto& replica : hosts) {
    YAML::Node r(YAML::NodeType::Sequence);
    r.SetStyle(YAML::EmitterStyle::Flow);
    for (const auto& h : replica) r.push_back(h);
    placement.push_back(r);
  }
  p["placement"] = placement;
  return p;
}

// The base experiment's keys around a generated topology, pipeline and schedule list.
YAML::Node assemble(const Search& s, const YAML::Node& topology, const YAML::Node& pipeline,
                    const YAML::Node& schedules) {
  YAML::Node e(YAML::NodeType::Map);
  e["name"] = s.root["name"];
  if (s.root["description"]) e["description"] = s.root["description"];
  e["topology"] = topology;
  e["pipeline"] = pipeline;
  for (const auto& kv : s.root) {
    const std::string key = kv.first.Scalar();
    if (key == "name" || key == "description") continue;
    if (std::find(kExperimentKeys.begin(), kExperimentKeys.end(), key) == kExperimentKeys.end())
      continue;
    e[key] = key == "schedules" ? schedules : kv.second;
  }
  return e;
}

// The schedule list's items as written (a scalar `schedules:` is one item).
std::vector<YAML::Node> schedule_items(const Search& s) {
  const YAML::Node v = s.root["schedules"];
  if (!v.IsSequence()) return {v};
  std::vector<YAML::Node> out;
  for (const YAML::Node& x : v) out.push_back(x);
  return out;
}

class Parser {
 public:
  Parser(const yaml::Value& root, Search* s) : root_(root), s_(*s) {}

  void run() {
    std::vector<std::string> allowed = kSearchKeys;
    allowed.insert(allowed.end(), kExperimentKeys.begin(), kExperimentKeys.end());
    yaml::Map top = root_.map({}, "a placement search map with keys " + yaml::join(allowed));
    for (const auto& entry : top.entries())
      if (auto g = kGenerated.find(entry.key); g != kGenerated.end())
        entry.key_node.error("not in a placement search: " + g->second);
    top.check_keys(allowed, {{"datacenters", "dcs"},
                             {"links", "wan"},
                             {"ranks", "gpus"},
                             {"world_size", "gpus"},
                             {"limits", "constraints"}});
    s_.name = top.require("name").scalar("an experiment name");
    read_dcs(top.require("dcs"));
    const yaml::Value wan = top.require("wan");
    if (!wan.is_list())
      wan.fail(
          "a list of WAN links like [{between: [a, b], delay: 20ms, rate: 1gbit}] (the "
          "inventory's links; the experiment's `wan:` override has no place here)");
    read_gpus(top.require("gpus"));
    if (auto c = top.get("constraints")) read_constraints(*c);
    top.require("schedules");
    // The base experiment over the whole inventory, one rank on its first host: checks
    // every base key, the DCs and the WAN links where the search file has them.
    std::vector<int> all;
    for (const DcGpus& d : s_.dcs) all.push_back(d.gpus);
    // The inventory as a topology first, so that its errors name the search's own keys.
    topo::parse_topology_node(yaml::Value(topology_tree(s_, all), "", root_.file()));
    const YAML::Node tree =
        assemble(s_, topology_tree(s_, all), pipeline_tree({{host_name(s_.dcs[0].name, 0)}}),
                 root_.node()["schedules"]);
    s_.inventory = run::parse_experiment_tree(yaml::Value(tree, "", root_.file()), s_.text);
    check_costs_scale(top);
  }

 private:
  // Constants and a profile are one stage's costs at the pipeline depth they were
  // written for: at another depth the stages would make a different model.
  void check_costs_scale(const yaml::Map& top) {
    const run::Compute& c = s_.inventory.compute;
    if (c.mode != run::Compute::Mode::kModeled || c.source == run::Compute::Source::kShape) return;
    std::set<int> depths;
    for (int g : s_.gpus)
      for (int pp = s_.min_stages; pp <= std::min(g, s_.max_stages); ++pp)
        if (g % pp == 0) depths.insert(pp);
    if (depths.size() > 1)
      top.require("compute").error(fmt::format(
          "constants and profiles are per-stage costs at one pipeline depth; this search "
          "compares depths {} (gpus and constraints), whose stages would be different models: "
          "give a model shape (compute.modeled: {{model: llama2-7b, device: a100, ...}}, "
          "split over the stages) or one depth (constraints: {{min_stages: N, max_stages: N}})",
          fmt::join(depths, ", ")));
  }

  void read_dcs(const yaml::Value& v) {
    const std::string like = "a list of DCs like [{name: east, gpus: 4}]";
    const auto items = v.list(like);
    if (items.empty()) v.fail(like);
    if (items.size() > kMaxSearchDcs)
      v.error(fmt::format("expected at most {} DCs in a placement search, got {}", kMaxSearchDcs,
                          items.size()));
    for (const yaml::Value& item : items) {
      yaml::Map m = item.map({}, "a DC like {name: east, gpus: 4}");
      m.check_keys({"name", "gpus"}, {{"hosts", "gpus"}, {"ranks", "gpus"}});
      DcGpus d;
      d.name = m.require("name").scalar("a DC name");
      d.gpus = static_cast<int>(m.require("gpus").integer(1, topo::kMaxHostsPerDc));
      s_.dcs.push_back(d);
    }
  }

  void read_gpus(const yaml::Value& v) {
    s_.gpus_pos = v.pos();
    const std::vector<yaml::Value> items = v.is_list() ? v.list() : std::vector<yaml::Value>{v};
    if (items.empty()) v.fail("a number of ranks (stages x data_parallel) or a list of them");
    int total = 0;
    for (const DcGpus& d : s_.dcs) total += d.gpus;
    for (const yaml::Value& x : items) {
      const int g = static_cast<int>(x.integer(1, topo::kMaxHosts));
      if (g > total) x.error(fmt::format("{} ranks asked, the DCs have {} GPUs in all", g, total));
      if (std::find(s_.gpus.begin(), s_.gpus.end(), g) != s_.gpus.end())
        x.error(fmt::format("{} is listed twice", g));
      s_.gpus.push_back(g);
    }
  }

  void read_constraints(const yaml::Value& v) {
    yaml::Map m = v.map({}, "a map like {min_stages: 2, max_stages: 8, max_placements: 5000}");
    m.check_keys({"min_stages", "max_stages", "max_placements"},
                 {{"min_pp", "min_stages"}, {"max_pp", "max_stages"}});
    if (auto x = m.get("min_stages")) s_.min_stages = static_cast<int>(x->integer(1, 1024));
    if (auto x = m.get("max_stages")) {
      s_.max_stages = static_cast<int>(x->integer(1, 1024));
      if (s_.max_stages < s_.min_stages)
        x->fail(fmt::format("max_stages >= min_stages ({})", s_.min_stages));
    }
    if (auto x = m.get("max_placements")) {
      s_.max_placements = static_cast<size_t>(x->integer(1, 10'000'000));
      s_.max_placements_pos = x->pos();
    }
  }

  const yaml::Value& root_;
  Search& s_;
};

// What the simulator sees of one replica's pipeline: its links, channels and TCP paths.
std::string link_signature(const Search& s, const std::vector<std::string>& hosts) {
  run::Experiment e = s.inventory;
  e.placement = {hosts};
  e.stages = static_cast<int>(hosts.size());
  e.data_parallel = 1;
  const sim::LinkModel m = run::link_model(e);
  std::string out;
  for (size_t i = 0; i < m.links.size(); ++i) {
    out += fmt::format("{},{:.0f},{};", m.links[i].latency_ns, m.links[i].bandwidth_bps,
                       m.channel.empty() ? static_cast<int>(i) : m.channel[i]);
    if (!m.tcp.empty()) {
      const sim::TcpPath& t = m.path_of(i);
      out += fmt::format("{},{},{},{},{},{};", t.eager_limit, t.window_bytes,
                         t.slow_start_after_idle, t.rto_min_ns, t.connections, t.loss);
    }
  }
  return out;
}

class Enumerator {
 public:
  explicit Enumerator(const Search& s)
      : s_(s), routes_(topo::compute_routes(s.inventory.topology)) {
    closed_.assign(size_t{1} << s.dcs.size(), -1);
  }

  std::vector<Placement> run() {
    for (int g : s_.gpus)
      for (int pp = s_.min_stages; pp <= std::min(g, s_.max_stages); ++pp)
        if (g % pp == 0) add_shape(pp, g / pp);
    return std::move(out_);
  }

 private:
  // Whether the routes among the DCs of `mask` stay inside it.
  bool closed(unsigned mask) {
    int8_t& c = closed_[mask];
    if (c >= 0) return c;
    c = 1;
    for (size_t a = 0; a < s_.dcs.size() && c; ++a)
      for (size_t b = 0; b < s_.dcs.size() && c; ++b) {
        if (a == b || !(mask >> a & 1) || !(mask >> b & 1)) continue;
        for (const std::string& via : routes_.path(s_.dcs[a].name, s_.dcs[b].name)) {
          size_t i = 0;
          while (s_.dcs[i].name != via) ++i;
          if (!(mask >> i & 1)) c = 0;
        }
      }
    return c;
  }

  // Every pipeline of `left` more stages after `cur`.
  void pipelines(std::vector<Segment>& cur, unsigned used, int left,
                 std::vector<std::vector<Segment>>& out) {
    if (left == 0) {
      if (closed(used)) out.push_back(cur);
      return;
    }
    for (size_t d = 0; d < s_.dcs.size(); ++d) {
      if (used >> d & 1) continue;
      for (int n = 1; n <= std::min(left, s_.dcs[d].gpus); ++n) {
        cur.push_back({static_cast<int>(d), n});
        pipelines(cur, used | 1u << d, left - n, out);
        cur.pop_back();
      }
    }
  }

  void add_shape(int pp, int dp) {
    std::vector<std::vector<Segment>> pipes;
    std::vector<Segment> cur;
    pipelines(cur, 0, pp, pipes);
    // Pipelines that see the same links, in first-seen order.
    std::vector<std::vector<size_t>> groups;
    std::map<std::string, size_t> group_of;
    for (size_t i = 0; i < pipes.size(); ++i) {
      Placement one{pp, 1, {pipes[i]}};
      const std::string sig = link_signature(s_, placement_hosts(s_, one).front());
      auto [it, fresh] = group_of.try_emplace(sig, groups.size());
      if (fresh) groups.emplace_back();
      groups[it->second].push_back(i);
    }
    for (const auto& g : groups) {
      std::vector<int> free;
      for (const DcGpus& d : s_.dcs) free.push_back(d.gpus);
      std::vector<size_t> chosen;
      replicas(pipes, g, 0, dp, free, chosen, pp);
    }
  }

  // Multisets of `dp` pipelines of group `g` (indices from g[from] on) that fit `free`.
  void replicas(const std::vector<std::vector<Segment>>& pipes, const std::vector<size_t>& g,
                size_t from, int dp, std::vector<int>& free, std::vector<size_t>& chosen, int pp) {
    if (static_cast<int>(chosen.size()) == dp) {
      Placement p{pp, dp, {}};
      for (size_t i : chosen) p.replicas.push_back(pipes[i]);
      out_.push_back(std::move(p));
      if (out_.size() > s_.max_placements)
        throw InputError(s_.max_placements_pos.file.empty() ? s_.gpus_pos : s_.max_placements_pos,
                         fmt::format("more than {} placements to predict: narrow gpus or "
                                     "constraints (min_stages, max_stages), or raise "
                                     "constraints.max_placements",
                                     s_.max_placements));
      return;
    }
    for (size_t k = from; k < g.size(); ++k) {
      const auto& pipe = pipes[g[k]];
      bool fits = true;
      for (const Segment& seg : pipe) fits = fits && free[seg.dc] >= seg.stages;
      if (!fits) continue;
      for (const Segment& seg : pipe) free[seg.dc] -= seg.stages;
      chosen.push_back(g[k]);
      replicas(pipes, g, k, dp, free, chosen, pp);
      chosen.pop_back();
      for (const Segment& seg : pipe) free[seg.dc] += seg.stages;
    }
  }

  const Search& s_;
  const topo::Routes routes_;
  std::vector<int8_t> closed_;  // by DC mask: -1 unknown
  std::vector<Placement> out_;
};

}  // namespace

Search parse_search(const std::string& text, const std::string& file_label) {
  Search s;
  s.file = file_label;
  s.text = text;
  const yaml::Value root = yaml::parse(text, file_label);
  s.root = root.node();
  Parser(root, &s).run();
  return s;
}

Search load_search(const std::string& path) {
  return parse_search(read_input_file(path, "the placement search file"), path);
}

std::vector<int> Placement::gpus_per_dc(size_t dcs) const {
  std::vector<int> out(dcs, 0);
  for (const auto& r : replicas)
    for (const Segment& seg : r) out[seg.dc] += seg.stages;
  return out;
}

int Placement::wan_crossings() const {
  int n = 0;
  for (const auto& r : replicas) n += static_cast<int>(r.size()) - 1;
  for (int st = 0; st < stages; ++st) {
    std::set<int> dcs;
    for (const auto& r : replicas) {
      int first = 0;
      for (const Segment& seg : r) {
        if (st < first + seg.stages) {
          dcs.insert(seg.dc);
          break;
        }
        first += seg.stages;
      }
    }
    n += static_cast<int>(dcs.size()) - 1;
  }
  return n;
}

bool Placement::dp_across_dcs() const {
  for (const auto& r : replicas)
    if (r != replicas.front()) return true;
  return false;
}

std::string Placement::describe(const Search& s) const {
  auto pipe = [&](const std::vector<Segment>& r) {
    std::string out;
    for (const Segment& seg : r)
      out += (out.empty() ? "" : ">") + s.dcs[seg.dc].name + ":" + std::to_string(seg.stages);
    return out;
  };
  std::string out;
  for (size_t i = 0; i < replicas.size();) {
    size_t j = i;
    while (j < replicas.size() && replicas[j] == replicas[i]) ++j;
    out += (out.empty() ? "" : " | ") + (j - i > 1 ? std::to_string(j - i) + "x " : "") +
           pipe(replicas[i]);
    i = j;
  }
  return out;
}

std::vector<Placement> enumerate(const Search& s) {
  std::vector<Placement> out = Enumerator(s).run();
  if (out.empty())
    throw InputError(s.gpus_pos,
                     "gpus: no placement fits the DCs' GPUs within the constraints (stages " +
                         std::to_string(s.min_stages) + ".." + std::to_string(s.max_stages) + ")");
  return out;
}

YAML::Node experiment_tree(const Search& s, const Placement& p, const std::string& schedule) {
  const auto& choices = s.inventory.schedules;
  const std::vector<YAML::Node> items = schedule_items(s);
  YAML::Node schedules(YAML::NodeType::Sequence);
  schedules.SetStyle(YAML::EmitterStyle::Flow);
  for (size_t i = 0; i < choices.size(); ++i)
    if (choices[i].name == schedule) schedules.push_back(items[i]);
  if (schedules.size() == 0)
    throw std::invalid_argument("placement search: no schedule " + schedule);
  return assemble(s, topology_tree(s, p.gpus_per_dc(s.dcs.size())),
                  pipeline_tree(placement_hosts(s, p)), schedules);
}

std::string experiment_text(const Search& s, const Placement& p, const std::string& schedule,
                            const std::vector<std::string>& header) {
  YAML::Emitter out;
  out << experiment_tree(s, p, schedule);
  std::string text;
  for (const auto& h : header) text += "# " + h + "\n";
  return text + out.c_str() + "\n";
}

run::Experiment experiment(const Search& s, const Placement& p, const std::string& schedule) {
  return run::parse_experiment_tree(yaml::Value(experiment_tree(s, p, schedule), "", s.file), "");
}

Outcome rank(const Search& s, const std::function<void(size_t, size_t)>& progress) {
  Outcome out;
  const std::vector<Placement> all = enumerate(s);
  out.placements = all.size();
  for (size_t i = 0; i < all.size(); ++i) {
    const Placement& p = all[i];
    for (const run::ScheduleChoice& choice : s.inventory.schedules) {
      Ranked r{p, choice.name, 0, 0, p.wan_crossings()};
      try {
        const run::Plan plan = run::make_plan(experiment(s, p, choice.name));
        const run::SchedulePlan& sp = plan.schedules.front();
        const run::Prediction pred = run::predict(plan, sp, sp.costs);
        r.iteration_s = pred.iteration_s();
        const run::Experiment& e = plan.experiment;
        auto dc = [&e](const std::string& host) { return e.topology.find_host(host)->dc; };
        // Replica 0's sends stand for every replica's, or (Plan::all_replicas) the trace is
        // every world rank's (replica x pipeline ranks + rank).
        const auto P = static_cast<size_t>(sp.schedule.ranks);
        auto host = [&](size_t replica, int rank) -> const std::string& {
          return plan.all_replicas ? e.placement[static_cast<size_t>(rank) / P][rank % P]
                                   : e.placement[replica][static_cast<size_t>(rank)];
        };
        for (const trace::Event& ev : pred.trace.events) {
          if ((ev.kind != trace::Kind::SEND_F && ev.kind != trace::Kind::SEND_B) || ev.peer < 0)
            continue;
          for (size_t q = 0; q < (plan.all_replicas ? 1 : e.placement.size()); ++q)
            if (dc(host(q, ev.rank)) != dc(host(q, ev.peer))) r.wan_bytes += ev.bytes;
        }
        if (e.data_parallel > 1 && e.compute.mode == run::Compute::Mode::kModeled) {
          // The all-reduce's messages as the simulator sends them, counted, not timed.
          const std::vector<int64_t> grads = run::run_spec(plan, sp, "", "").modeled.grad_bytes;
          for (int st = 0; st < sp.schedule.stages; ++st) {
            const int rank = sp.schedule.stage_rank[st];
            sim::binomial_allreduce(std::vector<int64_t>(e.data_parallel, 0), grads[st], false,
                                    [&](int from, int to, int64_t bytes, int64_t at) {
                                      if (dc(e.placement[from][rank]) != dc(e.placement[to][rank]))
                                        r.wan_bytes += bytes;
                                      return at;
                                    });
          }
        }
      } catch (const InputError& err) {
        out.not_predicted.push_back(p.describe(s) + ", " + choice.name + ": " + err.message());
        continue;
      }
      out.ranked.push_back(std::move(r));
    }
    if (progress) progress(i + 1, all.size());
  }
  auto tied_key = [](const Ranked& r) { return std::llround(r.iteration_s * 1e4); };  // 0.1 ms
  std::stable_sort(out.ranked.begin(), out.ranked.end(), [&](const Ranked& a, const Ranked& b) {
    if (tied_key(a) != tied_key(b)) return tied_key(a) < tied_key(b);
    if (a.wan_crossings != b.wan_crossings) return a.wan_crossings < b.wan_crossings;
    return a.wan_bytes < b.wan_bytes;
  });
  return out;
}

}  // namespace xdc::placement
