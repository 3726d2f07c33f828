#pragma once
// splitmix64's finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", 2014): a bijective mix of 64 bits, so that nearby keys (a seed, a rank, a
// stream index) give independent-looking draws. The one copy every seeded stream uses.
#include <cstdint>

namespace xdc {

inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;  // splitmix64's increment

constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace xdc
