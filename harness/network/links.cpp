#include "harness/network/links.h"

#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/bridge.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/link/vxlan.h>
#include <netlink/route/neighbour.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <system_error>

#include "netem/nl/netns.h"

namespace xdc::net {
namespace {

struct LinkDel {
  void operator()(rtnl_link* l) const { rtnl_link_put(l); }
};
using LinkPtr = std::unique_ptr<rtnl_link, LinkDel>;
struct AddrDel {
  void operator()(nl_addr* a) const { nl_addr_put(a); }
};
using AddrPtr = std::unique_ptr<nl_addr, AddrDel>;

AddrPtr parse_addr(const std::string& text) {
  nl_addr* a = nullptr;
  nl::check(nl_addr_parse(text.c_str(), AF_INET, &a), "parse address " + text);
  return AddrPtr(a);
}

std::string where(const nl::NlSocket& sk) {
  return " (netns " + sk.netns() + ")";
}

}  // namespace

void add_veth(const nl::NlSocket& sk, const std::string& name, const std::string& peer,
              const std::string& peer_netns, int master_ifindex) {
  LinkPtr link(rtnl_link_veth_alloc());
  if (!link) throw std::bad_alloc();
  rtnl_link_set_name(link.get(), name.c_str());
  if (master_ifindex > 0) rtnl_link_set_master(link.get(), master_ifindex);
  rtnl_link* p = rtnl_link_veth_get_peer(link.get());
  rtnl_link_set_name(p, peer.c_str());
  // An empty peer_netns means the namespace of this process (xdc's root namespace).
  std::string ns_file = peer_netns.empty() ? "/proc/self/ns/net" : nl::netns_path(peer_netns);
  int fd = open(ns_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    rtnl_link_put(p);
    throw std::system_error(errno, std::generic_category(), "open netns " + peer_netns);
  }
  rtnl_link_set_ns_fd(p, fd);
  int rc = rtnl_link_add(sk.get(), link.get(), NLM_F_CREATE | NLM_F_EXCL);
  close(fd);
  rtnl_link_put(p);
  nl::check(rc, "add veth " + name + " <-> " + peer_netns + ":" + peer + where(sk));
}

void add_vxlan(const nl::NlSocket& sk, const std::string& name, uint32_t vni,
               const std::string& local_ip, const std::string& remote_ip, int underlay_ifindex,
               const std::string& dest_netns) {
  LinkPtr link(rtnl_link_vxlan_alloc());
  if (!link) throw std::bad_alloc();
  rtnl_link_set_name(link.get(), name.c_str());
  AddrPtr local = parse_addr(local_ip);
  const std::string what = "add vxlan " + name + " " + local_ip + " -> " + remote_ip + where(sk);
  nl::check(rtnl_link_vxlan_set_id(link.get(), vni), what);
  if (!remote_ip.empty()) {  // unicast: the remote
    AddrPtr remote = parse_addr(remote_ip);
    nl::check(rtnl_link_vxlan_set_group(link.get(), remote.get()), what);
  }
  nl::check(rtnl_link_vxlan_set_local(link.get(), local.get()), what);
  nl::check(rtnl_link_vxlan_set_link(link.get(), static_cast<uint32_t>(underlay_ifindex)), what);
  nl::check(rtnl_link_vxlan_set_port(link.get(), 4789), what);
  int fd = -1;
  if (!dest_netns.empty()) {
    fd = open(nl::netns_path(dest_netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "open netns " + dest_netns);
    rtnl_link_set_ns_fd(link.get(), fd);
  }
  int rc = rtnl_link_add(sk.get(), link.get(), NLM_F_CREATE | NLM_F_EXCL);
  if (fd >= 0) close(fd);
  nl::check(rc, what);
}

void add_vxlan_flood(const nl::NlSocket& sk, const std::string& name,
                     const std::string& remote_ip) {
  struct NeighDel {
    void operator()(rtnl_neigh* n) const { rtnl_neigh_put(n); }
  };
  std::unique_ptr<rtnl_neigh, NeighDel> n(rtnl_neigh_alloc());
  if (!n) throw std::bad_alloc();
  const std::string what = "flood " + name + " to " + remote_ip + where(sk);
  AddrPtr zero;
  {
    nl_addr* a = nullptr;
    nl::check(nl_addr_parse("00:00:00:00:00:00", AF_LLC, &a), what);
    zero.reset(a);
  }
  AddrPtr dst = parse_addr(remote_ip);
  rtnl_neigh_set_ifindex(n.get(), sk.ifindex(name));
  rtnl_neigh_set_lladdr(n.get(), zero.get());
  // The remote before the family: libnl refuses a dst whose family is not the entry's.
  nl::check(rtnl_neigh_set_dst(n.get(), dst.get()), what);
  rtnl_neigh_set_family(n.get(), AF_BRIDGE);
  rtnl_neigh_set_state(n.get(), NUD_PERMANENT | NUD_NOARP);
  rtnl_neigh_set_flags(n.get(), NTF_SELF);
  nl::check(rtnl_neigh_add(sk.get(), n.get(), NLM_F_CREATE | NLM_F_APPEND), what);
}

void set_master(const nl::NlSocket& sk, const std::string& name, int master_ifindex) {
  LinkPtr change(rtnl_link_alloc());
  if (!change) throw std::bad_alloc();
  rtnl_link_set_master(change.get(), master_ifindex);
  rtnl_link* cur = nullptr;
  nl::check(rtnl_link_get_kernel(sk.get(), 0, name.c_str(), &cur), "find " + name + where(sk));
  LinkPtr hold(cur);
  nl::check(rtnl_link_change(sk.get(), cur, change.get(), 0), "enslave " + name + where(sk));
}

int add_bridge(const nl::NlSocket& sk, const std::string& name) {
  nl::check(rtnl_link_bridge_add(sk.get(), name.c_str()), "add bridge " + name + where(sk));
  return sk.ifindex(name);
}

void delete_link(const nl::NlSocket& sk, const std::string& name) {
  LinkPtr link(rtnl_link_alloc());
  rtnl_link_set_name(link.get(), name.c_str());
  int rc = rtnl_link_delete(sk.get(), link.get());
  if (rc < 0 && rc != -NLE_NODEV && rc != -NLE_OBJ_NOTFOUND)
    nl::check(rc, "delete link " + name + where(sk));
}

void set_up(const nl::NlSocket& sk, const std::string& name) {
  LinkPtr change(rtnl_link_alloc());
  rtnl_link_set_ifindex(change.get(), sk.ifindex(name));
  rtnl_link_set_flags(change.get(), IFF_UP);
  nl::check(rtnl_link_change(sk.get(), change.get(), change.get(), 0),
            "set " + name + " up" + where(sk));
}

void set_mtu(const nl::NlSocket& sk, const std::string& name, unsigned mtu) {
  LinkPtr change(rtnl_link_alloc());
  rtnl_link_set_ifindex(change.get(), sk.ifindex(name));
  rtnl_link_set_mtu(change.get(), mtu);
  nl::check(rtnl_link_change(sk.get(), change.get(), change.get(), 0),
            "set mtu of " + name + where(sk));
}

void add_address(const nl::NlSocket& sk, const std::string& ifname, const std::string& cidr,
                 bool prefix_route) {
  std::unique_ptr<rtnl_addr, void (*)(rtnl_addr*)> addr(rtnl_addr_alloc(), rtnl_addr_put);
  rtnl_addr_set_ifindex(addr.get(), sk.ifindex(ifname));
  if (!prefix_route) rtnl_addr_set_flags(addr.get(), IFA_F_NOPREFIXROUTE);
  AddrPtr local = parse_addr(cidr);
  nl::check(rtnl_addr_set_local(addr.get(), local.get()), "set address " + cidr);
  nl::check(rtnl_addr_add(sk.get(), addr.get(), 0),
            "add address " + cidr + " to " + ifname + where(sk));
}

namespace {
// A route to `dst` in routing table `table` (0: main), to be given its next hop.
using RoutePtr = std::unique_ptr<rtnl_route, void (*)(rtnl_route*)>;
RoutePtr route_to(const std::string& dst, uint32_t table) {
  RoutePtr route(rtnl_route_alloc(), rtnl_route_put);
  if (!route) throw std::bad_alloc();
  AddrPtr d = parse_addr(dst);
  nl::check(rtnl_route_set_dst(route.get(), d.get()), "route dst " + dst);
  rtnl_route_set_table(route.get(), table ? table : RT_TABLE_MAIN);
  return route;
}
}  // namespace

void add_route(const nl::NlSocket& sk, const std::string& dst, const std::string& via,
               const std::string& ifname, bool onlink, uint32_t rto_min_ms) {
  RoutePtr route = route_to(dst, 0);
  if (rto_min_ms) {
    nl::check(rtnl_route_set_metric(route.get(), RTAX_RTO_MIN, rto_min_ms), "route rto_min");
    // TCP takes a route's rto_min only when the metric is locked (tcp_rto_min():
    // dst_metric_locked), as `ip route ... rto_min` always sets it; unlocked it is ignored.
    nl::check(rtnl_route_set_metric(route.get(), RTAX_LOCK, 1u << RTAX_RTO_MIN),
              "route rto_min lock");
  }
  rtnl_nexthop* nh = rtnl_route_nh_alloc();
  AddrPtr gw = parse_addr(via);
  rtnl_route_nh_set_gateway(nh, gw.get());
  rtnl_route_nh_set_ifindex(nh, sk.ifindex(ifname));
  if (onlink) rtnl_route_nh_set_flags(nh, RTNH_F_ONLINK);
  rtnl_route_add_nexthop(route.get(), nh);  // the route owns nh now
  nl::check(rtnl_route_add(sk.get(), route.get(), NLM_F_CREATE | NLM_F_EXCL),
            "add route " + dst + " via " + via + " dev " + ifname + where(sk));
}

void add_device_route(const nl::NlSocket& sk, const std::string& dst, const std::string& ifname,
                      uint32_t table, const std::string& prefsrc) {
  RoutePtr route = route_to(dst, table);
  rtnl_route_set_scope(route.get(), RT_SCOPE_LINK);
  if (!prefsrc.empty()) {
    AddrPtr src = parse_addr(prefsrc);
    nl::check(rtnl_route_set_pref_src(route.get(), src.get()), "route src " + prefsrc);
  }
  rtnl_nexthop* nh = rtnl_route_nh_alloc();
  rtnl_route_nh_set_ifindex(nh, sk.ifindex(ifname));
  rtnl_route_add_nexthop(route.get(), nh);  // the route owns nh now
  nl::check(rtnl_route_add(sk.get(), route.get(), NLM_F_CREATE | NLM_F_EXCL),
            "add route " + dst + " dev " + ifname + " table " + std::to_string(table) + where(sk));
}

void add_unreachable_route(const nl::NlSocket& sk, const std::string& dst, uint32_t table) {
  RoutePtr route = route_to(dst, table);
  rtnl_route_set_type(route.get(), RTN_UNREACHABLE);
  nl::check(rtnl_route_add(sk.get(), route.get(), NLM_F_CREATE | NLM_F_EXCL),
            "add unreachable route " + dst + " table " + std::to_string(table) + where(sk));
}

void add_iif_rule(const nl::NlSocket& sk, const std::string& iif, uint32_t table, uint32_t prio) {
  std::unique_ptr<rtnl_rule, void (*)(rtnl_rule*)> rule(rtnl_rule_alloc(), rtnl_rule_put);
  if (!rule) throw std::bad_alloc();
  rtnl_rule_set_family(rule.get(), AF_INET);
  nl::check(rtnl_rule_set_iif(rule.get(), iif.c_str()), "rule iif " + iif);
  rtnl_rule_set_table(rule.get(), table);
  rtnl_rule_set_prio(rule.get(), prio);
  rtnl_rule_set_action(rule.get(), FR_ACT_TO_TBL);
  nl::check(rtnl_rule_add(sk.get(), rule.get(), NLM_F_CREATE | NLM_F_EXCL),
            "add rule iif " + iif + " table " + std::to_string(table) + where(sk));
}

void add_loop(const nl::NlSocket& sk, const std::string& out, const std::string& in) {
  add_veth(sk, out, in, sk.netns());
  // Locally administered; only these two ends, alone in their namespace, carry it.
  AddrPtr mac;
  {
    nl_addr* a = nullptr;
    nl::check(nl_addr_parse("02:78:64:63:00:01", AF_LLC, &a), "parse loop MAC");
    mac.reset(a);
  }
  for (const std::string& name : {out, in}) {
    LinkPtr change(rtnl_link_alloc());
    if (!change) throw std::bad_alloc();
    rtnl_link_set_ifindex(change.get(), sk.ifindex(name));
    rtnl_link_set_addr(change.get(), mac.get());
    rtnl_link_set_flags(change.get(), name == out ? IFF_UP | IFF_NOARP : IFF_UP);
    nl::check(rtnl_link_change(sk.get(), change.get(), change.get(), 0),
              "set MAC of loop end " + name + where(sk));
  }
}

void add_fabric_loop(const nl::NlSocket& sk, const std::string& out, const std::string& in,
                     uint32_t table, uint32_t prio, const std::string& subnet) {
  add_loop(sk, out, in);
  add_iif_rule(sk, in, table, prio);
  add_unreachable_route(sk, subnet, table);
}

}  // namespace xdc::net
