#include "workloads/model/payload.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace xdc::model {
namespace {

// Positive magnitudes of a minifloat, ascending by code (codes 0..N-1).
std::array<float, 127> e4m3_table() {
  std::array<float, 127> t{};
  for (int c = 0; c < 127; ++c) {  // 0x7F is NaN
    const int e = c >> 3, m = c & 7;
    t[c] = e == 0 ? std::ldexp(static_cast<float>(m), -9)
                  : std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7);
  }
  return t;
}
const std::array<float, 127> kE4m3 = e4m3_table();
const std::array<float, 8> kE2m1 = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

// The code of the table value nearest |x| (ties to the lower code).
template <size_t N>
uint8_t nearest_code(const std::array<float, N>& table, float ax) {
  const auto it = std::lower_bound(table.begin(), table.end(), ax);
  if (it == table.end()) return static_cast<uint8_t>(N - 1);
  if (it == table.begin()) return 0;
  const auto lo = it - 1;
  return static_cast<uint8_t>((ax - *lo <= *it - ax) ? lo - table.begin() : it - table.begin());
}

uint16_t to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

// The scale a block format divides by: absmax maps onto the format's largest value.
float block_max(Payload p) {
  switch (p) {
    case Payload::kFp8:
      return 448.0f;
    case Payload::kInt8:
      return 127.0f;
    case Payload::kFp4:
      return 6.0f;
    default:
      return 1.0f;
  }
}

void encode_block(Payload p, const float* in, int64_t n, std::byte* out) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(in[i]));
  const float scale = amax / block_max(p);
  std::memcpy(out, &scale, 4);
  std::byte* q = out + 4;
  const float inv = scale > 0 ? 1.0f / scale : 0.0f;
  std::memset(q, 0, static_cast<size_t>(payload_unit_bytes(p) - 4));
  for (int64_t i = 0; i < n; ++i) {
    const float v = in[i] * inv;
    const uint8_t sign = std::signbit(v) ? 1 : 0;
    switch (p) {
      case Payload::kInt8: {
        const float r = std::clamp(std::nearbyint(v), -127.0f, 127.0f);
        q[i] = static_cast<std::byte>(static_cast<int8_t>(r));
        break;
      }
      case Payload::kFp8:
        q[i] = static_cast<std::byte>((sign << 7) | nearest_code(kE4m3, std::fabs(v)));
        break;
      case Payload::kFp4: {
        const uint8_t code = static_cast<uint8_t>((sign << 3) | nearest_code(kE2m1, std::fabs(v)));
        q[i / 2] |= static_cast<std::byte>(i % 2 == 0 ? code : code << 4);
        break;
      }
      default:
        break;
    }
  }
}

void decode_block(Payload p, const std::byte* in, int64_t n, float* out) {
  float scale;
  std::memcpy(&scale, in, 4);
  const std::byte* q = in + 4;
  for (int64_t i = 0; i < n; ++i) {
    float v = 0;
    switch (p) {
      case Payload::kInt8:
        v = static_cast<float>(static_cast<int8_t>(q[i]));
        break;
      case Payload::kFp8: {
        const auto b = static_cast<uint8_t>(q[i]);
        v = kE4m3[std::min<int>(b & 0x7F, 126)] * ((b & 0x80) ? -1.0f : 1.0f);
        break;
      }
      case Payload::kFp4: {
        const auto b = static_cast<uint8_t>(q[i / 2]);
        const uint8_t code = i % 2 == 0 ? (b & 0xF) : (b >> 4);
        v = kE2m1[code & 7] * ((code & 8) ? -1.0f : 1.0f);
        break;
      }
      default:
        break;
    }
    out[i] = v * scale;
  }
}

}  // namespace

const std::vector<std::string>& payload_names() {
  static const std::vector<std::string> names = {"fp32", "bf16", "fp8", "int8", "fp4"};
  return names;
}

Payload payload_from_name(const std::string& name) {
  const auto& n = payload_names();
  const auto it = std::find(n.begin(), n.end(), name);
  if (it == n.end()) throw std::invalid_argument("unknown payload format \"" + name + "\"");
  return static_cast<Payload>(it - n.begin());
}

std::string payload_name(Payload p) {
  return payload_names().at(static_cast<size_t>(p));
}

int64_t payload_unit_values(Payload p) {
  return p == Payload::kFp32 || p == Payload::kBf16 ? 1 : kPayloadBlock;
}

int64_t payload_unit_bytes(Payload p) {
  switch (p) {
    case Payload::kFp32:
      return 4;
    case Payload::kBf16:
      return 2;
    case Payload::kFp8:
    case Payload::kInt8:
      return 4 + kPayloadBlock;
    case Payload::kFp4:
      return 4 + kPayloadBlock / 2;
  }
  return 4;
}

int64_t payload_units(Payload p, int64_t values) {
  const int64_t u = payload_unit_values(p);
  return (values + u - 1) / u;
}

int64_t payload_bytes(Payload p, int64_t values) {
  return payload_units(p, values) * payload_unit_bytes(p);
}

void encode_payload(Payload p, std::span<const float> in, std::span<std::byte> out) {
  const auto n = static_cast<int64_t>(in.size());
  if (static_cast<int64_t>(out.size()) != payload_bytes(p, n))
    throw std::invalid_argument("encode_payload: output of the wrong size");
  if (p == Payload::kFp32) {
    std::memcpy(out.data(), in.data(), in.size_bytes());
    return;
  }
  if (p == Payload::kBf16) {
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t h = to_bf16(in[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
    return;
  }
  const int64_t ub = payload_unit_bytes(p);
  for (int64_t b = 0, i = 0; i < n; ++b, i += kPayloadBlock)
    encode_block(p, in.data() + i, std::min(kPayloadBlock, n - i), out.data() + b * ub);
}

void decode_payload(Payload p, std::span<const std::byte> in, std::span<float> out) {
  const auto n = static_cast<int64_t>(out.size());
  if (static_cast<int64_t>(in.size()) != payload_bytes(p, n))
    throw std::invalid_argument("decode_payload: input of the wrong size");
  if (p == Payload::kFp32) {
    std::memcpy(out.data(), in.data(), out.size_bytes());
    return;
  }
  if (p == Payload::kBf16) {
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, in.data() + 2 * i, 2);
      out[i] = from_bf16(h);
    }
    return;
  }
  const int64_t ub = payload_unit_bytes(p);
  for (int64_t b = 0, i = 0; i < n; ++b, i += kPayloadBlock)
    decode_block(p, in.data() + b * ub, std::min(kPayloadBlock, n - i), out.data() + i);
}

void add_payload(Payload p, const std::byte* in, std::byte* inout, int64_t units) {
  const int64_t uv = payload_unit_values(p), ub = payload_unit_bytes(p);
  std::vector<float> a(static_cast<size_t>(uv)), b(static_cast<size_t>(uv));
  for (int64_t u = 0; u < units; ++u) {
    decode_payload(p, {in + u * ub, static_cast<size_t>(ub)}, a);
    decode_payload(p, {inout + u * ub, static_cast<size_t>(ub)}, b);
    for (int64_t i = 0; i < uv; ++i) a[i] += b[i];
    encode_payload(p, a, {inout + u * ub, static_cast<size_t>(ub)});
  }
}

}  // namespace xdc::model
