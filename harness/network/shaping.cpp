#include "harness/network/shaping.h"

#include <functional>

#include "common/mix64.h"
#include "harness/network/names.h"

namespace xdc::net {
namespace {

class Handle : public ShapingHandle {
 public:
  explicit Handle(std::unique_ptr<netem::LinkShaper> s) : shaper_(std::move(s)) {}
  void detach() override { shaper_->detach(); }

 private:
  std::unique_ptr<netem::LinkShaper> shaper_;
};

}  // namespace

netem::ShapeOptions shape_options(const ShapedLink& link) {
  netem::ShapeOptions opts;
  opts.state_dir = state_dir(net_of_ns(link.netns)) + "/delayline";
  // Same seed, same direction: the same loss and jitter draws, whatever the network is
  // called, so a run can be repeated; another seed draws independently (a sweep's seeds).
  const uint64_t dir = std::hash<std::string>{}(link.from + "->" + link.to);
  opts.seed = mix64(link.seed * kGoldenGamma ^ dir) | 1;
  return opts;
}

std::unique_ptr<ShapingHandle> shape_link(netem::Backend backend, ShapedLink& link) {
  netem::ShapeTarget target{link.netns, link.ifname, link.from + "->" + link.to};
  auto shaper = netem::shape_egress(backend, target, link.configured, shape_options(link));
  link.backend = shaper->backend_name();
  link.record = shaper->record().to_json();
  return std::make_unique<Handle>(std::move(shaper));
}

}  // namespace xdc::net
