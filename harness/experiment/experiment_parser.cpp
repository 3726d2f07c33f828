#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/text_file.h"
#include "harness/common/units.h"
#include "harness/common/yaml_reader.h"
#include "harness/experiment/dp_sync_parser.h"
#include "harness/experiment/experiment.h"
#include "harness/experiment/workload_parser.h"
#include "harness/topology/parse.h"
#include "workloads/model/payload.h"
#include "workloads/model/stage_api.h"
#include "workloads/schedule/generators.h"
#include "workloads/trace/trace.h"

namespace xdc::run {
namespace {

const std::vector<std::string> kTopKeys = {"name",
                                           "description",
                                           "topology",
                                           "shaping",
                                           "network",
                                           "wan",
                                           "model",
                                           "compute",
                                           "pipeline",
                                           "microbatches",
                                           "microbatch_size",
                                           "iterations",
                                           "warmup",
                                           "schedules",
                                           "mpi",
                                           "seed",
                                           "learning_rate",
                                           "data",
                                           "check",
                                           "tcp",
                                           "time_dilation",
                                           "events",
                                           "prefill",
                                           "repeat",
                                           "dp_sync",
                                           "workload",
                                           "iteration_barrier"};
const std::map<std::string, std::string> kSynonyms = {
    {"schedule", "schedules"},     {"topo", "topology"},       {"backend", "network"},
    {"steps", "iterations"},       {"mbs", "microbatch_size"}, {"batch_size", "microbatch_size"},
    {"placements", "pipeline"},    {"stages", "pipeline"},     {"lr", "learning_rate"},
    {"dilation", "time_dilation"}, {"tdf", "time_dilation"},   {"message_scale", "time_dilation"},
    {"repeats", "repeat"},         {"diloco", "dp_sync"},      {"outer_loop", "dp_sync"},
    {"program", "workload"},       {"command", "workload"}};
// Keys of the built-in worker: an experiment with `workload:` runs its own program instead.
const std::vector<std::string> kWorkerKeys = {
    "model",      "compute",       "pipeline",  "microbatches", "microbatch_size",
    "iterations", "warmup",        "schedules", "mpi",          "learning_rate",
    "data",       "time_dilation", "events",    "prefill",      "repeat",
    "check",      "dp_sync"};
std::string read_text(const std::string& path, const yaml::Value& where) {
  std::string why;
  auto text = read_text_file(path, &why);
  if (!text) where.error("cannot read \"" + path + "\": " + why);
  return std::move(*text);
}

class Parser {
 public:
  Parser(const yaml::Value& root, std::string text) : root_(root) {
    e_.text = std::move(text);
    e_.source_file = root.file();
  }

  Experiment run() {
    yaml::Map top = root_.map({}, "an experiment map with keys " + yaml::join(kTopKeys));
    for (const auto& entry : top.entries())  // a placement search's file given to run/simulate
      if (entry.key == "dcs" && !top.has("topology"))
        entry.key_node.error(
            "a placement search's key: `xdc plan` reads this file and writes the experiment "
            "it ranks best; an experiment names its network with topology:");
    top.check_keys(kTopKeys, kSynonyms);
    read_network_keys(top);
    if (auto w = top.get("workload")) return run_workload(top, *w);
    read_compute(top.get("compute"));
    if (auto m = top.get("model")) {
      if (!m->is_map()) m->fail("a map like {preset: tiny} or {layers: 4, dim: 256, ...}");
      e_.model = model::ModelConfig::from_yaml(m->node(), root_.file());
      model_seed_given_ = static_cast<bool>(m->node()["seed"]);
      if (e_.model.precision != "fp32" &&
          !(e_.compute.mode == Compute::Mode::kReal && e_.compute.real_device == "cuda"))
        m->error("model.precision " + e_.model.precision +
                 " needs real compute on cuda (compute: {real: {device: cuda}}): the CPU stage "
                 "computes in fp32 only");
    } else if (e_.compute.mode == Compute::Mode::kReal) {
      top.require("model");  // "missing required key 'model'"
    }
    read_pipeline(top.require("pipeline"));
    if (auto v = top.get("microbatches")) e_.microbatches = static_cast<int>(v->integer(1, 4096));
    if (auto v = top.get("microbatch_size"))
      e_.microbatch_size = static_cast<int>(v->integer(1, 65536));
    if (auto v = top.get("iterations")) e_.iterations = static_cast<int>(v->integer(1, 100000));
    if (auto v = top.get("warmup")) e_.warmup = static_cast<int>(v->integer(0, 100000));
    if (auto v = top.get("repeat")) e_.repeat = static_cast<int>(v->integer(1, 1000));
    read_schedules(top.require("schedules"));
    if (auto v = top.get("mpi")) read_mpi(*v);
    if (auto v = top.get("seed")) e_.seed = static_cast<uint64_t>(v->integer(0, INT64_MAX));
    if (!model_seed_given_) e_.model.seed = e_.seed;  // one seed for the whole run
    if (auto v = top.get("learning_rate")) e_.learning_rate = v->number(0, 10);
    if (auto v = top.get("data")) e_.data_glob = v->scalar("a file or glob of training text");
    if (auto v = top.get("check")) e_.link_check = v->boolean();
    if (auto v = top.get("iteration_barrier")) e_.iteration_barrier = v->boolean();
    if (auto v = top.get("time_dilation")) read_time_dilation(*v);
    if (auto v = top.get("events")) read_events(*v);
    if (auto v = top.get("prefill")) read_prefill(*v);
    if (auto v = top.get("dp_sync")) read_dp_sync(*v);
    if (e_.compute.mode == Compute::Mode::kReal) check_real(top);
    const Compute& c = e_.compute;
    if (c.mode == Compute::Mode::kModeled && c.source != Compute::Source::kShape &&
        e_.tensor_parallel > 1) {
      if (!top.get("model"))
        throw InputError(tp_pos_,
                         "pipeline.tensor_parallel: modeled tensor parallelism with constants or "
                         "a profile takes each stage's layer count from `model:` (e.g. model: "
                         "{layers: 8}); give it, or use a model shape");
      if (e_.model.layers < e_.stages)
        throw InputError(tp_pos_, "pipeline.tensor_parallel: model.layers (" +
                                      std::to_string(e_.model.layers) +
                                      ") must give every pipeline rank a layer");
    }
    if (c.mode == Compute::Mode::kModeled && c.node_tp > 1 && e_.tensor_parallel > 1)
      throw InputError(c.node_tp_pos,
                       "compute.modeled.tensor_parallel models TP inside each rank's node (one "
                       "process per node); pipeline.tensor_parallel launches a process per TP "
                       "rank: use one of them");
    if (e_.wan_temporal && e_.progress == "none")
      throw InputError(wan_sharing_pos_,
                       "mpi.wan_sharing: temporal sharing needs mpi.progress: thread (the comm "
                       "thread serves the arbiter)");
    if (e_.wan_temporal && e_.tensor_parallel > 1)
      throw InputError(wan_sharing_pos_,
                       "mpi.wan_sharing: temporal sharing is built for tensor_parallel 1 (each "
                       "TP rank's own copy of a message would need the grant too); use fair");
    if (c.mode == Compute::Mode::kModeled && c.source != Compute::Source::kShape &&
        e_.data_parallel > 1 && c.grad_bytes == 0)
      top.require("compute").error(
          "modeled data parallelism all-reduces each stage's gradients: give their size "
          "(compute.modeled.grad, e.g. grad: 100mib) or use a model shape");
    e_.files = root_.file_refs();
    return std::move(e_);
  }

 private:
  // The keys every experiment has: its name and its network.
  void read_network_keys(const yaml::Map& top) {
    e_.name = top.require("name").scalar("an experiment name");
    check_name(top.require("name"));
    read_topology(top.require("topology"));
    if (auto s = top.get("shaping")) {
      std::string b = s->choice({"auto", "kernel", "userspace"});
      e_.shaping = b == "auto"     ? netem::Backend::kAuto
                   : b == "kernel" ? netem::Backend::kKernel
                                   : netem::Backend::kUserspace;
    }
    if (auto n = top.get("network")) topo::read_network_block(*n, &e_.topology.backend);
    if (auto w = top.get("wan")) read_wan(*w);
    if (auto t = top.get("tcp")) read_tcp(*t);
  }

  // An experiment that runs the user's program (workload.h).
  Experiment run_workload(const yaml::Map& top, const yaml::Value& v) {
    for (const auto& k : kWorkerKeys)
      if (auto x = top.get(k))
        throw InputError(x->pos(), k +
                                       ": configures the built-in xdc-worker; an experiment "
                                       "with `workload:` runs its own program (drop " +
                                       k + ")");
    if (auto x = top.get("seed")) e_.seed = static_cast<uint64_t>(x->integer(0, INT64_MAX));
    e_.workload = parse_workload(v, e_.topology, e_.source_file);
    e_.files = root_.file_refs();
    return std::move(e_);
  }

  void check_name(const yaml::Value& v) {
    for (char c : e_.name)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
        v.fail("a name of letters, digits, '-', '_' and '.' (it names a directory)");
    if (e_.name.empty() || e_.name[0] == '.') v.fail("a non-empty name not starting with '.'");
  }

  void read_topology(const yaml::Value& v) {
    if (v.is_map()) {
      e_.topology = topo::parse_topology_node(v);
      return;
    }
    const std::string path = v.file_path();
    std::error_code ec;  // a name too long for the file system is no file, not an exception
    if (!std::filesystem::is_regular_file(path, ec))
      v.fail("a topology file (relative to this file) or an inline topology map; no file \"" +
             path + "\"");
    e_.topology_file = path;
    e_.topology_text = read_text(path, v);
    const yaml::Value root = yaml::parse(e_.topology_text, path);
    e_.topology = topo::parse_topology_node(root);
    e_.topology_files = root.file_refs();
  }

  void read_wan(const yaml::Value& v) {
    yaml::Map m = v.map({}, "a map of WAN link keys like {delay: 20ms, loss: 0%}");
    std::vector<std::string> allowed = topo::kLinkKeys;
    allowed.push_back("changes");
    m.check_keys(allowed);
    std::optional<std::vector<topo::WanChange>> changes;
    if (auto c = m.get("changes")) changes = topo::read_changes(*c);
    for (auto& link : e_.topology.wan) {
      topo::LinkOrigin origin;
      topo::apply_link_keys(m, &link.a_to_b, &origin);
      topo::apply_link_keys(m, &link.b_to_a, &origin);
      if (changes) link.a_to_b_changes = link.b_to_a_changes = *changes;
    }
    e_.wan_override = true;
  }

  // Over every host's resolved settings, as `wan:` goes over every WAN direction.
  void read_tcp(const yaml::Value& v) {
    topo::apply_tcp_block(v, &e_.topology.tcp);
    for (auto& dc : e_.topology.dcs) {
      topo::apply_tcp_block(v, &dc.tcp);
      for (auto& h : dc.hosts) topo::apply_tcp_block(v, &h.tcp);
    }
    e_.tcp_override = true;
  }

  void read_compute(const std::optional<yaml::Value>& v) {
    Compute& c = e_.compute;
    if (!v) return;
    if (v->is_scalar()) {
      std::string s = v->choice({"real", "modeled"});
      c.mode = s == "real" ? Compute::Mode::kReal : Compute::Mode::kModeled;
      return;
    }
    yaml::Map m = v->map({"real", "modeled"},
                         "real, modeled, {real: {...}} or {modeled: {model: llama2-13b, ...}}");
    if (m.entries().size() != 1) v->fail("exactly one of real or modeled");
    if (auto r = m.get("real")) {
      c.mode = Compute::Mode::kReal;
      if (r->is_null()) return;
      yaml::Map rm = r->map({"gflops", "peak_gflops", "device", "gpus"});
      if (auto g = rm.get("gflops")) c.real_gflops = g->number(0.001, 1e9);
      if (auto g = rm.get("peak_gflops")) c.real_peak_gflops = g->number(0.001, 1e9);
      if (auto d = rm.get("device")) {
        c.real_device = d->choice({"cpu", "cuda"});
        c.device_pos = d->pos();
      }
      if (auto g = rm.get("gpus")) {
        if (c.real_device != "cuda") g->fail("gpus only with device: cuda");
        c.gpus.clear();
        for (const yaml::Value& n : g->list("a list of GPU numbers, e.g. [0, 1]"))
          c.gpus.push_back(static_cast<int>(n.integer(0, 1023)));
        if (c.gpus.empty()) g->fail("at least one GPU number");
        c.gpus_pos = g->pos();
      }
      return;
    }
    c.mode = Compute::Mode::kModeled;
    yaml::Value mv = *m.get("modeled");
    if (mv.is_null()) return;
    yaml::Map mm = mv.map({"model", "device", "seq", "efficiency", "tensor_parallel",
                           "tp_bandwidth", "message_scale", "f", "b", "w", "activation", "grad",
                           "profile", "coexec_interference"});
    if (auto k = mm.get("coexec_interference")) c.coexec_interference = k->number(0, 10);
    const bool constant = mm.has("f") || mm.has("b") || mm.has("w") || mm.has("activation");
    const bool shape = mm.has("model") || mm.has("device") || mm.has("seq") ||
                       mm.has("efficiency") || mm.has("tensor_parallel") || mm.has("tp_bandwidth");
    if ((constant + shape + mm.has("profile")) > 1)
      mv.fail(
          "one cost source: a model shape (model, device, seq, efficiency, tensor_parallel, "
          "tp_bandwidth), constants (f, b, w, activation) or a profile");
    if (auto s = mm.get("message_scale"))
      s->error(
          "message_scale was removed: shrinking messages and rates alike keeps transfer times "
          "but shrinks the bandwidth-delay product and the packets and loss events per "
          "message, so TCP misbehaves; use `time_dilation: K` (top level) instead, which "
          "keeps message sizes and runs the network and modeled compute K times slower");
    if (auto g = mm.get("grad")) {
      if (shape) g->error("grad: a model shape gives the gradient sizes; drop `grad`");
      c.grad_bytes = static_cast<int64_t>(g->size_bytes());
    }
    if (auto p = mm.get("profile")) {
      c.source = Compute::Source::kProfile;
      c.profile_file = p->file_path();
      c.profile_text = read_text(c.profile_file, *p);
      sim::profile_costs(c.profile_text, c.profile_file);  // InputError naming file:line
      return;
    }
    if (constant) {
      c.source = Compute::Source::kConstant;
      c.f_ms = mm.require("f").duration_us() / 1000.0;
      c.b_ms = mm.require("b").duration_us() / 1000.0;
      if (auto w = mm.get("w")) {
        c.w_ms = w->duration_us() / 1000.0;
        if (c.w_ms > c.b_ms) w->error("the weight gradient w is part of b; expected w <= b");
      }
      if (auto a = mm.get("activation")) c.activation_bytes = static_cast<int64_t>(a->size_bytes());
      return;
    }
    c.source = Compute::Source::kShape;
    if (auto s = mm.get("model")) {
      std::vector<std::string> names;
      for (auto& p : sim::model_presets()) names.push_back(p.name);
      c.shape = s->choice(names);
    }
    if (auto s = mm.get("device")) {
      std::vector<std::string> names;
      for (auto& d : sim::device_presets()) names.push_back(d.name);
      c.device = s->choice(names);
    }
    if (auto s = mm.get("seq")) c.seq = static_cast<int>(s->integer(1, 1 << 20));
    if (auto s = mm.get("efficiency")) c.efficiency = s->number(1e-3, 1);
    if (auto s = mm.get("tensor_parallel")) {
      c.node_tp = static_cast<int>(s->integer(1, 64));
      c.node_tp_pos = s->pos();
    }
    if (auto s = mm.get("tp_bandwidth")) {
      if (c.node_tp <= 1)
        s->error("tp_bandwidth is the node's TP all-reduce bandwidth: give tensor_parallel > 1");
      c.node_busbw = static_cast<double>(s->rate_bps()) / 8;
    }
  }

  void read_pipeline(const yaml::Value& v) {
    yaml::Map m = v.map({}, "a map like {stages: 4, placement: [h1, h2, h3, h4]}");
    m.check_keys({"stages", "placement", "data_parallel", "tensor_parallel", "chunks", "memory_cap",
                  "milp_seconds"},
                 {{"replicas", "data_parallel"},
                  {"dp", "data_parallel"},
                  {"hosts", "placement"},
                  {"tp", "tensor_parallel"}});
    yaml::Value pl = m.require("placement");
    if (auto c = m.get("chunks")) e_.chunks = static_cast<int>(c->integer(1, 64));
    if (auto c = m.get("memory_cap")) {
      e_.memory_cap = c->number(0, 1e6);
      e_.memory_cap_pos = c->pos();
    }
    if (auto t = m.get("milp_seconds")) e_.milp_seconds = t->number(0.01, 86400);
    if (auto d = m.get("data_parallel")) e_.data_parallel = static_cast<int>(d->integer(1, 256));
    if (auto t = m.get("tensor_parallel")) {
      e_.tensor_parallel = static_cast<int>(t->integer(1, 64));
      tp_pos_ = t->pos();
    }
    const int T = e_.tensor_parallel;
    std::vector<yaml::Value> items = pl.list("a list of hosts, one per pipeline rank");
    if (items.empty()) pl.fail("at least one host");
    // Per replica: a list of stage entries. With TP 1 a stage entry is a host; with TP > 1
    // a host (all its TP ranks there) or a list of tensor_parallel hosts of one DC.
    const bool per_replica =
        items[0].is_list() && (T == 1 || (!items[0].node().IsNull() && items[0].node().size() > 0 &&
                                          items[0].node()[0].IsSequence()));
    std::vector<yaml::Value> replicas;
    if (per_replica) {
      if (static_cast<int>(items.size()) != e_.data_parallel)
        pl.error("expected one host list per data-parallel replica (" +
                 std::to_string(e_.data_parallel) + "), got " + std::to_string(items.size()));
      replicas = items;
    } else {
      replicas.assign(e_.data_parallel, pl);
    }
    for (auto& r : replicas) {
      std::vector<std::vector<std::string>> groups = read_stage_hosts(r);
      std::vector<std::string> first;
      for (auto& g : groups) first.push_back(g[0]);
      e_.placement.push_back(first);
      e_.tp_placement.push_back(std::move(groups));
    }
    e_.stages = static_cast<int>(e_.placement[0].size());
    for (size_t r = 1; r < e_.placement.size(); ++r)
      if (e_.placement[r].size() != e_.placement[0].size())
        pl.fail("every replica on as many hosts as replica 0 (" + std::to_string(e_.stages) + ")");
    if (auto s = m.get("stages")) {
      int n = static_cast<int>(s->integer(1, 1024));
      if (n != e_.stages)
        s->error("expected the number of hosts in placement (" + std::to_string(e_.stages) +
                 "), got " + std::to_string(n));
    }
  }

  std::string read_host(const yaml::Value& h) {
    std::string name = h.scalar("a host name");
    if (!e_.topology.find_host(name)) {
      std::vector<std::string> all;
      for (auto* x : e_.topology.hosts()) all.push_back(x->name);
      h.fail("a host of topology '" + e_.topology.name + "' (" + yaml::join(all) + ")");
    }
    return name;
  }

  // One replica's stage entries -> per stage, the host of each TP rank. A TP group stays
  // inside a DC: a list spanning DCs is refused at its key.
  std::vector<std::vector<std::string>> read_stage_hosts(const yaml::Value& v) {
    const int T = e_.tensor_parallel;
    std::vector<std::vector<std::string>> out;
    for (auto& item : v.list("a list of hosts of the topology")) {
      if (!item.is_list()) {
        out.emplace_back(T, read_host(item));
        continue;
      }
      if (T == 1) item.fail("a host name");
      std::vector<std::string> group;
      for (auto& h : item.list("a list of hosts, one per TP rank")) group.push_back(read_host(h));
      if (static_cast<int>(group.size()) != T)
        item.error("expected one host per TP rank (tensor_parallel " + std::to_string(T) +
                   "), got " + std::to_string(group.size()));
      const std::string& dc = e_.topology.find_host(group[0])->dc;
      for (const std::string& h : group)
        if (e_.topology.find_host(h)->dc != dc)
          item.error(
              "a TP group must stay inside one DC (tensor parallelism runs over the "
              "intra-DC network): " +
              group[0] + " is in " + dc + ", " + h + " in " + e_.topology.find_host(h)->dc);
      out.push_back(std::move(group));
    }
    return out;
  }

  void read_schedules(const yaml::Value& v) {
    const auto& known = sched::schedule_names();
    std::vector<yaml::Value> items =
        v.is_scalar() ? std::vector<yaml::Value>{v} : v.list("a list of schedule names");
    if (items.empty()) v.fail("at least one schedule");
    std::set<std::string> seen;
    for (auto& item : items) {
      ScheduleChoice s;
      s.pos = item.pos();
      if (item.is_map()) {
        yaml::Map m = item.map({"csv"}, "a schedule name or {csv: FILE}");
        yaml::Value f = m.require("csv");
        s.csv_file = std::filesystem::absolute(f.file_path()).string();
        std::error_code ec;
        if (!std::filesystem::is_regular_file(s.csv_file, ec))
          f.fail("a schedule CSV file (relative to this file); no file \"" + s.csv_file + "\"");
        s.name = std::filesystem::path(s.csv_file).stem().string();
      } else {
        s.name = item.choice(known);
      }
      if (!seen.insert(s.name).second) item.error("schedule '" + s.name + "' is listed twice");
      e_.schedules.push_back(s);
    }
  }

  void read_mpi(const yaml::Value& v) {
    yaml::Map m = v.map({}, "a map like {tcp_links: 1, timeout_s: 600}");
    m.check_keys({"tcp_links", "connections", "timeout_s", "progress", "mca", "wan_sharing"},
                 {{"links", "tcp_links"},
                  {"timeout", "timeout_s"},
                  {"conns", "connections"},
                  {"stripes", "connections"},
                  {"sharing", "wan_sharing"}});
    if (auto w = m.get("wan_sharing")) {
      e_.wan_temporal = w->choice({"fair", "temporal"}) == "temporal";
      wan_sharing_pos_ = w->pos();
    }
    if (auto l = m.get("tcp_links")) e_.tcp_links = static_cast<int>(l->integer(1, 64));
    if (auto c = m.get("connections")) {
      yaml::Map cm = c->map({}, "a map like {wan: 8, dc: 1} (TCP connections per transfer)");
      cm.check_keys({"wan", "dc"}, {{"intra_dc", "dc"}, {"cross_dc", "wan"}});
      if (auto w = cm.get("wan")) e_.connections_wan = static_cast<int>(w->integer(1, 64));
      if (auto d = cm.get("dc")) e_.connections_dc = static_cast<int>(d->integer(1, 64));
    }
    if (auto t = m.get("timeout_s")) e_.timeout_s = static_cast<int>(t->integer(1, 86400));
    if (auto p = m.get("progress")) e_.progress = p->choice({"thread", "none"});
    if (auto x = m.get("mca")) {
      yaml::Map mm =
          x->map({}, "a map of OpenMPI MCA parameters like {btl_tcp_eager_limit: 65536}");
      for (auto& kv : mm.entries()) {
        for (char ch : kv.key)
          if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'))
            kv.key_node.fail("an MCA parameter name (letters, digits, '_')");
        e_.mca.emplace_back(kv.key, kv.value.scalar("a value"));
      }
    }
  }

  void read_events(const yaml::Value& v) {
    const std::string like =
        "a list of events like [{at_iteration: 5, link: [east, west], down_for: 2s}, "
        "{at_iteration: 8, dc: west, kill_ranks: true}]";
    for (const yaml::Value& item : v.list(like)) {
      yaml::Map m =
          item.map({}, "an event like {at_iteration: 5, link: [east, west], down_for: 2s}");
      m.check_keys({"at_iteration", "link", "direction", "dc", "down_for", "delay", "jitter",
                    "loss", "rate", "kill_ranks"},
                   {{"iteration", "at_iteration"},
                    {"at", "at_iteration"},
                    {"between", "link"},
                    {"down", "down_for"},
                    {"latency", "delay"},
                    {"bandwidth", "rate"},
                    {"kill", "kill_ranks"}});
      ProgressEvent ev;
      ev.change.pos = item.pos();
      const yaml::Value at = m.require("at_iteration");
      ev.at_iteration = static_cast<int>(at.integer(0, 100000));
      if (ev.at_iteration >= e_.iterations)
        at.fail(fmt::format("a measured iteration 0..{} (iterations: {})", e_.iterations - 1,
                            e_.iterations));
      const auto link = m.get("link");
      const auto dc = m.get("dc");
      if (link && dc) dc->error("an event names one target: link: [a, b] or dc: NAME, not both");
      if (!link && !dc) item.error("expected a target in an event: link: [a, b] or dc: NAME");
      if (link) {
        const auto ends = link->list("a link as [a, b], two DC names");
        if (ends.size() != 2) link->fail("a link as [a, b], two DC names");
        ev.link_a = ends[0].scalar("a DC name");
        ev.link_b = ends[1].scalar("a DC name");
        if (!e_.topology.find_link(ev.link_a, ev.link_b))
          link->fail("a WAN link of the topology (its wan: list); there is none between " +
                     ev.link_a + " and " + ev.link_b);
        if (auto d = m.get("direction")) {
          ev.direction = d->scalar("a direction like " + ev.link_a + "->" + ev.link_b);
          if (ev.direction != ev.link_a + "->" + ev.link_b &&
              ev.direction != ev.link_b + "->" + ev.link_a)
            d->fail(ev.link_a + "->" + ev.link_b + " or " + ev.link_b + "->" + ev.link_a);
        }
      } else {
        ev.dc = dc->scalar("a DC name");
        if (!e_.topology.find_dc(ev.dc)) dc->fail("a DC of the topology");
        if (auto d = m.get("direction")) d->error("direction: goes with link:, not dc:");
      }
      if (auto d = m.get("down_for")) {
        ev.down_for_us = d->duration_us();
        if (*ev.down_for_us == 0) d->fail("a duration the link stays down, like \"2s\"");
      }
      if (auto d = m.get("delay")) ev.change.delay_us = d->duration_us();
      if (auto d = m.get("jitter")) ev.change.jitter_us = d->duration_us();
      if (auto d = m.get("loss")) ev.change.loss_pct = d->percent();
      if (auto d = m.get("rate")) ev.change.rate_bps = d->rate_bps();
      const bool params =
          ev.change.delay_us || ev.change.jitter_us || ev.change.loss_pct || ev.change.rate_bps;
      if (auto k = m.get("kill_ranks")) {
        ev.kill_ranks = k->boolean();
        if (ev.kill_ranks && link)
          k->error("kill_ranks: goes with dc: (the DC whose ranks die), not with link:");
      }
      if (dc && params)
        dc->error("a dc: event cuts (down_for) or kills (kill_ranks); change links with link:");
      if (!ev.down_for_us && !params && !ev.kill_ranks)
        item.error(link ? "expected down_for, delay, jitter, loss or rate in a link event"
                        : "expected down_for or kill_ranks: true in a dc event");
      e_.events.push_back(ev);
    }
    std::stable_sort(e_.events.begin(), e_.events.end(),
                     [](const ProgressEvent& a, const ProgressEvent& b) {
                       return a.at_iteration < b.at_iteration;
                     });
  }

  void read_prefill(const yaml::Value& v) {
    yaml::Map m = v.map({},
                        "a map like {rate_rps: 200, prompt_tokens: {dist: uniform, mean: 512, "
                        "max: 2048}, deadline: 2s}");
    if (auto x = m.get("model"))
      x->error(
          "prefill runs on the training model's stages (the rank's share of it, one GPU's); "
          "there is no separate model to name: drop `model`");
    m.check_keys({"rate_rps", "prompt_tokens", "deadline", "seed"},
                 {{"rate", "rate_rps"}, {"rps", "rate_rps"}, {"tokens", "prompt_tokens"}});
    Prefill& p = e_.prefill;
    p.on = true;
    p.seed = e_.seed;
    p.rate_rps = m.require("rate_rps").number(1e-3, 1e6);
    if (auto t = m.get("prompt_tokens")) {
      yaml::Map tm = t->map({}, "a map like {dist: uniform, mean: 512, max: 2048}");
      tm.check_keys({"dist", "mean", "max"}, {{"distribution", "dist"}});
      if (auto d = tm.get("dist")) p.dist = d->choice({"fixed", "uniform", "exponential"});
      if (auto x = tm.get("max")) p.max_tokens = static_cast<int>(x->integer(1, 1 << 20));
      if (auto x = tm.get("mean")) {
        p.mean_tokens = x->number(1, 1 << 20);
        if (p.mean_tokens > p.max_tokens)
          x->fail("a mean of at most max (" + std::to_string(p.max_tokens) + ")");
      }
    }
    if (auto d = m.get("deadline")) {
      p.deadline_us = d->duration_us();
      if (p.deadline_us == 0) d->fail("a deadline longer than 0, like \"2s\"");
    }
    if (auto x = m.get("seed")) p.seed = static_cast<uint64_t>(x->integer(0, INT64_MAX));
    if (e_.tensor_parallel > 1)
      v.error(
          "prefill with tensor_parallel > 1 is not built (a TP group would serve each request "
          "together); use tensor_parallel: 1");
  }

  void read_dp_sync(const yaml::Value& v) { e_.dp_sync = parse_dp_sync(v, e_); }

  void read_time_dilation(const yaml::Value& v) {
    e_.time_dilation = v.number(1, topo::kMaxTimeDilation);
    e_.time_dilation_pos = v.pos();
    // Every rate / k must still be one the shaper can set (units.h: kMinRateBps).
    const auto too_slow = [&](uint64_t bps) {
      return bps > 0 && static_cast<double>(bps) / e_.time_dilation < kMinRateBps;
    };
    std::string slow;
    if (too_slow(e_.topology.intra_dc.rate_bps)) slow = "intra_dc";
    for (const auto& l : e_.topology.wan)
      if (slow.empty() && (too_slow(l.a_to_b.rate_bps) || too_slow(l.b_to_a.rate_bps)))
        slow = "the WAN link " + l.a + "-" + l.b;
    if (!slow.empty())
      v.error(
          fmt::format("a time dilation that leaves every rate at least 8kbit once divided by "
                      "it; {}'s rate / {:g} is below that",
                      slow, e_.time_dilation));
    if (e_.time_dilation != 1 && e_.compute.mode == Compute::Mode::kReal)
      v.error(
          "time dilation needs modeled compute: real compute runs at the CPU's speed and "
          "cannot be slowed by " +
          fmt::format("{:g}", e_.time_dilation) +
          " (use compute: {modeled: {profile: costs.csv}} with measured costs, or "
          "time_dilation: 1)");
  }

  void check_real(const yaml::Map& top) {
    const int layers = e_.model.layers;
    if (e_.tensor_parallel > 1) {
      if (e_.compute.real_device == "cuda")
        throw InputError(tp_pos_,
                         "pipeline.tensor_parallel: tensor parallelism runs on the CPU stage "
                         "only (the CUDA stage has none)");
      try {
        model::TensorParallel{e_.tensor_parallel, 0}.validate(e_.model);
      } catch (const std::invalid_argument& err) {
        throw InputError(tp_pos_, std::string("pipeline.tensor_parallel: ") + err.what());
      }
    }
    if (e_.stages > layers)
      top.require("pipeline")
          .error("real compute needs a layer per pipeline rank at least: " +
                 std::to_string(e_.stages) + " ranks, the model has " + std::to_string(layers) +
                 " layers");
  }

  const yaml::Value& root_;
  Experiment e_;
  bool model_seed_given_ = false;
  SourcePos tp_pos_;           // pipeline.tensor_parallel
  SourcePos wan_sharing_pos_;  // mpi.wan_sharing
};

}  // namespace

Experiment parse_experiment(const std::string& text, const std::string& file_label) {
  return Parser(yaml::parse(text, file_label), text).run();
}

Experiment parse_experiment_tree(const yaml::Value& root, const std::string& text) {
  return Parser(root, text).run();
}

Experiment load_experiment(const std::string& path) {
  return parse_experiment(read_input_file(path, "the experiment file"), path);
}

}  // namespace xdc::run
