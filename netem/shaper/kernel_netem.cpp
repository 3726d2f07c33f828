#include "netem/shaper/kernel_netem.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/net_namespace.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/route/link.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "netem/nl/netns.h"
#include "netem/shaper/loss_model.h"
#include "netem/shaper/qdisc.h"
#include "netem/shaper/queue_sizing.h"

namespace xdc::netem {

namespace {

constexpr uint32_t kPschedShift = 6;  // kernel PSCHED_SHIFT: 1 tick = 64 ns
constexpr uint64_t kOrderKeepingRateBytes = 1'000'000'000'000ULL;  // 8 Tbit/s

uint32_t ns_to_ticks(uint64_t ns) {
  return static_cast<uint32_t>(std::min<uint64_t>(ns >> kPschedShift, UINT32_MAX));
}

void put(nl_msg* msg, int type, const void* data, size_t len, const char* what) {
  nl::check(nla_put(msg, type, static_cast<int>(len), data),
            std::string("netem attribute ") + what);
}

}  // namespace

uint32_t netem_probability(double pct) {
  double v = std::rint(std::clamp(pct, 0.0, 100.0) / 100.0 * UINT32_MAX);
  return static_cast<uint32_t>(v);
}

uint32_t netem_limit_pkts(const LinkParams& p) {
  return delay_queue_pkts(p) + (p.rate_bps ? rate_queue_pkts(p) : 0);
}

NetemRequest netem_request(int ifindex, const LinkParams& params,
                           const std::vector<int16_t>& dist_table, bool change,
                           uint32_t limit_pkts) {
  // Correlated random loss goes to netem as the equivalent Gilbert model (loss_model.h).
  LinkParams p = params;
  if (p.loss.kind == LossModel::Kind::kRandom && p.loss.correlation_pct > 0)
    p.loss = correlated_loss_model(p.loss);
  // Room for the delay distribution when there is one; else a page (a change is timed:
  // in a UML guest every page touched is a fault the host serves).
  const size_t room = (p.jitter_us ? dist_table.size() * sizeof(int16_t) : 0) + 4096;
  NetemRequest msg(nlmsg_alloc_size(room));
  if (!msg) throw std::bad_alloc();
  if (!nlmsg_put(msg.get(), NL_AUTO_PORT, NL_AUTO_SEQ, RTM_NEWQDISC, 0,
                 change ? 0 : NLM_F_CREATE | NLM_F_EXCL))
    throw std::bad_alloc();
  tcmsg tcm{};
  tcm.tcm_family = AF_UNSPEC;
  tcm.tcm_ifindex = ifindex;
  tcm.tcm_handle = kRootHandle;
  tcm.tcm_parent = TC_H_ROOT;
  nl::check(nlmsg_append(msg.get(), &tcm, sizeof tcm, NLMSG_ALIGNTO), "netem tcmsg");
  nl::check(nla_put_string(msg.get(), TCA_KIND, "netem"), "netem kind");

  nlattr* opts = nla_nest_start(msg.get(), TCA_OPTIONS);
  if (!opts) throw std::bad_alloc();
  const uint64_t latency_ns = p.delay_us * 1000, jitter_ns = p.jitter_us * 1000;
  tc_netem_qopt q{};
  q.latency = ns_to_ticks(latency_ns);
  q.jitter = ns_to_ticks(jitter_ns);
  // netem's limit counts packets still in their delay, plus those waiting for the rate.
  q.limit = limit_pkts ? limit_pkts : netem_limit_pkts(p);
  q.loss = p.loss.kind == LossModel::Kind::kRandom ? netem_probability(p.loss.p_pct) : 0;
  q.duplicate = netem_probability(p.duplicate_pct);
  q.gap = p.reorder_pct > 0 ? 1 : 0;  // as tc: reorder without gap means gap 1
  nl::check(nlmsg_append(msg.get(), &q, sizeof q, NLMSG_ALIGNTO), "netem qopt");

  tc_netem_corr corr{};
  // netem's delay correlation also narrows the jitter distribution (get_crandom); the
  // userspace backend keeps it (impairment.h). The kernel offers nothing better.
  corr.delay_corr = netem_probability(p.jitter_correlation_pct);
  corr.loss_corr = 0;  // correlated random loss became a Gilbert model above
  put(msg.get(), TCA_NETEM_CORR, &corr, sizeof corr, "corr");
  int64_t lat64 = static_cast<int64_t>(latency_ns), jit64 = static_cast<int64_t>(jitter_ns);
  put(msg.get(), TCA_NETEM_LATENCY64, &lat64, sizeof lat64, "latency64");
  put(msg.get(), TCA_NETEM_JITTER64, &jit64, sizeof jit64, "jitter64");
  if (jitter_ns || change) {
    // Without a rate netem sorts packets by send time, so jitter reorders them (and so
    // would a delay decrease); with one it counts each delay from the previous packet's
    // send time, keeping FIFO order as the userspace backend does. A rate far above any
    // link's (the tbf child does the real one) buys the order at ~1 ns per packet.
    tc_netem_rate rate{};
    rate.rate = UINT32_MAX;
    uint64_t rate64 = kOrderKeepingRateBytes;
    put(msg.get(), TCA_NETEM_RATE, &rate, sizeof rate, "rate");
    put(msg.get(), TCA_NETEM_RATE64, &rate64, sizeof rate64, "rate64");
  }
  if (p.reorder_pct > 0) {
    tc_netem_reorder r{netem_probability(p.reorder_pct), 0};
    put(msg.get(), TCA_NETEM_REORDER, &r, sizeof r, "reorder");
  }
  if (p.corrupt_pct > 0) {
    tc_netem_corrupt c{netem_probability(p.corrupt_pct), 0};
    put(msg.get(), TCA_NETEM_CORRUPT, &c, sizeof c, "corrupt");
  }
  if (p.loss.kind == LossModel::Kind::kGilbertElliott) {
    // Kernel fields: p, r, h = P(no loss | bad), k1 = P(loss | good) (tc takes 1-h, 1-k).
    tc_netem_gemodel ge{};
    ge.p = netem_probability(p.loss.p_pct);
    ge.r = netem_probability(p.loss.r_pct);
    ge.h = netem_probability(p.loss.h_pct);
    ge.k1 = netem_probability(100.0 - p.loss.k_pct);
    nlattr* loss = nla_nest_start(msg.get(), TCA_NETEM_LOSS);
    if (!loss) throw std::bad_alloc();
    put(msg.get(), NETEM_LOSS_GE, &ge, sizeof ge, "gemodel");
    nla_nest_end(msg.get(), loss);
  }
  if (p.jitter_us && !dist_table.empty())
    put(msg.get(), TCA_NETEM_DELAY_DIST, dist_table.data(), dist_table.size() * sizeof(int16_t),
        "delay distribution");
  nla_nest_end(msg.get(), opts);
  return msg;
}

namespace {

// Sends `req` on a socket of its own and hands each reply message to `on_reply` until
// the kernel's ack (libnl asks for one). A private socket: replies read raw would upset
// libnl's sequence bookkeeping of a shared one.
template <typename F>
void ask(const std::string& netns, nl_msg* req, const std::string& what, F on_reply) {
  nl::NlSocket sock(netns);
  nl::check(nl_send_auto(sock.get(), req), what);
  for (bool acked = false; !acked;) {
    sockaddr_nl from{};
    unsigned char* buf = nullptr;
    int n = nl::check(nl_recv(sock.get(), &from, &buf, nullptr), what);
    std::unique_ptr<unsigned char, void (*)(void*)> hold(buf, free);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); nlmsg_ok(h, n); h = nlmsg_next(h, &n)) {
      if (h->nlmsg_type != NLMSG_ERROR) {
        on_reply(h);
        continue;
      }
      int err = static_cast<nlmsgerr*>(nlmsg_data(h))->error;
      if (err != 0) throw nl::NlError(nl_syserr2nlerr(err), what + ": " + std::strerror(-err));
      acked = true;
    }
  }
}

// Names of the namespaces that `netns` has numbered (IFLA_LINK_NETNSID says where a
// veth's peer lives by such a number): each namespace in /run/netns, and the initial
// one as "", is asked for by file descriptor (RTM_GETNSID), as iproute2 does.
std::map<int32_t, std::string> netns_by_id(const std::string& netns) {
  std::vector<std::pair<std::string, std::string>> candidates = {{"", "/proc/1/ns/net"}};
  if (DIR* d = opendir("/run/netns")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') candidates.push_back({e->d_name, nl::netns_path(e->d_name)});
    closedir(d);
  }
  std::map<int32_t, std::string> names;
  for (const auto& [name, path] : candidates) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    try {
      NetemRequest req(nlmsg_alloc_simple(RTM_GETNSID, 0));
      if (!req) throw std::bad_alloc();
      rtgenmsg g{};
      g.rtgen_family = AF_UNSPEC;
      nl::check(nlmsg_append(req.get(), &g, sizeof g, NLMSG_ALIGNTO), "getnsid rtgenmsg");
      uint32_t ufd = static_cast<uint32_t>(fd);
      put(req.get(), NETNSA_FD, &ufd, sizeof ufd, "netns fd");
      ask(netns, req.get(), "nsid of " + path, [&, name = name](nlmsghdr* h) {
        nlattr* tb[NETNSA_MAX + 1];
        if (h->nlmsg_type == RTM_NEWNSID &&
            nlmsg_parse(h, sizeof(rtgenmsg), tb, NETNSA_MAX, nullptr) == 0 && tb[NETNSA_NSID])
          names.emplace(static_cast<int32_t>(nla_get_u32(tb[NETNSA_NSID])), name);
      });
    } catch (const nl::NlError&) {
      // a namespace that vanished meanwhile
    }
    close(fd);
  }
  names.erase(-1);  // NETNSA_NSID_NOT_ASSIGNED: not a peer's
  return names;
}

uint32_t get_gso_max_segs(const WireFeeder& f) {
  nl::NlSocket sock(f.netns);
  rtnl_link* link = nullptr;
  nl::check(rtnl_link_get_kernel(sock.get(), f.ifindex, nullptr, &link),
            "find ifindex " + std::to_string(f.ifindex) + " in netns '" + f.netns + "'");
  uint32_t segs = 0;
  int rc = rtnl_link_get_gso_max_segs(link, &segs);
  rtnl_link_put(link);
  nl::check(rc,
            "gso_max_segs of ifindex " + std::to_string(f.ifindex) + " in netns '" + f.netns + "'");
  return segs;
}

// libnl has no setter for IFLA_GSO_MAX_SEGS. (RTM_SETLINK cannot reach a peer by
// IFLA_TARGET_NETNSID from the gateway: there that attribute moves the device.)
void set_gso_max_segs(const WireFeeder& f, uint32_t segs) {
  NetemRequest msg(nlmsg_alloc_simple(RTM_SETLINK, 0));
  if (!msg) throw std::bad_alloc();
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = f.ifindex;
  nl::check(nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO), "setlink ifinfomsg");
  put(msg.get(), IFLA_GSO_MAX_SEGS, &segs, sizeof segs, "gso_max_segs");
  nl::NlSocket sock(f.netns);
  nl::check(nl_send_sync(sock.get(), msg.release()),
            "gso_max_segs " + std::to_string(segs) + " on ifindex " + std::to_string(f.ifindex) +
                " in netns '" + f.netns + "'");
}

}  // namespace

bool acts_per_packet(const LinkParams& p) {
  return p.loss.kind != LossModel::Kind::kNone || p.duplicate_pct > 0 || p.corrupt_pct > 0 ||
         p.reorder_pct > 0;
}

std::vector<WireFeeder> segment_feeders(const nl::NlSocket& sock, int shaped_ifindex) {
  nl_cache* cache = nullptr;
  nl::check(rtnl_link_alloc_cache(sock.get(), AF_UNSPEC, &cache),
            "list links in netns '" + sock.netns() + "'");
  std::unique_ptr<nl_cache, void (*)(nl_cache*)> hold(cache, nl_cache_free);
  std::vector<WireFeeder> changed;
  std::map<int32_t, std::string> names;  // looked up on the first peer elsewhere
  try {
    for (nl_object* o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
      auto* link = reinterpret_cast<rtnl_link*>(o);
      const char* type = rtnl_link_get_type(link);
      if (!type || std::strcmp(type, "veth") != 0 || rtnl_link_get_ifindex(link) == shaped_ifindex)
        continue;
      WireFeeder peer;
      int32_t nsid = -1;
      peer.netns = sock.netns();
      if (rtnl_link_get_link_netnsid(link, &nsid) == 0 && nsid >= 0) {
        if (names.empty()) names = netns_by_id(sock.netns());
        auto it = names.find(nsid);
        if (it == names.end())
          throw std::runtime_error("netns '" + sock.netns() + "': the peer of " +
                                   rtnl_link_get_name(link) + " lives in a namespace outside " +
                                   "/run/netns (netnsid " + std::to_string(nsid) + ")");
        peer.netns = it->second;
      }
      peer.ifindex = rtnl_link_get_link(link);
      peer.gso_max_segs = get_gso_max_segs(peer);
      if (peer.gso_max_segs == 1) continue;
      set_gso_max_segs(peer, 1);
      changed.push_back(peer);
    }
  } catch (...) {
    restore_feeders(changed);
    throw;
  }
  return changed;
}

void restore_feeders(const std::vector<WireFeeder>& feeders) noexcept {
  for (const WireFeeder& peer : feeders) try {
      set_gso_max_segs(peer, peer.gso_max_segs);
    } catch (...) {
      // the peer or its namespace is gone: nothing to restore
    }
}

void add_netem_root(const nl::NlSocket& sock, int ifindex, const LinkParams& p,
                    const std::vector<int16_t>& dist_table) {
  NetemRequest msg = netem_request(ifindex, p, dist_table);
  int rc = nl_send_sync(sock.get(), msg.release());  // frees the message
  std::string where = "ifindex " + std::to_string(ifindex) + " in netns '" + sock.netns() + "'";
  if (rc == -NLE_OBJ_NOTFOUND)
    throw nl::NlError(-rc, "add netem on " + where +
                               ": kernel has no sch_netem (qdisc kind unknown); "
                               "use the userspace backend");
  nl::check(rc, "add netem on " + where);
  if (p.rate_bps)
    add_rate_qdisc(sock, ifindex, kNetemClass, kChildHandle, p.rate_bps, rate_queue_bytes(p),
                   tbf_burst_bytes(p.rate_bps));
}

void change_netem_root(const nl::NlSocket& sock, int ifindex, const LinkParams& p,
                       const std::vector<int16_t>& dist_table, uint32_t limit_pkts) {
  NetemRequest msg = netem_request(ifindex, p, dist_table, /*change=*/true, limit_pkts);
  nl::check(
      nl_send_sync(sock.get(), msg.release()),
      "change netem on ifindex " + std::to_string(ifindex) + " in netns '" + sock.netns() + "'");
}

bool kernel_has_netem(std::string* why) {
  static std::once_flag once;
  static bool has = false;
  static std::string reason;
  std::call_once(once, [] {
    // A fresh namespace per probe thread: its loopback is ours to try a qdisc on, and
    // the namespace vanishes with the thread.
    std::thread probe([] {
      if (unshare(CLONE_NEWNET) != 0) {
        reason = std::string("probe: unshare(CLONE_NEWNET): ") + std::strerror(errno);
        return;
      }
      try {
        nl::NlSocket sock;
        LinkParams p;
        p.delay_us = 1000;
        add_netem_root(sock, sock.ifindex("lo"), p, {});
        has = true;
      } catch (const nl::NlError& e) {
        reason = e.err == NLE_OBJ_NOTFOUND
                     ? "kernel has no sch_netem: creating a netem qdisc says its kind is unknown"
                     : std::string("probe: ") + e.what();
      } catch (const std::exception& e) {
        reason = std::string("probe: ") + e.what();
      }
    });
    probe.join();
  });
  if (why) *why = reason;
  return has;
}

}  // namespace xdc::netem
