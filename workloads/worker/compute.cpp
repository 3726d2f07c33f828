#include "workloads/worker/compute.h"

#include <glob.h>
#include <time.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>

#include "workloads/model/data.h"
#include "workloads/model/parallel.h"
#include "workloads/model/stage_api.h"
#include "workloads/schedule/coexec.h"

namespace xdc::worker {

void sleep_ns(int64_t ns) {
  if (ns <= 0) return;
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  const int64_t total = t.tv_nsec + ns;
  t.tv_sec += total / 1000000000;
  t.tv_nsec = total % 1000000000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) == EINTR) {
  }
}

StageCompute::Outputs StageCompute::coexecute(int, int, bool) {
  throw std::logic_error(description() + " compute runs a pair's halves one by one");
}

namespace {

template <typename T>
std::span<const std::byte> as_bytes(std::span<const T> s) {
  return std::as_bytes(s);
}
std::span<const float> as_floats(std::span<const std::byte> b) {
  return {reinterpret_cast<const float*>(b.data()), b.size() / sizeof(float)};
}

std::string hex64(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// ---------------------------------------------------------------- modeled
class ModeledCompute final : public StageCompute {
 public:
  ModeledCompute(const RunSpec& spec, int stage_count, const std::vector<int>& stages)
      : c_(spec.modeled), S_(stage_count) {
    auto check = [&](const std::vector<int64_t>& v, const char* name) {
      if (static_cast<int>(v.size()) != S_)
        throw std::runtime_error(std::string("run spec modeled.") + name + ": expected " +
                                 std::to_string(S_) + " values (one per stage), got " +
                                 std::to_string(v.size()));
    };
    check(c_.f_ns, "f_ns");
    check(c_.b_ns, "b_ns");
    check(c_.w_ns, "w_ns");
    check(c_.activation_bytes, "activation_bytes");
    if (!c_.grad_bytes.empty()) check(c_.grad_bytes, "grad_bytes");
    if (!c_.tp_allreduces.empty()) {
      if (static_cast<int>(c_.tp_allreduces.size()) != S_)
        throw std::runtime_error("run spec modeled.tp_allreduces: expected " + std::to_string(S_) +
                                 " values (one per stage), got " +
                                 std::to_string(c_.tp_allreduces.size()));
      check(c_.tp_allreduce_bytes, "tp_allreduce_bytes");
    }
    if (!c_.node_tp_ns.empty()) {
      check(c_.node_tp_ns, "node_tp_ns");
      if (static_cast<int>(c_.node_tp_allreduces.size()) != S_)
        throw std::runtime_error("run spec modeled.node_tp_allreduces: expected " +
                                 std::to_string(S_) + " values (one per stage)");
    }
    int64_t out = 0, grad = 0, tp = 0;
    for (int s : stages) {
      out = std::max(out, boundary_bytes(s));
      if (s > 0) out = std::max(out, boundary_bytes(s - 1));
      if (!c_.grad_bytes.empty()) grad = std::max(grad, c_.grad_bytes[s]);
      if (tp_allreduces(s) > 0) tp = std::max(tp, c_.tp_allreduce_bytes[s]);
    }
    constexpr int64_t kMaxScratch = int64_t{4} << 30;
    if (grad > kMaxScratch)
      throw std::runtime_error("run spec modeled.grad_bytes = " + std::to_string(grad) +
                               " bytes per stage: more than 4 GiB of allreduce scratch");
    zeros_.assign(static_cast<size_t>(out), std::byte{0});
    grads_.assign(static_cast<size_t>(grad / 4), 0.0f);
    tp_buf_.assign(static_cast<size_t>(tp / 4), 0.0f);
  }
  std::string description() const override { return "modeled"; }
  bool real() const override { return false; }
  int64_t boundary_bytes(int s) const override { return c_.activation_bytes[s]; }
  void begin_iteration(int) override {}
  std::span<const std::byte> forward(int s, int, std::span<const std::byte>) override {
    compute(s, c_.f_ns[s]);
    return s + 1 < S_ ? out(boundary_bytes(s)) : std::span<const std::byte>{};
  }
  std::span<const std::byte> backward_input(int s, int, std::span<const std::byte>) override {
    compute(s, c_.b_ns[s]);
    return s > 0 ? out(boundary_bytes(s - 1)) : std::span<const std::byte>{};
  }
  void backward_weight(int s, int) override { sleep_ns(c_.w_ns[s]); }
  std::span<const std::byte> backward(int s, int, std::span<const std::byte>) override {
    compute(s, c_.b_ns[s]);
    sleep_ns(c_.w_ns[s]);
    return s > 0 ? out(boundary_bytes(s - 1)) : std::span<const std::byte>{};
  }
  Outputs coexecute(int sf, int sb, bool full) override {
    if (tp_allreduces(sf) > 0 || tp_allreduces(sb) > 0)
      throw std::runtime_error(
          "modeled compute: co-executed pairs with TP ranks launched as processes are not "
          "modelled (their all-reduces would have to run beside the sleeps); use a node's "
          "TP (compute.modeled.tensor_parallel)");
    const auto plan =
        sched::plan_coexec(ops(sf, c_.f_ns[sf], 0), ops(sb, c_.b_ns[sb], full ? c_.w_ns[sb] : 0),
                           c_.coexec_interference);
    sleep_ns(std::llround(plan.time));
    return {sf + 1 < S_ ? out(boundary_bytes(sf)) : std::span<const std::byte>{},
            sb > 0 ? out(boundary_bytes(sb - 1)) : std::span<const std::byte>{}};
  }
  void set_tp_allreduce(std::function<void(std::span<float>)> allreduce) override {
    tp_allreduce_ = std::move(allreduce);
  }
  int tp_allreduces(int s) const override {
    return c_.tp_allreduces.empty() ? 0 : c_.tp_allreduces[s];
  }
  std::span<float> grads(int) override { return grads_; }
  std::span<float> params(int) override { return {}; }
  bool evaluates() const override { return false; }
  std::vector<float> eval_stage(int, int, int, std::span<const float>, double*) override {
    throw std::logic_error("modeled compute has no parameters to evaluate");
  }
  double grad_sq_norm(int) override { return 0; }
  void optimizer_step(int, double) override { sleep_ns(c_.opt_ns); }
  void prefill(int) override {
    throw std::logic_error("modeled compute has no prefill forward (the executor sleeps it)");
  }
  double iteration_loss() const override { return std::numeric_limits<double>::quiet_NaN(); }
  std::string param_checksum() override { return ""; }
  int64_t peak_activation_bytes() const override { return 0; }

 private:
  std::span<const std::byte> out(int64_t bytes) const {
    return {zeros_.data(), static_cast<size_t>(bytes)};
  }
  // One half of a pair: `ns` (an F's or B's time, the node's folded all-reduces in it),
  // then `tail` (a BW's weight gradients), as operators (coexec.h).
  std::vector<sched::Op> ops(int s, int64_t ns, int64_t tail) const {
    const int n = c_.node_tp_allreduces.empty() ? 0 : c_.node_tp_allreduces[s];
    const double comm = c_.node_tp_ns.empty() ? 0 : static_cast<double>(c_.node_tp_ns[s]);
    return sched::sliced_ops(static_cast<double>(ns) - comm, n, comm, static_cast<double>(tail));
  }
  // An F or B of stage s: its compute in n equal slices, each followed by a TP all-reduce
  // of tp_allreduce_bytes (a layer's attention or MPI half, as the real stage does).
  void compute(int s, int64_t ns) {
    const int n = tp_allreduces(s);
    if (n == 0) return sleep_ns(ns);
    if (!tp_allreduce_) throw std::logic_error("modeled compute: TP without an all-reduce");
    const std::span<float> buf(tp_buf_.data(), static_cast<size_t>(c_.tp_allreduce_bytes[s] / 4));
    for (int i = 0; i < n; ++i) {
      sleep_ns(ns * (i + 1) / n - ns * i / n);
      tp_allreduce_(buf);
    }
  }
  ModeledCosts c_;
  int S_;
  std::vector<std::byte> zeros_;
  std::vector<float> grads_;
  std::vector<float> tp_buf_;  // TP all-reduce scratch (zeros stay zeros)
  std::function<void(std::span<float>)> tp_allreduce_;
};

// ---------------------------------------------------------------- real
model::ModelConfig model_config(const RunSpec& spec) {
  const nlohmann::json& j = spec.model;
  model::ModelConfig cfg;
  if (j.is_object() && !j.empty()) {
    // JSON is YAML: one parser and one set of error messages for the model keys.
    cfg = model::ModelConfig::from_yaml(YAML::Load(j.dump()), "run spec model");
  }
  if (!j.is_object() || !j.contains("seed")) cfg.seed = spec.seed;
  return cfg;
}

std::vector<std::string> expand_glob(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  if (out.empty()) throw std::runtime_error("run spec data_glob: no file matches " + pattern);
  return out;
}

class RealCompute final : public StageCompute {
 public:
  // gpu < 0: the CPU stage; else the CUDA stage on that GPU.
  RealCompute(const RunSpec& spec, int stage_count, const std::vector<int>& stages, int replica,
              int gpu, int tp_index)
      : cfg_(model_config(spec)),
        m_(spec.microbatches),
        b_(spec.microbatch_size),
        replicas_(spec.data_parallel),
        replica_(replica),
        lr_(spec.learning_rate) {
    model::set_compute_threads(std::max(1, spec.threads));
    std::vector<model::StageRange> ranges;
    if (spec.stage_layers.empty()) {
      ranges = model::split_layers(cfg_, stage_count);
    } else {
      if (static_cast<int>(spec.stage_layers.size()) != stage_count)
        throw std::runtime_error("run spec stage_layers: expected " + std::to_string(stage_count) +
                                 " ranges (one per stage), got " +
                                 std::to_string(spec.stage_layers.size()));
      int expect = 0;
      for (auto [b, e] : spec.stage_layers) {
        if (b != expect || e <= b)
          throw std::runtime_error(
              "run spec stage_layers: expected contiguous non-empty "
              "[begin, end) ranges from 0, got [" +
              std::to_string(b) + ", " + std::to_string(e) + ")");
        ranges.push_back({b, e});
        expect = e;
      }
      if (expect != cfg_.layers)
        throw std::runtime_error("run spec stage_layers: ranges end at " + std::to_string(expect) +
                                 ", the model has " + std::to_string(cfg_.layers) + " layers");
    }
    bool data = false;
    for (int s : stages) {
      std::string why;
      stages_[s] = model::make_stage(cfg_, ranges[s], b_,
                                     gpu < 0 ? model::Device::kCpu : model::Device::kCuda, &why,
                                     std::max(gpu, 0), {spec.tensor_parallel, tp_index});
      if (spec.tensor_parallel > 1) tp_allreduces_[s] = 2 * (ranges[s].end - ranges[s].begin);
      if (!why.empty())  // the harness checked the GPUs (check_gpus_here); this one failed
        throw std::runtime_error("GPU " + std::to_string(gpu) + " asked, not usable: " + why);
      device_ = stages_[s]->device();
      if (s == 0 || s == stage_count - 1) data = true;
      has_loss_ = has_loss_ || s == stage_count - 1;
    }
    if (data) {
      corpus_ =
          std::make_unique<model::TextCorpus>(model::TextCorpus::load(expand_glob(spec.data_glob)));
      loader_ = std::make_unique<model::BatchLoader>(corpus_->train(), b_, cfg_.seq, spec.seed);
      const size_t n = static_cast<size_t>(b_) * cfg_.seq;
      tokens_.assign(m_, std::vector<int32_t>(n));
      targets_.assign(m_, std::vector<int32_t>(n));
    }
  }

  std::string description() const override { return "real: " + device_; }
  bool real() const override { return true; }
  int64_t boundary_bytes(int) const override {
    return static_cast<int64_t>(b_) * cfg_.seq * cfg_.dim * static_cast<int64_t>(sizeof(float));
  }

  void begin_iteration(int) override {
    for (auto& [s, st] : stages_) {
      st->zero_grad();
      st->set_microbatches(m_);
    }
    loss_sum_ = 0;
    loss_count_ = 0;
    if (!loader_) return;
    std::vector<int32_t> skip_tok(tokens_[0].size()), skip_tgt(skip_tok.size());
    for (int k = 0; k < replicas_; ++k) {
      for (int mb = 0; mb < m_; ++mb) {
        if (k == replica_)
          loader_->next(tokens_[mb].data(), targets_[mb].data());
        else
          loader_->next(skip_tok.data(), skip_tgt.data());
      }
    }
  }

  std::span<const std::byte> forward(int s, int mb, std::span<const std::byte> in) override {
    model::StageApi& st = stage(s);
    model::StageInput<float> x;
    if (st.is_first())
      x.tokens = tokens_[mb];
    else
      x.acts = as_floats(in);
    if (st.is_last()) x.targets = targets_[mb];
    const model::StageOutput<float> out = st.forward(mb, x);
    if (st.is_last()) {
      loss_sum_ += out.loss;
      ++loss_count_;
    }
    return as_bytes(out.acts);
  }
  std::span<const std::byte> backward_input(int s, int mb,
                                            std::span<const std::byte> dout) override {
    return as_bytes(stage(s).backward_input(mb, as_floats(dout)));
  }
  void backward_weight(int s, int mb) override { stage(s).backward_weight(mb); }
  std::span<const std::byte> backward(int s, int mb, std::span<const std::byte> dout) override {
    return as_bytes(stage(s).backward(mb, as_floats(dout)));
  }
  std::span<float> grads(int s) override { return stage(s).grads(); }
  std::span<float> params(int s) override {
    return device_.rfind("cpu", 0) == 0 ? stage(s).params() : std::span<float>();
  }
  double grad_sq_norm(int s) override { return stage(s).grad_sq_norm(); }
  void set_tp_allreduce(std::function<void(std::span<float>)> allreduce) override {
    for (auto& [s, st] : stages_) st->set_tp_allreduce(allreduce);
  }
  int tp_allreduces(int s) const override {
    auto it = tp_allreduces_.find(s);
    return it == tp_allreduces_.end() ? 0 : it->second;
  }
  void optimizer_step(int s, double grad_scale) override {
    stage(s).optimizer_step(opt_, lr_, grad_scale);
  }
  void prefill(int tokens) override {
    const size_t n = static_cast<size_t>(b_) * cfg_.seq;
    const int passes = std::max(1, static_cast<int>((static_cast<size_t>(tokens) + n - 1) / n));
    for (int pass = 0; pass < passes; ++pass) {
      std::span<const float> acts;
      int prev = -2;
      for (auto& [s, st] : stages_) {
        model::StageInput<float> x;
        if (st->is_first()) {
          x.tokens = tokens_[0];
        } else if (prev == s - 1) {
          x.acts = acts;
        } else {
          zeros_.assign(n * static_cast<size_t>(cfg_.dim), 0.0f);
          x.acts = zeros_;
        }
        if (st->is_last()) x.targets = targets_[0];
        acts = st->forward(kPrefillSlot, x).acts;
        prev = s;
      }
      for (auto& [s, st] : stages_) st->discard(kPrefillSlot);
    }
  }
  bool evaluates() const override { return true; }
  std::vector<float> eval_stage(int s, int batch, int batches, std::span<const float> in,
                                double* loss) override {
    model::StageApi& st = *stages_.at(s);
    model::StageInput<float> x;
    if (st.is_first() || st.is_last()) {  // these ranks hold the corpus (constructor)
      const model::BatchLoader val(corpus_->validation(), b_, cfg_.seq, 0);
      const size_t n = static_cast<size_t>(b_) * cfg_.seq;
      eval_tokens_.resize(n);
      eval_targets_.resize(n);
      val.fixed(batch, batches, eval_tokens_.data(), eval_targets_.data());
    }
    if (st.is_first())
      x.tokens = eval_tokens_;
    else
      x.acts = in;
    if (st.is_last()) x.targets = eval_targets_;
    const model::StageOutput<float> out = st.forward(kPrefillSlot, x);
    std::vector<float> acts;
    if (st.is_last())
      *loss = out.loss;
    else
      acts.assign(out.acts.begin(), out.acts.end());
    st.discard(kPrefillSlot);
    return acts;
  }
  double iteration_loss() const override {
    return has_loss_ && loss_count_ > 0 ? loss_sum_ / loss_count_
                                        : std::numeric_limits<double>::quiet_NaN();
  }
  std::string param_checksum() override {
    // FNV-style mix over 64-bit words of every held stage's parameters, in stage order.
    uint64_t h = 1469598103934665603ull;
    for (auto& [s, st] : stages_) {
      std::span<const float> p = st->params();
      const auto* bytes = reinterpret_cast<const unsigned char*>(p.data());
      const size_t n = p.size_bytes();
      size_t i = 0;
      for (; i + 8 <= n; i += 8) {
        uint64_t w;
        std::memcpy(&w, bytes + i, 8);
        h = (h ^ w) * 1099511628211ull;
      }
      for (; i < n; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
      h = (h ^ static_cast<uint64_t>(s)) * 1099511628211ull;
    }
    return hex64(h);
  }
  int64_t peak_activation_bytes() const override {
    int64_t sum = 0;
    for (const auto& [s, st] : stages_) sum += static_cast<int64_t>(st->peak_activation_bytes());
    return sum;
  }

 private:
  model::StageApi& stage(int s) {
    auto it = stages_.find(s);
    if (it == stages_.end())
      throw std::logic_error("stage " + std::to_string(s) + " is not held by this rank");
    return *it->second;
  }

  model::ModelConfig cfg_;
  int m_, b_, replicas_, replica_;
  double lr_;
  model::AdamWConfig opt_;  // clipping is the executor's (global norm across ranks)
  std::map<int, std::unique_ptr<model::StageApi>> stages_;
  std::vector<int32_t> eval_tokens_, eval_targets_;  // eval_stage's batch
  std::map<int, int> tp_allreduces_;                 // stage -> TP all-reduces per F (and per B)
  std::string device_ = "cpu";
  bool has_loss_ = false;
  std::unique_ptr<model::TextCorpus> corpus_;
  std::unique_ptr<model::BatchLoader> loader_;
  std::vector<std::vector<int32_t>> tokens_, targets_;
  std::vector<float> zeros_;                    // prefill: the input of a stage not chained
  static constexpr int kPrefillSlot = 1 << 30;  // prefill's microbatch id, never training's
  double loss_sum_ = 0;
  int loss_count_ = 0;
};

}  // namespace

std::unique_ptr<StageCompute> make_compute(const RunSpec& spec, int stage_count,
                                           const std::vector<int>& stages, int replica,
                                           int world_rank, int tp_index) {
  if (spec.compute == "modeled") return std::make_unique<ModeledCompute>(spec, stage_count, stages);
  if (spec.compute == "real") {
    int gpu = -1;
    if (!spec.rank_gpus.empty()) {
      if (world_rank < 0 || world_rank >= static_cast<int>(spec.rank_gpus.size()))
        throw std::runtime_error("run spec rank_gpus: no GPU for world rank " +
                                 std::to_string(world_rank));
      gpu = spec.rank_gpus[world_rank];
    }
    return std::make_unique<RealCompute>(spec, stage_count, stages, replica, gpu, tp_index);
  }
  throw std::runtime_error("run spec compute: expected \"real\" or \"modeled\", got \"" +
                           spec.compute + "\"");
}

}  // namespace xdc::worker
