#pragma once
// How many packets a shaped direction may hold, sized from the bandwidth-delay product.
//
// Two queues exist in every shaped direction, whatever the backend:
//  - the delay stage holds every packet for its delay: rate x delay worth of packets
//    sit there with no congestion at all (netem's `limit` counts them, and a small
//    limit drops packets on an idle link);
//  - the rate stage (tbf/htb) holds what arrives faster than the rate: this is the
//    bottleneck buffer, LinkParams::queue_pkts, or 1.5 x rate x delay when auto.
// Sizes count full Ethernet frames (kFrameBytes), as tbf counts bytes at L2.
#include <cstdint>

#include "netem/shaper/link_params.h"

namespace xdc::netem {

constexpr uint32_t kFrameBytes = 1514;  // MTU 1500 + Ethernet header
// What a full TCP frame carries besides payload: Ethernet 14, IPv4 20, TCP 20 and the
// timestamp option 12 (on in stock Linux), so the MSS is 1448.
constexpr uint32_t kTcpFrameHeaderBytes = 66;
// The share of a full frame that is TCP payload: 1448 / 1514.
constexpr double kTcpPayloadShare =
    static_cast<double>(kFrameBytes - kTcpFrameHeaderBytes) / kFrameBytes;
constexpr uint64_t kUnlimitedRateBps = 10'000'000'000ULL;  // assumed when rate_bps == 0
constexpr uint32_t kMinRateQueuePkts = 32;
constexpr uint32_t kMinDelayQueuePkts = 1000;  // netem's default limit

// Bottleneck buffer of the rate stage, in packets: queue_pkts when set, else
// max(kMinRateQueuePkts, 1.5 x rate x max(delay, 1 ms) / kFrameBytes).
uint32_t rate_queue_pkts(const LinkParams& p);
// In bytes, at least one bucket plus a frame (bfifo drops a packet larger than its room).
uint64_t rate_queue_bytes(const LinkParams& p);

// The queue of a host's intra-DC tbf (on its veth, both ends) at `rate_bps` as the link
// runs (time dilation k: rate_bps is the dilated rate), in bytes: the undilated link's
// rate_queue_pkts, so a dilated run queues as many packets.
uint64_t intra_dc_queue_bytes(uint64_t rate_bps, double time_dilation = 1);

// Packets in flight inside the delay stage at full rate (delay + 4 x jitter), x 1.5,
// at least kMinDelayQueuePkts; rate 0 counts as kUnlimitedRateBps.
uint32_t delay_queue_pkts(const LinkParams& p);

// tbf bucket: one millisecond at the rate, at least 8 frames. tbf segments a GSO packet
// larger than its bucket, so below ~500 Mbit/s TSO packets are cut into frames there.
uint32_t tbf_burst_bytes(uint64_t rate_bps);

// The payload rate of TCP through a rate stage that counts frames at L2 (tbf, htb, netem
// rate): full frames carry (kFrameBytes - kTcpFrameHeaderBytes) / kFrameBytes = 95.6% of
// `rate_bps` as payload. 0 (no rate stage) stays 0. Ground truth: the Fidelity.Rate*
// tests bound single-flow TCP goodput by it (iperf3 measures 0.954-0.956 of the rate).
double tcp_payload_bps(uint64_t rate_bps);

}  // namespace xdc::netem
