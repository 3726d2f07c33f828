// `changes:` of a WAN link or direction -> topo::WanChange (format and checks: topology.h),
// and what a direction is set to, in words (describe).
#include "harness/common/units.h"
#include "harness/topology/parse.h"

namespace xdc::topo {

std::vector<WanChange> read_changes(const yaml::Value& v) {
  std::vector<WanChange> out;
  const std::string like = "a list of changes like [{at: 30s, delay: 80ms}, {at: 40s, down: 2s}]";
  std::optional<uint64_t> last_us;  // the latest change so far (the end of a down window)
  for (const yaml::Value& item : v.list(like)) {
    yaml::Map m = item.map({}, "a change like {at: 30s, delay: 80ms}");
    m.check_keys({"at", "delay", "jitter", "loss", "rate", "down"},
                 {{"time", "at"}, {"t", "at"}, {"latency", "delay"}, {"bandwidth", "rate"}});
    yaml::Value at = m.require("at");
    WanChange c;
    c.at_us = at.duration_us();
    c.pos = at.pos();
    if (last_us && c.at_us <= *last_us)
      at.error(
          "expected changes in time order, each later than the one before (and than the "
          "end of a down window): after " +
          format_duration(*last_us) + ", got " + format_duration(c.at_us));
    if (auto d = m.get("delay")) c.delay_us = d->duration_us();
    if (auto d = m.get("jitter")) c.jitter_us = d->duration_us();
    if (auto d = m.get("loss")) c.loss_pct = d->percent();
    if (auto d = m.get("rate")) c.rate_bps = d->rate_bps();
    std::optional<uint64_t> down_for;
    if (auto d = m.get("down")) {
      down_for = d->duration_us();
      if (*down_for == 0) d->fail("a duration the link stays down, like \"2s\"");
      c.down = true;
    }
    if (!c.delay_us && !c.jitter_us && !c.loss_pct && !c.rate_bps && !c.down)
      item.error("expected at least one of delay, jitter, loss, rate, down in a change");
    out.push_back(c);
    last_us = c.at_us;
    if (down_for) {
      WanChange up;
      up.at_us = c.at_us + *down_for;
      up.down = false;
      up.pos = c.pos;
      out.push_back(up);
      last_us = up.at_us;
    }
  }
  return out;
}

netem::LinkParams applied(netem::LinkParams p, const WanChange& c) {
  if (c.params) p = *c.params;
  if (c.delay_us) p.delay_us = *c.delay_us;
  if (c.jitter_us) p.jitter_us = *c.jitter_us;
  if (c.rate_bps) p.rate_bps = *c.rate_bps;
  if (c.loss_pct) {
    p.loss = {};
    if (*c.loss_pct > 0) {
      p.loss.kind = netem::LossModel::Kind::kRandom;
      p.loss.p_pct = *c.loss_pct;
    }
  }
  return p;
}

WanChange time_dilated(WanChange c, double k) {
  if (c.params) c.params = netem::time_dilated(*c.params, k);
  if (c.delay_us) c.delay_us = netem::time_dilated_us(*c.delay_us, k);
  if (c.jitter_us) c.jitter_us = netem::time_dilated_us(*c.jitter_us, k);
  if (c.rate_bps) c.rate_bps = netem::time_dilated_rate_bps(*c.rate_bps, k);
  return c;
}

std::string describe(const netem::LinkParams& p) {
  std::string s = "delay " + format_duration(p.delay_us);
  if (p.jitter_us) s += ", jitter " + format_duration(p.jitter_us);
  if (p.loss.kind != netem::LossModel::Kind::kNone) s += ", loss " + format_percent(p.loss.p_pct);
  return s + (p.rate_bps ? ", rate " + format_rate(p.rate_bps) : ", rate unlimited");
}

}  // namespace xdc::topo
