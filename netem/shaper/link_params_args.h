#pragma once
// LinkParams as "--key=value" command-line flags (how the shaper hands a direction's
// parameters to xdc-delayline), and back. Round-trips exactly (doubles as %.17g).
#include <string>
#include <vector>

#include "netem/shaper/link_params.h"

namespace xdc::netem {

std::vector<std::string> to_args(const LinkParams& p);

// Applies one "--key=value" flag to `p`. Returns false when `arg` is not a LinkParams
// flag; throws std::invalid_argument("<arg>: expected ...") on a bad value.
bool apply_arg(const std::string& arg, LinkParams& p);

}  // namespace xdc::netem
