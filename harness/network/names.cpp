#include "harness/network/names.h"

#include <fmt/format.h>

namespace xdc::net {

std::string host_ns(const std::string& net, const std::string& host) {
  return ns_prefix(net) + host;
}
std::string gateway_ns(const std::string& net, const std::string& dc) {
  return ns_prefix(net) + "gw." + dc;
}
std::string mgmt_ns(const std::string& net) {
  return ns_prefix(net) + "mgmt";
}
std::string switch_ns(const std::string& net, const std::string& dc) {
  return ns_prefix(net) + "sw." + dc;
}
std::string ns_prefix(const std::string& net) {
  return kPrefix + net + ".";
}
std::string root_link(const std::string& net) {
  return kPrefix + net;
}
std::string wan_ifname(const std::string& peer_dc) {
  return "wan-" + peer_dc;
}
std::string state_dir(const std::string& net) {
  return std::string(kStateRoot) + "/" + net;
}
std::string uts_path(const std::string& net, const std::string& host) {
  return state_dir(net) + "/uts/" + host;
}

std::string net_of_ns(const std::string& ns) {
  std::string p = kPrefix;
  if (ns.rfind(p, 0) != 0) return "";
  auto dot = ns.find('.', p.size());
  if (dot == std::string::npos || dot == p.size()) return "";
  return ns.substr(p.size(), dot - p.size());
}
std::string net_of_root_link(const std::string& ifname) {
  std::string p = kPrefix;
  if (ifname.rfind(p, 0) != 0 || ifname.size() == p.size()) return "";
  return ifname.substr(p.size());
}

std::string host_ip(int dc, int host) {
  return fmt::format("10.1.{}.{}", dc, host + 1);
}
std::string gateway_ip(int dc) {
  return fmt::format("10.1.{}.254", dc);
}
std::string dc_subnet(int dc) {
  return fmt::format("10.1.{}.0/24", dc);
}
std::string wan_ip(int link, bool side_b) {
  return fmt::format("10.2.{}.{}", link / 64, 4 * (link % 64) + (side_b ? 2 : 1));
}
namespace {
// Address `offset` of management slot `slot`'s subnet (it may run into the next slots).
std::string mgmt_address(int slot, int offset) {
  const int at = slot * 256 + offset;
  return fmt::format("198.18.{}.{}", at / 256, at % 256);
}
}  // namespace

int mgmt_prefix(int hosts) {
  int prefix = 24;
  while (prefix > 16 && (1 << (32 - prefix)) - 3 < hosts) --prefix;  // net, root, broadcast
  return prefix;
}
int mgmt_slots(int prefix) {
  return 1 << (24 - prefix);
}
int subnet_prefix(const std::string& cidr) {
  const size_t slash = cidr.rfind('/');
  return slash == std::string::npos ? 24 : std::stoi(cidr.substr(slash + 1));
}
std::string mgmt_ip(int slot, int k) {
  return mgmt_address(slot, k + 1);
}
std::string mgmt_root_ip(int slot, int prefix) {
  return mgmt_address(slot, mgmt_slots(prefix) * 256 - 2);
}
std::string mgmt_subnet(int slot, int prefix) {
  return fmt::format("198.18.{}.0/{}", slot, prefix);
}

uint32_t lab_vni(int slot, int link) {
  return 4096 + static_cast<uint32_t>(slot) * 256 + static_cast<uint32_t>(link);
}
uint32_t lab_mgmt_vni(int slot) {
  return lab_vni(slot, 255);
}

}  // namespace xdc::net
