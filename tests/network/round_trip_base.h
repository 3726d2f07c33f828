#pragma once
// The base round trip (tests/common/round_trip.h) of a network that is up: what its paths
// cost with every shaped direction -- WAN links and DC fabrics, as state.json records them
// -- held at zero delay in place.
#include <functional>
#include <string>
#include <vector>

#include "tests/common/round_trip.h"

namespace xdc::testing {

// Runs `probe` with the delay of every shaped direction of network `net` at 0 (its delay
// lines relaying every packet), then restores each to the parameters its state records
// (a direction cut by `xdc link down` is not expected). Returns `probe`'s round trips.
RoundTrips zero_delay_base(const std::string& net,
                           const std::function<std::vector<double>()>& probe);

}  // namespace xdc::testing
