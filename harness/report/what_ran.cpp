#include "harness/report/what_ran.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "harness/report/html.h"
#include "harness/report/topology_svg.h"

namespace xdc::report {

namespace {

std::string item(const std::string& term, const std::string& html) {
  return fmt::format("<dt>{}</dt><dd>{}</dd>", escape(term), html);
}

std::string model_text(const run::Experiment& e) {
  const model::ModelConfig& m = e.model;
  return fmt::format("mini Llama: {} layers, dim {}, {} heads, seq {}, {} parameters", m.layers,
                     m.dim, m.heads, m.seq, si_text(static_cast<double>(m.param_count())));
}

std::string pipeline_text(const run::Experiment& e) {
  std::string out = fmt::format("{} stages", e.stages);
  if (e.data_parallel > 1) out += fmt::format(" x {} data-parallel replicas", e.data_parallel);
  if (e.tensor_parallel > 1) out += fmt::format(" x {} tensor-parallel ranks", e.tensor_parallel);
  return out + fmt::format(" ({} ranks); {} microbatches of {}", e.world_size(), e.microbatches,
                           e.microbatch_size);
}

std::string iterations_text(const RunData& d, const run::Experiment& e) {
  if (d.simulated_only)
    return fmt::format("{} after {} warm-up, predicted (nothing measured)", e.iterations, e.warmup);
  int repeats = 1;
  for (const auto& s : d.schedules) repeats = std::max(repeats, s.repeats);
  return fmt::format("{} measured after {} warm-up{}", e.iterations, e.warmup,
                     repeats > 1 ? fmt::format(", each schedule run {} times", repeats) : "");
}

// A `workload:` run: the user's program, its processes and its steps, not xdc-worker's
// model and pipeline (the experiment's defaults, which did not run).
std::string workload_facts(const RunData& d, const run::Workload& w) {
  std::string argv;
  for (const auto& a : w.command) argv += (argv.empty() ? "" : " ") + a;
  std::string hosts;
  for (const auto& h : w.hosts) hosts += (hosts.empty() ? "" : ", ") + h;
  int steps = 0;
  for (const auto& s : d.schedules) steps = std::max(steps, s.iterations);
  std::string out = item("program", "<code>" + escape(argv) + "</code>");
  out += item("processes", escape(fmt::format("{} ({} per host on {}), launcher {}", w.world_size(),
                                              w.per_host, hosts, w.launcher_name())));
  out += item("steps", escape(fmt::format("{} measured after {} warm-up", steps, w.warmup_steps)));
  if (!d.compute_costs.empty()) out += item("predicted from", escape(d.compute_costs));
  return out;
}

std::string schedules_html(const RunData& d) {
  std::string out;
  for (const auto& s : d.schedules)
    out += (out.empty() ? "" : ", ") + escape(s.name) +
           (s.ok ? "" : " <span class=\"bad\">failed</span>");
  return out;
}

// The WAN messages' median goodput per schedule, measured beside simulated, one line each:
// "1f1b: 17 Mbit/s (sim 17)"; and the connections a message went over when all agree.
std::vector<std::string> goodput_lines(const RunData& d, int& connections) {
  std::vector<std::string> out;
  connections = -1;
  for (const auto& s : d.schedules) {
    if (!s.wan_goodput_mbit_p50 && !s.simulated_wan_goodput_mbit_p50) continue;
    std::string v = s.name + ": " +
                    (s.wan_goodput_mbit_p50 ? fmt::format("{:.0f} Mbit/s", *s.wan_goodput_mbit_p50)
                                            : std::string("-"));
    if (s.simulated_wan_goodput_mbit_p50)
      v += fmt::format(" (sim {:.0f})", *s.simulated_wan_goodput_mbit_p50);
    out.push_back(v);
    if (s.wan_connections > 0)
      connections = connections == -1 || connections == s.wan_connections ? s.wan_connections : 0;
  }
  return out;
}

std::string goodput_heading(int connections) {
  return "goodput per WAN message, median" +
         (connections > 0
              ? fmt::format(", {} connection{}", connections, connections > 1 ? "s" : "")
              : std::string()) +
         ":";
}

std::string dilation_note(const RunData& d) {
  if (d.time_dilation == 1) return "";
  std::string timers;
  for (const auto& t : d.not_stretched) timers += (timers.empty() ? "" : ", ") + escape(t);
  return fmt::format(
      "<p class=\"note\">Run under <b>time dilation {0:g}</b>: every WAN delay and jitter and "
      "modeled compute lasted {0:g} times longer and every link rate was divided by {0:g}, "
      "with real-sized messages, so TCP saw the packets, windows and bandwidth-delay "
      "product of the emulated links; every time shown here is divided back by {0:g}. "
      "What does not stretch: {1}.</p>",
      d.time_dilation,
      timers.empty() ? std::string("the kernel's fixed timers (delayed ACK, pacing "
                                   "granularity, CUBIC's growth)")
                     : timers);
}

// Every scalar of summary.json and environment.json, folded: the record, not the story.
std::string environment_html(const RunData& d) {
  if (d.setup.empty()) return "";
  std::string out = "<dl class=\"facts\">";
  for (const auto& [k, v] : d.setup)
    out += fmt::format("<div><dt>{}</dt><dd>{}</dd></div>", escape(k), escape(v));
  out += "</dl>";
  return fmt::format(
      "<details class=\"env\"><summary>Full environment: {} setting{} recorded</summary>{}"
      "</details>",
      d.setup.size(), d.setup.size() == 1 ? "" : "s", out);
}

}  // namespace

std::string non_default_html(const RunData& d) {
  if (!d.non_default_settings)
    return "<p class=\"settings unknown\"><b>Non-default settings:</b> not recorded</p>";
  if (d.non_default_settings->empty())
    return "<p class=\"settings stock\"><b>Non-default settings:</b> " + escape(settings_text({})) +
           "</p>";
  std::string list;
  for (const auto& s : *d.non_default_settings) list += "<code>" + escape(s) + "</code> ";
  return "<p class=\"settings changed\"><b>Non-default settings:</b> " + list + "</p>";
}

std::string what_ran_html(const RunData& d) {
  std::string facts, drawing;
  int connections = 0;
  std::vector<std::string> goodput = goodput_lines(d, connections);
  if (!goodput.empty()) goodput.insert(goodput.begin(), goodput_heading(connections));
  if (d.recorded) {
    const run::Experiment& e = *d.recorded;
    drawing = topology_svg(e.topology, e.rank_hosts(), d.link_check, goodput);
    if (e.topology.wan.size() == 1) goodput.clear();  // said under the link
    facts += item("network",
                  fmt::format("{} DCs, {} hosts (topology {}); shaping {}", e.topology.dcs.size(),
                              e.topology.hosts().size(), escape(e.topology.name),
                              escape(d.backend.empty() ? "not recorded" : d.backend)));
    if (e.workload) {
      facts += workload_facts(d, *e.workload);
    } else {
      if (e.compute.mode == run::Compute::Mode::kReal)
        facts += item("model", escape(model_text(e)));
      facts += item("compute",
                    escape(d.compute_costs.empty() ? e.compute.costs_source() : d.compute_costs));
      facts += item("pipeline", escape(pipeline_text(e)));
      facts += item("iterations", escape(iterations_text(d, e)));
    }
  } else if (!d.compute_costs.empty()) {
    facts += item("compute", escape(d.compute_costs));
  }
  if (!d.schedules.empty() && !(d.recorded && d.recorded->workload))
    facts += item("schedules", schedules_html(d));
  std::string tcp;  // "1f1b: 82 retransmission timeouts, 3.7% of segments sent again"
  for (const auto& sd : d.schedules)
    if (sd.tcp_timeouts)
      tcp += fmt::format(
          "{}{}: {} retransmission timeout{}{}", tcp.empty() ? "" : "; ", escape(sd.name),
          *sd.tcp_timeouts, *sd.tcp_timeouts == 1 ? "" : "s",
          sd.tcp_retransmitted_share
              ? fmt::format(", {:.2f}% of segments sent again", 100 * *sd.tcp_retransmitted_share)
              : std::string());
  if (!tcp.empty())
    facts += item("TCP on the hosts",
                  tcp + " (a timeout stalls its connection for 200 ms or more; not predicted)");
  std::string stalls;  // "1f1b: 16 of 2112 records, 3.52 s beyond their median"
  for (const auto& sd : d.schedules)
    if (sd.tp_stalled && *sd.tp_stalled > 0)
      stalls += fmt::format("{}{}: {} of {} records, {:.2f} s beyond their median",
                            stalls.empty() ? "" : "; ", escape(sd.name), *sd.tp_stalled,
                            sd.tp_records.value_or(0), sd.tp_stall_excess_s.value_or(0));
  if (!stalls.empty())
    facts += item("TP all-reduces 200 ms or more over their median",
                  stalls +
                      " (as long as a TCP timer's wait: a probe timer after a drop at the "
                      "sender's own queue, or a timeout; not predicted)");
  if (!goodput.empty()) {
    std::string g = escape(goodput[0]);
    for (size_t k = 1; k < goodput.size(); ++k) g += (k == 1 ? " " : "; ") + escape(goodput[k]);
    facts += item("WAN", g);
  }
  std::string out = non_default_html(d) + "<div class=\"ran\">";
  if (!drawing.empty()) out += "<figure class=\"topo\">" + drawing + "</figure>";
  out += "<dl class=\"ran\">" + facts + "</dl></div>";
  return out + dilation_note(d) + environment_html(d);
}

}  // namespace xdc::report
