#pragma once
// The kernel backend: sch_netem as the root qdisc (handle 1:) of an egress interface,
// with the rate stage (tbf/htb, qdisc.h) as its child (10: under class 1:1), so that a
// packet is delayed first and then waits for the rate, as in the userspace backend.
//
// With jitter, netem is also given a rate far above the link's (TCA_NETEM_RATE64): that
// switches netem from sorting packets by send time (jitter reorders) to FIFO order, as
// in the userspace backend.
//
// netem's options are built with libnl's message API (nl_msg, nla_*) rather than the
// rtnl_netem_* setters, which cannot express Gilbert-Elliott, 64-bit latency or jitter
// in ns: TCA_OPTIONS = struct tc_netem_qopt followed by TCA_NETEM_* attributes.
#include <netlink/msg.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "netem/nl/socket.h"
#include "netem/shaper/link_params.h"

namespace xdc::netem {

// True when this kernel can create a netem qdisc. Probed once (a netem qdisc on the
// loopback of a throwaway network namespace), then cached. `why` receives the
// kernel's answer when false.
bool kernel_has_netem(std::string* why = nullptr);

// Percent (0..100) as netem's u32 probability scale (0 = never, UINT32_MAX = always).
uint32_t netem_probability(double pct);

struct NlMsgDeleter {
  void operator()(nl_msg* m) const { nlmsg_free(m); }
};
using NetemRequest = std::unique_ptr<nl_msg, NlMsgDeleter>;

// The RTM_NEWQDISC request add_netem_root() sends (exposed for tests, which check it
// the way the kernel's netem_change parses it: qopt, then attributes).
NetemRequest netem_request(int ifindex, const LinkParams& p,
                           const std::vector<int16_t>& dist_table);

// Installs netem (+ rate child when p.rate_bps) as root of `ifindex`. Throws nl::NlError
// (with "kernel has no sch_netem" spelled out when the kind is unknown).
void add_netem_root(const nl::NlSocket& sock, int ifindex, const LinkParams& p,
                    const std::vector<int16_t>& dist_table);

}  // namespace xdc::netem
