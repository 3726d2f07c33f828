#pragma once
// Root qdiscs on one interface, through libnl: the rate stage (tbf, or htb above the
// 32-bit tbf limit of ~17 Gbit/s) and removal. Every add is NLM_F_EXCL, so an interface
// that already carries a qdisc of ours (or anyone's) is refused, never silently replaced.
#include <cstdint>
#include <string>

#include "netem/nl/socket.h"

namespace xdc::netem {

constexpr uint32_t kRootHandle = 0x10000;   // 1:  root qdisc xdc installs
constexpr uint32_t kChildHandle = 0xA0000;  // 10: rate stage under a kernel netem root
constexpr uint32_t kNetemClass = 0x10001;   // 1:1 the class netem offers its child

// Adds the rate stage as qdisc `handle` under `parent` (TC_H_ROOT or a class):
// tbf with `limit_bytes` of queue and `burst_bytes` of bucket when the rate fits tbf's
// 32-bit bytes/s, else htb with one default class of rate64/ceil64 and a bfifo leaf.
// Returns the kind installed ("tbf" | "htb"). Throws nl::NlError.
std::string add_rate_qdisc(const nl::NlSocket& sock, int ifindex, uint32_t parent, uint32_t handle,
                           uint64_t rate_bps, uint64_t limit_bytes, uint32_t burst_bytes);

// Changes the rate stage that add_rate_qdisc installed, in place (as `tc qdisc change` /
// `tc class change`): nothing queued is dropped or reordered by the change itself; a
// smaller limit only refuses what arrives while the queue is above it. `kind` is what
// add_rate_qdisc returned; a rate needing the other kind (tbf <-> htb, ~17 Gbit/s) throws
// std::runtime_error. Throws nl::NlError.
void change_rate_qdisc(const nl::NlSocket& sock, int ifindex, uint32_t parent, uint32_t handle,
                       const std::string& kind, uint64_t rate_bps, uint64_t limit_bytes,
                       uint32_t burst_bytes);
// Removes the rate stage that add_rate_qdisc installed (a rate changed to none, in
// place): first changed to the most its kind carries (tbf: 2^31-1 bytes/s, ~17 Gbit/s;
// htb: 1 Tbit/s), so that what it holds leaves, then deleted once it holds nothing (after
// `drain_ms` at most: what is still queued then is dropped). Under a netem root (parent
// kNetemClass) netem then sends from its own queue. Throws nl::NlError.
void remove_rate_qdisc(const nl::NlSocket& sock, int ifindex, uint32_t parent, uint32_t handle,
                       const std::string& kind, uint64_t limit_bytes, int drain_ms = 1000);
// The kind add_rate_qdisc installs for `rate_bps`: "tbf" | "htb".
const char* rate_qdisc_kind(uint64_t rate_bps);

// A qdisc's counters as the kernel keeps them (a parent's include its children's).
struct QdiscCounters {
  bool found = false;
  uint64_t packets = 0;  // sent
  // Sent, as the qdisc charged them: a GSO aggregate counts each segment's headers
  // (qdisc_pkt_len), so this is what the segments carry on a wire, less FCS and preamble.
  uint64_t bytes = 0;
  uint64_t drops = 0;
  uint64_t qlen = 0;  // packets queued now
  uint64_t backlog_bytes = 0;
};
// Counters of the qdisc `handle` on `ifname` in `netns`; found == false when absent.
QdiscCounters qdisc_counters(const std::string& netns, const std::string& ifname, uint32_t handle);

// Deletes the root qdisc of `ifindex` if its handle is `handle` (0 = whatever it is).
// Returns false when there was none or it was not ours; throws on other errors.
bool delete_root_qdisc(const nl::NlSocket& sock, int ifindex, uint32_t handle);

// Removes our root qdisc from `ifname` in `netns`; false (no throw) when the namespace,
// the interface or the qdisc is gone. For undoing from a record (xdc down / clean).
bool remove_root_qdisc(const std::string& netns, const std::string& ifname, uint32_t handle);

// Kind of the current root qdisc of `ifname` ("noqueue", "tbf", ...); "" if none.
std::string root_qdisc_kind(const std::string& netns, const std::string& ifname);

}  // namespace xdc::netem
