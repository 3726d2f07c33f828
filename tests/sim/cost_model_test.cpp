// Cost model sources: profile CSV, model shape x device presets.
#include "harness/sim/cost_model.h"

#include <gtest/gtest.h>

#include "common/input_error.h"
#include "common/utf8.h"

using namespace xdc::sim;

TEST(CostModel, ProfileCsv) {
  auto c = profile_costs("stage,f_ms,b_ms,w_ms,activation_bytes\n0,1.5,2,1,1000\n1,1,2,1,0\n");
  ASSERT_EQ(c.stages(), 2);
  EXPECT_EQ(c.f_ns[0], 1'500'000);
  EXPECT_EQ(c.activation_bytes[0], 1000);
  EXPECT_THROW(profile_costs("0,1,2\n", "p.csv"), xdc::InputError);
  // A time is not negative and fits in nanoseconds; a size is not negative.
  // ... and a cell is a number whole ("33j2" is not 33).
  for (const char* row : {"0,-1,2,1\n", "0,1,2,1e300\n", "0,1,nan,1\n", "0,1,2,1,-5\n",
                          "0,1,2,1,33j2\n", "0x,1,2,1\n", "0,43.04x,2,1\n"}) {
    try {
      profile_costs(std::string("stage,f_ms,b_ms,w_ms\n") + row, "p.csv");
      ADD_FAILURE() << "accepted " << row;
    } catch (const xdc::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("p.csv:2:1"), std::string::npos) << e.what();
    }
  }
}

TEST(CostModel, ProfileCsvIsUtf8Text) {
  // Its first comment labels the costs in summary.json, which must be UTF-8.
  EXPECT_EQ(profile_costs("# \xC2\xB5s costs\n0,1,2,1\n", "p.csv").stages(), 1);
  try {
    profile_costs("# label\n# x \xFF\xFE\n0,1,2,1\n", "p.csv");
    ADD_FAILURE() << "accepted a byte that is not UTF-8";
  } catch (const xdc::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("p.csv:2:5: expected UTF-8 text, got the byte 0xFF"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(xdc::invalid_utf8_at("a\xE2\x82\xAC b"), std::string_view::npos);  // euro sign
  EXPECT_EQ(xdc::invalid_utf8_at("ab\xE2\x82"), 2u);                           // cut short
  EXPECT_EQ(xdc::invalid_utf8_at("\xC0\xAF"), 0u);                             // overlong
  EXPECT_EQ(xdc::invalid_utf8_at("x\xED\xA0\x80"), 1u);                        // a surrogate
  EXPECT_EQ(xdc::invalid_utf8_at("\xF4\x90\x80\x80"), 0u);                     // past U+10FFFF
}

TEST(CostModel, ShapeFollowsZeroBubbleFlops) {
  // GPT-like layer (P = 12h^2): F = sbh(24h + 4s), B = sbh(24h + 8s), W = 24sbh^2.
  // SwiGLU has 3 h ffn weights: ffn = 8h/3 makes the layer 12 h^2 (to 0.03%).
  ModelShape m{"gpt", 1, 1024, 8 * 1024 / 3, 16, 16, 0};
  Device d{"unit", 1e12};
  ShapeWorkload w{2048, 1, 1.0, 2};
  auto c = shape_costs(m, d, w, 1);
  const double s = 2048, h = 1024, b = 1;
  auto near = [](double got, double want) { EXPECT_NEAR(got, want, 1e-3 * want); };
  near(c.f_ns[0], s * b * h * (24 * h + 4 * s) / 1e12 * 1e9);
  near(c.b_ns[0], s * b * h * (24 * h + 8 * s) / 1e12 * 1e9);
  near(c.w_ns[0], 24 * s * b * h * h / 1e12 * 1e9);
  EXPECT_EQ(c.activation_bytes[0], 2048 * 1024 * 2);
}

TEST(CostModel, Presets) {
  EXPECT_EQ(find_model("llama2-13b").layers, 40);
  EXPECT_EQ(find_model("llama2-70b").kv_heads, 8);
  EXPECT_GT(find_device("h100").peak_flops, find_device("a100").peak_flops);
  EXPECT_THROW(find_device("tpu"), xdc::InputError);
  auto c = shape_costs(find_model("llama2-13b"), find_device("a100"), {}, 8);
  EXPECT_EQ(c.stages(), 8);
  EXPECT_GT(c.f_ns[7], c.f_ns[0]);  // LM head on the last stage
}

// A TP group inside a node (ShapeWorkload::node_tp): every layer's FLOPs and the LM head's
// split n ways, and 2 ring all-reduces of the hidden state per layer in F and in B at the
// node's bus bandwidth, folded into F and B (nothing for W).
TEST(CostModel, NodeTensorParallelSplitsFlopsAndFoldsItsAllReduces) {
  // 2(d-1)/d x S / busbw + 2(d-1) steps: 8 devices, 1 MB at 100 GB/s, 10 us a step.
  EXPECT_EQ(node_allreduce_ns(8, 1'000'000, 100e9, 10e-6), 17'500 + 140'000);
  EXPECT_EQ(node_allreduce_ns(1, 1'000'000, 100e9, 10e-6), 0);
  const ModelShape& m = find_model("llama2-13b");
  const Device& d = find_device("910b");
  ShapeWorkload one{4096, 1, 0.5, 2};
  ShapeWorkload node = one;
  node.node_tp = 8;
  const auto a = shape_costs(m, d, one, 8), b = shape_costs(m, d, node, 8);
  ASSERT_EQ(b.node_tp_ns.size(), 8u);
  EXPECT_TRUE(b.tp_allreduces.empty());  // nothing for the workers to perform
  const int64_t bytes = 4096 * 5120 * 2;
  EXPECT_EQ(b.activation_bytes[0], bytes);
  const int64_t ar = node_allreduce_ns(8, bytes, d.node_busbw, d.node_step_s);
  EXPECT_EQ(b.node_tp_ns[0], 2 * 5 * ar);  // 5 layers a stage
  EXPECT_EQ(b.tp_comm_ns(0), 0);           // nothing performed
  EXPECT_EQ(b.tp_time_ns(0), b.node_tp_ns[0]);
  EXPECT_NEAR(b.f_ns[0] - b.node_tp_ns[0], a.f_ns[0] / 8.0, 1);
  EXPECT_NEAR(b.b_ns[0] - b.node_tp_ns[0], a.b_ns[0] / 8.0, 1);
  EXPECT_NEAR(b.w_ns[0], a.w_ns[0] / 8.0, 1);
  EXPECT_NEAR(b.w_ns[7], a.w_ns[7] / 8.0, 1);  // the LM head split by vocabulary too
  // The node's bandwidth may be given instead of the device's.
  node.node_busbw = d.node_busbw / 2;
  const auto slow = shape_costs(m, d, node, 8);
  EXPECT_GT(slow.node_tp_ns[0], b.node_tp_ns[0]);
  EXPECT_EQ(find_model("llama-72b").layers, 80);
}

// Modeled compute's sleeps end their timer slack late (CostModel::sleep_slack_ns; the
// kernel's side: CommPollKernel.AModeledComputeSleepEndsItsTimerSlackLate): an F or B once
// per slice between its TP all-reduces, a W and an OPT once, a zero-length W not at all.
TEST(CostModel, ATpAllReduceWhoseFirstAggregateIsDroppedWaitsForTheProbeTimerFirst) {
  using xdc::sched::Action;
  using xdc::sched::Kind;
  CostModel c;
  // 20 ms of compute in four 5 ms slices, each followed by a 5 ms all-reduce.
  c.f_ns = {40'000'000};
  c.b_ns = {40'000'000};
  c.w_ns = {10'000'000};
  c.tp_allreduces = {4};
  c.tp_allreduce_ns = {5'000'000};
  const double start = 1'000'000, ms = 1'000'000;
  std::vector<double> asked;
  auto full_at = [&asked, ms](double at) {
    asked.push_back(at);
    return at == 1 * ms + 15 * ms;  // the second all-reduce's first packet
  };
  // No waits set: the plain end, the port never asked.
  EXPECT_EQ(c.end_ns(Action{Kind::F, 0}, start, 40 * ms, full_at), start + 40 * ms);
  EXPECT_TRUE(asked.empty());
  c.tp_port_wait_ns = {200'000'000};
  EXPECT_EQ(c.end_ns(Action{Kind::F, 0}, start, 40 * ms, full_at), start + 240 * ms);
  // Each all-reduce after its slice: at 5 and 15 ms, then (the wait) at 225 and 235.
  EXPECT_EQ(asked, (std::vector<double>{6 * ms, 16 * ms, 226 * ms, 236 * ms}));
  // A BW's weight gradients come after its all-reduces; a port never full: no wait.
  asked.clear();
  EXPECT_EQ(c.end_ns(Action{Kind::BW, 0}, start, 50 * ms,
                     [&](double at) {
                       asked.push_back(at);
                       return false;
                     }),
            start + 50 * ms);
  EXPECT_EQ(asked, (std::vector<double>{6 * ms, 16 * ms, 26 * ms, 36 * ms}));
  // A W, an OPT, or a co-executed pair: no all-reduces of their own asked about.
  EXPECT_EQ(c.end_ns(Action{Kind::W, 0}, start, 10 * ms, full_at), start + 10 * ms);
  Action paired{Kind::F, 0};
  paired.paired = true;
  EXPECT_EQ(c.end_ns(paired, start, 40 * ms, full_at), start + 40 * ms);
  // A chance between: the expected wait. Two hosts of the pair each send a first aggregate
  // through its own port: the all-reduce waits if either is dropped.
  auto half = [](double) { return 0.5; };
  EXPECT_EQ(c.end_ns(Action{Kind::F, 0}, start, 40 * ms, half), start + 40 * ms + 4 * 100 * ms);
  c.tp_hosts = {2};
  EXPECT_EQ(c.end_ns(Action{Kind::F, 0}, start, 40 * ms, half), start + 40 * ms + 4 * 150 * ms);
}

TEST(CostModel, EachSleepOfAnActionEndsItsSlackLate) {
  using xdc::sched::Action;
  using xdc::sched::Kind;
  CostModel c;
  c.f_ns = {10'000'000, 10'000'000};
  c.b_ns = {20'000'000, 20'000'000};
  c.w_ns = {5'000'000, 0};
  c.opt_ns = 1'000'000;
  c.sleep_slack_ns = 50'000;
  EXPECT_EQ(c.duration_ns(Action{Kind::F, 0}), 10'050'000);
  EXPECT_EQ(c.duration_ns(Action{Kind::B, 0}), 20'050'000);
  EXPECT_EQ(c.duration_ns(Action{Kind::W, 0}), 5'050'000);
  EXPECT_EQ(c.duration_ns(Action{Kind::W, 1}), 0);
  EXPECT_EQ(c.duration_ns(Action{Kind::BW, 0}), 25'100'000);  // B, then W: two sleeps
  EXPECT_EQ(c.duration_ns(Action{Kind::BW, 1}), 20'050'000);
  EXPECT_EQ(c.duration_ns(Action{Kind::OPT, 0}), 1'050'000);
  c.tp_allreduces = {4, 4};  // four slices, four sleeps
  EXPECT_EQ(c.duration_ns(Action{Kind::F, 1}), 10'200'000);
  c.sleep_slack_ns = 0;  // real compute
  EXPECT_EQ(c.duration_ns(Action{Kind::F, 1}), 10'000'000);
}
