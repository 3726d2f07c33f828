#pragma once
// How the workers' stripes (stripes.h) cut a message, shared with the simulator's link
// model (harness/sim/link_model.h), which sends the pieces as the worker does: pieces of at
// most kStripePieceBytes, each behind a kStripeHeaderBytes header, taken by the peer's
// connections one piece per connection in turn, so a message of B bytes rides on
// min(N, ceil(B / kStripePieceBytes)) of its N connections.
#include <cstdint>

namespace xdc::worker {

inline constexpr int64_t kStripePieceBytes = 256 << 10;
inline constexpr int64_t kStripeHeaderBytes = 40;

}  // namespace xdc::worker
