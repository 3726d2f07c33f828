#pragma once
// The xtables rule that steers every IPv4 packet leaving `ifname` into NFQUEUE `queue`,
// in the namespace the caller stands in:
//   iptables-legacy -t mangle -A POSTROUTING -o IF -j NFQUEUE --queue-num N
// POSTROUTING sees the gateway's transit traffic (what the delay line is for) and its
// own packets (a ping from it, the delay line's duplicates) after every filter decision,
// so a filter rule that accepts early cannot bypass the shaping; an accepted verdict
// continues with the hooks after it. iptables-legacy because this kernel's nftables has
// no `queue` expression; argv, never a shell. No --queue-bypass: if the delay line
// dies, the link stops instead of silently running unshaped. IPv6 is not steered.
#include <cstdint>
#include <string>

namespace xdc::netem {

class NfqueueRules {
 public:
  // Adds the rule in `netns` ("" = current). Throws std::runtime_error with iptables'
  // message on failure.
  NfqueueRules(std::string netns, std::string ifname, uint16_t queue);
  ~NfqueueRules();  // deletes it
  NfqueueRules(const NfqueueRules&) = delete;
  NfqueueRules& operator=(const NfqueueRules&) = delete;

 private:
  std::string netns_, ifname_;
  uint16_t queue_;
};

// Deletes every copy of the rule; returns how many were deleted. Never throws (a missing
// namespace or binary counts as nothing to delete).
int remove_nfqueue_rules(const std::string& netns, const std::string& ifname, uint16_t queue);

}  // namespace xdc::netem
