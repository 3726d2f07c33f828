#pragma once
// The xtables rules that steer packets leaving `ifname` into NFQUEUE `queue`, in the
// namespace the caller stands in: FORWARD (the gateway's transit traffic, what the delay
// line is for) and OUTPUT (the gateway's own packets, e.g. a ping from it). Through
// `iptables-legacy-restore --noflush` (both rules in one exec and one commit; argv, never
// a shell): this kernel's nftables has no `queue` expression.
// No --queue-bypass: if the delay line dies, the link stops instead of silently
// running unshaped.
#include <cstdint>
#include <string>

namespace xdc::netem {

class NfqueueRules {
 public:
  // Adds both rules in `netns` ("" = current). Throws std::runtime_error with
  // iptables' message on failure (nothing left behind).
  NfqueueRules(std::string netns, std::string ifname, uint16_t queue);
  ~NfqueueRules();  // deletes both rules
  NfqueueRules(const NfqueueRules&) = delete;
  NfqueueRules& operator=(const NfqueueRules&) = delete;

 private:
  std::string netns_, ifname_;
  uint16_t queue_;
};

// Deletes every copy of the two rules; returns how many were deleted. Never throws
// (a missing namespace or binary counts as nothing to delete).
int remove_nfqueue_rules(const std::string& netns, const std::string& ifname, uint16_t queue);

}  // namespace xdc::netem
