#include "workloads/worker/outer_sync.h"

#include <stdexcept>
#include <string>

#include "workloads/model/fragments.h"

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
    : runs_(spec.fragment_runs),
      payload_(model::payload_from_name(spec.payload)),
      inner_steps_(spec.inner_steps),
      sync_steps_(spec.sync_steps),
      fragments_(spec.fragment_runs.empty() ? 1 : static_cast<int>(spec.fragment_runs[0].size())),
      overlap_(spec.overlap_steps),
      replicas_(replicas),
      eager_(spec.eager),
      merge_(spec.merge),
      lr_(spec.outer_lr),
      momentum_(spec.outer_momentum) {
  if (inner_steps_ < 1)
    throw std::runtime_error("run spec dp_sync.inner_steps: expected 1 or more, got " +
                             std::to_string(inner_steps_));
  if (fragments_ < 1 || fragments_ > inner_steps_)
    throw std::runtime_error("run spec dp_sync.fragment_runs: expected 1 to inner_steps (" +
                             std::to_string(inner_steps_) + ") fragments, got " +
                             std::to_string(fragments_));
  for (const auto& per_stage : runs_)
    if (static_cast<int>(per_stage.size()) != fragments_)
      throw std::runtime_error("run spec dp_sync.fragment_runs: every stage needs " +
                               std::to_string(fragments_) + " fragments");
  if (sync_steps_ < 0)
    throw std::runtime_error("run spec dp_sync.sync_steps: expected 0 or more, got " +
                             std::to_string(sync_steps_));
  if (overlap_ < 0 || overlap_ >= inner_steps_)
    throw std::runtime_error("run spec dp_sync.overlap_steps: expected 0 to inner_steps - 1, got " +
                             std::to_string(overlap_));
  if (!(merge_ >= 0 && merge_ <= 1))
    throw std::runtime_error("run spec dp_sync.merge: expected 0 to 1");
  if (eager_ && (overlap_ != 0 || merge_ != 0))
    throw std::runtime_error("run spec dp_sync.eager: expected overlap_steps 0 and merge 0");
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

std::vector<int> OuterSync::due(int iteration) const {
  std::vector<int> out;
  if (!active(iteration)) return out;
  for (int p = 0; p < fragments_; ++p)
    if (model::fragment_due(iteration - sync_steps_ + 1, p, fragments_, inner_steps_))
      out.push_back(p);
  return out;
}

void OuterSync::begin(StageCompute& compute, const std::vector<int>& stages) {
  for (int s : stages) {
    const std::span<float> p = compute.real() ? compute.params(s) : compute.grads(s);
    if (compute.real() && p.empty())
      throw std::runtime_error("dp_sync: stage " + std::to_string(s) +
                               "'s parameters cannot be written in place (a CUDA stage); "
                               "the outer step needs the CPU stage");
    const auto size = static_cast<int64_t>(p.size());
    if (!runs_.empty() && s >= static_cast<int>(runs_.size()))
      throw std::runtime_error("run spec dp_sync.fragment_runs: no runs for stage " +
                               std::to_string(s));
    for (int f = 0; f < fragments_; ++f) {
      Runs runs = runs_.empty() ? Runs{{0, size}} : runs_[s][f];
      int64_t n = 0;
      for (auto [off, len] : runs) {
        if (off < 0 || len < 0 || off + len > size)
          throw std::runtime_error("run spec dp_sync.fragment_runs: stage " + std::to_string(s) +
                                   " fragment " + std::to_string(f) + " has a run [" +
                                   std::to_string(off) + ", +" + std::to_string(len) +
                                   ") outside its " + std::to_string(size) + " values");
        n += len;
      }
      if (n == 0) continue;
      Unit& u = units_[{s, f}];
      u.runs = std::move(runs);
      u.delta.resize(static_cast<size_t>(n));  // modeled: zeros of the fragment's size
      if (compute.real()) {
        u.theta_start.clear();
        u.theta_start.reserve(u.delta.size());
        for (auto [off, len] : u.runs)
          u.theta_start.insert(u.theta_start.end(), &p[off], &p[off] + len);
        u.opt = std::make_unique<model::OuterNesterov>(lr_, momentum_);
        if (eager_) {
          u.eager = std::make_unique<model::EagerOuterGradient>(replicas_);
          u.sent.resize(u.delta.size());
          u.step.resize(u.delta.size());
        }
      }
      u.wire.resize(static_cast<size_t>(model::payload_bytes(payload_, n)));
    }
  }
}

bool OuterSync::holds(int stage, int fragment) const {
  return units_.count({stage, fragment}) > 0;
}

int64_t OuterSync::wire_bytes(int stage, int fragment) const {
  return static_cast<int64_t>(units_.at({stage, fragment}).wire.size());
}

Comm::Request* OuterSync::start(StageCompute& compute, int stage, int fragment, Comm& comm,
                                MPI_Comm replicas) {
  Unit& u = units_.at({stage, fragment});
  if (compute.real()) {
    const std::span<float> p = compute.params(stage);
    size_t k = 0;
    for (auto [off, len] : u.runs)
      for (int64_t i = off; i < off + len; ++i, ++k) u.delta[k] = u.theta_start[k] - p[i];
  }
  if (payload_ != model::Payload::kFp32) model::encode_payload(payload_, u.delta, u.wire);
  if (u.eager) {  // own delta as the others will decode it, before the all-reduce takes it
    if (payload_ == model::Payload::kFp32)
      u.sent = u.delta;
    else
      model::decode_payload(payload_, u.wire, u.sent);
  }
  Comm::Request* r =
      payload_ == model::Payload::kFp32
          ? comm.iallreduce_sum(u.delta.data(), static_cast<int64_t>(u.delta.size()), replicas)
          : comm.iallreduce_units(
                u.wire.data(), model::payload_units(payload_, static_cast<int64_t>(u.delta.size())),
                unit_, model::payload_unit_bytes(payload_), op_, replicas);
  if (u.eager) {  // the outer step now, beside the all-reduce
    u.eager->mix(u.sent, u.step);
    u.opt->step(u.step, u.theta_start);
    merge_into(compute, stage, u, static_cast<float>(merge_));
  }
  return r;
}

void OuterSync::finish(StageCompute& compute, int stage, int fragment) {
  Unit& u = units_.at({stage, fragment});
  if (payload_ != model::Payload::kFp32) model::decode_payload(payload_, u.wire, u.delta);
  if (u.eager) {
    u.eager->reduced(u.delta, u.sent);
  } else if (compute.real()) {
    const float inv = 1.0f / static_cast<float>(replicas_);
    for (float& d : u.delta) d *= inv;
    u.opt->step(u.delta, u.theta_start);
    merge_into(compute, stage, u, static_cast<float>(merge_));
  }
  ++steps_;
}

// The live parameters: keep x local + (1 - keep) x the outer parameters.
void OuterSync::merge_into(StageCompute& compute, int stage, const Unit& u, float keep) const {
  const std::span<float> p = compute.params(stage);
  size_t k = 0;
  for (auto [off, len] : u.runs)
    for (int64_t i = off; i < off + len; ++i, ++k)
      p[i] = keep * p[i] + (1 - keep) * u.theta_start[k];
}

void OuterSync::adopt_outer(StageCompute& compute) {
  if (!compute.real()) return;
  for (const auto& [key, u] : units_) merge_into(compute, key.first, u, 0);
}

}  // namespace xdc::worker
