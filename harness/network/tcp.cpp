#include "harness/network/tcp.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include "common/private_dir.h"
#include "harness/network/names.h"
#include "harness/network/teardown.h"
#include "netem/nl/netns.h"

namespace xdc::net {
namespace fs = std::filesystem;
using nlohmann::json;
namespace {

const char* const kCongestion = "net/ipv4/tcp_congestion_control";
const char* const kAllowed = "net/ipv4/tcp_allowed_congestion_control";
const char* const kAvailable = "net/ipv4/tcp_available_congestion_control";
const char* const kRmem = "net/ipv4/tcp_rmem";
const char* const kWmem = "net/ipv4/tcp_wmem";
const char* const kSlowStart = "net/ipv4/tcp_slow_start_after_idle";
const char* const kEcn = "net/ipv4/tcp_ecn";

// Stock Linux's first two fields of tcp_rmem / tcp_wmem (min, default).
constexpr uint64_t kMinBytes = 4096, kRmemDefault = 131072, kWmemDefault = 16384;

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& w : v) s += (s.empty() ? "" : " ") + w;
  return s;
}

// "4096 131072 6291456": min, default (at most max), max.
std::string buffer_triple(uint64_t default_bytes, uint64_t max_bytes) {
  return fmt::format("{} {} {}", kMinBytes, std::min(default_bytes, max_bytes), max_bytes);
}

json load_allowed_file() {
  std::ifstream in(kAllowedFile);
  if (!in) return json::object();
  try {
    return json::parse(in);
  } catch (const std::exception&) {
    return json::object();  // unreadable: treated as absent, the list is not touched back
  }
}

void save_allowed_file(const json& j) {
  make_private_dir(kStateRoot, true);
  write_private_file(kAllowedFile, j.dump(2) + "\n");
}

// Adds `algo` to the root's allowed list, remembering the list as it was first. The record
// is written before the change, so that no change is ever left unrecorded.
void allow_in_root(const std::string& algo) {
  std::vector<std::string> allowed = words(nl::read_sysctl("", kAllowed));
  const json before = load_allowed_file();
  json f = before.contains("original")
               ? before
               : json{{"original", joined(allowed)}, {"added", json::array()}};
  auto added = f["added"].get<std::vector<std::string>>();
  if (std::find(added.begin(), added.end(), algo) == added.end()) f["added"].push_back(algo);
  save_allowed_file(f);
  allowed.push_back(algo);
  try {
    nl::write_sysctl("", kAllowed, joined(allowed));
  } catch (...) {
    if (before.contains("original"))
      save_allowed_file(before);
    else
      fs::remove(kAllowedFile);
    throw;
  }
}

}  // namespace

HostTcp expected_tcp(const topo::TcpSettings& want) {
  return HostTcp{want.congestion, buffer_triple(kRmemDefault, want.rmem_max_bytes),
                 buffer_triple(kWmemDefault, want.wmem_max_bytes), want.slow_start_after_idle,
                 want.ecn};
}

HostTcp read_tcp(const std::string& ns) {
  HostTcp t;
  t.congestion = nl::read_sysctl(ns, kCongestion);
  t.tcp_rmem = joined(words(nl::read_sysctl(ns, kRmem)));
  t.tcp_wmem = joined(words(nl::read_sysctl(ns, kWmem)));
  t.slow_start_after_idle = nl::read_sysctl(ns, kSlowStart) != "0";
  t.ecn = std::stoi(nl::read_sysctl(ns, kEcn));
  return t;
}

RootTcp read_root_tcp() {
  RootTcp r;
  r.tcp = read_tcp("");
  r.allowed = nl::read_sysctl("", kAllowed);
  r.available = nl::read_sysctl("", kAvailable);
  r.rmem_max = std::stoull(nl::read_sysctl("", "net/core/rmem_max"));
  r.wmem_max = std::stoull(nl::read_sysctl("", "net/core/wmem_max"));
  json f = load_allowed_file();
  if (f.contains("original")) {
    r.allowed_original = f.value("original", "");
    r.allowed_added = f.value("added", std::vector<std::string>{});
  }
  return r;
}

HostTcp apply_host_tcp(const std::string& ns, const std::string& host,
                       const topo::TcpSettings& want, const SourcePos& where,
                       std::vector<std::string>* allowed_added) {
  const HostTcp expect = expected_tcp(want);
  auto refused = [&](const std::string& key, const std::string& value, const std::string& why) {
    const bool at_key = key == "congestion" && !want.congestion_pos.file.empty();
    return InputError(
        at_key ? want.congestion_pos : where,
        fmt::format("tcp.{}: the kernel refused \"{}\" on host {}: {}", key, value, host, why));
  };
  auto set = [&](const char* sysctl, const std::string& key, const std::string& value) {
    try {
      nl::write_sysctl(ns, sysctl, value);
    } catch (const std::system_error& e) {
      throw refused(key, value, e.code().message());
    }
  };

  try {
    nl::write_sysctl(ns, kCongestion, want.congestion);
  } catch (const std::system_error& e) {
    const std::string available = nl::read_sysctl("", kAvailable);
    const std::vector<std::string> allowed = words(nl::read_sysctl("", kAllowed));
    const bool listed = std::find(allowed.begin(), allowed.end(), want.congestion) != allowed.end();
    if (e.code().value() != EPERM || listed)
      throw refused("congestion", want.congestion,
                    e.code().value() == ENOENT
                        ? fmt::format("no such congestion control (this kernel has: {})", available)
                        : e.code().message());
    // Available but not permitted in namespaces: permit it in the root, then retry.
    try {
      allow_in_root(want.congestion);
    } catch (const std::system_error& e2) {
      throw refused("congestion", want.congestion,
                    fmt::format("{}, and adding it to the root namespace's "
                                "net.ipv4.tcp_allowed_congestion_control failed: {}",
                                e.code().message(), e2.code().message()));
    }
    allowed_added->push_back(want.congestion);
    set(kCongestion, "congestion", want.congestion);
  }
  set(kRmem, "rmem_max", expect.tcp_rmem);
  set(kWmem, "wmem_max", expect.tcp_wmem);
  set(kSlowStart, "slow_start_after_idle", want.slow_start_after_idle ? "1" : "0");
  set(kEcn, "ecn", std::to_string(want.ecn));

  const HostTcp got = read_tcp(ns);
  auto differs = [&](const std::string& key, const std::string& wrote, const std::string& has) {
    if (wrote != has) throw refused(key, wrote, fmt::format("it reads back as \"{}\"", has));
  };
  differs("congestion", expect.congestion, got.congestion);
  differs("rmem_max", expect.tcp_rmem, got.tcp_rmem);
  differs("wmem_max", expect.tcp_wmem, got.tcp_wmem);
  differs("slow_start_after_idle", expect.slow_start_after_idle ? "1" : "0",
          got.slow_start_after_idle ? "1" : "0");
  differs("ecn", std::to_string(expect.ecn), std::to_string(got.ecn));
  return got;
}

std::string describe(const HostTcp& t) {
  return fmt::format("{}, tcp_rmem {}, tcp_wmem {}, slow start after idle {}, ecn {}", t.congestion,
                     t.tcp_rmem, t.tcp_wmem, t.slow_start_after_idle ? "on" : "off",
                     topo::ecn_word(t.ecn));
}

std::vector<TcpGroup> tcp_groups(const NetworkState& s) {
  std::vector<TcpGroup> out;
  for (auto& h : s.hosts) {
    auto g =
        std::find_if(out.begin(), out.end(), [&](const TcpGroup& x) { return x.tcp == h.tcp; });
    if (g == out.end()) g = out.insert(out.end(), TcpGroup{h.tcp, {}});
    g->hosts.push_back(h.name);
  }
  return out;
}

std::string restore_root_allowed_if_last(const std::vector<std::string>& present) {
  json f = load_allowed_file();
  if (!f.contains("original") || !present.empty()) return "";
  std::vector<std::string> added = f.value("added", std::vector<std::string>{});
  std::vector<std::string> allowed = words(nl::read_sysctl("", kAllowed));
  // Only xdc's additions go: anything an administrator added meanwhile stays.
  std::erase_if(allowed, [&](const std::string& a) {
    return std::find(added.begin(), added.end(), a) != added.end();
  });
  nl::write_sysctl("", kAllowed, joined(allowed));
  fs::remove(kAllowedFile);
  return fmt::format(
      "root namespace's net.ipv4.tcp_allowed_congestion_control back to \"{}\" (xdc had added {})",
      joined(allowed), joined(added));
}

TcpCounters TcpCounters::since(const TcpCounters& before) const {
  return {sent_segments - before.sent_segments,
          retransmitted_segments - before.retransmitted_segments,
          fast_recoveries - before.fast_recoveries, loss_probes - before.loss_probes,
          timeouts - before.timeouts};
}

TcpCounters& TcpCounters::operator+=(const TcpCounters& o) {
  sent_segments += o.sent_segments;
  retransmitted_segments += o.retransmitted_segments;
  fast_recoveries += o.fast_recoveries;
  loss_probes += o.loss_probes;
  timeouts += o.timeouts;
  return *this;
}

nlohmann::json TcpCounters::to_json() const {
  return {{"sent_segments", sent_segments},
          {"retransmitted_segments", retransmitted_segments},
          {"fast_recoveries", fast_recoveries},
          {"loss_probes", loss_probes},
          {"timeouts", timeouts}};
}

TcpCounters read_tcp_counters(const std::string& ns) {
  const auto tcp = nl::net_counters(ns, "snmp", "Tcp");
  const auto ext = nl::net_counters(ns, "netstat", "TcpExt");
  auto at = [](const std::map<std::string, double>& m, const char* key) {
    const auto it = m.find(key);
    return it == m.end() ? int64_t{0} : std::llround(it->second);  // a kernel without it
  };
  TcpCounters c;
  c.sent_segments = at(tcp, "OutSegs");
  c.retransmitted_segments = at(tcp, "RetransSegs");
  c.fast_recoveries = at(ext, "TCPSackRecovery") + at(ext, "TCPRenoRecovery");
  c.loss_probes = at(ext, "TCPLossProbes");
  c.timeouts = at(ext, "TCPTimeouts") + at(ext, "TCPSackFailures") + at(ext, "TCPRenoFailures") +
               at(ext, "TCPLossFailures");
  return c;
}

}  // namespace xdc::net
