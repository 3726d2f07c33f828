#include "netem/delayline/packet_edit.h"

#include <netinet/in.h>

#include <cstring>

namespace xdc::delayline {

namespace {

struct L4 {
  size_t offset = 0, len = 0, csum_at = 0;
  uint8_t proto = 0;
};

// Where the TCP/UDP segment and its checksum field are; false if not applicable.
bool locate(const uint8_t* pkt, size_t len, L4& l4) {
  if (len < 20 || (pkt[0] >> 4) != 4) return false;
  size_t ihl = static_cast<size_t>(pkt[0] & 0x0f) * 4;
  size_t tot = size_t{pkt[2]} << 8 | pkt[3];
  bool fragment = ((pkt[6] & 0x3f) | pkt[7]) != 0;  // MF or an offset
  if (ihl < 20 || tot < ihl || tot > len || fragment) return false;
  l4.proto = pkt[9];
  l4.offset = ihl;
  l4.len = tot - ihl;
  if (l4.proto == IPPROTO_TCP && l4.len >= 20)
    l4.csum_at = ihl + 16;
  else if (l4.proto == IPPROTO_UDP && l4.len >= 8)
    l4.csum_at = ihl + 6;
  else
    return false;
  return true;
}

// Ones' complement sum of the pseudo-header and the segment (checksum field included).
uint16_t folded_sum(const uint8_t* pkt, const L4& l4) {
  uint64_t sum = 0;
  for (size_t i = 12; i < 20; i += 2) sum += uint32_t{pkt[i]} << 8 | pkt[i + 1];  // saddr, daddr
  sum += l4.proto;
  sum += l4.len;
  const uint8_t* p = pkt + l4.offset;
  for (size_t i = 0; i + 1 < l4.len; i += 2) sum += uint32_t{p[i]} << 8 | p[i + 1];
  if (l4.len & 1) sum += uint32_t{p[l4.len - 1]} << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

}  // namespace

bool complete_l4_checksum(uint8_t* pkt, size_t len) {
  L4 l4;
  if (!locate(pkt, len, l4)) return false;
  pkt[l4.csum_at] = pkt[l4.csum_at + 1] = 0;
  uint16_t csum = static_cast<uint16_t>(~folded_sum(pkt, l4));
  if (l4.proto == IPPROTO_UDP && csum == 0) csum = 0xffff;  // 0 means "no checksum"
  pkt[l4.csum_at] = static_cast<uint8_t>(csum >> 8);
  pkt[l4.csum_at + 1] = static_cast<uint8_t>(csum & 0xff);
  return true;
}

bool l4_checksum_ok(const uint8_t* pkt, size_t len) {
  L4 l4;
  if (!locate(pkt, len, l4)) return false;
  if (l4.proto == IPPROTO_UDP && pkt[l4.csum_at] == 0 && pkt[l4.csum_at + 1] == 0) return true;
  return folded_sum(pkt, l4) == 0xffff;
}

void flip_random_bit(uint8_t* pkt, size_t len, std::mt19937& rng) {
  if (len == 0) return;
  uint64_t bit = std::uniform_int_distribution<uint64_t>(0, len * 8 - 1)(rng);
  pkt[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
}

}  // namespace xdc::delayline
