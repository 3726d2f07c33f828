// xdc check TOPO.yaml|NAME: measure every WAN direction against its configuration.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "commands.h"
#include "common/input_error.h"
#include "harness/check/link_check.h"
#include "harness/network/builder.h"
#include "harness/network/names.h"
#include "harness/network/teardown.h"
#include "harness/topology/topology.h"

namespace xdc::cli {

void add_check_command(CLI::App& app, Commands& out) {
  auto* c = app.add_subcommand(
      "check", "measure RTT, jitter, goodput and loss of every WAN link against its configuration");
  static std::string target, json_out;
  static bool json = false, no_tcp = false;
  static std::optional<double> dilation;
  static check::CheckOptions opts;
  c->add_option("target", target, "a topology YAML (built, checked, removed) or a network name")
      ->required();
  c->add_flag("--json", json, "print the report as JSON (only JSON on standard output)");
  c->add_option("--time-dilation", dilation,
                "build the topology K times slower (delays x K, rates / K) and report the "
                "figures undilated; with a network name: the K it was built with (xdc up "
                "--time-dilation)");
  auto* congestion = c->add_option(
      "--congestion", opts.congestion,
      "congestion control of the TCP probe (iperf3 -C), e.g. cubic; default: the host's");
  c->add_option("-o,--output", json_out, "also write the JSON report to this file");
  auto* link = c->add_option("--link", opts.links,
                             "only the WAN link between these two DCs (both directions); "
                             "repeat for more")
                   ->type_name("DC DC");
  static int sample = 0;
  static uint64_t seed = 1;
  c->add_option("--sample", sample,
                "only N of the WAN links, drawn with --seed (a large network in bounded time); "
                "the report names them and how many there are")
      ->check(CLI::Range(1, 1 << 20))
      ->excludes(link);
  c->add_option("--seed", seed, "the draw of --sample: the same seed, the same links")
      ->capture_default_str();
  auto* flows =
      c->add_option("--flows", opts.flows,
                    "parallel TCP flows of the multi-flow goodput probe (iperf3 -P); 1: skip it")
          ->check(CLI::Range(1, 128))
          ->capture_default_str();
  c->add_option("--pings", opts.ping_count, "pings per link direction")
      ->check(CLI::Range(10, 100000))
      ->capture_default_str();
  c->add_option("--udp-packets", opts.udp_packets, "UDP datagrams for the loss probe")
      ->check(CLI::Range(100L, 100000000L))
      ->capture_default_str();
  auto* tcp_seconds =
      c->add_option("--tcp-seconds", opts.tcp_seconds, "seconds of TCP measured per direction")
          ->check(CLI::Range(1.0, 3600.0))
          ->capture_default_str();
  auto* tcp_omit =
      c->add_option("--tcp-omit-seconds", opts.tcp_omit_seconds,
                    "seconds of TCP ramp-up not measured (at least 30 round trips as built)")
          ->check(CLI::Range(0.0, 3600.0))
          ->capture_default_str();
  // The TCP probes' options mean nothing without the probes.
  c->add_flag("--no-throughput", no_tcp, "skip the TCP goodput probes")
      ->excludes(congestion)
      ->excludes(flows)
      ->excludes(tcp_seconds)
      ->excludes(tcp_omit);
  out.push_back(
      {c, [] {
         require_root("check");
         opts.throughput = !no_tcp;
         std::optional<net::NetworkState> built;
         std::string name = target;
         if (std::filesystem::is_regular_file(target)) {
           auto topo = topo::load_topology(target);
           if (std::filesystem::exists(net::state_dir(topo.name)))
             throw std::runtime_error("network '" + topo.name + "' is already up: xdc check " +
                                      topo.name);
           net::BuildOptions b;
           b.time_dilation = dilation.value_or(1);
           built = net::build_network(topo, b);
           name = built->name;
         }
         auto state = built ? built : net::load_state(name);
         if (!state) throw InputError("no network or topology file named '" + name + "'");
         if (!built && dilation && *dilation != state->time_dilation)
           throw InputError(
               fmt::format("--time-dilation {:g}: network '{}' was built with time dilation {:g} "
                           "(xdc check reads it from the network; drop the option)",
                           *dilation, name, state->time_dilation));
         std::string sampled;  // what --sample drew, in words
         const size_t links_there = check::wan_links(*state).size();
         if (sample > 0) {
           opts.links = check::sample_links(*state, sample, seed);
           std::string names;
           for (const auto& [a, b] : opts.links) names += (names.empty() ? "" : ", ") + a + "-" + b;
           sampled = fmt::format("sampled {} of {} WAN links (--seed {}): {}", opts.links.size(),
                                 links_there, seed, names);
           spdlog::info("check: {}", sampled);
         }
         std::vector<check::LinkCheck> checks;
         try {
           checks = check::check_network(
               *state, opts, [](const std::string& m) { spdlog::info("check: {}", m); });
         } catch (...) {
           if (std::string left = built ? net::teardown_or_error(name) : ""; !left.empty())
             spdlog::error("check: {} (xdc down {})", left, name);
           throw;
         }
         if (built) net::teardown_network(name);
         auto j = check::to_json(checks);
         if (sample > 0)
           j["sampled"] = {{"links", opts.links.size()}, {"of", links_there}, {"seed", seed}};
         if (!json_out.empty()) std::ofstream(json_out) << j.dump(2) << "\n";
         if (json)
           std::cout << j.dump(2) << "\n";
         else
           std::cout << (sampled.empty() ? "" : sampled + "\n") << check::to_table(checks);
         for (auto& ch : checks)
           if (!ch.ok()) return 1;
         return 0;
       }});
}

}  // namespace xdc::cli
