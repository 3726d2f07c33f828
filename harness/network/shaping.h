#pragma once
// The builder's bridge to netem/: shapes one WAN direction and fills in the record
// (`backend`, `record`) that state.json keeps for `xdc check` and teardown.
#include <memory>

#include "harness/network/state.h"
#include "netem/shaper/shaper.h"

namespace xdc::net {

// Owns a realised impairment; destroying it undoes it unless detach() was called.
class ShapingHandle {
 public:
  virtual ~ShapingHandle() = default;
  virtual void detach() = 0;  // leave it in place beyond this process (until xdc down)
};

std::unique_ptr<ShapingHandle> shape_link(netem::Backend backend, ShapedLink& link);

// The shaper's options for `link` (its files under the network's state directory, its
// seed), the same for `xdc up` and for changes made later (harness/linkctl/).
netem::ShapeOptions shape_options(const ShapedLink& link);

}  // namespace xdc::net
