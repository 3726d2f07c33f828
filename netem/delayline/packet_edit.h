#pragma once
// Editing IPv4 packets as NFQUEUE hands them over (from the IP header on), for the
// delay line's duplicate and corrupt impairments.
#include <cstddef>
#include <cstdint>
#include <random>

namespace xdc::delayline {

// Fills in the TCP or UDP checksum of an IPv4 packet, computed from scratch. Needed
// when the kernel left it to the NIC (CHECKSUM_PARTIAL, NFQA_SKB_CSUMNOTREADY) and the
// packet leaves as bytes we wrote. Returns false (packet untouched) when it is not an
// unfragmented IPv4 TCP/UDP packet of consistent length.
bool complete_l4_checksum(uint8_t* pkt, size_t len);

// True when the TCP/UDP checksum of an IPv4 packet verifies (false if not TCP/UDP).
bool l4_checksum_ok(const uint8_t* pkt, size_t len);

// netem's corruption: one random bit of the packet flipped.
void flip_random_bit(uint8_t* pkt, size_t len, std::mt19937& rng);

}  // namespace xdc::delayline
