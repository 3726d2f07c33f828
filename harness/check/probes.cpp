#include "harness/check/probes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <regex>
#include <stdexcept>
#include <thread>

#include "common/number_text.h"
#include "harness/process/process.h"

namespace xdc::check {
namespace {

constexpr int kIperfPort = 5201;

// Runs an iperf3 client against a one-shot server in `to`; retries while the server
// is still starting, and, with a new server, up to twice a run whose report has no
// end.<needed> (a run cut short on a busy host ends without its summary). Returns
// iperf3's JSON report.
nlohmann::json iperf(const std::string& net, const std::string& from, const std::string& to,
                     std::vector<std::string> client_args, double budget_s, const char* needed) {
  std::vector<std::string> argv{"iperf3", "-J", "-p", std::to_string(kIperfPort)};
  argv.insert(argv.end(), client_args.begin(), client_args.end());
  auto timeout = std::chrono::milliseconds(static_cast<long>(budget_s * 1000) + 20000);
  std::string incomplete;
  for (int run = 0; run < 3; ++run) {
    proc::Background server(
        proc::in_host(net, to, {"iperf3", "-s", "-1", "-p", std::to_string(kIperfPort)}));
    for (int attempt = 0;; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(attempt == 0 ? 150 : 300));
      proc::Result r = proc::run(proc::in_host(net, from, argv), timeout);
      auto j = nlohmann::json::parse(r.out, nullptr, false);
      if (r.exit_code == 0 && !j.is_discarded()) {
        if (j.contains("end") && j["end"].contains(needed)) return j;
        const auto e = j.find("error");
        incomplete = fmt::format(
            "its report has no end.{}{}", needed,
            e != j.end() && e->is_string() ? " (" + e->get<std::string>() + ")" : std::string());
        break;
      }
      std::string err = j.is_discarded() ? r.err : j.value("error", r.err);
      if (attempt < 10 && err.find("onnection refused") != std::string::npos) continue;
      throw std::runtime_error(fmt::format("iperf3 {} -> {} failed: {}", from, to, err));
    }
  }
  throw std::runtime_error(fmt::format("iperf3 {} -> {}: 3 runs, {}", from, to, incomplete));
}

}  // namespace

RttStats summarize_rtts(std::vector<double> s, int sent) {
  RttStats r;
  r.sent = sent;
  r.received = static_cast<int>(s.size());
  if (s.empty()) return r;
  std::sort(s.begin(), s.end());
  auto q = [&](double p) { return s[std::min(s.size() - 1, static_cast<size_t>(p * s.size()))]; };
  r.min_ms = s.front();
  r.median_ms = s.size() % 2 ? s[s.size() / 2] : (s[s.size() / 2 - 1] + s[s.size() / 2]) / 2;
  r.p99_ms = q(0.99);
  r.mean_ms = std::accumulate(s.begin(), s.end(), 0.0) / s.size();
  double var = 0;
  for (double v : s) var += (v - r.mean_ms) * (v - r.mean_ms);
  r.stdev_ms = s.size() > 1 ? std::sqrt(var / (s.size() - 1)) : 0;
  return r;
}

std::vector<double> parse_ping_rtts(const std::string& out) {
  static const std::regex re(R"(time=([0-9.]+) ms)");
  std::vector<double> v;
  for (std::sregex_iterator it(out.begin(), out.end(), re), end; it != end; ++it)
    v.push_back(std::stod((*it)[1]));
  return v;
}

std::vector<double> ping_rtts(const std::string& net, const std::string& from,
                              const std::string& to_ip, int count, double interval_ms) {
  std::vector<std::string> argv{
      "ping", "-n", "-c", std::to_string(count), "-i", format_general(interval_ms / 1000.0),
      "-W",   "2",  to_ip};
  double budget_ms = count * interval_ms + 5000;
  proc::Result r = proc::run(proc::in_host(net, from, argv),
                             std::chrono::milliseconds(static_cast<long>(budget_ms)));
  if (r.exit_code != 0 && r.exit_code != 1)  // 1 = some replies missing, still measured
    throw std::runtime_error(fmt::format("ping {} -> {} failed: {}", from, to_ip, r.err));
  return parse_ping_rtts(r.out);
}

RttStats ping(const std::string& net, const std::string& from, const std::string& to_ip, int count,
              double interval_ms) {
  return summarize_rtts(ping_rtts(net, from, to_ip, count, interval_ms), count);
}

TcpResult tcp_goodput(const std::string& net, const std::string& from, const std::string& to,
                      const std::string& to_ip, double seconds, double omit_s,
                      const std::string& congestion, int flows) {
  std::vector<std::string> args{
      "-c", to_ip, "-t", format_general(seconds), "-O", format_general(omit_s)};
  if (!congestion.empty()) args.insert(args.end(), {"-C", congestion});
  if (flows > 1) args.insert(args.end(), {"-P", std::to_string(flows)});
  auto j = iperf(net, from, to, args, seconds + omit_s, "sum_received");
  TcpResult r;
  r.goodput_mbit = j.at("end").at("sum_received").at("bits_per_second").get<double>() / 1e6;
  r.retransmits = j.at("end").at("sum_sent").value("retransmits", 0);
  r.bytes_sent = j.at("end").at("sum_sent").value("bytes", 0.0);
  return r;
}

UdpLoss udp_loss(const std::string& net, const std::string& from, const std::string& to,
                 const std::string& to_ip, long packets, double rate_mbit) {
  const int size = 200;
  auto j = iperf(net, from, to,
                 // A large receive buffer: a busy core must not turn into socket drops.
                 {"-c", to_ip, "-u", "-w", "2M", "-l", std::to_string(size), "-b",
                  format_general(rate_mbit) + "M", "-k", std::to_string(packets)},
                 packets * size * 8 / (rate_mbit * 1e6), "sum");
  UdpLoss r;
  const auto& sum = j.at("end").at("sum");
  r.sent = sum.value("packets", 0L);
  r.lost = sum.value("lost_packets", 0L);
  return r;
}

}  // namespace xdc::check
