// The outer sync's payload formats (model/payload.h) and the outer Nesterov step
// (model/outer_optimizer.h): sizes on the wire, rounding within each format's step,
// the re-encoded sum of two buffers, two outer steps against PyTorch's formula, and the
// eager update's mix of a replica's fresh delta with the others' previous.
#include "workloads/model/payload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "workloads/model/outer_optimizer.h"

using xdc::model::Payload;

namespace {

std::vector<float> randoms(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 0.01f);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

std::vector<float> round_trip(Payload p, const std::vector<float>& in) {
  std::vector<std::byte> wire(
      static_cast<size_t>(xdc::model::payload_bytes(p, static_cast<int64_t>(in.size()))));
  xdc::model::encode_payload(p, in, wire);
  std::vector<float> out(in.size());
  xdc::model::decode_payload(p, wire, out);
  return out;
}

}  // namespace

TEST(Payload, BytesAreTheFormatsWithABlockScale) {
  const int64_t n = 4000;  // 4 blocks of 1024, the last one padded
  EXPECT_EQ(xdc::model::payload_bytes(Payload::kFp32, n), 16000);
  EXPECT_EQ(xdc::model::payload_bytes(Payload::kBf16, n), 8000);
  EXPECT_EQ(xdc::model::payload_bytes(Payload::kInt8, n), 4 * (4 + 1024));
  EXPECT_EQ(xdc::model::payload_bytes(Payload::kFp8, n), 4 * (4 + 1024));
  EXPECT_EQ(xdc::model::payload_bytes(Payload::kFp4, n), 4 * (4 + 512));
  // A large tensor: fp4 is 1/8 of fp32 plus its scales (4 bytes a 1024-value block).
  const int64_t big = 1 << 20;
  const double ratio = static_cast<double>(xdc::model::payload_bytes(Payload::kFp4, big)) /
                       static_cast<double>(xdc::model::payload_bytes(Payload::kFp32, big));
  EXPECT_NEAR(ratio, 1.0 / 8 * (516.0 / 512.0), 1e-9);
  for (const auto& name : xdc::model::payload_names())
    EXPECT_EQ(xdc::model::payload_name(xdc::model::payload_from_name(name)), name);
  EXPECT_THROW(xdc::model::payload_from_name("fp16"), std::invalid_argument);
}

TEST(Payload, RoundTripErrorIsWithinEachFormatsStep) {
  const std::vector<float> x = randoms(4000, 7);
  EXPECT_EQ(round_trip(Payload::kFp32, x), x);
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  const auto bf16 = round_trip(Payload::kBf16, x);
  const auto int8 = round_trip(Payload::kInt8, x);
  const auto fp8 = round_trip(Payload::kFp8, x);
  const auto fp4 = round_trip(Payload::kFp4, x);
  double e_int8 = 0, e_fp8 = 0, e_fp4 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(std::fabs(bf16[i] - x[i]), std::fabs(x[i]) / 256 + 1e-30) << i;
    // Per block the scale is at most the whole vector's absmax / the format's maximum.
    EXPECT_LE(std::fabs(int8[i] - x[i]), amax / 127 / 2 * 1.0001) << i;
    e_int8 += std::fabs(int8[i] - x[i]);
    e_fp8 += std::fabs(fp8[i] - x[i]);
    e_fp4 += std::fabs(fp4[i] - x[i]);
  }
  // Coarser formats lose more, and none is lossless.
  EXPECT_GT(e_int8, 0);
  EXPECT_LT(e_int8, e_fp4);
  EXPECT_LT(e_fp8, e_fp4);
  // fp4 keeps the sign and the block's largest value exactly (it maps onto 6).
  for (size_t i = 0; i < x.size(); ++i) {
    if (fp4[i] != 0) {
      EXPECT_EQ(std::signbit(fp4[i]), std::signbit(x[i])) << i;
    }
  }
  const std::vector<float> block(x.begin(), x.begin() + 1024);
  float bmax = 0;
  size_t at = 0;
  for (size_t i = 0; i < block.size(); ++i)
    if (std::fabs(block[i]) > bmax) bmax = std::fabs(block[i]), at = i;
  EXPECT_FLOAT_EQ(round_trip(Payload::kFp4, block)[at], block[at]);
}

TEST(Payload, AddingTwoEncodedBuffersEncodesTheirSum) {
  const std::vector<float> a = randoms(2500, 1), b = randoms(2500, 2);
  for (Payload p : {Payload::kBf16, Payload::kInt8, Payload::kFp8, Payload::kFp4}) {
    const auto n = static_cast<int64_t>(a.size());
    std::vector<std::byte> wa(static_cast<size_t>(xdc::model::payload_bytes(p, n))), wb = wa;
    xdc::model::encode_payload(p, a, wa);
    xdc::model::encode_payload(p, b, wb);
    xdc::model::add_payload(p, wa.data(), wb.data(), xdc::model::payload_units(p, n));
    std::vector<float> sum(a.size()), da = round_trip(p, a), db = round_trip(p, b);
    xdc::model::decode_payload(p, wb, sum);
    // The sum of the decoded operands, encoded once more.
    std::vector<float> expect(a.size());
    for (size_t i = 0; i < a.size(); ++i) expect[i] = da[i] + db[i];
    EXPECT_EQ(sum, round_trip(p, expect)) << xdc::model::payload_name(p);
  }
}

TEST(OuterNesterov, TwoStepsFollowPyTorchsNesterovSgd) {
  xdc::model::OuterNesterov opt(0.7, 0.9);
  std::vector<float> theta = {1.0f, -2.0f};
  // Step 1: v = d; theta -= lr (d + mu v) = lr * 1.9 d.
  opt.step(std::vector<float>{0.1f, -0.2f}, theta);
  EXPECT_FLOAT_EQ(theta[0], 1.0f - 0.7f * 1.9f * 0.1f);
  EXPECT_FLOAT_EQ(theta[1], -2.0f + 0.7f * 1.9f * 0.2f);
  // Step 2 with d = 0.1: v = 0.9 * 0.1 + 0.1 = 0.19; theta -= 0.7 (0.1 + 0.9 * 0.19).
  const float before = theta[0];
  opt.step(std::vector<float>{0.1f, 0.0f}, theta);
  EXPECT_FLOAT_EQ(theta[0], before - 0.7f * (0.1f + 0.9f * 0.19f));
  EXPECT_FLOAT_EQ(opt.momentum_buffer()[1], 0.9f * -0.2f);
}

// Three replicas, replica 0's view: the first step is on its own delta alone; after the
// all-reduce of what it sent (sum of everyone's), the next step mixes its fresh delta
// (a third) with the other two's previous deltas (a third each).
TEST(EagerOuterGradient, MixesTheOwnFreshDeltaWithTheOthersPrevious) {
  xdc::model::EagerOuterGradient eager(3);
  std::vector<float> step(2);
  eager.mix(std::vector<float>{0.3f, -0.6f}, step);
  EXPECT_FLOAT_EQ(step[0], 0.3f);
  EXPECT_FLOAT_EQ(step[1], -0.6f);
  // Round 1: replica 0 sent {0.3, -0.6}, replicas 1 and 2 {0.6, 0} and {0, 1.2}.
  eager.reduced(std::vector<float>{0.9f, 0.6f}, std::vector<float>{0.3f, -0.6f});
  // Round 2: its own delta {0.9, 0.3}: {0.9/3 + (0.6 + 0)/3, 0.3/3 + (0 + 1.2)/3}.
  eager.mix(std::vector<float>{0.9f, 0.3f}, step);
  EXPECT_FLOAT_EQ(step[0], 0.3f + 0.2f);
  EXPECT_FLOAT_EQ(step[1], 0.1f + 0.4f);
  EXPECT_THROW(eager.mix(std::vector<float>{1.0f}, step), std::invalid_argument);
}
