#include "tests/network/round_trip_base.h"

#include <stdexcept>

#include "harness/network/state.h"

namespace xdc::testing {

RoundTrips zero_delay_base(const std::string& net,
                           const std::function<std::vector<double>()>& probe) {
  auto s = net::load_state(net);
  if (!s) throw std::runtime_error("no network named " + net + " is up");
  std::vector<ShapedDirection> dirs;
  for (const auto* links : {&s->links, &s->fabric})
    for (const auto& l : *links)
      if (l.record.is_object() && !l.record.empty())  // an unimpaired direction has none
        dirs.push_back({netem::ShapeRecord::from_json(l.record), l.configured});
  return zero_delay_base(dirs, probe);
}

}  // namespace xdc::testing
