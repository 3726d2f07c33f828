// Checksums and bit flips for the delay line's duplicate/corrupt impairments.
#include "netem/delayline/packet_edit.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <vector>

namespace xdc::delayline {
namespace {

// An IPv4 packet 10.0.0.1 -> 10.0.0.2 with a `proto` header of `l4_header` bytes and
// `payload` bytes of data.
std::vector<uint8_t> packet(uint8_t proto, size_t l4_header, size_t payload) {
  size_t tot = 20 + l4_header + payload;
  std::vector<uint8_t> p(tot, 0);
  p[0] = 0x45;
  p[2] = static_cast<uint8_t>(tot >> 8);
  p[3] = static_cast<uint8_t>(tot & 0xff);
  p[6] = 0x40;  // DF
  p[8] = 64;
  p[9] = proto;
  uint8_t addrs[8] = {10, 0, 0, 1, 10, 0, 0, 2};
  std::copy(addrs, addrs + 8, p.begin() + 12);
  p[20] = 0x1f;  // ports
  p[21] = 0x40;
  p[22] = 0x1b;
  p[23] = 0x5f;
  if (proto == IPPROTO_UDP) {
    p[24] = static_cast<uint8_t>((l4_header + payload) >> 8);
    p[25] = static_cast<uint8_t>((l4_header + payload) & 0xff);
  } else {
    p[32] = 0x50;  // data offset 5
  }
  for (size_t i = 20 + l4_header; i < tot; ++i) p[i] = static_cast<uint8_t>(i * 7 + 3);
  return p;
}

TEST(PacketEdit, UdpChecksumComputedAndVerified) {
  auto p = packet(IPPROTO_UDP, 8, 33);  // odd length
  EXPECT_TRUE(complete_l4_checksum(p.data(), p.size()));
  EXPECT_TRUE(l4_checksum_ok(p.data(), p.size()));
  EXPECT_FALSE(p[26] == 0 && p[27] == 0);
}

TEST(PacketEdit, TcpChecksumCatchesEverySingleBitFlipInTheSegment) {
  auto p = packet(IPPROTO_TCP, 20, 40);
  ASSERT_TRUE(complete_l4_checksum(p.data(), p.size()));
  ASSERT_TRUE(l4_checksum_ok(p.data(), p.size()));
  for (size_t bit = 20 * 8; bit < p.size() * 8; ++bit) {
    auto q = p;
    q[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_FALSE(l4_checksum_ok(q.data(), q.size())) << "bit " << bit;
  }
}

TEST(PacketEdit, PartialChecksumIsReplaced) {
  // CHECKSUM_PARTIAL leaves the pseudo-header sum in the field; we recompute anyway.
  auto p = packet(IPPROTO_TCP, 20, 100);
  p[36] = 0x12;
  p[37] = 0x34;
  EXPECT_FALSE(l4_checksum_ok(p.data(), p.size()));
  EXPECT_TRUE(complete_l4_checksum(p.data(), p.size()));
  EXPECT_TRUE(l4_checksum_ok(p.data(), p.size()));
}

TEST(PacketEdit, LeavesWhatItCannotHandle) {
  auto frag = packet(IPPROTO_UDP, 8, 10);
  frag[6] = 0x20;  // more fragments
  auto before = frag;
  EXPECT_FALSE(complete_l4_checksum(frag.data(), frag.size()));
  EXPECT_EQ(frag, before);
  auto icmp = packet(IPPROTO_ICMP, 8, 10);
  EXPECT_FALSE(complete_l4_checksum(icmp.data(), icmp.size()));
  auto shortp = packet(IPPROTO_TCP, 20, 0);
  EXPECT_FALSE(complete_l4_checksum(shortp.data(), 30));  // truncated
  std::vector<uint8_t> v6(40, 0);
  v6[0] = 0x60;
  EXPECT_FALSE(complete_l4_checksum(v6.data(), v6.size()));
}

TEST(PacketEdit, FlipChangesExactlyOneBit) {
  std::mt19937 rng(1);
  for (int i = 0; i < 1000; ++i) {
    auto p = packet(IPPROTO_UDP, 8, 20), q = p;
    flip_random_bit(q.data(), q.size(), rng);
    int diff = 0;
    for (size_t k = 0; k < p.size(); ++k) diff += __builtin_popcount(p[k] ^ q[k]);
    ASSERT_EQ(diff, 1);
  }
}

}  // namespace
}  // namespace xdc::delayline
