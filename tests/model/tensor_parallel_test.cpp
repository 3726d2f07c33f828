// Tensor parallelism of the Stage (stage.h): TP = 2 and 4 ranks, each on its own thread of
// this process with an in-process sum as the all-reduce, give the loss and every gradient
// of the uncut stage (TP = 1) within 1e-5, with the model whole or cut into two stages,
// B+W fused or split. The multi-process run over MPI is tests/run's tensor-parallel run.
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "tests/model/gradcheck.h"
#include "workloads/model/local_model.h"
#include "workloads/model/stage.h"
#include "workloads/model/stage_api.h"

namespace xdc::model {
namespace {

using testing::ids;

ModelConfig tp_config() {
  ModelConfig c;
  c.vocab = 29;
  c.dim = 32;
  c.layers = 2;
  c.heads = 8;
  c.kv_heads = 4;  // GQA: each TP rank keeps its KV heads with their query heads
  c.ffn = 40;
  c.seq = 16;
  c.seed = 11;
  return c;
}

// The TP group's sum for `size` threads: every rank posts its buffer, each sums all of
// them in rank order into its scratch, then each copies its sum back.
class InProcessGroup {
 public:
  explicit InProcessGroup(int size) : bufs_(size), sync_(size), calls_(size, 0) {}
  void allreduce(int rank, std::span<float> buf) {
    bufs_[rank] = buf;
    sync_.arrive_and_wait();
    std::vector<double> sum(buf.size(), 0.0);
    for (const auto& b : bufs_)
      for (size_t i = 0; i < b.size(); ++i) sum[i] += b[i];
    sync_.arrive_and_wait();  // every rank has read every buffer
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = float(sum[i]);
    ++calls_[size_t(rank)];
  }
  int calls(int rank) const { return calls_.at(size_t(rank)); }

 private:
  std::vector<std::span<float>> bufs_;
  std::barrier<> sync_;
  // One counter per rank, each written only by its rank's thread, read after join. (A
  // std::map here had every thread insert its key concurrently: a data race that CI hit.)
  std::vector<int> calls_;
};

struct RankResult {
  double loss = 0;
  double grad_sq = 0;
  std::map<std::string, std::vector<double>> grads, params;  // this rank's tensors
  std::map<std::string, std::vector<int64_t>> index;         // sharded: into the uncut one
};

// One TP rank: every stage of the cut, m microbatches forward then backward as
// LocalModel does.
RankResult run_rank(const ModelConfig& cfg, int stages, int B, int m, bool split_bw,
                    TensorParallel tp, InProcessGroup& group, const std::vector<int32_t>& tok,
                    const std::vector<int32_t>& tgt) {
  std::vector<std::unique_ptr<StageT<float>>> st;
  for (const StageRange& r : split_layers(cfg, stages)) {
    st.push_back(std::make_unique<StageT<float>>(cfg, r, B, tp));
    st.back()->set_tp_allreduce([&group, tp](std::span<float> b) { group.allreduce(tp.rank, b); });
    st.back()->set_microbatches(m);
  }
  const size_t n = size_t(B) * cfg.seq;
  RankResult res;
  std::vector<float> g_copy;
  for (int mb = 0; mb < m; ++mb) {
    std::span<const float> acts;
    for (auto& s : st) {
      StageInput<float> in;
      if (s->is_first()) in.tokens = std::span(tok).subspan(mb * n, n);
      if (s->is_last()) in.targets = std::span(tgt).subspan(mb * n, n);
      in.acts = acts;
      const StageOutput<float> out = s->forward(mb, in);
      acts = out.acts;
      res.loss += out.loss / m;
    }
    std::span<const float> g;
    for (int i = stages - 1; i >= 0; --i) {
      if (split_bw) {
        g = st[i]->backward_input(mb, g);
        g_copy.assign(g.begin(), g.end());
        g = g_copy;
        st[i]->backward_weight(mb);
      } else {
        g = st[i]->backward(mb, g);
      }
    }
  }
  for (auto& s : st) {
    res.grad_sq += s->grad_sq_norm();
    for (const auto& t : s->tensors()) {
      auto gs = std::as_const(*s).grads().subspan(t.offset, t.size);
      auto ps = std::as_const(*s).params().subspan(t.offset, t.size);
      res.grads[t.name].assign(gs.begin(), gs.end());
      res.params[t.name].assign(ps.begin(), ps.end());
      if (t.sharded) res.index[t.name] = shard_indices(cfg, t, tp);
    }
  }
  return res;
}

struct Diff {
  double loss = 0, grad = 0, param = 0, grad_scale = 0;
};

Diff compare(int tp_size, int stages, bool split_bw) {
  const ModelConfig cfg = tp_config();
  const int B = 2, m = 3;
  const size_t n = size_t(m) * B * cfg.seq;
  const auto tok = ids(n, cfg.vocab, 3), tgt = ids(n, cfg.vocab, 4);
  LocalModelT<float> ref(cfg, stages, B);
  const double l_ref = ref.forward_backward(tok, tgt, m, split_bw);
  std::map<std::string, std::vector<double>> g_ref, p_ref;
  double sq_ref = 0;
  for (int s = 0; s < stages; ++s) {
    const auto& st = std::as_const(ref.stage(s));
    sq_ref += st.grad_sq_norm();
    for (const auto& t : st.tensors()) {
      g_ref[t.name].assign(st.grads().begin() + t.offset, st.grads().begin() + t.offset + t.size);
      p_ref[t.name].assign(st.params().begin() + t.offset, st.params().begin() + t.offset + t.size);
    }
  }

  InProcessGroup group(tp_size);
  std::vector<RankResult> res(tp_size);
  std::vector<std::thread> threads;
  for (int r = 0; r < tp_size; ++r)
    threads.emplace_back([&, r] {
      res[r] = run_rank(cfg, stages, B, m, split_bw, {tp_size, r}, group, tok, tgt);
    });
  for (auto& t : threads) t.join();
  // Two all-reduces per block in F and two in B, per microbatch.
  for (int r = 0; r < tp_size; ++r) EXPECT_EQ(group.calls(r), 4 * cfg.layers * m);

  Diff d;
  double sq = 0;
  std::map<std::string, std::vector<int>> covered;  // sharded: each uncut element once
  for (int r = 0; r < tp_size; ++r) {
    d.loss = std::max(d.loss, std::abs(res[r].loss - l_ref));
    sq += res[r].grad_sq;
    EXPECT_EQ(res[r].grads.size(), g_ref.size());
    for (const auto& [name, g] : res[r].grads) {
      const auto& want = g_ref.at(name);
      const auto& pw = p_ref.at(name);
      const auto it = res[r].index.find(name);
      auto& cov = covered[name];
      cov.resize(want.size());
      for (size_t i = 0; i < g.size(); ++i) {
        const size_t j = it == res[r].index.end() ? i : size_t(it->second[i]);
        d.grad = std::max(d.grad, std::abs(g[i] - want[j]));
        d.param = std::max(d.param, std::abs(res[r].params.at(name)[i] - pw[j]));
        ++cov[j];
      }
    }
  }
  for (const auto& [name, g] : g_ref) {
    for (double x : g) d.grad_scale = std::max(d.grad_scale, std::abs(x));
    const bool sharded = res[0].index.count(name) > 0;
    for (int c : covered.at(name)) EXPECT_EQ(c, sharded ? 1 : tp_size) << name;
  }
  EXPECT_NEAR(sq, sq_ref, 1e-5 * sq_ref);
  return d;
}

TEST(TensorParallel, StagesEqualTheUncutStage) {
  for (int tp : {2, 4})
    for (int stages : {1, 2})
      for (bool split : {false, true}) {
        const Diff d = compare(tp, stages, split);
        std::printf(
            "TP %d, %d stage(s), %s: max |loss diff| %.3g, max |grad diff| %.3g (largest grad "
            "%.3g), max |param diff| %.3g\n",
            tp, stages, split ? "B then W" : "BW", d.loss, d.grad, d.grad_scale, d.param);
        EXPECT_LE(d.loss, 1e-5);
        EXPECT_LE(d.grad, 1e-5);
        EXPECT_GT(d.grad_scale, 1e-3);  // the gradients compared are not all zero
        EXPECT_EQ(d.param, 0.0);        // a shard is exactly its part of the uncut init
      }
}

TEST(TensorParallel, RefusesSizesThatDoNotDivideTheHeads) {
  ModelConfig cfg = tp_config();
  EXPECT_THROW(StageT<float>(cfg, {0, cfg.layers}, 1, {3, 0}), std::invalid_argument);
  EXPECT_THROW(StageT<float>(cfg, {0, cfg.layers}, 1, {8, 0}), std::invalid_argument);  // kv 4
  EXPECT_THROW(StageT<float>(cfg, {0, cfg.layers}, 1, {2, 2}), std::invalid_argument);
}

TEST(TensorParallel, ForwardWithoutAnAllReduceThrows) {
  const ModelConfig cfg = tp_config();
  StageT<float> s(cfg, {0, cfg.layers}, 1, {2, 0});
  const auto tok = ids(size_t(cfg.seq), cfg.vocab, 1);
  StageInput<float> in;
  in.tokens = tok;
  in.targets = tok;
  EXPECT_THROW(s.forward(0, in), std::logic_error);
}

TEST(TensorParallel, CheckpointsKeepTheirShard) {
  const ModelConfig cfg = tp_config();
  const std::string path = ::testing::TempDir() + "tp_ckpt";
  StageT<float> r0(cfg, {0, cfg.layers}, 1, {2, 0}), r1(cfg, {0, cfg.layers}, 1, {2, 1}),
      again(cfg, {0, cfg.layers}, 1, {2, 0});
  r0.params()[5] = 42;
  r0.save(path);
  EXPECT_THROW(r1.load(path), std::runtime_error);  // same sizes, another shard
  again.load(path);
  EXPECT_EQ(again.params()[5], 42);
  std::remove(path.c_str());
}

TEST(TensorParallel, TheCudaStageRefusesIt) {
  const ModelConfig cfg = tp_config();
  EXPECT_THROW(make_stage(cfg, {0, cfg.layers}, 1, Device::kCuda, nullptr, 0, {2, 0}),
               std::invalid_argument);
}

}  // namespace
}  // namespace xdc::model
