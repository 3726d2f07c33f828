// xdc link set|down|up|show, xdc dc isolate|join: a live network's WAN changed in place
// (harness/linkctl/link_control.h).
#include <fmt/format.h>

#include <iostream>

#include "commands.h"
#include "common/input_error.h"
#include "harness/common/units.h"
#include "harness/linkctl/link_control.h"

namespace xdc::cli {
namespace {

template <typename T>
T parsed_or_throw(const Parsed<T>& p, const std::string& flag, const std::string& text) {
  if (!p) throw InputError(fmt::format("{}: expected {}, got \"{}\"", flag, p.expected, text));
  return *p.value;
}

std::string describe(const netem::LinkParams& p, bool down) {
  return topo::describe(p) + (down ? " [DOWN]" : "");
}

int print_applied(const std::vector<linkctl::AppliedChange>& applied) {
  for (const auto& a : applied)
    std::cout << fmt::format("{:<24} {:<5} {}  (in force {:.2f} ms after the request, t_ns {})\n",
                             a.dir.name(), a.down ? "down" : "up", describe(a.params, a.down),
                             a.apply_ms, a.t_ns);
  return 0;
}

int show(const std::string& net, bool json) {
  net::NetworkState s = linkctl::load_network(net);
  nlohmann::json rows = nlohmann::json::array();
  if (!json)
    std::cout << fmt::format("{:<24} {:<10} {:<5} {:>10} {:>10} {:>10} {:>11} {:>11} {:>7}  {}\n",
                             "link", "backend", "state", "sent", "down_drops", "loss_drops",
                             "delayq_drops", "rateq_drops", "queued", "parameters (undilated)");
  for (const auto& st : linkctl::link_status(s)) {
    const auto& c = st.counters;
    std::string name = st.link->from + "->" + st.link->to;
    if (json) {
      rows.push_back({{"link", name},
                      {"backend", st.link->backend},
                      {"down", st.link->down},
                      {"params", st.params},
                      {"sent", c.sent},
                      {"down_drops", st.down_drops},
                      {"loss_drops", c.loss_drops},
                      {"delay_queue_drops", c.delay_queue_drops},
                      {"rate_queue_drops", c.rate_queue_drops},
                      {"queued", c.queued}});
      continue;
    }
    std::cout << fmt::format("{:<24} {:<10} {:<5} {:>10} {:>10} {:>10} {:>11} {:>11} {:>7}  {}\n",
                             name, st.link->backend, st.link->down ? "down" : "up", c.sent,
                             st.down_drops, c.loss_drops, c.delay_queue_drops, c.rate_queue_drops,
                             c.queued, describe(st.params, false));
  }
  if (json) std::cout << nlohmann::json{{"network", net}, {"links", rows}}.dump(2) << "\n";
  return 0;
}

}  // namespace

void add_link_commands(CLI::App& app, Commands& out) {
  auto* link = app.add_subcommand("link", "change a live WAN link in place; show live counters");
  link->require_subcommand(1);
  static std::string net, a, b, direction, delay, jitter, loss, rate;
  auto add_target = [&](CLI::App* c) {
    c->add_option("network", net, "network name")->required();
    c->add_option("a", a, "one DC of the link")->required();
    c->add_option("b", b, "the other DC")->required();
    c->add_option(
        "--direction", direction,
        "only this direction, 'A->B' (quoted: > is the shell's redirection; default: both)");
  };
  auto directions = [] {
    return linkctl::link_directions(linkctl::wan_of(linkctl::load_network(net)), a, b, direction);
  };
  {
    auto* c = link->add_subcommand(
        "set", "change only the given parameters, in place (undilated values, as in a topology)");
    add_target(c);
    c->add_option("--delay", delay, "one-way delay, e.g. 50ms");
    c->add_option("--jitter", jitter, "jitter, e.g. 2ms (the distribution stays)");
    c->add_option("--loss", loss, "random loss, e.g. 0.1% (0 = none)");
    c->add_option("--rate", rate, "rate, e.g. 100mbit");
    out.push_back(
        {c, [directions] {
           require_root("link set");
           topo::WanChange ch;
           ch.source = "xdc link";
           if (!delay.empty())
             ch.delay_us = parsed_or_throw(parse_duration_us(delay), "--delay", delay);
           if (!jitter.empty())
             ch.jitter_us = parsed_or_throw(parse_duration_us(jitter), "--jitter", jitter);
           if (!loss.empty()) ch.loss_pct = parsed_or_throw(parse_percent(loss), "--loss", loss);
           if (!rate.empty()) ch.rate_bps = parsed_or_throw(parse_rate_bps(rate), "--rate", rate);
           if (ch.empty())
             throw InputError("nothing to change: give --delay, --jitter, --loss or --rate");
           return print_applied(linkctl::change_links(net, directions(), ch));
         }});
  }
  for (bool down : {true, false}) {
    auto* c = link->add_subcommand(down ? "down" : "up",
                                   down ? "cut a WAN link: every packet handed to it is dropped"
                                        : "restore a WAN link cut by `link down`");
    add_target(c);
    out.push_back({c, [directions, down] {
                     require_root(down ? "link down" : "link up");
                     topo::WanChange ch;
                     ch.source = "xdc link";
                     ch.down = down;
                     return print_applied(linkctl::change_links(net, directions(), ch));
                   }});
  }
  {
    auto* c = link->add_subcommand("show", "live parameters and counters of every WAN direction");
    static bool json = false;
    c->add_option("network", net, "network name")->required();
    c->add_flag("--json", json, "JSON on standard output");
    out.push_back({c, [] {
                     require_root("link show");
                     return show(net, json);
                   }});
  }

  auto* dc = app.add_subcommand("dc", "cut or restore every WAN link of a DC");
  dc->require_subcommand(1);
  static std::string dc_name;
  for (bool down : {true, false}) {
    auto* c = dc->add_subcommand(
        down ? "isolate" : "join",
        down ? "cut every WAN link of a DC (both directions)" : "restore every WAN link of a DC");
    c->add_option("network", net, "network name")->required();
    c->add_option("dc", dc_name, "DC name")->required();
    out.push_back({c, [down] {
                     require_root(down ? "dc isolate" : "dc join");
                     topo::WanChange ch;
                     ch.source = "xdc link";
                     ch.down = down;
                     auto dirs = linkctl::dc_directions(linkctl::wan_of(linkctl::load_network(net)),
                                                        dc_name);
                     return print_applied(linkctl::change_links(net, dirs, ch));
                   }});
  }
}

}  // namespace xdc::cli
