#include "workloads/worker/outer_sync.h"

#include <stdexcept>
#include <string>

namespace xdc::worker {
namespace {

// MPI user ops, one per encoded format: inout = encode(decode(in) + decode(inout)).
template <model::Payload P>
void reduce_units(void* in, void* inout, int* len, MPI_Datatype*) {
  model::add_payload(P, static_cast<const std::byte*>(in), static_cast<std::byte*>(inout), *len);
}

MPI_User_function* user_function(model::Payload p) {
  switch (p) {
    case model::Payload::kBf16:
      return &reduce_units<model::Payload::kBf16>;
    case model::Payload::kFp8:
      return &reduce_units<model::Payload::kFp8>;
    case model::Payload::kInt8:
      return &reduce_units<model::Payload::kInt8>;
    case model::Payload::kFp4:
      return &reduce_units<model::Payload::kFp4>;
    case model::Payload::kFp32:
      break;
  }
  return nullptr;
}

}  // namespace

OuterSync::OuterSync(const DpSyncSpec& spec, int replicas)
    : payload_(model::payload_from_name(spec.payload)),
      inner_steps_(spec.inner_steps),
      replicas_(replicas),
      lr_(spec.outer_lr),
      momentum_(spec.outer_momentum) {
  if (inner_steps_ < 1)
    throw std::runtime_error("run spec dp_sync.inner_steps: expected 1 or more, got " +
                             std::to_string(inner_steps_));
  if (payload_ != model::Payload::kFp32) {
    MPI_Type_contiguous(static_cast<int>(model::payload_unit_bytes(payload_)), MPI_BYTE, &unit_);
    MPI_Type_commit(&unit_);
    MPI_Op_create(user_function(payload_), 1, &op_);
  }
}

OuterSync::~OuterSync() {
  if (op_ != MPI_OP_NULL) MPI_Op_free(&op_);
  if (unit_ != MPI_DATATYPE_NULL) MPI_Type_free(&unit_);
}

void OuterSync::begin(StageCompute& compute, const std::vector<int>& stages) {
  for (int s : stages) {
    Stage& st = stages_[s];
    if (compute.real()) {
      const std::span<float> p = compute.params(s);
      if (p.empty())
        throw std::runtime_error("dp_sync diloco: stage " + std::to_string(s) +
                                 "'s parameters cannot be written in place (a CUDA stage); "
                                 "the outer step needs the CPU stage");
      st.theta_start.assign(p.begin(), p.end());
      st.opt = std::make_unique<model::OuterNesterov>(lr_, momentum_);
      st.delta.resize(p.size());
    } else {
      st.delta.resize(compute.grads(s).size());  // modeled: zeros of the gradient's size
    }
    st.wire.resize(
        static_cast<size_t>(model::payload_bytes(payload_, static_cast<int64_t>(st.delta.size()))));
  }
}

int64_t OuterSync::wire_bytes(int stage) const {
  return static_cast<int64_t>(stages_.at(stage).wire.size());
}

Comm::Request* OuterSync::start(StageCompute& compute, int stage, Comm& comm, MPI_Comm replicas) {
  Stage& st = stages_.at(stage);
  if (compute.real()) {
    const std::span<float> p = compute.params(stage);
    for (size_t i = 0; i < p.size(); ++i) st.delta[i] = st.theta_start[i] - p[i];
  }
  if (payload_ == model::Payload::kFp32)
    return comm.iallreduce_sum(st.delta.data(), static_cast<int64_t>(st.delta.size()), replicas);
  model::encode_payload(payload_, st.delta, st.wire);
  return comm.iallreduce_units(
      st.wire.data(), model::payload_units(payload_, static_cast<int64_t>(st.delta.size())), unit_,
      model::payload_unit_bytes(payload_), op_, replicas);
}

void OuterSync::finish(StageCompute& compute, int stage) {
  Stage& st = stages_.at(stage);
  if (payload_ != model::Payload::kFp32) model::decode_payload(payload_, st.wire, st.delta);
  if (compute.real()) {
    const float inv = 1.0f / static_cast<float>(replicas_);
    for (float& d : st.delta) d *= inv;
    st.opt->step(st.delta, st.theta_start, compute.params(stage));
  }
  ++steps_;
}

}  // namespace xdc::worker
