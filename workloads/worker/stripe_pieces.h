#pragma once
// How the workers' stripes (stripes.h) cut a message, shared with the simulator's link
// model (harness/sim/link_model.h), which sends the pieces as the worker does: pieces of at
// most kStripePieceBytes, each behind a kStripeHeaderBytes header, pulled by the peer's
// connections: a connection is writable while its unsent bytes are below
// kStripeNotSentLowat (TCP_NOTSENT_LOWAT), and each writable one takes one piece per
// wake-up, served in turn. So a message of B bytes rides on min(N, ceil(B /
// kStripePieceBytes)) of its N idle connections, and a connection that drains slower (a
// loss cut its window) takes fewer pieces of a long one.
#include <cstdint>

namespace xdc::worker {

inline constexpr int64_t kStripePieceBytes = 256 << 10;
inline constexpr int64_t kStripeHeaderBytes = 40;
inline constexpr int kStripeNotSentLowat = 512 << 10;

}  // namespace xdc::worker
