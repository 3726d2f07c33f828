#include "netem/shaper/qdisc.h"

#include <linux/pkt_sched.h>
#include <netlink/route/class.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/fifo.h>
#include <netlink/route/qdisc/htb.h>
#include <netlink/route/qdisc/tbf.h>

#include <chrono>
#include <limits>
#include <memory>
#include <thread>

#include "netem/shaper/queue_sizing.h"

namespace xdc::netem {

namespace {

struct QdiscDeleter {
  void operator()(rtnl_qdisc* q) const { rtnl_qdisc_put(q); }
};
struct ClassDeleter {
  void operator()(rtnl_class* c) const { rtnl_class_put(c); }
};
using QdiscPtr = std::unique_ptr<rtnl_qdisc, QdiscDeleter>;
using ClassPtr = std::unique_ptr<rtnl_class, ClassDeleter>;

QdiscPtr new_qdisc(int ifindex, uint32_t parent, uint32_t handle, const char* kind) {
  QdiscPtr q(rtnl_qdisc_alloc());
  if (!q) throw std::bad_alloc();
  rtnl_tc_set_ifindex(TC_CAST(q.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(q.get()), parent);
  rtnl_tc_set_handle(TC_CAST(q.get()), handle);
  nl::check(rtnl_tc_set_kind(TC_CAST(q.get()), kind), std::string("qdisc kind ") + kind);
  return q;
}

// Deletes qdisc `handle` (0: whichever) under `parent`; libnl's return code.
int delete_qdisc(const nl::NlSocket& sock, int ifindex, uint32_t parent, uint32_t handle) {
  QdiscPtr q(rtnl_qdisc_alloc());
  if (!q) throw std::bad_alloc();
  rtnl_tc_set_ifindex(TC_CAST(q.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(q.get()), parent);
  if (handle) rtnl_tc_set_handle(TC_CAST(q.get()), handle);
  return rtnl_qdisc_delete(sock.get(), q.get());
}

std::string where(const nl::NlSocket& sock, int ifindex) {
  return "ifindex " + std::to_string(ifindex) + " in netns '" + sock.netns() + "'";
}

}  // namespace

const char* rate_qdisc_kind(uint64_t rate_bps) {
  return rate_bps / 8 <= static_cast<uint64_t>(std::numeric_limits<int>::max()) ? "tbf" : "htb";
}

// The htb class handle:1 under qdisc `handle`, carrying a 64-bit rate (ceil = rate), not
// yet sent: added with NLM_F_CREATE to make it, with flags 0 to change it.
static ClassPtr htb_class(int ifindex, uint32_t handle, uint64_t rate_Bps, uint32_t burst_bytes) {
  ClassPtr c(rtnl_class_alloc());
  if (!c) throw std::bad_alloc();
  rtnl_tc_set_ifindex(TC_CAST(c.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(c.get()), handle);
  rtnl_tc_set_handle(TC_CAST(c.get()), handle | 1);
  nl::check(rtnl_tc_set_kind(TC_CAST(c.get()), "htb"), "htb class kind");
  nl::check(rtnl_htb_set_rate64(c.get(), rate_Bps), "htb rate64");
  nl::check(rtnl_htb_set_ceil64(c.get(), rate_Bps), "htb ceil64");
  nl::check(rtnl_htb_set_rbuffer(c.get(), burst_bytes), "htb buffer");
  nl::check(rtnl_htb_set_cbuffer(c.get(), burst_bytes), "htb cbuffer");
  return c;
}

std::string add_rate_qdisc(const nl::NlSocket& sock, int ifindex, uint32_t parent, uint32_t handle,
                           uint64_t rate_bps, uint64_t limit_bytes, uint32_t burst_bytes) {
  const uint64_t rate_Bps = rate_bps / 8;
  if (rate_Bps <= static_cast<uint64_t>(std::numeric_limits<int>::max())) {
    QdiscPtr q = new_qdisc(ifindex, parent, handle, "tbf");
    rtnl_qdisc_tbf_set_limit(q.get(), static_cast<int>(std::min<uint64_t>(limit_bytes, INT32_MAX)));
    rtnl_qdisc_tbf_set_rate(q.get(), static_cast<int>(rate_Bps), static_cast<int>(burst_bytes), 0);
    nl::check(rtnl_qdisc_add(sock.get(), q.get(), NLM_F_CREATE | NLM_F_EXCL),
              "add tbf rate " + std::to_string(rate_bps) + " bit/s on " + where(sock, ifindex));
    return "tbf";
  }
  // htb: qdisc `handle` with default class handle:1 carrying the 64-bit rate.
  QdiscPtr q = new_qdisc(ifindex, parent, handle, "htb");
  nl::check(rtnl_htb_set_defcls(q.get(), 1), "htb defcls");
  nl::check(rtnl_qdisc_add(sock.get(), q.get(), NLM_F_CREATE | NLM_F_EXCL),
            "add htb on " + where(sock, ifindex));
  ClassPtr c = htb_class(ifindex, handle, rate_Bps, burst_bytes);
  nl::check(rtnl_class_add(sock.get(), c.get(), NLM_F_CREATE | NLM_F_EXCL),
            "add htb class rate " + std::to_string(rate_bps) + " bit/s on " + where(sock, ifindex));
  // The leaf queue is the bottleneck buffer: a bfifo of limit_bytes.
  QdiscPtr leaf = new_qdisc(ifindex, handle | 1, handle + 0x10000, "bfifo");
  rtnl_qdisc_fifo_set_limit(leaf.get(),
                            static_cast<int>(std::min<uint64_t>(limit_bytes, INT32_MAX)));
  nl::check(rtnl_qdisc_add(sock.get(), leaf.get(), NLM_F_CREATE | NLM_F_EXCL),
            "add bfifo leaf on " + where(sock, ifindex));
  return "htb";
}

void change_rate_qdisc(const nl::NlSocket& sock, int ifindex, uint32_t parent, uint32_t handle,
                       const std::string& kind, uint64_t rate_bps, uint64_t limit_bytes,
                       uint32_t burst_bytes) {
  if (kind != rate_qdisc_kind(rate_bps))
    throw std::runtime_error("rate " + std::to_string(rate_bps) + " bit/s needs " +
                             rate_qdisc_kind(rate_bps) + " but " + where(sock, ifindex) + " runs " +
                             kind + ": cannot change across ~17 Gbit/s in place");
  const uint64_t rate_Bps = rate_bps / 8;
  int limit = static_cast<int>(std::min<uint64_t>(limit_bytes, INT32_MAX));
  if (kind == "tbf") {
    QdiscPtr q = new_qdisc(ifindex, parent, handle, "tbf");
    rtnl_qdisc_tbf_set_limit(q.get(), limit);
    rtnl_qdisc_tbf_set_rate(q.get(), static_cast<int>(rate_Bps), static_cast<int>(burst_bytes), 0);
    // Flags 0: change the existing qdisc, never create one.
    nl::check(
        rtnl_qdisc_update(sock.get(), q.get(), q.get(), 0),
        "change tbf to rate " + std::to_string(rate_bps) + " bit/s on " + where(sock, ifindex));
    return;
  }
  ClassPtr c = htb_class(ifindex, handle, rate_Bps, burst_bytes);
  nl::check(
      rtnl_class_add(sock.get(), c.get(), 0),  // an existing class: changed
      "change htb class to rate " + std::to_string(rate_bps) + " bit/s on " + where(sock, ifindex));
  QdiscPtr leaf = new_qdisc(ifindex, handle | 1, handle + 0x10000, "bfifo");
  rtnl_qdisc_fifo_set_limit(leaf.get(), limit);
  nl::check(rtnl_qdisc_update(sock.get(), leaf.get(), leaf.get(), 0),
            "change bfifo leaf on " + where(sock, ifindex));
}

void remove_rate_qdisc(const nl::NlSocket& sock, int ifindex, uint32_t parent, uint32_t handle,
                       const std::string& kind, uint64_t limit_bytes, int drain_ms) {
  const uint64_t fastest = kind == "tbf" ? uint64_t{INT32_MAX} * 8 : uint64_t{1'000'000'000'000};
  change_rate_qdisc(sock, ifindex, parent, handle, kind, fastest, limit_bytes,
                    tbf_burst_bytes(fastest));
  for (int waited = 0; waited < drain_ms; ++waited) {
    nl_cache* cache = nullptr;
    nl::check(rtnl_qdisc_alloc_cache(sock.get(), &cache), "list qdiscs on " + where(sock, ifindex));
    uint64_t queued = 0;
    if (rtnl_qdisc* q = rtnl_qdisc_get(cache, ifindex, handle)) {
      queued = rtnl_tc_get_stat(TC_CAST(q), RTNL_TC_QLEN);
      rtnl_qdisc_put(q);
    }
    nl_cache_free(cache);
    if (queued == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  nl::check(delete_qdisc(sock, ifindex, parent, handle),
            "delete the rate stage on " + where(sock, ifindex));
}

QdiscCounters qdisc_counters(const std::string& netns, const std::string& ifname, uint32_t handle) {
  QdiscCounters out;
  try {
    nl::NlSocket sock(netns);
    int ifindex = sock.ifindex(ifname);
    nl_cache* cache = nullptr;
    nl::check(rtnl_qdisc_alloc_cache(sock.get(), &cache), "list qdiscs in netns '" + netns + "'");
    if (rtnl_qdisc* q = rtnl_qdisc_get(cache, ifindex, handle)) {
      out.found = true;
      out.packets = rtnl_tc_get_stat(TC_CAST(q), RTNL_TC_PACKETS);
      out.bytes = rtnl_tc_get_stat(TC_CAST(q), RTNL_TC_BYTES);
      out.drops = rtnl_tc_get_stat(TC_CAST(q), RTNL_TC_DROPS);
      out.qlen = rtnl_tc_get_stat(TC_CAST(q), RTNL_TC_QLEN);
      out.backlog_bytes = rtnl_tc_get_stat(TC_CAST(q), RTNL_TC_BACKLOG);
      rtnl_qdisc_put(q);
    }
    nl_cache_free(cache);
  } catch (const std::exception&) {
    // namespace or interface gone: nothing to count
  }
  return out;
}

bool delete_root_qdisc(const nl::NlSocket& sock, int ifindex, uint32_t handle) {
  int rc = delete_qdisc(sock, ifindex, TC_H_ROOT, handle);
  // ENOENT: no qdisc; EINVAL: the root's handle is not `handle` (not ours).
  if (rc == -NLE_OBJ_NOTFOUND || rc == -NLE_INVAL || rc == -NLE_NODEV) return false;
  nl::check(rc, "delete root qdisc on " + where(sock, ifindex));
  return true;
}

bool remove_root_qdisc(const std::string& netns, const std::string& ifname, uint32_t handle) {
  try {
    nl::NlSocket sock(netns);
    return delete_root_qdisc(sock, sock.ifindex(ifname), handle);
  } catch (const std::exception&) {
    return false;  // namespace or interface gone: nothing left to remove
  }
}

std::string root_qdisc_kind(const std::string& netns, const std::string& ifname) {
  nl::NlSocket sock(netns);
  int ifindex = sock.ifindex(ifname);
  nl_cache* cache = nullptr;
  nl::check(rtnl_qdisc_alloc_cache(sock.get(), &cache), "list qdiscs in netns '" + netns + "'");
  std::string kind;
  if (rtnl_qdisc* q = rtnl_qdisc_get_by_parent(cache, ifindex, TC_H_ROOT)) {
    if (const char* k = rtnl_tc_get_kind(TC_CAST(q))) kind = k;
    rtnl_qdisc_put(q);
  }
  nl_cache_free(cache);
  return kind;
}

}  // namespace xdc::netem
