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
//
// Wire packets. netem decides loss, duplication and reordering per skb, and on a
// forwarding hop an skb is whatever the previous hop transmitted: a sender's TSO/GSO
// aggregate crosses veths and bridges whole (it is cut into frames only when a device
// transmits it, after its qdisc). So netem drops whole aggregates and TCP sees far
// fewer loss events than configured; turning offloads off on the gateway itself is too
// late. Hence, when an impairment acts per packet (loss, duplicate, corrupt, reorder), the
// kernel backend sets gso_max_segs 1 on the veth peer of every other interface in the
// gateway's namespace (hosts' eth0 behind the DC bridge, neighbouring gateways' WAN
// veths): TCP there builds one-segment skbs and any aggregate is segmented when that
// peer transmits, before the gateway. This is rtnetlink (RTM_SETLINK in the peer's
// namespace, found by its netnsid); the old values are recorded and restored by undo.
// It costs the senders' CPU (about half an unshaped flow's rate in a UML guest). GRO,
// which could re-aggregate on the gateway, is off on veths unless someone turns it on.
// The measurements behind this: docs/history/kernel-netem-wire-packets.md.
// Limit: peers shared by two shapers (a gateway with several lossy links) are restored by
// the first one undone.
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
// the way the kernel's netem_change parses it: qopt, then attributes). `change`: the
// request of change_netem_root() instead (no NLM_F_CREATE, `limit_pkts` as netem's limit
// when non-zero, and always the order-keeping rate).
NetemRequest netem_request(int ifindex, const LinkParams& p, const std::vector<int16_t>& dist_table,
                           bool change = false, uint32_t limit_pkts = 0);
// netem's limit for `p`: packets in their delay plus those waiting for the rate.
uint32_t netem_limit_pkts(const LinkParams& p);

// A veth peer made to transmit wire packets into the shaped interface's namespace.
struct WireFeeder {
  std::string netns;          // the peer's namespace ("" = the initial one)
  int ifindex = 0;            // in that namespace
  uint32_t gso_max_segs = 0;  // its value before (restored by restore_feeders)
};

// True when `p` has an impairment that must act on each wire packet: loss, duplicate,
// corrupt or reorder (delay, jitter and rate act the same on an aggregate). Both backends
// then see wire packets (the delay line binds its queue without GSO, delay_line.h).
bool acts_per_packet(const LinkParams& p);

// Sets gso_max_segs 1 on the veth peer of every veth in sock's namespace other than
// `shaped_ifindex` (peers found by netnsid among /run/netns); returns what it changed.
// Throws nl::NlError / std::runtime_error, after restoring what it had changed.
std::vector<WireFeeder> segment_feeders(const nl::NlSocket& sock, int shaped_ifindex);
// Puts the recorded values back; a vanished peer counts as done. Never throws.
void restore_feeders(const std::vector<WireFeeder>& feeders) noexcept;

// Installs netem (+ rate child when p.rate_bps) as root of `ifindex`. Throws nl::NlError
// (with "kernel has no sch_netem" spelled out when the kind is unknown).
void add_netem_root(const nl::NlSocket& sock, int ifindex, const LinkParams& p,
                    const std::vector<int16_t>& dist_table);

// Changes the netem root in place (`tc qdisc change`): netem keeps its queue, each queued
// packet its send time. The new options carry the order-keeping rate whatever the jitter,
// so netem counts a new packet's delay from the last queued one's send time: after a
// delay decrease new packets wait behind the queued ones instead of overtaking them.
// `limit_pkts` is netem's new limit (the caller keeps it from shrinking below what is
// queued). The rate child is the caller's (qdisc.h). Throws nl::NlError.
void change_netem_root(const nl::NlSocket& sock, int ifindex, const LinkParams& p,
                       const std::vector<int16_t>& dist_table, uint32_t limit_pkts);

}  // namespace xdc::netem
