#include "harness/check/link_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "common/input_error.h"
#include "harness/check/probes.h"
#include "harness/network/names.h"
#include "netem/shaper/loss_model.h"
#include "netem/shaper/shaper.h"

namespace xdc::check {
namespace {

const net::HostState& first_host(const net::NetworkState& s, const std::string& dc) {
  for (auto& h : s.hosts)
    if (h.dc == dc) return h;
  throw std::runtime_error("DC " + dc + " has no host to measure from");
}

int dc_index(const net::NetworkState& s, const std::string& dc) {
  for (size_t i = 0; i < s.dcs.size(); ++i)
    if (s.dcs[i] == dc) return static_cast<int>(i);
  throw std::runtime_error("unknown DC " + dc);
}

const net::ShapedLink* find_link(const net::NetworkState& s, const std::string& from,
                                 const std::string& to) {
  for (auto& l : s.links)
    if (l.from == from && l.to == to) return &l;
  return nullptr;
}

double ms(uint64_t us) {
  return us / 1000.0;
}

// A delay line's running release counters (netem::delayline_stats); read = false where the
// link has no delay line (kernel backend, none) or it did not answer.
struct Lateness {
  bool read = false;
  double released = 0, sum_us = 0, sumsq_us2 = 0;
};

Lateness lateness(const net::ShapedLink* l) {
  Lateness out;
  if (!l || l->backend != "userspace") return out;
  const nlohmann::json st = netem::delayline_stats(netem::ShapeRecord::from_json(l->record));
  if (!st.contains("late_sumsq_us2")) return out;
  out.read = true;
  out.released = st.value("released", 0.0);
  out.sum_us = st.value("late_sum_us", 0.0);
  out.sumsq_us2 = st.value("late_sumsq_us2", 0.0);
  return out;
}

}  // namespace

bool lossy(const LinkCheck& c) {
  return c.configured.loss.kind != netem::LossModel::Kind::kNone ||
         c.reverse.loss.kind != netem::LossModel::Kind::kNone;
}

double LinkCheck::floor_stdev_ms() const {
  return std::sqrt(base_rtt_stdev_ms * base_rtt_stdev_ms + late_stdev_ms[0] * late_stdev_ms[0] +
                   late_stdev_ms[1] * late_stdev_ms[1]);
}

bool LinkCheck::ok() const {
  for (auto& v : verdicts)
    if (!v.ok) return false;
  return true;
}

double expected_rtt_stdev_ms(const netem::LinkParams& a, const netem::LinkParams& b) {
  auto sd = [](const netem::LinkParams& p) {
    double j = ms(p.jitter_us);
    return p.jitter_dist == netem::JitterDist::kUniform ? j / std::sqrt(3.0) : j;
  };
  return std::hypot(sd(a), sd(b));
}

void judge(LinkCheck& c) {
  c.verdicts.clear();
  double rt = ms(c.configured.delay_us + c.reverse.delay_us);
  const double floor = c.floor_stdev_ms();
  {
    Verdict v{"delay", rt + c.late_mean_ms[0] + c.late_mean_ms[1], c.rtt_median_ms - c.base_rtt_ms,
              std::max(0.2, 0.02 * rt) + floor};
    v.ok = std::abs(v.measured - v.expected) <= v.tolerance;
    c.verdicts.push_back(v);
  }
  if (c.configured.jitter_us || c.reverse.jitter_us) {
    double sd = std::hypot(expected_rtt_stdev_ms(c.configured, c.reverse), floor);
    // 15%, or three standard errors of a standard deviation estimated from n samples
    // (sd / sqrt(2 (n - 1)), near normal), whichever is wider: 20 pings alone vary by ~16%.
    const int n = c.rtt_samples > 0 ? c.rtt_samples : CheckOptions{}.ping_count;
    const double se = n > 1 ? 3 / std::sqrt(2.0 * (n - 1)) : 1.0;
    Verdict v{"jitter", sd, c.rtt_stdev_ms, std::max(0.15, se) * sd};
    v.ok = std::abs(v.measured - v.expected) <= v.tolerance;
    c.verdicts.push_back(v);
  }
  // One TCP flow fills the rate only on a path without loss: with loss per wire packet it
  // is loss-limited (Mathis et al.: MSS / RTT x 1.22 / sqrt(p)) as on a real WAN, so its
  // goodput is reported, not judged against the rate.
  const bool lossy = check::lossy(c);
  // With the multi-flow probe, the link's rate is judged by it: one flow may be
  // window-limited by the hosts' socket buffers (BDP above ~0.68 x wmem_max), which says
  // nothing about the link.
  const double judged = c.multi_goodput_mbit >= 0 ? c.multi_goodput_mbit : c.goodput_mbit;
  if (c.configured.rate_bps && judged >= 0 && !lossy) {
    double rate = (c.host_rate_bps ? std::min(c.configured.rate_bps, c.host_rate_bps)
                                   : c.configured.rate_bps) /
                  1e6;
    Verdict v{"rate", rate, judged, 0.04 * rate};
    v.ok = judged >= 0.92 * rate && judged <= 1.01 * rate;
    c.verdicts.push_back(v);
  }
  if (c.loss_packets > 0) {
    double p = netem::stationary_loss(c.configured.loss);
    double sigma = std::sqrt(std::max(p * (1 - p), 1e-12) / c.loss_packets);
    // With no loss configured, allow the few drops a busy 2-core machine makes.
    double tol = p > 0 ? 3 * sigma : 0.1 / 100;
    Verdict v{"loss", 100 * p, c.loss_pct, 100 * tol};
    v.ok = std::abs(c.loss_pct / 100 - p) <= tol;
    c.verdicts.push_back(v);
  }
}

std::vector<std::pair<std::string, std::string>> wan_links(const net::NetworkState& s) {
  std::vector<std::pair<std::string, std::string>> all;
  for (const auto& l : s.links)
    if (l.from < l.to || !find_link(s, l.to, l.from)) all.emplace_back(l.from, l.to);
  return all;
}

std::vector<std::pair<std::string, std::string>> sample_links(const net::NetworkState& s, int n,
                                                              uint64_t seed) {
  const auto all = wan_links(s);
  if (n >= static_cast<int>(all.size())) return all;
  std::mt19937_64 draw(seed);
  std::vector<size_t> index(all.size());
  std::iota(index.begin(), index.end(), size_t{0});
  std::shuffle(index.begin(), index.end(), draw);
  index.resize(static_cast<size_t>(std::max(n, 0)));
  std::sort(index.begin(), index.end());
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i : index) out.push_back(all[i]);
  return out;
}

std::vector<LinkCheck> check_network(const net::NetworkState& s, const CheckOptions& o,
                                     const std::function<void(const std::string&)>& progress) {
  auto chosen = [&](const net::ShapedLink& l) {
    if (o.links.empty()) return true;
    for (const auto& [a, b] : o.links)
      if ((l.from == a && l.to == b) || (l.from == b && l.to == a)) return true;
    return false;
  };
  for (const auto& [a, b] : o.links)
    if (!find_link(s, a, b) && !find_link(s, b, a)) {
      std::string there;
      for (const auto& [from, to] : wan_links(s))
        there += (there.empty() ? "" : ", ") + from + " " + to;
      throw InputError(
          fmt::format("--link {} {}: expected two DCs of network '{}' with a WAN "
                      "link between them ({})",
                      a, b, s.name, there.empty() ? "it has none" : there));
    }
  std::vector<LinkCheck> out;
  for (auto& l : s.links) {
    if (!chosen(l)) continue;
    LinkCheck c;
    // Probes are sized for the links as built; figures are converted back with k.
    const double k = s.time_dilation;
    const netem::LinkParams& built = l.configured;
    netem::LinkParams built_back;
    if (auto* back = find_link(s, l.to, l.from)) built_back = back->configured;
    c.from = l.from, c.to = l.to, c.backend = l.backend, c.time_dilation = k;
    c.configured = netem::time_dilated(built, 1 / k);
    c.reverse = netem::time_dilated(built_back, 1 / k);
    c.host_rate_bps = netem::time_dilated_rate_bps(s.intra_dc_rate_bps, 1 / k);
    c.congestion = o.congestion;
    const auto& a = first_host(s, l.from);
    const auto& b = first_host(s, l.to);
    c.src = a.name, c.dst = b.name;
    if (progress) progress(fmt::format("{} -> {} ({} -> {})", c.from, c.to, c.src, c.dst));
    // The unshaped part of the path: each host to its own gateway.
    auto ga = ping(s.name, a.name, net::gateway_ip(dc_index(s, l.from)), 50, 10);
    auto gb = ping(s.name, b.name, net::gateway_ip(dc_index(s, l.to)), 50, 10);
    c.base_rtt_ms = (ga.median_ms + gb.median_ms) / k;
    c.base_rtt_stdev_ms = std::hypot(ga.stdev_ms, gb.stdev_ms) / k;
    // Pings far enough apart that FIFO ordering of a jittered line does not couple them.
    double jitter_ms = ms(std::max(built.jitter_us, built_back.jitter_us));
    const net::ShapedLink* lines[2] = {&l, find_link(s, l.to, l.from)};
    Lateness before[2] = {lateness(lines[0]), lateness(lines[1])};
    auto rtt = ping(s.name, a.name, b.data_ip, o.ping_count, std::max(10.0, 4 * jitter_ms));
    for (int d = 0; d < 2; ++d) {
      const Lateness after = lateness(lines[d]);
      const double n = after.released - before[d].released;
      if (!after.read || !before[d].read || n < 2) continue;
      const double mean_us = (after.sum_us - before[d].sum_us) / n;
      const double var_us2 = (after.sumsq_us2 - before[d].sumsq_us2) / n - mean_us * mean_us;
      c.late_packets[d] = static_cast<long>(n);
      c.late_mean_ms[d] = mean_us / 1e3 / k;
      c.late_stdev_ms[d] = std::sqrt(std::max(0.0, var_us2)) / 1e3 / k;
    }
    c.rtt_median_ms = rtt.median_ms / k, c.rtt_min_ms = rtt.min_ms / k;
    c.rtt_p99_ms = rtt.p99_ms / k, c.rtt_stdev_ms = rtt.stdev_ms / k;
    c.rtt_samples = rtt.received;
    if (o.udp_packets > 0) {
      double rate = built.rate_bps ? std::min(10.0, 0.2 * built.rate_bps / 1e6) : 10;
      auto loss = udp_loss(s.name, a.name, b.name, b.data_ip, o.udp_packets, rate);
      c.loss_packets = loss.sent, c.loss_pct = loss.loss_pct();
    }
    if (o.throughput) {
      const double omit_s = std::max(o.tcp_omit_seconds, 30 * rtt.median_ms / 1000);
      c.goodput_mbit =
          k * tcp_goodput(s.name, a.name, b.name, b.data_ip, o.tcp_seconds, omit_s, o.congestion)
                  .goodput_mbit;
      if (o.flows > 1) {
        c.flows = o.flows;
        c.multi_goodput_mbit = k * tcp_goodput(s.name, a.name, b.name, b.data_ip, o.tcp_seconds,
                                               omit_s, o.congestion, o.flows)
                                       .goodput_mbit;
      }
    }
    judge(c);
    out.push_back(std::move(c));
  }
  return out;
}

nlohmann::json to_json(const std::vector<LinkCheck>& checks) {
  nlohmann::json links = nlohmann::json::array();
  std::string backend;
  for (auto& c : checks) {
    if (backend.empty() || backend == "none") backend = c.backend;
    nlohmann::json verdicts = nlohmann::json::array();
    for (auto& v : c.verdicts)
      verdicts.push_back({{"metric", v.metric},
                          {"expected", v.expected},
                          {"measured", v.measured},
                          {"tolerance", v.tolerance},
                          {"ok", v.ok}});
    links.push_back(
        {{"from", c.from},
         {"to", c.to},
         {"hosts", {c.src, c.dst}},
         {"backend", c.backend},
         {"configured",
          {{"delay_ms", ms(c.configured.delay_us)},
           {"jitter_ms", ms(c.configured.jitter_us)},
           {"loss_pct", 100 * netem::stationary_loss(c.configured.loss)},
           {"rate_mbit", c.configured.rate_bps / 1e6},
           {"host_rate_mbit", c.host_rate_bps / 1e6},
           {"reverse_delay_ms", ms(c.reverse.delay_us)}}},
         {"floor",
          {{"rtt_stdev_ms", c.floor_stdev_ms()},
           {"base_rtt_stdev_ms", c.base_rtt_stdev_ms},
           {"delay_line_late_mean_ms", {c.late_mean_ms[0], c.late_mean_ms[1]}},
           {"delay_line_late_stdev_ms", {c.late_stdev_ms[0], c.late_stdev_ms[1]}},
           {"delay_line_packets", {c.late_packets[0], c.late_packets[1]}}}},
         {"measured",
          {{"base_rtt_ms", c.base_rtt_ms},
           {"rtt_min_ms", c.rtt_min_ms},
           {"rtt_median_ms", c.rtt_median_ms},
           {"rtt_p99_ms", c.rtt_p99_ms},
           {"rtt_stdev_ms", c.rtt_stdev_ms},
           {"goodput_mbit", c.goodput_mbit >= 0 ? nlohmann::json(c.goodput_mbit) : nullptr},
           {"flows", c.flows},
           {"goodput_multi_mbit",
            c.multi_goodput_mbit >= 0 ? nlohmann::json(c.multi_goodput_mbit) : nullptr},
           {"loss_pct", c.loss_pct},
           {"loss_packets", c.loss_packets}}},
         {"verdicts", verdicts},
         {"ok", c.ok()}});
  }
  const double k = checks.empty() ? 1 : checks[0].time_dilation;
  const std::string congestion = checks.empty() ? "" : checks[0].congestion;
  // Every figure above is undilated (link_check.h).
  return {{"backend", backend.empty() ? "none" : backend},
          {"time_dilation", k},
          {"tcp_congestion", congestion.empty() ? "host default" : congestion},
          {"links", links}};
}

std::string to_table(const std::vector<LinkCheck>& checks) {
  if (checks.empty()) return "no WAN link in this network: nothing to check\n";
  const int flows = checks.empty() ? 0 : checks[0].flows;
  std::string t = fmt::format(
      "{:<22} {:<9} {:>8} {:>8} {:>23} {:>21} {:>17} {:>14} {:>15}  {}\n", "link", "backend",
      "base ms", "floor ms", "RTT-base ms (cfg+floor)", "stdev ms (cfg+floor)", "goodput Mb (cfg)",
      flows > 1 ? fmt::format("{} flows Mb", flows) : "N flows Mb", "loss % (cfg)", "result");
  if (!checks.empty() && checks[0].time_dilation != 1)
    t = fmt::format(
            "time dilation {0:g}: the links run {0:g} x slower as built; figures are undilated "
            "(times / {0:g}, goodput x {0:g})\n",
            checks[0].time_dilation) +
        t;
  for (auto& c : checks) {
    auto get = [&](const char* m) -> const Verdict* {
      for (auto& v : c.verdicts)
        if (v.metric == m) return &v;
      return nullptr;
    };
    auto cell = [&](const char* m, double measured) {
      const Verdict* v = get(m);
      return v ? fmt::format("{:.2f} ({:g}){}", v->measured, v->expected, v->ok ? "" : "!")
               : fmt::format("{:.2f}", measured);
    };
    std::string failed;
    for (auto& v : c.verdicts)
      if (!v.ok) failed += (failed.empty() ? "" : ",") + v.metric;
    t += fmt::format("{:<22} {:<9} {:>8.3f} {:>8.3f} {:>23} {:>21} {:>17} {:>14} {:>15}  {}\n",
                     c.from + " -> " + c.to, c.backend, c.base_rtt_ms, c.floor_stdev_ms(),
                     cell("delay", c.rtt_median_ms - c.base_rtt_ms), cell("jitter", c.rtt_stdev_ms),
                     c.goodput_mbit < 0                        ? std::string("-")
                     : get("rate") && c.multi_goodput_mbit < 0 ? cell("rate", c.goodput_mbit)
                     : lossy(c) ? fmt::format("{:.2f} (loss)", c.goodput_mbit)
                                : fmt::format("{:.2f}", c.goodput_mbit),
                     c.multi_goodput_mbit < 0 ? std::string("-")
                     : get("rate")            ? cell("rate", c.multi_goodput_mbit)
                     : lossy(c)               ? fmt::format("{:.2f} (loss)", c.multi_goodput_mbit)
                                              : fmt::format("{:.2f}", c.multi_goodput_mbit),
                     cell("loss", c.loss_pct), failed.empty() ? "ok" : "FAIL " + failed);
  }
  t += "floor: this machine's own RTT spread (unshaped path, delay lines' release lateness), "
       "measured with each link; delay and stdev are judged against configured plus floor\n";
  // A link faster than its hosts is judged at the hosts' rate: say so once per link.
  for (auto& c : checks)
    if (c.host_rate_bps && c.configured.rate_bps > c.host_rate_bps && !lossy(c))
      t += fmt::format(
          "{} -> {}: judged at the hosts' intra-DC rate, {:g} Mbit/s: the link's {:g} Mbit/s is "
          "more than the flows of one host can carry (the probes run host to host)\n",
          c.from, c.to, c.host_rate_bps / 1e6, c.configured.rate_bps / 1e6);
  // A rate not reached says what limited it: every flow at the window the hosts' socket
  // buffers allow at this round trip (the flows together carried about flows x one), or
  // the machine (under half of the rate arrived, the flows no help): time dilation builds
  // the links k times slower, which is what such a link needs here.
  for (auto& c : checks)
    for (auto& v : c.verdicts) {
      if (v.metric != "rate" || v.ok || v.measured <= 0) continue;
      if (c.flows > 1 && c.goodput_mbit > 0 &&
          c.multi_goodput_mbit >= 0.8 * c.flows * c.goodput_mbit)
        t += fmt::format(
            "{} -> {}: each of the {} flows is window-limited at this round trip (one carried "
            "{:.0f} Mbit/s): check it with more flows, --flows {:g}\n",
            c.from, c.to, c.flows, c.goodput_mbit,
            std::min(128.0, std::ceil(1.25 * v.expected / c.goodput_mbit)));
      else if (v.measured < 0.5 * v.expected)
        t += fmt::format(
            "{} -> {}: {:g} Mbit/s is more than this machine carried ({:.0f} Mbit/s); check it "
            "built slower: --time-dilation {:g} (docs/emulation.md, time dilation)\n",
            c.from, c.to, v.expected, v.measured,
            c.time_dilation * std::ceil(2 * v.expected / v.measured));
    }
  return t;
}

}  // namespace xdc::check
