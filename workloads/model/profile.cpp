#include "workloads/model/profile.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>

namespace xdc::model {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Profile profile_stages(const ModelConfig& cfg, const ProfileOptions& opt,
                       const std::function<void(const std::string&)>& progress) {
  if (opt.repeats < 1 || opt.warmup < 0)
    throw std::invalid_argument("profile: expected repeats >= 1 and warmup >= 0");
  Profile out;
  const size_t bt = size_t(opt.microbatch_size) * cfg.seq;
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> tok(0, cfg.vocab - 1);
  std::normal_distribution<float> act(0.f, 1.f);
  std::vector<int32_t> tokens(bt), targets(bt);
  for (size_t i = 0; i < bt; ++i) tokens[i] = tok(rng), targets[i] = tok(rng);
  std::vector<float> acts(bt * cfg.dim), grad(bt * cfg.dim);
  for (float& x : acts) x = act(rng);
  for (float& x : grad) x = act(rng) * 1e-3f;

  for (const StageRange& r : split_layers(cfg, opt.stages)) {
    std::string why;
    auto s = make_stage(cfg, r, opt.microbatch_size, opt.device, &why, opt.gpu);
    if (!why.empty()) throw std::runtime_error("profile: the device cannot be used: " + why);
    out.device = s->device();
    s->set_microbatches(1);
    std::vector<double> f, b, w;
    for (int i = 0; i < opt.warmup + opt.repeats; ++i) {
      StageInput<float> in;
      if (s->is_first()) {
        in.tokens = tokens;
      } else {
        in.acts = acts;
      }
      if (s->is_last()) in.targets = targets;
      auto t0 = std::chrono::steady_clock::now();
      s->forward(0, in);
      const double tf = ms_since(t0);
      t0 = std::chrono::steady_clock::now();
      s->backward_input(0, s->is_last() ? std::span<const float>{} : std::span<const float>(grad));
      const double tb = ms_since(t0);
      t0 = std::chrono::steady_clock::now();
      s->backward_weight(0);
      const double tw = ms_since(t0);
      if (i >= opt.warmup) f.push_back(tf), b.push_back(tb), w.push_back(tw);
    }
    StageCosts c;
    c.range = r;
    c.f_ms = median(f);
    c.b_ms = median(b);
    c.w_ms = median(w);
    c.activation_bytes = static_cast<int64_t>(s->boundary_bytes());
    c.peak_activation_bytes = static_cast<int64_t>(s->peak_activation_bytes());
    out.stages.push_back(c);
    if (progress) {
      progress("stage " + std::to_string(out.stages.size() - 1) + " (layers " +
               std::to_string(r.begin) + "-" + std::to_string(r.end - 1) + ") on " + out.device +
               ": F " + std::to_string(c.f_ms) + " ms, B " + std::to_string(c.b_ms) + " ms, W " +
               std::to_string(c.w_ms) + " ms");
    }
  }
  return out;
}

}  // namespace xdc::model
