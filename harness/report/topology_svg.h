#pragma once
// The network a run used, as SVG: each DC a box holding its hosts and the ranks placed on
// them, each WAN link a line labelled with what each direction was set to (topo::describe,
// "each way" when both agree) and, when the link check measured it, the round trip and
// goodput per direction. DCs stand in a row; a link between neighbours in the row is drawn
// across the gap between them (the gap as wide as its labels), any other link as a lane
// under the row, so no line crosses a box however the DCs are joined.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/topology/topology.h"

namespace xdc::report {

// `rank_hosts`: world rank -> host (Experiment::rank_hosts). `link_check` in the `xdc check
// --json` form, or none. `sole_link_measured`: lines said under the WAN link when there is
// only one (figures measured over the whole WAN, which are that link's then).
std::string topology_svg(const topo::Topology& t, const std::vector<std::string>& rank_hosts,
                         const std::optional<nlohmann::json>& link_check,
                         const std::vector<std::string>& sole_link_measured = {});

// "rank 0", "ranks 2, 3", "ranks 0-7, 16": a host's ranks in words ("" for none).
std::string ranks_text(const std::vector<int>& ranks);

}  // namespace xdc::report
