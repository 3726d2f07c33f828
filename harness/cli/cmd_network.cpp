// xdc up / down / clean / exec / ls: the emulated network's lifecycle.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>

#include "commands.h"
#include "common/input_error.h"
#include "harness/experiment/experiment.h"
#include "harness/lab/remote.h"
#include "harness/network/builder.h"
#include "harness/network/enter.h"
#include "harness/network/names.h"
#include "harness/network/tcp.h"
#include "harness/network/teardown.h"
#include "harness/topology/topology.h"

namespace xdc::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

netem::Backend parse_backend(const std::string& s) {
  if (s == "auto") return netem::Backend::kAuto;
  if (s == "kernel") return netem::Backend::kKernel;
  if (s == "userspace") return netem::Backend::kUserspace;
  throw InputError("--shaping: expected auto, kernel or userspace, got \"" + s + "\"");
}

std::string fmt_params(const netem::LinkParams& p) {
  std::string s = fmt::format("delay {:g} ms", p.delay_us / 1000.0);
  if (p.jitter_us) s += fmt::format(", jitter {:g} ms", p.jitter_us / 1000.0);
  if (p.loss.kind != netem::LossModel::Kind::kNone) s += fmt::format(", loss {:g}%", p.loss.p_pct);
  if (p.rate_bps) s += fmt::format(", rate {:g} mbit", p.rate_bps / 1e6);
  return s;
}

void print_network(const net::NetworkState& s) {
  std::cout << fmt::format("network {}  (management {}, root {}, built by {})\n", s.name,
                           s.mgmt_subnet, s.mgmt_root_ip, s.backend);
  for (auto& h : s.hosts)
    std::cout << fmt::format("  host {:<16} dc {:<12} data {:<14} mgmt {}\n", h.name, h.dc,
                             h.data_ip, h.mgmt_ip);
  const double k = s.time_dilation;
  if (k != 1)
    std::cout << fmt::format("  time dilation {:g}: links run {:g} x slower than the topology\n", k,
                             k);
  for (auto& l : s.links)
    std::cout << fmt::format("  wan  {:>12} -> {:<12} {:<10} {}{}\n", l.from, l.to, l.backend,
                             fmt_params(netem::time_dilated(l.configured, 1 / k)),
                             k == 1 ? "" : " (as built: " + fmt_params(l.configured) + ")");
  for (auto& f : s.fabric)
    std::cout << fmt::format("  dc   {:>12} fabric          {:<10} {} (to every host)\n", f.from,
                             f.backend, fmt_params(netem::time_dilated(f.configured, 1 / k)));
  for (auto& g : net::tcp_groups(s)) {
    if (g.tcp.congestion.empty()) continue;  // a state from before TCP was recorded
    std::string hosts;
    for (auto& h : g.hosts) hosts += (hosts.empty() ? "" : " ") + h;
    std::cout << fmt::format("  tcp  {}: {}\n", hosts, net::describe(g.tcp));
  }
  const net::RootTcp& r = s.root_tcp;
  if (!r.tcp.congestion.empty())
    std::cout << fmt::format(
        "  tcp  root namespace (reference): {}; allowed {}; net.core.rmem_max {}, wmem_max {}\n",
        net::describe(r.tcp), r.allowed, r.rmem_max, r.wmem_max);
  if (!r.allowed_added.empty())
    std::cout << fmt::format(
        "  tcp  xdc {} {} to the root namespace's net.ipv4.tcp_allowed_congestion_control (was "
        "\"{}\"): namespaces may only choose a listed one; the root's default stays {}; xdc "
        "takes it out when the last xdc network is removed\n",
        s.tcp_allowed_added.empty() ? "has added (for an earlier network)" : "added",
        fmt::join(r.allowed_added, " "), r.allowed_original, r.tcp.congestion);
  for (auto& n : s.notes) std::cout << "  note: " << n << "\n";
}

// Each machine's outcome of a lab-wide command, as one log line; 1 if any failed.
int report_machines(const std::vector<lab::MachineOutcome>& outcomes, const char* failed_as) {
  int failed = 0;
  for (const auto& o : outcomes) {
    if (o.ok)
      spdlog::info("{}: {}", o.machine, o.message);
    else
      spdlog::error("{}: {}: {}", o.machine, failed_as, o.message);
    failed += !o.ok;
  }
  return failed ? 1 : 0;
}

// "" when exactly one network is present, else the given name; errors otherwise.
std::string pick_network(const std::string& given) {
  if (!given.empty()) return given;
  auto nets = net::networks_present();
  if (nets.size() == 1) return nets[0];
  if (nets.empty()) throw InputError("no xdc network is up");
  std::string names;
  for (auto& n : nets) names += " " + n;
  throw InputError("several networks are up:" + names + "; name one");
}

struct UpArgs {
  std::string file, name, shaping, backend, lab_file, lab_part;
  bool from_experiment = false;
  double dilation = 1;
  uint64_t seed = 1;
};

// xdc up --lab: the network across the lab's machines, each building its part.
int up_lab(const UpArgs& a, const topo::Topology& t,
           const std::optional<topo::NetworkBackend>& backend,
           std::chrono::steady_clock::time_point t0) {
  // Mininet builds on one machine; a lab's machines build native parts joined by tunnels.
  // Refused here rather than after the first machines are up.
  if (backend.value_or(t.backend) == topo::NetworkBackend::kMininet)
    throw InputError(backend ? "--backend mininet: a lab's network is built by the native "
                               "backend (Mininet runs on one machine); drop --backend or --lab"
                             : a.file +
                                   ": network.backend mininet: a lab's network is built by the "
                                   "native backend (Mininet runs on one machine); pass "
                                   "--backend native or drop --lab");
  const lab::Lab l = lab::load_lab(a.lab_file);
  std::vector<std::string> extra;
  if (!a.shaping.empty()) extra.insert(extra.end(), {"--shaping", a.shaping});
  if (backend) extra.insert(extra.end(), {"--backend", a.backend});
  if (a.from_experiment) extra.push_back("--experiment-topology");
  if (a.dilation != 1)
    extra.insert(extra.end(), {"--time-dilation", fmt::format("{}", a.dilation)});
  if (a.seed != 1) extra.insert(extra.end(), {"--seed", std::to_string(a.seed)});
  const std::string net = a.name.empty() ? t.name : a.name;
  const auto outcomes = lab::up_lab(l, t, std::filesystem::absolute(a.file).string(), net, extra);
  for (const auto& o : outcomes)
    if (o.ok)
      spdlog::info("{}:\n{}", o.machine, o.message);
    else
      spdlog::error(
          "{}: xdc up failed (the machines before it were taken "
          "down again): {}",
          o.machine, o.message);
  if (!outcomes.empty() && !outcomes.back().ok) return 1;
  spdlog::info("up {} across {} machines of lab {}, {:.2f} s", net, outcomes.size(), l.name,
               seconds_since(t0));
  return 0;
}

int up(const UpArgs& a) {
  auto t0 = std::chrono::steady_clock::now();
  // Both overrides checked before anything is read or built.
  const std::optional<netem::Backend> shaping =
      a.shaping.empty() ? std::nullopt : std::optional(parse_backend(a.shaping));
  std::optional<topo::NetworkBackend> backend;
  if (a.backend == "mininet" || a.backend == "native")
    backend =
        a.backend == "mininet" ? topo::NetworkBackend::kMininet : topo::NetworkBackend::kNative;
  else if (!a.backend.empty())
    throw InputError("--backend: expected native or mininet, got \"" + a.backend + "\"");
  topo::Topology t =
      a.from_experiment ? run::load_experiment(a.file).topology : topo::load_topology(a.file);
  if (!a.lab_file.empty()) return up_lab(a, t, backend, t0);
  net::BuildOptions opts;
  if (!a.lab_part.empty()) opts.lab = net::LabPart::from_json(a.lab_part);
  opts.name = a.name;
  opts.shaping = shaping;
  opts.backend = backend;
  // On a terminal the phase under way is one line, redrawn, with the time so far (a large
  // network's build takes seconds), and cleared when the build ends either way.
  const bool tty = isatty(STDOUT_FILENO);
  bool drawn = false;
  opts.progress = [&](const std::string& m) {
    spdlog::debug("up: {} (from {:.3f} s)", m, seconds_since(t0));
    if (!tty) return;
    std::cout << fmt::format("\r\033[Kup {}: {} ({:.1f} s)", t.name, m, seconds_since(t0))
              << std::flush;
    drawn = true;
  };
  opts.time_dilation = a.dilation;
  opts.seed = a.seed;
  struct Clear {
    bool& drawn;
    ~Clear() {
      if (drawn) std::cout << "\r\033[K" << std::flush;
    }
  };
  const net::NetworkState s = [&] {
    const Clear clear{drawn};
    return net::build_network(t, opts);
  }();
  print_network(s);
  spdlog::info("up {}: {} hosts in {} DCs, {} WAN links, {:.2f} s", s.name, s.hosts.size(),
               s.dcs.size(), t.wan.size(), seconds_since(t0));
  return 0;
}

void add_up(CLI::App& app, Commands& out) {
  static UpArgs a;
  auto* c = app.add_subcommand("up", "build the emulated network of a topology");
  c->add_option("--lab", a.lab_file,
                "lab.yaml: build the network across the lab's machines over ssh (each DC on "
                "its machine, WAN links between machines as VXLAN tunnels); the topology "
                "file must be at the same path on every machine");
  c->add_option("--lab-part", a.lab_part, "(used by --lab) this machine's part, as JSON")
      ->group("");
  c->add_flag("--experiment-topology", a.from_experiment,
              "(used by xdc run --lab) the file is an experiment: build its topology, with "
              "the experiment's wan/tcp overrides")
      ->group("");
  c->add_option("topology", a.file, "topology YAML")->required();
  c->add_option("--name", a.name, "network name (default: the topology's name)");
  c->add_option("--shaping", a.shaping, "override the topology: auto | kernel | userspace");
  c->add_option("--backend", a.backend,
                "override the topology's network.backend: native | mininet (what builds the "
                "namespaces, bridges and links)");
  c->add_option("--time-dilation", a.dilation,
                "build the network K times slower than the topology (every delay and "
                "jitter x K, every rate / K); xdc check reports it undilated")
      ->capture_default_str();
  c->add_option("--seed", a.seed,
                "the delay lines' loss and jitter draws: the same seed draws the same "
                "(xdc run builds its network with the experiment's seed)")
      ->capture_default_str();
  out.push_back({c, [] {
                   require_root("up");
                   return up(a);
                 }});
}

int down(const std::string& name, const std::string& lab_file) {
  if (!lab_file.empty()) {
    if (name.empty()) throw InputError("down --lab: name the network");
    return report_machines(lab::down_lab(lab::load_lab(lab_file), name), "not taken down");
  }
  auto t0 = std::chrono::steady_clock::now();
  std::string n = pick_network(name);
  auto present = net::networks_present();
  if (std::find(present.begin(), present.end(), n) == present.end())
    throw InputError("no network named '" + n + "' is up");
  auto r = net::teardown_network(n);
  spdlog::info("down {}: {} namespaces, {} processes removed, {:.2f} s", n, r.namespaces,
               r.processes, seconds_since(t0));
  if (!r.restored.empty()) spdlog::info("down: {}", r.restored);
  return 0;
}

void add_down(CLI::App& app, Commands& out) {
  auto* c = app.add_subcommand("down", "remove one network (the only one if none named)");
  static std::string name, lab_file;
  c->add_option("name", name, "network name");
  c->add_option("--lab", lab_file, "lab.yaml: take the network down on every machine of the lab");
  out.push_back({c, [] {
                   require_root("down");
                   return down(name, lab_file);
                 }});
}

void add_clean(CLI::App& app, Commands& out) {
  auto* c = app.add_subcommand("clean", "remove everything xdc created, even after a crash");
  static std::string lab_file;
  c->add_option("--lab", lab_file,
                "lab.yaml: run `xdc clean` on every machine of the lab instead (over ssh)");
  out.push_back({c, [] {
                   require_root("clean");
                   if (!lab_file.empty()) {
                     return report_machines(lab::clean_lab(lab::load_lab(lab_file)), "not cleaned");
                   }
                   auto nets = net::networks_present();
                   auto r = net::clean_all();
                   spdlog::info(
                       "clean: {} networks, {} namespaces, {} root links, {} processes removed",
                       nets.size(), r.namespaces, r.root_links, r.processes);
                   if (!r.restored.empty()) spdlog::info("clean: {}", r.restored);
                   return 0;
                 }});
}

void add_exec(CLI::App& app, Commands& out) {
  auto* c = app.add_subcommand("exec", "run a command inside an emulated host");
  static std::string host, name;
  static std::vector<std::string> argv;
  c->add_option("host", host, "host name (or gw.<dc>, mgmt)")->required();
  c->add_option("--name", name, "network, when several are up");
  c->add_option("command", argv, "command and arguments, after --")->required();
  c->positionals_at_end();
  out.push_back({c, []() -> int {
                   require_root("exec");
                   if (!argv.empty() && argv.front() == "--") argv.erase(argv.begin());
                   auto [n, ns] = net::resolve_host(host, name);
                   net::exec_in_namespace(n, ns, argv);
                 }});
}

void add_ls(CLI::App& app, Commands& out) {
  auto* c = app.add_subcommand("ls", "list networks and their hosts");
  out.push_back({c, [] {
                   require_root("ls");
                   for (auto& n : net::networks_present()) {
                     if (auto s = net::load_state(n))
                       print_network(*s);
                     else
                       std::cout << fmt::format("network {}  (incomplete: no state; xdc down {})\n",
                                                n, n);
                   }
                   return 0;
                 }});
}

}  // namespace

void add_network_commands(CLI::App& app, Commands& out) {
  add_up(app, out);
  add_down(app, out);
  add_clean(app, out);
  add_exec(app, out);
  add_ls(app, out);
}

}  // namespace xdc::cli
