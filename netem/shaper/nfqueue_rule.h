#pragma once
// The xtables rules that steer every IPv4 packet leaving `ifname` into NFQUEUE `queue`,
// in the namespace the caller stands in:
//   iptables-legacy -t mangle -A FORWARD -o IF -j NFQUEUE --queue-num N   transit traffic
//   iptables-legacy -t mangle -A OUTPUT  -o IF -j NFQUEUE --queue-num N   the gateway's own
// The mangle table runs before the filter table, and an accepted verdict continues with
// the hooks after it: filter rules still apply, and one that accepts early cannot bypass
// the shaping. FORWARD, not POSTROUTING: forwarding clears the packet's arrival stamp
// after the FORWARD hook, and the delay line counts the delay from that stamp.
// iptables-legacy because this kernel's nftables has no `queue` expression; argv, never
// a shell. No --queue-bypass: if the delay line dies, the link stops instead of silently
// running unshaped. IPv6 is not steered.
#include <cstdint>
#include <string>

namespace xdc::netem {

class NfqueueRules {
 public:
  // Adds both rules in `netns` ("" = current), in one iptables-legacy-restore --noflush
  // transaction. Throws std::runtime_error with iptables' message on failure (nothing
  // left behind: the transaction is all or nothing).
  NfqueueRules(std::string netns, std::string ifname, uint16_t queue);
  ~NfqueueRules();  // deletes them
  NfqueueRules(const NfqueueRules&) = delete;
  NfqueueRules& operator=(const NfqueueRules&) = delete;

 private:
  std::string netns_, ifname_;
  uint16_t queue_;
};

// Deletes every copy of the rules; returns how many were deleted. Never throws (a
// missing namespace or binary counts as nothing to delete).
int remove_nfqueue_rules(const std::string& netns, const std::string& ifname, uint16_t queue);

}  // namespace xdc::netem
