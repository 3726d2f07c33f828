#pragma once
// The wire formats of an outer synchronisation's payload (DiLoCo's pseudo-gradient,
// workloads/worker/outer_sync.h): a float vector encoded into bytes and decoded back, so
// that what the replicas average is really the quantised value and the bytes on the wire
// are the format's.
//   fp32  4 bytes a value, exact.
//   bf16  2 bytes a value: the top half of the fp32, rounded to nearest even.
//   fp8   blocks of kPayloadBlock values: a float scale (absmax / 448) then one e4m3 byte each.
//   int8  blocks of kPayloadBlock values: a float scale (absmax / 127) then one int8 each.
//   fp4   blocks of kPayloadBlock values: a float scale (absmax / 6) then e2m1 nibbles, two a
//         byte (low nibble first).
// Block formats round each scaled value to the nearest representable one; a block is
// padded with zeros to kPayloadBlock values. An encoded buffer is a whole number of units
// (unit_bytes(): one value for fp32/bf16, one block otherwise), so a reduction can work
// unit by unit (an MPI datatype of unit_bytes() bytes).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace xdc::model {

enum class Payload { kFp32, kBf16, kFp8, kInt8, kFp4 };

// Values per block of fp8 / int8 / fp4: the float scale costs 4 bytes a block, 0.8% of
// fp4's bytes at 1024 (3.1% at 256), so fp4's payload stays within 1% of fp32's / 8.
inline constexpr int64_t kPayloadBlock = 1024;

const std::vector<std::string>& payload_names();     // "fp32", "bf16", "fp8", "int8", "fp4"
Payload payload_from_name(const std::string& name);  // throws std::invalid_argument
std::string payload_name(Payload p);

int64_t payload_unit_values(Payload p);  // values one unit holds (1 or kPayloadBlock)
int64_t payload_unit_bytes(Payload p);   // bytes of one unit on the wire
int64_t payload_units(Payload p, int64_t values);
// Bytes of `values` floats in format p: payload_units x payload_unit_bytes.
int64_t payload_bytes(Payload p, int64_t values);

// `out` has payload_bytes(p, in.size()) bytes; decode's `out` has as many values as were
// encoded (the padding is dropped).
void encode_payload(Payload p, std::span<const float> in, std::span<std::byte> out);
void decode_payload(Payload p, std::span<const std::byte> in, std::span<float> out);
// inout = encode(decode(in) + decode(inout)), `units` units: the sum of two encoded
// buffers, re-encoded (what each hop of a reduction does).
void add_payload(Payload p, const std::byte* in, std::byte* inout, int64_t units);

}  // namespace xdc::model
