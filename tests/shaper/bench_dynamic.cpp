// bench_dynamic: runtime link changes (reshape_egress, shaper.h) measured on one backend,
// on GW's egress towards B of a testbed::Line, from A to B:
//   change_apply_ms  request -> in force, as the traffic shows it:
//     delay  20 changes 10 <-> 30 ms under a one-way UDP stream every 0.2 ms: the send
//            time of the first packet from which on every packet has the new treatment
//            (increase: one-way delay above the midpoint; decrease: below the old delay,
//            FIFO lets it wait behind older packets but no longer as long);
//     rate   12 changes 20 <-> 8 Mbit/s under a UDP stream of 30 Mbit/s: the arrival of
//            the first packet after which the spacing is the new rate's (gap above or
//            below the midpoint of the two rates' gaps), after the bucket tbf refills on
//            a change has drained;
//   change_artefacts
//     delay_change_drops  drops (counted by the shaper, lost UDP probes, TCP
//            retransmissions) while a saturating TCP flow crosses 8 delay changes
//            (10/60/5/40 ms, bottleneck buffer larger than the flow's window, so anything
//            dropped is the changes' doing);
//     reorders  UDP probes that arrived after a later one, over all runs;
//     rate_decrease_overflow_drops  the rate stage's overflow after 50 -> 10 Mbit/s under
//            TCP (counted), and rate_decrease_other_drops: every other drop (0 expected).
//   trace_replay  a synthetic 10-minute trace (60 rows, one every 10 s: delay 5..35 ms,
//            rate 10..40 Mbit/s) compressed 100 x (a row every 100 ms), read by
//            topo::load_trace_csv and replayed with reshape_egress, twice: under a light
//            one-way probe (1 ms) for the delay -- the median one-way delay of each step
//            (probes sent after the step's FIFO transition) against the row's --, and under
//            a 50 Mbit/s UDP stream for the rate -- the received L2 rate of each step from
//            10 ms after its change against the row's. RMSE over the 60 steps.
//   flap     (bench_dynamic --flap RUN_DIR RC OUT.json) from an `xdc run` of
//            tests/run/flap.yaml that exited RC: down_s (cut to restore, from events.json),
//            run_exit, iterations_done (iterations.csv rows) and stall_s (the longest
//            iteration minus the median).
//   partition (bench_dynamic --partition RUN_DIR RC OUT.json) from an `xdc run` of
//            tests/run/partition.yaml (cut 20 s, mpi.timeout_s 8) that exited RC: run_exit
//            and the message (the schedule's error in summary.json).
//   flap_event (bench_dynamic --flap-event RUN_DIR RC OUT.json) from an `xdc run` of
//            experiments/flap.yaml (the WAN cut 2 s when iteration 5 starts): run_exit,
//            iterations measured and simulated with the same event (summary.json's
//            simulated_series), the slowest iteration and the prediction's error on it.
//   trace_wan (bench_dynamic --trace-wan ...) the same of experiments/trace-wan.yaml.
//   bench_dynamic --backend userspace|kernel OUT.json
// OUT.json gets (or keeps) the figures of each backend under "backends"; the top-level
// keys are the userspace backend's (the one every machine runs), or the kernel's when it
// is the only one measured.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "harness/topology/topology.h"
#include "netem/nl/netns.h"
#include "netem/shaper/shaper.h"
#include "tests/shaper/reshape.h"
#include "tests/shaper/testbed.h"

namespace xdc::testbed {
namespace {

using netem::LinkParams;

void sleep_s(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

// ShapedDirection (reshape.h); the benchmark takes the time it was asked at.
struct Shaped : ShapedDirection {
  using ShapedDirection::ShapedDirection;
  int64_t change(const LinkParams& p) { return ShapedDirection::change(p).first; }
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

nlohmann::json apply_summary(const std::vector<double>& ms) {
  return {{"p50", percentile(ms, 0.5)},
          {"max", ms.empty() ? -1 : *std::max_element(ms.begin(), ms.end())},
          {"samples", ms}};
}

// Delay changes 10 <-> 30 ms every 150 ms; the in-force time of each from the stream.
std::vector<double> delay_apply_ms(netem::Backend b, const Line& l, int& reorders) {
  LinkParams p;
  p.delay_us = 10'000;
  Shaped s(b, l, p);
  const int changes = 20;
  const double interval = 0.0002;
  OneWayResult res;
  int count = static_cast<int>((0.3 + changes * 0.15) / interval);
  std::thread stream([&] { res = one_way_stream(l.a, l.b, l.b_ip, count, interval, 32, 0.3); });
  std::vector<std::pair<int64_t, std::pair<double, double>>> asked;  // t, {old, new} ms
  sleep_s(0.2);
  for (int i = 0; i < changes; ++i) {
    LinkParams q = p;
    q.delay_us = i % 2 == 0 ? 30'000 : 10'000;
    double old_ms = s.was.delay_us / 1e3, new_ms = q.delay_us / 1e3;
    asked.push_back({s.change(q), {old_ms, new_ms}});
    sleep_s(0.15);
  }
  stream.join();
  reorders += res.reorders();
  std::vector<double> out;
  for (size_t i = 0; i < asked.size(); ++i) {
    auto [t, d] = asked[i];
    int64_t until = i + 1 < asked.size() ? asked[i + 1].first : INT64_MAX;
    auto [old_ms, new_ms] = d;
    auto is_new = [&](double owd) {
      return new_ms > old_ms ? owd > (old_ms + new_ms) / 2 : owd < old_ms - 0.05;
    };
    // The first packet sent after the request from which on all are treated the new way.
    int64_t in_force = -1;
    for (const auto& pk : res.packets) {
      if (pk.sent_ns < t || pk.sent_ns >= until - 20'000'000 || pk.arrived_ns < 0) continue;
      bool n = is_new((pk.arrived_ns - pk.sent_ns) / 1e6);
      if (n && in_force < 0) in_force = pk.sent_ns;
      if (!n) in_force = -1;
    }
    if (in_force >= 0) out.push_back((in_force - t) / 1e6);
  }
  return out;
}

// Rate changes 20 <-> 8 Mbit/s every 200 ms under a 30 Mbit/s UDP stream.
std::vector<double> rate_apply_ms(netem::Backend b, const Line& l, int& reorders) {
  LinkParams p;
  p.delay_us = 2'000;
  p.rate_bps = 20'000'000;
  Shaped s(b, l, p);
  const int changes = 12, payload = 1400;
  const double wire_bits = (payload + 8 + 20 + 14) * 8.0;
  OneWayResult res;
  int count = static_cast<int>((0.4 + changes * 0.2) / (payload * 8 / 30e6));
  std::thread stream([&] {
    res = one_way_stream(l.a, l.b, l.b_ip, count, payload * 8 / 30e6, payload, 0.3, 0.001);
  });
  std::vector<std::pair<int64_t, std::pair<double, double>>> asked;  // t, {old, new} bit/s
  sleep_s(0.3);
  for (int i = 0; i < changes; ++i) {
    LinkParams q = p;
    q.rate_bps = i % 2 == 0 ? 8'000'000 : 20'000'000;
    double old_bps = static_cast<double>(s.was.rate_bps), new_bps = static_cast<double>(q.rate_bps);
    asked.push_back({s.change(q), {old_bps, new_bps}});
    sleep_s(0.2);
  }
  stream.join();
  reorders += res.reorders();
  std::vector<int64_t> arrivals;
  for (const auto& pk : res.packets)
    if (pk.arrived_ns >= 0) arrivals.push_back(pk.arrived_ns);
  std::sort(arrivals.begin(), arrivals.end());
  std::vector<double> out;
  for (size_t i = 0; i < asked.size(); ++i) {
    auto [t, r] = asked[i];
    int64_t until = i + 1 < asked.size() ? asked[i + 1].first : arrivals.back() - 50'000'000;
    auto [old_bps, new_bps] = r;
    double mid_gap_ns = (wire_bits / old_bps + wire_bits / new_bps) / 2 * 1e9;
    // A gap of the new rate's kind, held over the next 8 gaps (a burst from tbf's refilled
    // bucket has short gaps: on an increase they would pass for the new rate too early,
    // so on an increase the 8 gaps' mean must be the new rate's, not shorter than half).
    int64_t in_force = -1;
    for (size_t k = 0; k + 9 < arrivals.size(); ++k) {
      if (arrivals[k] < t || arrivals[k + 9] >= until) continue;
      double mean_gap = (arrivals[k + 8] - arrivals[k]) / 8.0;
      bool is_new = new_bps < old_bps
                        ? mean_gap > mid_gap_ns
                        : mean_gap < mid_gap_ns && mean_gap > 0.5e9 * wire_bits / new_bps;
      if (is_new) {
        in_force = arrivals[k];
        break;
      }
    }
    if (in_force >= 0) out.push_back((in_force - t) / 1e6);
  }
  return out;
}

// The synthetic trace, written where load_trace_csv reads it.
std::vector<topo::WanChange> synthetic_trace() {
  std::string path = "/tmp/xdc-bench-trace-" + std::to_string(getpid()) + ".csv";
  {
    std::ofstream out(path);
    out << "t_ms,delay_ms,rate_mbit,loss_pct\n";
    for (int i = 0; i < 60; ++i)
      out << i * 10'000 << "," << std::round(200 + 150 * std::sin(i * 2 * M_PI / 20)) / 10 << ","
          << std::round(25 + 15 * std::sin(i * 2 * M_PI / 15 + 1)) << ",0\n";
  }
  auto steps = topo::load_trace_csv(path, 100);
  std::remove(path.c_str());
  return steps;
}

nlohmann::json trace_replay(netem::Backend b, const Line& l, int& reorders) {
  const auto trace = synthetic_trace();
  const int64_t step_ns = 100'000'000;
  auto params_of = [](const topo::WanChange& c) {
    LinkParams p;
    p.delay_us = *c.delay_us;
    p.rate_bps = *c.rate_bps;
    return p;
  };
  // Replays the trace while `stream` runs; returns each step's start (CLOCK_REALTIME).
  auto replay = [&](auto stream_fn) {
    Shaped s(b, l, params_of(trace[0]));
    OneWayResult res;
    std::thread stream([&] { res = stream_fn(); });
    sleep_s(0.3);
    std::vector<int64_t> starts;
    auto t0 = std::chrono::steady_clock::now();
    for (const auto& c : trace) {
      std::this_thread::sleep_until(t0 + std::chrono::microseconds(c.at_us));
      starts.push_back(s.change(params_of(c)));
    }
    stream.join();
    reorders += res.reorders();
    return std::make_pair(starts, res);
  };
  const double total_s = 0.3 + 60 * 0.1 + 0.2;
  // Delay: probes every 1 ms.
  auto [d_starts, d_res] = replay(
      [&] { return one_way_stream(l.a, l.b, l.b_ip, int(total_s / 0.001), 0.001, 32, 0.3); });
  double d_sq = 0;
  int d_n = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    double cfg = *trace[i].delay_us / 1e3;
    double before = i ? *trace[i - 1].delay_us / 1e3 : cfg;
    int64_t from = d_starts[i] + static_cast<int64_t>((std::max(0.0, before - cfg) + 1) * 1e6);
    int64_t to = i + 1 < trace.size() ? d_starts[i + 1] : d_starts[i] + step_ns;
    std::vector<double> owd;
    for (const auto& pk : d_res.packets)
      if (pk.sent_ns >= from && pk.sent_ns < to && pk.arrived_ns >= 0)
        owd.push_back((pk.arrived_ns - pk.sent_ns) / 1e6);
    if (owd.empty()) continue;
    d_sq += std::pow(percentile(owd, 0.5) - cfg, 2);
    ++d_n;
  }
  // Rate: 1400-byte datagrams at 50 Mbit/s, above every row's rate.
  const int payload = 1400;
  const double interval = payload * 8 / 50e6, wire_bits = (payload + 8 + 20 + 14) * 8.0;
  auto [r_starts, r_res] = replay([&] {
    return one_way_stream(l.a, l.b, l.b_ip, int(total_s / interval), interval, payload, 0.3, 0.001);
  });
  double r_sq = 0;
  int r_n = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    int64_t from = r_starts[i] + 10'000'000;
    int64_t to = i + 1 < trace.size() ? r_starts[i + 1] : r_starts[i] + step_ns;
    int got = 0;
    for (const auto& pk : r_res.packets) got += pk.arrived_ns >= from && pk.arrived_ns < to;
    double measured = got * wire_bits / ((to - from) / 1e9), cfg = double(*trace[i].rate_bps);
    r_sq += std::pow(measured / cfg - 1, 2);
    ++r_n;
  }
  return {{"points", static_cast<int>(trace.size())},
          {"delay_rmse_ms", d_n ? std::sqrt(d_sq / d_n) : -1},
          {"rate_rmse_pct", r_n ? 100 * std::sqrt(r_sq / r_n) : -1},
          {"delay_points_measured", d_n},
          {"step_ms", step_ns / 1e6},
          {"compress", 100}};
}

nlohmann::json delay_changes_under_tcp(netem::Backend b, const Line& l, int& reorders) {
  LinkParams p;
  p.delay_us = 10'000;
  p.rate_bps = 50'000'000;
  p.queue_pkts = 2000;
  Shaped s(b, l, p);
  nl::write_sysctl(l.b, "net/ipv4/tcp_rmem", "4096 131072 2097152");
  big_tcp_buffers(l.a);
  IperfResult tcp;
  OneWayResult probe;
  std::thread flow([&] { tcp = iperf_tcp(l.a, l.b, l.b_ip, 5, 0); });
  std::thread stream([&] { probe = one_way_stream(l.a, l.b, l.b_ip, 5000, 0.001, 32, 0.5); });
  int changes = 0;
  for (uint64_t d : {60'000, 5'000, 40'000, 10'000, 60'000, 5'000, 40'000, 10'000}) {
    sleep_s(0.5);
    LinkParams q = s.was;
    q.delay_us = d;
    s.change(q);
    ++changes;
  }
  flow.join();
  stream.join();
  netem::ShapeCounters c = netem::shape_counters(s.r);
  reorders += probe.reorders();
  uint64_t counted = c.loss_drops + c.delay_queue_drops + c.rate_queue_drops;
  return {{"changes", changes},
          {"drops", counted + static_cast<uint64_t>(probe.lost()) +
                        static_cast<uint64_t>(std::max(0L, tcp.retransmits))},
          {"counted_drops", counted},
          {"probe_lost", probe.lost()},
          {"probe_reorders", probe.reorders()},
          {"tcp_retransmits", tcp.retransmits},
          {"tcp_goodput_mbit", tcp.goodput_bps / 1e6},
          {"tcp_error", tcp.error}};
}

nlohmann::json rate_decrease_json(netem::Backend b, const Line& l) {
  const RateDecrease r = rate_decrease_under_tcp(b, l);
  const netem::ShapeCounters &before = r.before, &c = r.after;
  return {{"overflow_drops", c.rate_queue_drops - before.rate_queue_drops},
          {"other_drops",
           (c.loss_drops + c.delay_queue_drops) - (before.loss_drops + before.delay_queue_drops)},
          {"tcp_retransmits", r.tcp.retransmits},
          {"tcp_goodput_mbit", r.tcp.goodput_bps / 1e6},
          {"tcp_error", r.tcp.error}};
}

}  // namespace
}  // namespace xdc::testbed

namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in, nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

int flap_figures(const std::string& run_dir, int rc, const std::string& out) {
  std::vector<double> iters;
  std::ifstream csv(run_dir + "/iterations.csv");
  std::string line;
  std::getline(csv, line);  // schedule,iteration,iteration_s,...
  while (std::getline(csv, line)) {
    size_t a = line.find(','), b = line.find(',', a + 1), c = line.find(',', b + 1);
    if (b != std::string::npos) iters.push_back(std::stod(line.substr(b + 1, c - b - 1)));
  }
  int64_t down_ns = 0, up_ns = 0;
  for (const auto& e : read_json(run_dir + "/1f1b/events.json")) {
    if (e.value("link", "") != "east->west") continue;
    if (e["kind"] == "link_down") down_ns = e["t_ns"];
    if (e["kind"] == "link_up") up_ns = e["t_ns"];
  }
  std::vector<double> sorted = iters;
  std::sort(sorted.begin(), sorted.end());
  nlohmann::json flap = {
      {"down_s", up_ns > down_ns && down_ns ? (up_ns - down_ns) / 1e9 : -1},
      {"run_exit", rc},
      {"iterations_done", iters.size()},
      {"stall_s", sorted.empty() ? -1 : sorted.back() - sorted[sorted.size() / 2]},
      {"iteration_s", iters},
      {"experiment", "tests/run/flap.yaml"}};
  std::printf("  flap              %s\n", flap.dump().c_str());
  nlohmann::json j = read_json(out);
  j["flap"] = flap;
  std::ofstream(out) << j.dump(2) << "\n";
  return 0;
}

int partition_figures(const std::string& run_dir, int rc, const std::string& out) {
  nlohmann::json summary = read_json(run_dir + "/summary.json");
  std::string message;
  for (const auto& sc : summary.value("schedules", nlohmann::json::array()))
    if (!sc.value("ok", true)) message = sc.value("error", "");
  nlohmann::json partition = {
      {"run_exit", rc}, {"message", message}, {"experiment", "tests/run/partition.yaml"}};
  std::printf("  partition         %s\n", partition.dump().c_str());
  nlohmann::json j = read_json(out);
  j["partition"] = partition;
  std::ofstream(out) << j.dump(2) << "\n";
  return 0;
}

// experiments/flap.yaml (a 2 s cut when iteration 5 starts) or experiments/trace-wan.yaml:
// the run's exit, its iterations measured and predicted with the same changes, and for
// the flap the cut iteration's prediction error.
int run_series_figures(const std::string& key, const std::string& experiment,
                       const std::string& run_dir, int rc, const std::string& out) {
  nlohmann::json summary = read_json(run_dir + "/summary.json");
  nlohmann::json sc = summary.value("schedules", nlohmann::json::array()).empty()
                          ? nlohmann::json::object()
                          : summary["schedules"][0];
  const std::vector<double> measured = sc.value("iteration_s", std::vector<double>{});
  std::vector<double> simulated;
  if (sc.contains("simulated_series"))
    simulated = sc["simulated_series"].value("iteration_s", std::vector<double>{});
  nlohmann::json f = {{"run_exit", rc},
                      {"iterations_done", measured.size()},
                      {"iteration_s", measured},
                      {"simulated_iteration_s", simulated},
                      {"changes_applied", sc.value("changes", nlohmann::json::array()).size()},
                      {"experiment", experiment}};
  if (!measured.empty() && measured.size() == simulated.size()) {
    const size_t worst =
        static_cast<size_t>(std::max_element(measured.begin(), measured.end()) - measured.begin());
    f["slowest_iteration"] = worst;
    f["slowest_measured_s"] = measured[worst];
    f["slowest_simulated_s"] = simulated[worst];
    f["slowest_error_pct"] = 100 * (simulated[worst] - measured[worst]) / measured[worst];
    double m = 0, sm = 0;
    for (size_t i = 0; i < measured.size(); ++i) m += measured[i], sm += simulated[i];
    f["mean_measured_s"] = m / static_cast<double>(measured.size());
    f["mean_simulated_s"] = sm / static_cast<double>(measured.size());
  }
  std::printf("  %-17s %s\n", key.c_str(), f.dump().c_str());
  nlohmann::json j = read_json(out);
  j[key] = f;
  std::ofstream(out) << j.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xdc;
  if (argc == 5 && std::string(argv[1]) == "--flap")
    return flap_figures(argv[2], std::atoi(argv[3]), argv[4]);
  if (argc == 5 && std::string(argv[1]) == "--flap-event")
    return run_series_figures("flap_event", "experiments/flap.yaml", argv[2], std::atoi(argv[3]),
                              argv[4]);
  if (argc == 5 && std::string(argv[1]) == "--trace-wan")
    return run_series_figures("trace_wan", "experiments/trace-wan.yaml", argv[2],
                              std::atoi(argv[3]), argv[4]);
  if (argc == 5 && std::string(argv[1]) == "--partition")
    return partition_figures(argv[2], std::atoi(argv[3]), argv[4]);
  if (argc != 4 || std::string(argv[1]) != "--backend") {
    std::fprintf(stderr, "usage: bench_dynamic --backend userspace|kernel OUT.json\n");
    return 2;
  }
  std::string name = argv[2], out = argv[3];
  netem::Backend b = name == "kernel" ? netem::Backend::kKernel : netem::Backend::kUserspace;
  std::string why;
  if (b == netem::Backend::kKernel && !netem::kernel_has_netem(&why)) {
    std::fprintf(stderr, "bench_dynamic: this kernel has no sch_netem (%s)\n", why.c_str());
    return 1;
  }
  testbed::Line line("dyn");
  int reorders = 0;
  auto delay_ms = testbed::delay_apply_ms(b, line, reorders);
  auto rate_ms = testbed::rate_apply_ms(b, line, reorders);
  auto tcp_delay = testbed::delay_changes_under_tcp(b, line, reorders);
  auto tcp_rate = testbed::rate_decrease_json(b, line);
  auto trace = testbed::trace_replay(b, line, reorders);
  nlohmann::json apply = {
      {"delay_p50", testbed::percentile(delay_ms, 0.5)},
      {"delay_max", delay_ms.empty() ? -1 : *std::max_element(delay_ms.begin(), delay_ms.end())},
      {"rate_p50", testbed::percentile(rate_ms, 0.5)},
      {"rate_max", rate_ms.empty() ? -1 : *std::max_element(rate_ms.begin(), rate_ms.end())}};
  nlohmann::json artefacts = {{"delay_change_drops", tcp_delay["drops"]},
                              {"reorders", reorders},
                              {"rate_decrease_overflow_drops", tcp_rate["overflow_drops"]},
                              {"rate_decrease_other_drops", tcp_rate["other_drops"]}};
  utsname u{};
  uname(&u);
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  nlohmann::json figures = {{"change_apply_ms", apply},
                            {"change_artefacts", artefacts},
                            {"trace_replay", trace},
                            {"detail",
                             {{"delay_apply_ms", testbed::apply_summary(delay_ms)},
                              {"rate_apply_ms", testbed::apply_summary(rate_ms)},
                              {"delay_changes_under_tcp", tcp_delay},
                              {"rate_decrease_under_tcp", tcp_rate}}},
                            {"kernel", u.release},
                            {"loadavg_1m", load[0]}};
  std::printf("bench_dynamic %s (kernel %s, load %.1f)\n", name.c_str(), u.release, load[0]);
  std::printf("  change_apply_ms   %s\n", apply.dump().c_str());
  std::printf("  change_artefacts  %s\n", artefacts.dump().c_str());
  std::printf("  trace_replay      %s\n", trace.dump().c_str());
  std::printf("  under TCP         delay changes %s\n                    rate decrease %s\n",
              tcp_delay.dump().c_str(), tcp_rate.dump().c_str());

  nlohmann::json j = nlohmann::json::object();
  if (std::ifstream in(out); in) {
    j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object()) j = nlohmann::json::object();
  }
  j["backends"][name] = figures;
  if (name == "userspace" || !j["backends"].contains("userspace")) {
    j["backend"] = name;
    j["change_apply_ms"] = apply;
    j["change_artefacts"] = artefacts;
    j["trace_replay"] = trace;
  }
  std::ofstream(out) << j.dump(2) << "\n";
  return 0;
}
