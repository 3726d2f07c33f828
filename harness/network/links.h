#pragma once
// The few rtnetlink operations the builder needs, through libnl, each on a socket bound
// to one namespace. Every call throws nl::NlError naming the object on failure.
#include <cstdint>
#include <string>

#include "netem/nl/socket.h"

namespace xdc::net {

// veth pair: `name` in sk's namespace, `peer` created directly in netns `peer_netns`
// ("" = this process's own namespace).
// With master_ifindex > 0, `name` is enslaved to that bridge at creation.
void add_veth(const nl::NlSocket& sk, const std::string& name, const std::string& peer,
              const std::string& peer_netns, int master_ifindex = 0);
// Enslaves `name` to the bridge `master_ifindex` of sk's namespace.
void set_master(const nl::NlSocket& sk, const std::string& name, int master_ifindex);
// A bridge with STP off (ports forward at once); returns its ifindex.
int add_bridge(const nl::NlSocket& sk, const std::string& name);
void delete_link(const nl::NlSocket& sk, const std::string& name);  // ignores "no such link"
void set_up(const nl::NlSocket& sk, const std::string& name);
void set_mtu(const nl::NlSocket& sk, const std::string& name, unsigned mtu);
// "10.1.0.1/24" on `ifname`; without `prefix_route` the kernel adds no route to the
// subnet (IFA_F_NOPREFIXROUTE): its neighbours are then reached only by explicit routes.
void add_address(const nl::NlSocket& sk, const std::string& ifname, const std::string& cidr,
                 bool prefix_route = true);
// dst "10.1.2.0/24" via gateway "10.2.0.2" on `ifname`; `onlink`: the gateway is taken to
// be on the link even though no route says so (RTNH_F_ONLINK); rto_min_ms > 0 sets the
// route's minimum TCP retransmission timeout (`ip route ... rto_min`), 0 keeps 200 ms.
// A VXLAN tunnel end (id `vni`, UDP 4789) from `local_ip` to `remote_ip` over the interface
// `underlay_ifindex` of sk's namespace, created as `name` inside netns `dest_netns`: its
// socket stays in sk's namespace (the machine's), the device lives in the gateway's
// (dest_netns "": stays in sk's namespace).
// remote_ip "": no default remote (add_vxlan_flood names them).
void add_vxlan(const nl::NlSocket& sk, const std::string& name, uint32_t vni,
               const std::string& local_ip, const std::string& remote_ip, int underlay_ifindex,
               const std::string& dest_netns);
// Head-end replication on a VXLAN device of sk's namespace made without a remote: every
// broadcast and unknown-unicast frame also goes to `remote_ip` (`bridge fdb append
// 00:00:00:00:00:00 dev NAME dst REMOTE`).
void add_vxlan_flood(const nl::NlSocket& sk, const std::string& name, const std::string& remote_ip);
void add_route(const nl::NlSocket& sk, const std::string& dst, const std::string& via,
               const std::string& ifname, bool onlink = false, uint32_t rto_min_ms = 0);
// dst "10.1.0.5/32" reached directly on `ifname` (scope link) in routing table `table`
// (0: main); `prefsrc` non-empty: the source address of the namespace's own packets on it.
void add_device_route(const nl::NlSocket& sk, const std::string& dst, const std::string& ifname,
                      uint32_t table = 0, const std::string& prefsrc = "");
// dst answered with ICMP "host unreachable" in routing table `table`.
void add_unreachable_route(const nl::NlSocket& sk, const std::string& dst, uint32_t table);
// A policy rule of priority `prio`: packets that arrived on `iif` are routed by `table`.
void add_iif_rule(const nl::NlSocket& sk, const std::string& iif, uint32_t table, uint32_t prio);
// A veth pair with both ends in sk's namespace, both up, with one MAC address and no ARP on
// `out`: a packet routed out of `out` arrives on `in` addressed to it, with no neighbour
// to resolve (a loop through which the namespace routes a packet a second time).
void add_loop(const nl::NlSocket& sk, const std::string& out, const std::string& in);
// add_loop, with what arrives on `in` routed by `table` (rule priority `prio`), where
// `subnet` is unreachable unless a more specific route says otherwise: a packet for an
// address of `subnet` without its own route is refused, not sent round the loop again.
void add_fabric_loop(const nl::NlSocket& sk, const std::string& out, const std::string& in,
                     uint32_t table, uint32_t prio, const std::string& subnet);

}  // namespace xdc::net
