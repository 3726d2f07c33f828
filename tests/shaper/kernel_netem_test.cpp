// The kernel backend's netem request, checked byte by byte the way the kernel's
// netem_change() parses it (struct tc_netem_qopt, then TCA_NETEM_* attributes). This
// machine has no sch_netem, so this is what can be verified of the kernel backend here;
// the fidelity tests run it for real wherever the kernel has netem.
#include "netem/shaper/kernel_netem.h"

#include <gtest/gtest.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include <cstring>

#include "netem/shaper/dist_table.h"
#include "netem/shaper/qdisc.h"
#include "netem/shaper/queue_sizing.h"

namespace xdc::netem {
namespace {

// Attribute pointers point into the request: keep it alive while using them.
struct Parsed {
  tcmsg tcm{};
  std::string kind;
  tc_netem_qopt qopt{};
  nlattr* tb[TCA_NETEM_MAX + 1] = {};
  nlattr* loss[NETEM_LOSS_MAX + 1] = {};
};

Parsed parse(const NetemRequest& req) {
  Parsed out;
  nlmsghdr* nlh = nlmsg_hdr(req.get());
  EXPECT_EQ(nlh->nlmsg_type, RTM_NEWQDISC);
  EXPECT_EQ(nlh->nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL), NLM_F_CREATE | NLM_F_EXCL);
  std::memcpy(&out.tcm, nlmsg_data(nlh), sizeof out.tcm);
  nlattr* top[TCA_MAX + 1] = {};
  EXPECT_EQ(nlmsg_parse(nlh, sizeof(tcmsg), top, TCA_MAX, nullptr), 0);
  if (top[TCA_KIND]) out.kind = nla_get_string(top[TCA_KIND]);
  nlattr* opts = top[TCA_OPTIONS];
  if (!opts) return out;
  // netem_change: qopt = nla_data(opt); attributes after NLA_ALIGN(sizeof(*qopt)).
  EXPECT_GE(nla_len(opts), static_cast<int>(sizeof out.qopt));
  std::memcpy(&out.qopt, nla_data(opts), sizeof out.qopt);
  int skip = NLA_ALIGN(sizeof out.qopt);
  EXPECT_EQ(nla_parse(out.tb, TCA_NETEM_MAX,
                      reinterpret_cast<nlattr*>(static_cast<char*>(nla_data(opts)) + skip),
                      nla_len(opts) - skip, nullptr),
            0);
  if (out.tb[TCA_NETEM_LOSS])
    nla_parse_nested(out.loss, NETEM_LOSS_MAX, out.tb[TCA_NETEM_LOSS], nullptr);
  return out;
}

TEST(KernelNetem, RequestCarriesDelayJitterAndTable) {
  LinkParams p;
  p.delay_us = 20'000;
  p.jitter_us = 1'500;
  p.jitter_correlation_pct = 25;
  p.rate_bps = 1'000'000'000;
  auto table = load_dist_table(JitterDist::kNormal);
  NetemRequest req = netem_request(7, p, table);
  Parsed m = parse(req);  // points into req
  EXPECT_EQ(m.kind, "netem");
  EXPECT_EQ(m.tcm.tcm_ifindex, 7);
  EXPECT_EQ(m.tcm.tcm_parent, TC_H_ROOT);
  EXPECT_EQ(m.tcm.tcm_handle, kRootHandle);
  EXPECT_EQ(m.qopt.latency, 20'000'000u >> 6);  // psched ticks of 64 ns
  EXPECT_EQ(m.qopt.jitter, 1'500'000u >> 6);
  // limit: packets in their delay plus the rate stage's queue.
  EXPECT_EQ(m.qopt.limit, delay_queue_pkts(p) + rate_queue_pkts(p));
  EXPECT_EQ(m.qopt.loss, 0u);
  ASSERT_TRUE(m.tb[TCA_NETEM_LATENCY64] && m.tb[TCA_NETEM_JITTER64]);
  EXPECT_EQ(nla_get_s64(m.tb[TCA_NETEM_LATENCY64]), 20'000'000);
  EXPECT_EQ(nla_get_s64(m.tb[TCA_NETEM_JITTER64]), 1'500'000);
  ASSERT_TRUE(m.tb[TCA_NETEM_CORR]);
  auto* corr = static_cast<tc_netem_corr*>(nla_data(m.tb[TCA_NETEM_CORR]));
  EXPECT_EQ(corr->delay_corr, netem_probability(25));
  ASSERT_TRUE(m.tb[TCA_NETEM_DELAY_DIST]);
  ASSERT_EQ(nla_len(m.tb[TCA_NETEM_DELAY_DIST]), static_cast<int>(table.size() * 2));
  EXPECT_EQ(std::memcmp(nla_data(m.tb[TCA_NETEM_DELAY_DIST]), table.data(), table.size() * 2), 0);
  EXPECT_FALSE(m.tb[TCA_NETEM_LOSS]);
  // The link's rate is the tbf child's; netem gets a huge one only to keep FIFO order.
  ASSERT_TRUE(m.tb[TCA_NETEM_RATE64]);
  EXPECT_GE(nla_get_u64(m.tb[TCA_NETEM_RATE64]), 1'000'000'000'000ULL);
}

TEST(KernelNetem, RandomLossAndImpairments) {
  LinkParams p;
  p.delay_us = 1000;
  p.loss.kind = LossModel::Kind::kRandom;
  p.loss.p_pct = 1;
  p.duplicate_pct = 2;
  p.reorder_pct = 3;
  p.corrupt_pct = 4;
  NetemRequest req = netem_request(1, p, {});
  Parsed m = parse(req);  // points into req
  EXPECT_EQ(m.qopt.loss, netem_probability(1));
  EXPECT_EQ(m.qopt.duplicate, netem_probability(2));
  EXPECT_EQ(m.qopt.gap, 1u);  // as tc: reorder means gap 1
  ASSERT_TRUE(m.tb[TCA_NETEM_REORDER] && m.tb[TCA_NETEM_CORRUPT]);
  EXPECT_EQ(static_cast<tc_netem_reorder*>(nla_data(m.tb[TCA_NETEM_REORDER]))->probability,
            netem_probability(3));
  EXPECT_EQ(static_cast<tc_netem_corrupt*>(nla_data(m.tb[TCA_NETEM_CORRUPT]))->probability,
            netem_probability(4));
  EXPECT_FALSE(m.tb[TCA_NETEM_DELAY_DIST]);
  EXPECT_FALSE(m.tb[TCA_NETEM_RATE64]);  // no jitter: nothing to reorder
}

TEST(KernelNetem, GilbertElliottInKernelTerms) {
  LinkParams p;
  p.loss.kind = LossModel::Kind::kGilbertElliott;
  p.loss.p_pct = 1;
  p.loss.r_pct = 10;
  p.loss.h_pct = 30;  // P(no loss | bad)
  p.loss.k_pct = 99;  // P(no loss | good)
  NetemRequest req = netem_request(1, p, {});
  Parsed m = parse(req);  // points into req
  EXPECT_EQ(m.qopt.loss, 0u);
  ASSERT_TRUE(m.loss[NETEM_LOSS_GE]);
  auto* ge = static_cast<tc_netem_gemodel*>(nla_data(m.loss[NETEM_LOSS_GE]));
  EXPECT_EQ(ge->p, netem_probability(1));
  EXPECT_EQ(ge->r, netem_probability(10));
  EXPECT_EQ(ge->h, netem_probability(30));  // kernel: loss in bad iff rnd > h
  EXPECT_EQ(ge->k1, netem_probability(1));  // kernel: loss in good iff rnd < k1
}

TEST(KernelNetem, CorrelatedRandomLossBecomesAGilbertChain) {
  LinkParams p;
  p.loss.kind = LossModel::Kind::kRandom;
  p.loss.p_pct = 10;
  p.loss.correlation_pct = 50;
  NetemRequest req = netem_request(1, p, {});
  Parsed m = parse(req);  // points into req
  EXPECT_EQ(m.qopt.loss, 0u);
  ASSERT_TRUE(m.loss[NETEM_LOSS_GE]);
  auto* ge = static_cast<tc_netem_gemodel*>(nla_data(m.loss[NETEM_LOSS_GE]));
  EXPECT_EQ(ge->p, netem_probability(5));   // (1-c) p
  EXPECT_EQ(ge->r, netem_probability(45));  // (1-c)(1-p)
  EXPECT_EQ(ge->h, 0u);
  EXPECT_EQ(ge->k1, 0u);
}

TEST(KernelNetem, ProbeAnswersAndIsCached) {
  std::string why1, why2;
  bool a = kernel_has_netem(&why1), b = kernel_has_netem(&why2);
  EXPECT_EQ(a, b);
  EXPECT_EQ(why1, why2);
  if (!a) {
    EXPECT_NE(why1.find("no sch_netem"), std::string::npos) << why1;
  }
  std::printf("kernel_has_netem() = %s %s\n", a ? "true" : "false", why1.c_str());
}

}  // namespace
}  // namespace xdc::netem
