#include "harness/network/state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "common/private_dir.h"
#include "harness/network/names.h"

namespace xdc::netem {
using nlohmann::json;

void to_json(json& j, const LinkParams& p) {
  // Every field: `xdc link set` and `xdc check` work from what this records.
  j = json{{"delay_us", p.delay_us},
           {"jitter_us", p.jitter_us},
           {"jitter_distribution", to_string(p.jitter_dist)},
           {"jitter_correlation_pct", p.jitter_correlation_pct},
           {"loss_model", p.loss.kind == LossModel::Kind::kGilbertElliott ? "gemodel"
                          : p.loss.kind == LossModel::Kind::kRandom       ? "random"
                                                                          : "none"},
           {"loss_pct", p.loss.p_pct},
           {"loss_correlation_pct", p.loss.correlation_pct},
           {"loss_r_pct", p.loss.r_pct},
           {"loss_h_pct", p.loss.h_pct},
           {"loss_k_pct", p.loss.k_pct},
           {"rate_bps", p.rate_bps},
           {"queue_pkts", p.queue_pkts},
           {"duplicate_pct", p.duplicate_pct},
           {"corrupt_pct", p.corrupt_pct},
           {"reorder_pct", p.reorder_pct}};
}

void from_json(const json& j, LinkParams& p) {
  const LinkParams stock;
  p.delay_us = j.value("delay_us", 0ULL);
  p.jitter_us = j.value("jitter_us", 0ULL);
  const std::string dist = j.value("jitter_distribution", to_string(stock.jitter_dist));
  for (JitterDist d :
       {JitterDist::kUniform, JitterDist::kNormal, JitterDist::kPareto, JitterDist::kParetoNormal})
    if (dist == to_string(d)) p.jitter_dist = d;
  p.jitter_correlation_pct = j.value("jitter_correlation_pct", stock.jitter_correlation_pct);
  p.rate_bps = j.value("rate_bps", 0ULL);
  p.queue_pkts = j.value("queue_pkts", 0U);
  p.loss.p_pct = j.value("loss_pct", 0.0);
  p.loss.correlation_pct = j.value("loss_correlation_pct", stock.loss.correlation_pct);
  p.loss.r_pct = j.value("loss_r_pct", stock.loss.r_pct);
  p.loss.h_pct = j.value("loss_h_pct", stock.loss.h_pct);
  p.loss.k_pct = j.value("loss_k_pct", stock.loss.k_pct);
  std::string m = j.value("loss_model", "none");
  p.loss.kind = m == "gemodel"  ? LossModel::Kind::kGilbertElliott
                : m == "random" ? LossModel::Kind::kRandom
                                : LossModel::Kind::kNone;
  p.duplicate_pct = j.value("duplicate_pct", 0.0);
  p.corrupt_pct = j.value("corrupt_pct", 0.0);
  p.reorder_pct = j.value("reorder_pct", 0.0);
}

}  // namespace xdc::netem

namespace xdc::net {
namespace fs = std::filesystem;
using nlohmann::json;

const HostState* NetworkState::find_host(const std::string& n) const {
  for (auto& h : hosts)
    if (h.name == n) return &h;
  return nullptr;
}

void to_json(json& j, const HostTcp& t) {
  j = json{{"congestion", t.congestion},
           {"tcp_rmem", t.tcp_rmem},
           {"tcp_wmem", t.tcp_wmem},
           {"slow_start_after_idle", t.slow_start_after_idle},
           {"ecn", t.ecn}};
}

void from_json(const json& j, HostTcp& t) {
  t.congestion = j.value("congestion", "");
  t.tcp_rmem = j.value("tcp_rmem", "");
  t.tcp_wmem = j.value("tcp_wmem", "");
  t.slow_start_after_idle = j.value("slow_start_after_idle", true);
  t.ecn = j.value("ecn", 2);
}

void to_json(json& j, const RootTcp& t) {
  j = t.tcp;
  j["allowed"] = t.allowed;
  j["available"] = t.available;
  j["rmem_max"] = t.rmem_max;
  j["wmem_max"] = t.wmem_max;
  if (!t.allowed_added.empty()) {
    j["allowed_original"] = t.allowed_original;
    j["allowed_added"] = t.allowed_added;
  }
}

void from_json(const json& j, RootTcp& t) {
  t.tcp = j.get<HostTcp>();
  t.allowed = j.value("allowed", "");
  t.available = j.value("available", "");
  t.rmem_max = j.value("rmem_max", 0ULL);
  t.wmem_max = j.value("wmem_max", 0ULL);
  t.allowed_original = j.value("allowed_original", "");
  t.allowed_added = j.value("allowed_added", std::vector<std::string>{});
}

void to_json(json& j, const NetworkState& s) {
  json hosts = json::array();
  for (auto& h : s.hosts) {
    hosts.push_back(json{{"name", h.name},
                         {"dc", h.dc},
                         {"ns", h.ns},
                         {"data_ip", h.data_ip},
                         {"mgmt_ip", h.mgmt_ip},
                         {"tcp", h.tcp}});
    if (!h.machine.empty()) hosts.back()["machine"] = h.machine;
  }
  auto shaped = [](const std::vector<ShapedLink>& v) {
    json out = json::array();
    for (auto& l : v)
      out.push_back(json{{"from", l.from},
                         {"to", l.to},
                         {"netns", l.netns},
                         {"ifname", l.ifname},
                         {"backend", l.backend},
                         {"configured", l.configured},
                         {"record", l.record},
                         {"down", l.down},
                         {"loss_drops_at_down", l.loss_drops_at_down},
                         {"down_drops", l.down_drops},
                         {"seed", l.seed}});
    return out;
  };
  j = json{{"name", s.name},
           {"topology_file", s.topology_file},
           {"slot", s.slot},
           {"mgmt_subnet", s.mgmt_subnet},
           {"mgmt_root_ip", s.mgmt_root_ip},
           {"created_unix", s.created_unix},
           {"dcs", s.dcs},
           {"hosts", hosts},
           {"links", shaped(s.links)},
           {"fabric", shaped(s.fabric)},
           {"notes", s.notes},
           {"root_tcp", s.root_tcp},
           {"tcp_allowed_added", s.tcp_allowed_added},
           {"time_dilation", s.time_dilation},
           {"intra_dc_rate_bps", s.intra_dc_rate_bps},
           {"shaping", s.shaping},
           {"backend", s.backend}};
  if (s.backend == "mininet")
    j["mininet"] = json{{"pid", s.mininet_pid}, {"nodes", s.mininet_nodes}};
  if (s.backend == "lab") j["lab_file"] = s.lab_file;
}

void from_json(const json& j, NetworkState& s) {
  s.name = j.at("name");
  s.topology_file = j.value("topology_file", "");
  s.slot = j.value("slot", -1);
  s.mgmt_subnet = j.value("mgmt_subnet", "");
  s.mgmt_root_ip = j.value("mgmt_root_ip", "");
  s.created_unix = j.value("created_unix", 0.0);
  s.dcs = j.value("dcs", std::vector<std::string>{});
  for (auto& h : j.value("hosts", json::array()))
    s.hosts.push_back(HostState{h.at("name"), h.at("dc"), h.at("ns"), h.at("data_ip"),
                                h.at("mgmt_ip"), h.value("tcp", json::object()).get<HostTcp>(),
                                h.value("machine", "")});
  s.root_tcp = j.value("root_tcp", json::object()).get<RootTcp>();
  s.tcp_allowed_added = j.value("tcp_allowed_added", std::vector<std::string>{});
  s.notes = j.value("notes", std::vector<std::string>{});
  s.time_dilation = j.value("time_dilation", 1.0);
  s.intra_dc_rate_bps = j.value("intra_dc_rate_bps", uint64_t{0});
  s.shaping = j.value("shaping", "");
  s.backend = j.value("backend", "native");
  s.lab_file = j.value("lab_file", "");
  if (auto m = j.find("mininet"); m != j.end()) {
    s.mininet_pid = m->value("pid", 0);
    s.mininet_nodes = m->value("nodes", std::map<std::string, int>{});
  }
  auto shaped = [&](const char* key, std::vector<ShapedLink>& out) {
    for (auto& l : j.value(key, json::array()))
      out.push_back(ShapedLink{l.at("from"), l.at("to"), l.at("netns"), l.at("ifname"),
                               l.at("backend"), l.at("configured").get<netem::LinkParams>(),
                               l.value("record", json::object()), l.value("down", false),
                               l.value("loss_drops_at_down", uint64_t{0}),
                               l.value("down_drops", uint64_t{0}), l.value("seed", uint64_t{1})});
  };
  shaped("links", s.links);
  shaped("fabric", s.fabric);
}

void save_state(const NetworkState& s) {
  make_private_dir(state_dir(s.name), true);
  write_private_file(state_dir(s.name) + "/state.json", json(s).dump(2) + "\n");
}

std::optional<NetworkState> load_state(const std::string& net) {
  std::ifstream in(state_dir(net) + "/state.json");
  if (!in) return std::nullopt;
  return json::parse(in).get<NetworkState>();
}

StateLock::StateLock() {
  make_private_dir(kStateRoot, true);
  std::string path = std::string(kStateRoot) + "/.lock";
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
  if (flock(fd_, LOCK_EX) != 0)
    throw std::system_error(errno, std::generic_category(), "lock " + path);
}

StateLock::~StateLock() {
  if (fd_ >= 0) close(fd_);  // releases the lock
}

std::vector<std::string> list_state_dirs() {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(kStateRoot, ec))
    if (e.is_directory()) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace xdc::net
