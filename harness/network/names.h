#pragma once
// Naming and addressing of everything an emulated network creates. One place, so
// that the builder, `xdc down` and `xdc clean` agree on what belongs to whom.
//
// Namespaces:  xdc-<net>.<host>      one per emulated host (own UTS name = <host>)
//              xdc-<net>.gw.<dc>     the DC's gateway router: a port per host (no bridge)
//              xdc-<net>.mgmt        the management switch (bridge br0; Mininet: "mgmt")
//              xdc-<net>.sw.<dc>     Mininet backend only: the DC's switch (mininet.h)
// Root links:  xdc-<net>             the root namespace's port on the management switch
// Files:       /run/netns/<ns>, /run/xdc/<net>/{state.json,uts/<host>}, /etc/netns/<ns>/hosts
// Network names never contain '.', so "xdc-<net>." prefixes never overlap.
//
// Addresses:   DC d (0-based) LAN 10.1.d.0/24: host i = 10.1.d.(i+1), gateway 10.1.d.254
//              WAN link j: 10.2.(j/64).(4*(j%64)) /30: side a .1, side b .2
//              management: 198.18.0.0/16 (RFC 2544 benchmarking range) in slots of a /24,
//              slot s = 198.18.s.0/24; a network of more than 253 hosts takes 2^j aligned
//              slots as one subnet 198.18.s.0/(24-j) (mgmt_prefix). Host k (topology
//              order) = subnet + k + 1, root namespace = the subnet's last address but one
//              (.254 of a /24)
#include <cstdint>
#include <string>

namespace xdc::net {

inline constexpr const char* kPrefix = "xdc-";
inline constexpr const char* kStateRoot = "/run/xdc";
inline constexpr int kMaxDcs = 250;
inline constexpr int kMaxHostsPerDc = 250;
inline constexpr int kMaxHosts = 4093;  // a /20 of management addresses: 16 slots
inline constexpr int kMaxWanLinks = 64 * 64;
inline constexpr int kMaxSlots = 256;

std::string host_ns(const std::string& net, const std::string& host);
std::string gateway_ns(const std::string& net, const std::string& dc);
std::string mgmt_ns(const std::string& net);
std::string switch_ns(const std::string& net, const std::string& dc);  // Mininet backend
std::string ns_prefix(const std::string& net);                         // "xdc-<net>."
std::string root_link(const std::string& net);                         // "xdc-<net>"
std::string wan_ifname(const std::string& peer_dc);                    // "wan-<peer>" in a gateway
std::string state_dir(const std::string& net);
std::string uts_path(const std::string& net, const std::string& host);

// Network name owning a namespace or root link name, "" when not xdc's.
std::string net_of_ns(const std::string& ns);
std::string net_of_root_link(const std::string& ifname);

std::string host_ip(int dc, int host);  // without prefix length
std::string gateway_ip(int dc);
std::string dc_subnet(int dc);  // "10.1.d.0/24"
std::string wan_ip(int link, bool side_b);
// The management subnet's prefix length for `hosts` hosts and the root: 24 up to 253,
// one bit less per doubling; the slots a subnet of that prefix takes (2^(24-prefix)), and
// the prefix of a subnet written "a.b.c.d/p" (24 when it has none).
int mgmt_prefix(int hosts);
int mgmt_slots(int prefix);
int subnet_prefix(const std::string& cidr);
std::string mgmt_ip(int slot, int host_ordinal);  // subnet + host_ordinal + 1
std::string mgmt_root_ip(int slot, int prefix);
std::string mgmt_subnet(int slot, int prefix);  // "198.18.s.0/prefix"
// A lab's VXLAN ids (harness/lab/): WAN link j between machines 4096 + 256 s + j, the
// management switch across the machines 4096 + 256 s + 255.
uint32_t lab_vni(int slot, int link);
uint32_t lab_mgmt_vni(int slot);

}  // namespace xdc::net
