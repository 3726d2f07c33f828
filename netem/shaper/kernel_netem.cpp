#include "netem/shaper/kernel_netem.h"

#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

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

NetemRequest netem_request(int ifindex, const LinkParams& params,
                           const std::vector<int16_t>& dist_table) {
  // Correlated random loss goes to netem as the equivalent Gilbert model (loss_model.h).
  LinkParams p = params;
  if (p.loss.kind == LossModel::Kind::kRandom && p.loss.correlation_pct > 0)
    p.loss = correlated_loss_model(p.loss);
  NetemRequest msg(nlmsg_alloc_size(256 * 1024));
  if (!msg) throw std::bad_alloc();
  if (!nlmsg_put(msg.get(), NL_AUTO_PORT, NL_AUTO_SEQ, RTM_NEWQDISC, 0, NLM_F_CREATE | NLM_F_EXCL))
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
  q.limit = delay_queue_pkts(p) + (p.rate_bps ? rate_queue_pkts(p) : 0);
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
  if (jitter_ns) {
    // Without a rate netem sorts packets by send time, so jitter reorders them; with one
    // it counts each delay from the previous packet's send time, keeping FIFO order as
    // the userspace backend does. A rate far above any link's (the tbf child does the
    // real one) buys the order at ~1 ns per packet.
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
