// xdc-bench-wan: does TCP cross the emulated WAN as it would cross a real one with the
// same loss? (scripts/bench_wan.sh; the "tcp_loss" figures.)
//
// For each point (round trip, random loss per direction, congestion control) a two-DC
// network is built by the network builder (one host per DC, 1 gbit, delay = RTT / 2 each
// way, the loss on both directions, stock TCP as the topology gives it) and measured:
//  - goodput: one iperf3 flow (`-C <congestion>`) east -> west, median of `runs`;
//  - reference: the same flows (alternating with the others) with every segmentation
//    offload (TSO, GSO, GRO) switched off on the hosts and the gateways, so that every wire packet
//    is a packet on every hop and any loss decision sees it; this does not share the delay line's
//    assumptions about aggregates;
//  - model: Mathis et al. as the simulator's TCP model has it (sim::tcp_loss_limited_bps),
//    capped at the rate (for Reno; a yardstick of the order, not a target);
//  - loss two ways: ping (a round trip crosses the loss twice: 1 - (1 - p)^2) and TCP's
//    own retransmissions per segment sent (the data direction's p), each against the
//    configured rate within 3 sigma.
//
//   xdc-bench-wan [--quick] [--point RTT_MS,LOSS_PCT,CC]... [--merge FILE]... OUT.json
// --quick: one run of 4 s per point and three points (a smoke run); --point: only these
// points (e.g. 40,0.1,cubic), measured in full; --seconds: per flow (default 8). --merge adds the
// top-level keys of another JSON file (the kernel backend's and dilation's figures).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "harness/check/probes.h"
#include "harness/network/builder.h"
#include "harness/network/names.h"
#include "harness/network/teardown.h"
#include "harness/process/process.h"
#include "harness/sim/tcp_model.h"
#include "harness/topology/topology.h"
#include "netem/nl/netns.h"
#include "netem/shaper/shaper.h"

namespace {

using nlohmann::json;
using namespace xdc;

struct Point {
  double rtt_ms, loss_pct;
  std::string congestion;
};

constexpr double kRateMbit = 1000;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double mathis_mbit(double rtt_ms, double loss_pct) {
  const double bps = sim::tcp_loss_limited_bps(std::llround(rtt_ms * 1e6), loss_pct / 100);
  return std::min(bps / 1e6, kRateMbit);
}

std::string topology_yaml(const Point& p) {
  return fmt::format(
      "name: wanbench\n"
      "dcs:\n  - {{name: east, hosts: 1}}\n  - {{name: west, hosts: [w1]}}\n"
      "wan:\n  - between: [east, west]\n    delay: {}us\n    loss: {}%\n    rate: {}mbit\n",
      static_cast<long>(p.rtt_ms * 500), p.loss_pct, kRateMbit);
}

std::vector<std::string> interfaces(const std::string& ns) {
  auto r = proc::run({"ip", "-n", ns, "-o", "link", "show"}, std::chrono::seconds(10));
  std::vector<std::string> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    // "2: eth0@if7: <...>": the name ends at '@' or ':'.
    auto a = line.find(": ");
    if (a == std::string::npos) continue;
    auto name = line.substr(a + 2);
    name = name.substr(0, name.find_first_of("@:"));
    if (name != "lo") out.push_back(name);
  }
  return out;
}

// The segmentation offloads (TSO, GSO, GRO) of every interface of the hosts and gateways:
// all off for the reference, or back as the network was built. The runs alternate, so
// that a change of load on the machine falls on both sides alike.
class Offloads {
 public:
  explicit Offloads(const net::NetworkState& s) {
    std::vector<std::string> nss;
    for (auto& h : s.hosts) nss.push_back(h.ns);
    for (auto& dc : s.dcs) nss.push_back(net::gateway_ns(s.name, dc));
    for (auto& ns : nss)
      for (auto& ifname : interfaces(ns)) {
        auto r = run(ns, {"-k", ifname});
        Interface i{ns, ifname, {}};
        for (const char* f : {"tcp-segmentation-offload", "generic-segmentation-offload",
                              "generic-receive-offload"})
          i.built.push_back(r.out.find(std::string(f) + ": on") != std::string::npos ? "on"
                                                                                     : "off");
        ifs_.push_back(i);
      }
  }
  void set(bool all_off) {
    for (auto& i : ifs_) {
      auto v = [&](int k) { return all_off ? std::string("off") : i.built[k]; };
      auto r = run(i.ns, {"-K", i.ifname, "tso", v(0), "gso", v(1), "gro", v(2)});
      if (r.exit_code != 0 && r.err.find("Could not change any") == std::string::npos)
        throw std::runtime_error(fmt::format("ethtool -K {} in {}: {}", i.ifname, i.ns, r.err));
    }
  }

 private:
  struct Interface {
    std::string ns, ifname;
    std::vector<std::string> built;  // tso, gso, gro as built
  };
  static proc::Result run(const std::string& ns, std::vector<std::string> args) {
    std::vector<std::string> argv{"ip", "netns", "exec", ns, "ethtool"};
    argv.insert(argv.end(), args.begin(), args.end());
    return proc::run(argv, std::chrono::seconds(10));
  }
  std::vector<Interface> ifs_;
};

// Mean bytes per packet the delay lines of the network saw (wire packets: <= 1514).
json delayline_counters(const net::NetworkState& s) {
  json out = json::object();
  for (auto& l : s.links) {
    if (l.backend != "userspace") continue;
    json st = netem::delayline_stats(netem::ShapeRecord::from_json(l.record));
    if (st.empty()) continue;
    double pkts = st.value("packets", 0.0);
    out[l.from + "->" + l.to] = {{"packets", st.value("packets", 0)},
                                 {"dropped", st.value("dropped", 0)},
                                 {"bytes_per_packet", pkts ? st.value("bytes", 0.0) / pkts : 0}};
  }
  return out;
}

// Tcp: OutSegs (new data) and RetransSegs of /proc/net/snmp inside a host's namespace.
struct SegmentCounters {
  double out = 0, retrans = 0;
};
SegmentCounters segment_counters(const std::string& netns) {
  const auto c = nl::net_counters(netns, "snmp", "Tcp");
  return {c.at("OutSegs"), c.at("RetransSegs")};
}

json within_3_sigma(double measured_pct, double expected_pct, double n) {
  double p = expected_pct / 100;
  double sigma_pct = 100 * std::sqrt(p * (1 - p) / std::max(n, 1.0));
  bool ok = std::abs(measured_pct - expected_pct) <= 3 * sigma_pct;
  return {{"measured_pct", measured_pct},
          {"expected_pct", expected_pct},
          {"sigma_pct", sigma_pct},
          {"samples", n},
          {"ok", ok}};
}

json measure(const Point& p, int runs, double seconds, int index) {
  auto topo = topo::parse_topology(topology_yaml(p), "<bench point>");
  net::BuildOptions b;
  b.name = fmt::format("wanb{}", index);
  net::teardown_network(b.name);  // what a killed earlier run of this benchmark left
  net::NetworkState s = net::build_network(topo, b);
  struct Down {
    std::string name;
    ~Down() {
      if (std::string left = net::teardown_or_error(name); !left.empty())
        fmt::print(stderr, "bench_wan: {} (xdc down {})\n", left, name);
    }
  } down{s.name};
  const auto* src = s.find_host("east-h1");
  const auto* dst = s.find_host("w1");

  // The sender's kernel counters around each flow: segments sent (OutSegs counts new
  // data, RetransSegs the retransmitted ones), so a retransmission rate per segment.
  struct Side {
    std::vector<double> mbit;
    json runs = json::array();
    double retrans = 0, segments = 0;
  };
  auto flow = [&](Side& side) {
    {
      SegmentCounters before = segment_counters(src->ns);
      auto t =
          check::tcp_goodput(s.name, src->name, dst->name, dst->data_ip, seconds, 0, p.congestion);
      SegmentCounters after = segment_counters(src->ns);
      double out_segs = after.out - before.out, re_segs = after.retrans - before.retrans;
      side.mbit.push_back(t.goodput_mbit);
      side.retrans += re_segs;
      side.segments += out_segs + re_segs;
      side.runs.push_back({{"goodput_mbit", t.goodput_mbit},
                           {"segments", out_segs + re_segs},
                           {"retransmitted_segments", re_segs}});
    }
  };

  json out = {{"rtt_ms", p.rtt_ms},
              {"loss_pct", p.loss_pct},
              {"congestion", p.congestion},
              {"rate_mbit", kRateMbit},
              {"seconds", seconds}};
  out["backend"] = s.links.empty() ? "none" : s.links.front().backend;
  // Ping across both lossy directions. ping keeps only a few probes in flight (about
  // 6 / RTT per second here): space them by a quarter of the round trip, at least 10 ms.
  const int pings = runs > 1 ? 500 : 200;
  auto rtt = check::ping(s.name, src->name, dst->data_ip, pings, std::max(10.0, p.rtt_ms / 4));
  double q = 1 - std::pow(1 - p.loss_pct / 100, 2);
  out["ping_loss"] =
      within_3_sigma(100.0 * (rtt.sent - rtt.received) / rtt.sent, 100 * q, rtt.sent);

  Side xdc, ref;
  Offloads offloads(s);
  for (int r = 0; r < runs; ++r) {
    flow(xdc);
    // What the delay lines decided on while the hosts' offloads were as built.
    if (r == 0) out["delay_lines"] = delayline_counters(s);
    offloads.set(true);
    flow(ref);
    offloads.set(false);
  }
  out["goodput_mbit"] = median(xdc.mbit);
  out["runs"] = xdc.runs;
  out["tcp_retransmission_loss"] =
      within_3_sigma(xdc.segments ? 100 * xdc.retrans / xdc.segments : 0, p.loss_pct, xdc.segments);
  out["reference_mbit"] = median(ref.mbit);
  out["reference_runs"] = ref.runs;
  out["reference_retransmission_pct"] = ref.segments ? 100 * ref.retrans / ref.segments : 0;
  out["model_mbit"] = mathis_mbit(p.rtt_ms, p.loss_pct);
  double ref_mbit = out["reference_mbit"].get<double>();
  double ratio = ref_mbit > 0 ? out["goodput_mbit"].get<double>() / ref_mbit : 0;
  out["ratio_to_reference"] = ratio;
  out["within_25pct"] = ratio >= 0.75 && ratio <= 1.25;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // A probe's pipe closing early must fail that probe, not kill the benchmark.
  std::signal(SIGPIPE, SIG_IGN);
  bool quick = false;
  std::vector<std::string> merge;
  std::vector<Point> only;
  double seconds_given = 0;
  std::string out_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else if (a == "--point" && i + 1 < argc) {
      Point p{};
      char cc[32] = "";
      if (std::sscanf(argv[++i], "%lf,%lf,%31s", &p.rtt_ms, &p.loss_pct, cc) != 3) {
        std::cerr << "xdc-bench-wan: --point RTT_MS,LOSS_PCT,CONGESTION, got " << argv[i] << "\n";
        return 2;
      }
      p.congestion = cc;
      only.push_back(p);
    } else if (a == "--seconds" && i + 1 < argc)
      seconds_given = std::atof(argv[++i]);
    else if (a == "--merge" && i + 1 < argc)
      merge.push_back(argv[++i]);
    else if (!a.empty() && a[0] != '-' && out_path.empty())
      out_path = a;
    else {
      std::cerr << "usage: xdc-bench-wan [--quick] [--point RTT_MS,LOSS_PCT,CC]... [--seconds S] "
                   "[--merge FILE]... OUT.json\n";
      return 2;
    }
  }
  if (out_path.empty()) out_path = "results/bench/wan.json";

  std::vector<Point> points;
  if (!only.empty()) {
    points = only;
  } else if (quick) {
    points = {{40, 0.1, "cubic"}, {40, 1, "cubic"}, {40, 1, "bbr"}};
  } else {
    for (double rtt : {10.0, 40.0, 160.0})
      for (double loss : {0.01, 0.1, 1.0}) points.push_back({rtt, loss, "cubic"});
    points.push_back({40, 1, "bbr"});
  }
  const int runs = quick ? 1 : 3;
  const double seconds = seconds_given > 0 ? seconds_given : quick ? 4 : 8;

  json result = json::object();
  result["tcp_loss"] = json::array();
  try {
    for (size_t i = 0; i < points.size(); ++i) {
      const Point& p = points[i];
      std::cerr << fmt::format("[{}/{}] RTT {} ms, loss {}%, {} ...\n", i + 1, points.size(),
                               p.rtt_ms, p.loss_pct, p.congestion);
      // At 0.01% an 8 s flow holds a handful of loss events and one run differs from the
      // next by up to 2x (measured): such points get 20 s flows.
      const double flow_s = seconds_given > 0 || quick ? seconds : p.loss_pct <= 0.01 ? 20 : 8;
      json r = measure(p, runs, flow_s, static_cast<int>(i));
      std::cerr << fmt::format(
          "    goodput {:.1f} Mbit/s, reference (offloads off) {:.1f}, Mathis {:.1f}, ratio "
          "{:.2f}{}; loss: ping {:.3f}% (expect {:.3f}%{}), TCP retransmissions {:.3f}% "
          "(expect {:.3f}%{})\n",
          r["goodput_mbit"].get<double>(), r["reference_mbit"].get<double>(),
          r["model_mbit"].get<double>(), r["ratio_to_reference"].get<double>(),
          r["within_25pct"].get<bool>() ? "" : " OUTSIDE +-25%",
          r["ping_loss"]["measured_pct"].get<double>(),
          r["ping_loss"]["expected_pct"].get<double>(),
          r["ping_loss"]["ok"].get<bool>() ? "" : ", OUTSIDE 3 sigma",
          r["tcp_retransmission_loss"]["measured_pct"].get<double>(),
          r["tcp_retransmission_loss"]["expected_pct"].get<double>(),
          r["tcp_retransmission_loss"]["ok"].get<bool>() ? "" : ", OUTSIDE 3 sigma");
      result["tcp_loss"].push_back(r);
    }
  } catch (const std::exception& ex) {
    std::cerr << "xdc-bench-wan: " << ex.what() << "\n";
    return 1;
  }
  for (auto& f : merge) {
    std::ifstream in(f);
    json j = json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      std::cerr << "xdc-bench-wan: " << f << ": not a JSON object, not merged\n";
      continue;
    }
    for (auto& [k, v] : j.items()) result[k] = v;
  }
  std::filesystem::path out(out_path);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  std::ofstream(out) << result.dump(2) << "\n";
  std::cout << result.dump(2) << "\n";
  return 0;
}
