// WAN link keys -> netem::LinkParams: delay, jitter, loss, rate, queue, duplicate,
// reorder, corrupt.
#include <charconv>

#include "harness/common/units.h"
#include "harness/topology/parse.h"

namespace xdc::topo {

const std::vector<std::string> kLinkKeys = {"delay", "jitter",    "loss",    "rate",
                                            "queue", "duplicate", "reorder", "corrupt"};

namespace {

inline constexpr int64_t kMaxQueuePkts = 1'000'000;

// jitter: 1ms | {value: 1ms, distribution: normal, correlation: 25%}
void apply_jitter(const yaml::Value& v, netem::LinkParams* p) {
  if (!v.is_map()) {
    if (!v.is_scalar()) v.fail("a duration like \"1ms\" or {value: 1ms, distribution: normal}");
    p->jitter_us = v.duration_us();
    return;
  }
  yaml::Map m = v.map({"value", "distribution", "correlation"});
  p->jitter_us = m.require("value").duration_us();
  if (auto d = m.get("distribution")) {
    std::string s = d->choice({"normal", "uniform", "pareto", "paretonormal"});
    p->jitter_dist = s == "normal"    ? netem::JitterDist::kNormal
                     : s == "uniform" ? netem::JitterDist::kUniform
                     : s == "pareto"  ? netem::JitterDist::kPareto
                                      : netem::JitterDist::kParetoNormal;
  }
  if (auto c = m.get("correlation")) p->jitter_correlation_pct = c->percent();
}

// loss: 0.1% | {model: random, p: 1%, correlation: 25%}
//            | {model: gemodel, p: 1%, r: 10%, h: 100%, k: 0%}   (h, k: loss in bad, good state)
void apply_loss(const yaml::Value& v, netem::LinkParams* p) {
  netem::LossModel loss;
  if (!v.is_map()) {
    if (!v.is_scalar()) v.fail("a percentage like \"0.1%\" or {model: random|gemodel, p: ...}");
    loss.kind = netem::LossModel::Kind::kRandom;
    loss.p_pct = v.percent();
  } else {
    yaml::Map m = v.map();
    std::string model = "random";
    if (auto mv = m.get("model")) model = mv->choice({"random", "gemodel"});
    if (model == "random") {
      m.check_keys({"model", "p", "correlation"});
      loss.kind = netem::LossModel::Kind::kRandom;
      loss.p_pct = m.require("p").percent();
      if (auto c = m.get("correlation")) loss.correlation_pct = c->percent();
    } else {
      m.check_keys({"model", "p", "r", "h", "k"});
      loss.kind = netem::LossModel::Kind::kGilbertElliott;
      loss.p_pct = m.require("p").percent();
      if (auto r = m.get("r")) loss.r_pct = r->percent();
      // h and k are written as tc's command line takes them (`loss gemodel p r 1-h 1-k`):
      // the LOSS probabilities in the bad and the good state ({p: 1%, r: 10%, h: 100%,
      // k: 0%} is simple Gilbert). LinkParams keeps netem's
      // delivery probabilities, their complements.
      double bad_loss = 100, good_loss = 0;
      if (auto h = m.get("h")) bad_loss = h->percent();
      if (auto k = m.get("k")) good_loss = k->percent();
      loss.h_pct = 100 - bad_loss;
      loss.k_pct = 100 - good_loss;
      if (good_loss > bad_loss)
        v.error(
            "expected h >= k: h and k are the loss probabilities in the bad and the good "
            "state, as tc's gemodel takes them; got h " +
            format_percent(bad_loss) + ", k " + format_percent(good_loss));
    }
  }
  if (loss.kind == netem::LossModel::Kind::kRandom && loss.p_pct == 0)
    loss = netem::LossModel{};  // "0%" means no loss
  p->loss = loss;
}

}  // namespace

void apply_link_keys(const yaml::Map& m, netem::LinkParams* p, LinkOrigin* origin) {
  if (auto v = m.get("delay")) p->delay_us = v->duration_us();
  if (auto v = m.get("jitter")) apply_jitter(*v, p);
  if (auto v = m.get("loss")) apply_loss(*v, p);
  if (auto v = m.get("rate")) p->rate_bps = v->rate_bps();
  if (auto v = m.get("queue")) {
    if (v->is_scalar() && v->node().Scalar() == "auto") {
      p->queue_pkts = 0;
    } else {
      const std::string expected =
          "a queue length in packets (1.." + std::to_string(kMaxQueuePkts) + ") or auto";
      std::string s = v->scalar(expected);
      int64_t n = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
      if (ec != std::errc() || end != s.data() + s.size() || n < 1 || n > kMaxQueuePkts)
        v->fail(expected);
      p->queue_pkts = static_cast<uint32_t>(n);
    }
  }
  if (auto v = m.get("duplicate")) p->duplicate_pct = v->percent();
  if (auto v = m.get("reorder")) {
    p->reorder_pct = v->percent();
    origin->reorder = *v;
  }
  if (auto v = m.get("corrupt")) p->corrupt_pct = v->percent();
}

}  // namespace xdc::topo
