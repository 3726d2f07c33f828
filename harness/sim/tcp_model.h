#pragma once
// What one MPI message costs on one direction of a TCP connection, as OpenMPI 4.1's
// btl/tcp + ob1 and Linux TCP (CUBIC) send it. Each rule names the kernel or OpenMPI
// mechanism it follows; tests/sim/tcp_model_test.cpp checks each in isolation and names
// the emulator measurements it was checked against (the measurement history is in
// docs/history/simulator.md).
// - Eager vs rendezvous vs put (ob1): a message of at most eager_limit - kEagerHeaderBytes
//   goes at once; a longer one sends its first fragment with the rendezvous request and
//   the rest once the receiver's answer is back (one round trip more); from
//   btl_tcp_min_rdma_pipeline_size the request carries no data and the rest is one put
//   (put_protocol below). How a message's phases queue on a connection is LinkState's
//   (link_model.h): in the order ob1 queued them.
// - Slow start after idle (tcp_slow_start_after_idle, on in stock Linux; tcp_cwnd_restart):
//   a send that finds the connection idle longer than the RTO halves the congestion window
//   once per RTO idle, down to the initial window (10 segments), then slow start regrows it
//   up to ssthresh. Application-limited decay (RFC 2861, tcp_cwnd_validate): a sender that
//   has not filled its window for an RTO sets it to the mean of the window and the most it
//   used.
// - Window limit from the socket buffers: at most window_bytes in flight. The send side
//   is the writer's wake rule (tcp_send_buffer_window, below); the receive side a fraction
//   of tcp_rmem's maximum (kRecvBufferPayload, measured with `ss`).
// - Congestion loss at a rate-limited route's bottleneck (TcpPath::bdp_bytes, queue_bytes):
//   the shaper's tbf passes a bucket at once and queues `limit` more (queue_sizing.h); a
//   round whose bytes overflow that loses the excess, which follows in the next round, and
//   CUBIC cuts (below). A path's n connections (stripes, replicas' copies) are one
//   aggregate window: drop-tail loses the packets that meet the full queue, so an excess of
//   k segments reaches min(n, k) of them and the aggregate backs off by that share. The
//   connections of other paths on the same channel share the queue too (LinkState gives
//   each sender its share of it: tests/network/shared_bottleneck_test.cpp checks it against
//   the kernel). On a route of several hops the unclocked part of a round must also pass
//   the hops before the bottleneck (TcpPath::upstream_bytes).
// - The sender host's own tbf: slow start faster than it passes overflows it, and the local
//   drop puts the sender in CWR (tcp_host_queue_overflow, below). A host's ports shared with
//   LAN connections that overflow them (tcp_port_loss, below; LinkState decides when).
// - Random loss is met per segment carried (TcpPath::loss, below).
// - CUBIC's congestion avoidance as tcp_cubic.c grows it (kCubicBeta, kCubicC, kRenoAcked).
// - HyStart's ACK train ends a connection's first slow start without a loss, ssthresh at
//   the window then (tcp_hystart_exit_bytes, below).
// - Several connections per transfer (mpi.connections, the workers' stripes): one
//   connection with `connections` x the window, the initial and restart window and the
//   bytes in flight; the stripes have no rendezvous.
// A message is sent in rounds of one round trip each: min(cwnd, window) bytes per round,
// serialised at the link's rate; when a round's bytes take longer than the round trip the
// link is the limit and rounds follow back to back.
// - Jitter's bunches at the bottleneck (TcpPath::jitter_hold_ns), and its lag: a message's
//   last packet (and a rendezvous request's) arrives as late as the most delayed packet or
//   TSO aggregate sent with it, because the delay line keeps them in order
//   (tcp_jitter_lag_ns, tcp_tso_segments). Not modeled: that lag on each round of a
//   multi-round message's ACK clock, the probe timeout of a tail loss, OpenMPI's
// btl_tcp_links > 1 (it does not stripe one message), which of n connections a loss hits
// (the kernel's pick follows their packets' arrival order; the aggregate takes the share),
// a WAN connection's aggregates dropped at its sender's port behind a LAN window's backlog
// short of that window's own overflow (the kernel's windows ratchet down beside a bulk
// transfer: tests/network/port_share_test.cpp, PortBulk).
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace xdc::sim {

inline constexpr int64_t kTcpMss = 1448;                    // Ethernet MTU 1500, timestamps on
inline constexpr int64_t kTcpInitialWindow = 10 * kTcpMss;  // Linux's TCP_INIT_CWND
inline constexpr int64_t kEagerHeaderBytes = 56;      // ob1 + btl/tcp headers inside the limit
inline constexpr double kRecvBufferPayload = 0.58;    // of tcp_rmem's maximum (measured)
inline constexpr int64_t kOpenMpiEagerLimit = 65536;  // btl_tcp_eager_limit's default
inline constexpr int64_t kJiffyNs = 4'000'000;        // Linux's clock tick (CONFIG_HZ=250 here)
// The congestion window of a connection the socket buffer limits stays near that window
// where a message's first round, which leaves the whole send buffer at once (TcpPath::
// burst_bytes), overflows the bottleneck's queue: slow start grows the window to twice what
// is in flight (tcp_is_cwnd_limited), the next burst loses, and the losses set ssthresh
// near the window (tcp_probe, GeoPipe at 100 Mbit/s and 200 ms: cwnd 2000-2250 segments,
// ssthresh about 2022, over a 1931-segment window; docs/history/simulator.md). Where the
// queue holds the burst, nothing is lost and the window grows to twice what is in flight
// (tcp_probe, 4 MiB all-reduces at 1 Gbit/s, 40 ms one way: 2964-3089 segments after rounds of
// at most 1498, no loss). The model's rounds still carry window_bytes; burst_bytes only
// decides where the cap holds. An idle restart halves from this one.
inline constexpr double kCwndOverWindow = 1.1;
// CUBIC (RFC 9438, Linux's tcp_cubic.c with its defaults): after a loss the window and
// ssthresh are kCubicBeta of the window at the loss, and W_max is that window, or (1 +
// beta) / 2 of it when it is below the previous W_max (fast convergence). In congestion
// avoidance the window grows towards the larger of W(t) = C (t - K)^3 + W_max (segments,
// seconds since the loss, idle time excluded, a round trip ahead; K = cbrt((W_max - the
// window after the cut) / C)) and the Reno-friendly estimate (one segment per kRenoAcked
// windows acknowledged), by at most half of what is acknowledged (x1.5 per round trip).
// At windows of a few dozen segments the estimate leads: about half a segment per round
// trip, as the kernel's tcp_probe tracepoint shows.
inline constexpr double kCubicBeta = 0.7;
inline constexpr double kCubicC = 0.4;
// beta_scale / 8 of tcp_cubic.c: 8 (1024 + 717) / 3 / (1024 - 717) = 15 in its integers.
inline constexpr double kRenoAcked = 15.0 / 8;
// HyStart (tcp_cubic.c, on by default: hystart, hystart_detect 3, hystart_low_window 16,
// hystart_ack_delta_us 2000). From the first ACK of a slow start round, ACKs no more than
// 2 ms apart make a train; once it spans half of (the minimum round trip plus
// hystart_ack_delay, min(1 ms, 4 x the socket's GSO size / its pacing rate, 200% of cwnd /
// srtt in slow start)), slow start ends: ssthresh = the window then, CUBIC's curve starts
// there (no W_max), and HyStart is done for the connection (Linux's timeout resets it; the
// model's does not). A round's ACKs come back at the bottleneck's rate, so its train spans
// its bytes' serialisation there. Not modelled: HyStart's delay test (the least of a round's first
// 8 round trips above the minimum by clamp(min / 8, 4, 16 ms)), which a round's own queue meets
// only after the train has ended it, or another's queue or jitter can meet first (a 6 MiB
// reduce's first slow start beside another all-reduce's window on its 150 Mbit/s direction:
// srtt 44 -> 51.5 ms, ended at 56 segments of a 550-segment path, and later slow starts
// stopped near there: docs/history/predictions.md).
inline constexpr int64_t kHystartLowWindow = 16 * kTcpMss;
inline constexpr int64_t kHystartAckDeltaNs = 2'000'000;
inline constexpr int64_t kHystartAckDelayMaxNs = 1'000'000;
inline constexpr int64_t kGsoMaxBytes = 65536;  // the hosts' veths' gso_max_size

// The expected largest of z_j - j x lambda over n draws of one jitter distribution, in
// units of the jitter (netem::expected_largest_spaced), tabulated at n = 2^k and at
// lambdas on a grid; at() interpolates in log2 n and in lambda (the last column beyond it).
// With its distribution (netem::largest_spaced_quantiles at the same points), draw() gives
// one value of that largest for a uniform u in [0, 1), interpolated the same way: a band
// replica's jitter (TcpConn::jitter_draws).
struct JitterLagTable {
  static constexpr int kSlots = 21;                 // n = 1 .. 2^20
  static constexpr int kQuantiles = 32;             // at probabilities (i + 0.5) / kQuantiles
  std::vector<double> lambdas;                      // ascending from 0
  std::vector<std::array<double, kSlots>> largest;  // [lambda][k]
  std::vector<std::array<std::array<double, kQuantiles>, kSlots>> quantiles;  // [lambda][k][i]
  double at(int64_t n, double lambda) const;
  double draw(int64_t n, double lambda, double u) const;  // at() where no quantiles
};
// One delay line with jitter on a route. The delay line keeps packets in order, and the
// rate stage after it (tbf: the FORWARD hook's NFQUEUE comes before the qdisc) serialises
// what it releases, so the last of a round's units leaves max_j (delay_j + what follows
// j at the rate) after the round reached it. A hop that loses, duplicates, corrupts or
// reorders decides per wire packet (`per_wire`); one with delay, jitter and rate alone
// takes the sender's TSO aggregates whole (netem/delayline/delay_line.h).
struct JitterHop {
  int64_t jitter_ns = 0;  // the distribution's unit (the link's jitter value)
  bool per_wire = false;
  std::shared_ptr<const JitterLagTable> table;
};

// Settings of one direction (sender -> receiver) of a connection.
struct TcpPath {
  int64_t eager_limit = kOpenMpiEagerLimit;  // btl_tcp_eager_limit
  int64_t window_bytes = 0;                  // most payload in flight; 0 = unlimited
  int64_t burst_bytes = 0;                   // a full send buffer (tcp_burst_bytes)
  bool slow_start_after_idle = true;         // the sender's tcp_slow_start_after_idle
  int64_t rto_min_ns = 200'000'000;          // Linux's TCP_RTO_MIN (undilated time)
  int connections = 1;                       // TCP connections one message is striped over
  // The workers' stripes (no rendezvous, the receiver sees the pieces arrive): under
  // temporal WAN sharing the receiver releases the direction a round trip of bytes before
  // a message's end (link_model.h, workloads/worker/stripes.h).
  bool early_release = false;
  // The route's bottleneck (payload bytes; 0 = no rate limit, no congestion loss): its
  // bandwidth-delay product at this round trip and what its tbf holds (bucket and queue). A
  // round overflows it, and the connection meets a loss, when its bytes exceed the
  // bandwidth-delay product plus that, or when what the previous round's ACKs do not clock
  // out (all of it after idle) leaves as one burst larger than that.
  int64_t bdp_bytes = 0;
  int64_t queue_bytes = 0;
  // A route over several WAN hops: the largest burst (payload bytes) the hops before its
  // bottleneck pass, 0 when none can overflow. Such a hop is faster than the bottleneck
  // but its queue is sized for its own short delay; what leaves unclocked arrives there
  // at the sender's rate and queues at the difference (harness/plan/links.cpp), so a
  // burst aimed at a long route can overflow a short hop on its way (the kernel's
  // tcp_retransmit_skb tracepoint: 48 retransmissions where a 594 KiB gradient crossed a
  // 2 ms, 590 Mbit/s hop before a 17 ms, 300 Mbit/s one, none over a direct path).
  int64_t upstream_bytes = 0;
  // The largest burst that leaves at once, nothing clocking it (after idle), which the
  // bottleneck passes: its queue and bucket plus what it serves while the burst arrives at
  // the rate of the host or of a slower hop before it (harness/plan/links.cpp; kernel
  // check: tests/network/routed_burst_test.cpp, IdleBurst). 0: unknown, queue_bytes (the burst
  // arrives at once); kNoBurstLimit: it arrives no faster than the bottleneck serves it.
  int64_t idle_burst_bytes = 0;
  // Jitter along the route: the delay lines keep packets in order, so one drawn a longer
  // delay holds those behind it and they leave together, and the ACKs come back bunched
  // the same way; the bunch reaches the bottleneck as a burst, not clocked by the ACKs.
  // [k]: the expected largest extra delay among 2^k packets, the route's hops forward and
  // back summed (netem::expected_largest_draw of each hop's distribution); all 0 without
  // jitter. A round of n packets loses the bottleneck rate x [log2 n] of its ACK-clocked
  // credit (`ss`: at 3 ms, 380 Mbit/s and 1.1 ms jitter each way CUBIC met losses at
  // cwnd 189-231 segments, below the 246-segment bandwidth-delay product plus the 180 of
  // bucket and queue, and ran below the rate; with a 2000-packet queue none).
  static constexpr int kJitterHoldSlots = 21;
  std::array<int64_t, kJitterHoldSlots> jitter_hold_ns{};
  // This direction's jittered delay lines, and the rate at which the first is fed (the
  // sender's fabric; 0: unknown, taken as infinite): tcp_jitter_lag_ns reads them.
  std::vector<JitterHop> jitter_hops;
  double feed_bps = 0;
  // The sender host's own rate stage (its intra-DC tbf): what its queue holds (tbf's
  // limit, payload bytes; 0: none). Fed faster than feed_bps, it drops locally, and the
  // sender enters CWR without a retransmission (tcp_host_queue_overflow).
  int64_t host_queue_bytes = 0;
  // A path inside a DC whose bottleneck is its hosts' ports, the intra-DC tbfs (bdp_bytes
  // and queue_bytes above are theirs): a window that overflows that queue fills the port for
  // every connection whose packets cross it then, and a WAN connection sharing the port
  // meets the full queue too (LinkState, tcp_port_loss).
  bool port_bottleneck = false;
  // The sender backs off on loss as CUBIC (and Reno) do; false for BBR, which paces at
  // the rate it measures and is not modeled here: no congestion loss then.
  bool loss_based = true;
  // Time dilation k (docs/emulation.md): the link runs every delay x k and rate / k, and the
  // model, in the experiment's time, sees the kernel's wall-clock constants at 1 / k: TCP
  // small queues' and TSO autosizing's 1 ms of pacing (tcp_host_queue_overflow,
  // tcp_tso_segments), HyStart's ACK spacing and delay, CUBIC's clock (k x faster). Not
  // modelled: the clock tick's granularity (RTO rounding, the timer wheel, TLP's 2 ms).
  double dilation = 1;
  // Loss episodes along the route, per packet (0..1; netem::loss_episodes_per_packet: a
  // random loss, or a Gilbert-Elliott bad stay that loses), met as the connection carries
  // its bytes (TcpConn::carried, below).
  double loss = 0;
};
inline constexpr int64_t kNoRendezvous = int64_t{1} << 62;  // eager_limit of the stripes
inline constexpr int64_t kNoBurstLimit = int64_t{1} << 62;  // TcpPath::idle_burst_bytes
// ob1's RDMA pipeline protocol (btl/tcp has the PUT flag, not GET): a message of at least
// btl_tcp_min_rdma_pipeline_size (196608 B, raised to eager_limit +
// btl_tcp_rdma_pipeline_send_length when that is more) sends a request with no data; the
// receiver answers with a PUT control message, and the sender queues the whole message as
// one put fragment (btl_tcp_rdma_pipeline_frag_size is 2 GiB). Its receiver completes on the
// FIN the sender queues once the put's last byte is in the socket (link_model.h).
inline constexpr int64_t kOpenMpiMinRdmaPipeline = 196608;
inline constexpr int64_t kOpenMpiRdmaPipelineSendLength = 131072;
inline constexpr int64_t kPutRequestBytes = 80;  // the request on the wire (`ss`)
inline bool put_protocol(const TcpPath& p, int64_t bytes) {
  return p.eager_limit < kNoRendezvous &&
         bytes >= std::max(kOpenMpiMinRdmaPipeline, p.eager_limit + kOpenMpiRdmaPipelineSendLength);
}

// `p` as `n` of the `weight` connections that share its bottleneck in a round see it: their
// share of its bandwidth-delay product and of each room before and at it.
TcpPath tcp_share(const TcpPath& p, int n, int weight);

struct TcpConn;
// Segments per TSO aggregate as Linux sizes them (tcp_tso_autosize): about 1 ms at the
// pacing rate (tcp_update_pacing_rate: 200% of cwnd / srtt in slow start, below half of
// ssthresh, 120% after; `rtt_ns` stands for srtt), plus 64 KiB >> (min_rtt in us >> 9)
// where that shift is under 32 (short round trips), at most 64 KiB, at least 2 segments.
// Per connection of the path's `connections`.
int64_t tcp_tso_segments(const TcpConn& c, const TcpPath& p, int64_t rtt_ns);
// How much later than the route's one-way delay plus the serialisation of `bytes` at
// `rate_bps` (0: infinite) their last packet arrives, the bytes sent together in TSO
// aggregates of `tso_segments` (TcpPath::jitter_hops; 0 without jitter): over each hop,
// the hop's jitter x JitterLagTable::at(units, lambda), lambda being how much longer a
// unit takes at the rate than it took to arrive at the feed's, in units of the jitter.
// `draw` != 0: each hop's lag drawn from its distribution (JitterLagTable::draw), keyed by
// `draw` and the hop, instead of its expectation.
int64_t tcp_jitter_lag_ns(const TcpPath& p, int64_t bytes, int64_t tso_segments, double rate_bps,
                          uint64_t draw = 0);

// Linux's TCP small queues (tcp_small_queue_check) keep at most sk_pacing_rate >>
// sk_pacing_shift (10: about 1 ms) of a socket's bytes in its host's qdiscs (at most
// tcp_limit_output_bytes), checked before each TSO aggregate is queued, so one more
// follows; the pacing rate is 200% of cwnd / srtt below half of ssthresh, 120% above
// (tcp_update_pacing_rate). In slow start the sender sends two segments for each one
// acknowledged, twice the delivery rate: where that outpaces the host's own tbf
// (TcpPath::feed_bps), the tbf fills up to that limit, and if it holds less it drops; the
// drop returns NET_XMIT_DROP to the sender, whose __tcp_transmit_skb enters CWR
// (tcp_enter_cwr): ssthresh and W_max as CUBIC sets them on a loss, the window down to
// ssthresh, nothing retransmitted (`ss`: ssthresh set with no retransmission; `tc -s`: the
// host tbf's drops). The window at which that happens in a slow-start round that grew the
// window from `from` to c.cwnd (srtt: the path's round trip), 0 if it does not.
inline constexpr int64_t kTcpLimitOutputBytes = 4 << 20;  // tcp_limit_output_bytes (6.8+)
int64_t tcp_host_queue_overflow(const TcpConn& c, const TcpPath& p, int64_t rtt_ns, int64_t from);
// What TCP small queues let one connection of `c` keep in its host's qdiscs when its round
// trip is `srtt_ns` (a standing queue included): max(two TSO aggregates, 1 ms at the pacing
// rate), at most tcp_limit_output_bytes, plus the aggregate queued while under it (the check
// comes before each one). A window beyond that waits in the socket, not the qdisc: a LAN
// connection past slow start keeps about 1.2 ms of its port's rate in a queue of 1.5 ms
// (tcp_host_queue_overflow asks the converse: the window at which it exceeds the queue).
int64_t tcp_small_queue_bytes(const TcpConn& c, const TcpPath& p, int64_t srtt_ns);

// Payload in flight allowed by the sender's send buffer (tcp_send_buffer_window) and the
// receiver's receive buffer (their autotuning maxima, bytes).
int64_t tcp_window_bytes(uint64_t sender_wmem_max, uint64_t receiver_rmem_max);
// What a send buffer of `sndbuf` bytes keeps in flight where the round trip is longer than
// its refills take to leave. Linux counts the buffer in skb truesize (payload + kSkbOverhead
// per TSO skb of kTsoSkbPayload) and wakes a writer that filled it only once the queued
// truesize is at most 2/3 of it (sk_stream_is_writeable: free >= queued / 2); the writer
// (OpenMPI's btl/tcp: one writev of all that is left per EPOLLOUT) fills it again, past the
// limit by the skb it is filling (tcp_sendmsg checks before each new skb). Each refill
// leaves at once, so its ACKs come back together a round trip later and wake the next;
// two refills circulate: 2 x (skbs of a full buffer - skbs at the wake). With 4 MiB:
// 2 x (64 - 42) skbs, 2,867,040 B (0.68 of it). tests/network/send_buffer_test.cpp checks
// the wake and the refill against the kernel. Not modelled: refills larger by the ACKs
// tcp_sendmsg takes in while it copies (it works through the socket's backlog every 16
// skbs), or a third in circulation (up to the whole buffer in flight), and round trips
// shorter than the refills, where the ACKs never pause and the buffer stays full.
int64_t tcp_send_buffer_window(uint64_t sndbuf);
inline constexpr int64_t kTsoSkbPayload = 45 * 1448;  // a 64 KiB GSO skb's whole segments
inline constexpr int64_t kSkbOverhead = 832;          // its truesize over payload (`ss`: w / skbs)
// The payload of a full send buffer, as far as the receiver's empty buffer takes it: Linux
// fills sk_sndbuf (payload over truesize about 1 with TSO aggregates; tcp_probe: 2892
// segments in flight from 4 MiB), and a receiver advertises its buffer x scaling_ratio /
// 256, 198 on the hosts' veths (tcp_probe's snd_wnd: 4866048 B at tcp_rmem 6 MiB).
int64_t tcp_burst_bytes(uint64_t sender_wmem_max, uint64_t receiver_rmem_max);
inline constexpr double kRecvBufferAdvertised = 198.0 / 256;
// The window a connection keeps over a path that loses a fraction `loss` (0..1) of its
// packets at random: Mathis et al.'s steady state, MSS x sqrt(3 / (2 loss)) (1.22 /
// sqrt(p) segments; CCR 1997): the window of a connection long in use (LinkState's warm
// connections). 0 loss: 0.
int64_t tcp_loss_window_bytes(double loss);
// The most a connection carries over a path with this round trip that loses a fraction
// `loss` of its packets (Mathis et al.: tcp_loss_window_bytes per round trip), bit/s;
// 0 loss: unlimited (infinity).
double tcp_loss_limited_bps(int64_t rtt_ns, double loss);

// Linux's retransmission timeout (tcp_set_rto): srtt + max(4 rttvar, rto_min) with rttvar
// settled below rto_min, in whole clock ticks as Linux counts it.
int64_t tcp_rto_ns(const TcpPath& p, int64_t srtt_ns);
// What a connection's smoothed round trip settles to while it carries messages of `bytes`
// each: the path's round trip plus the mean queueing of the message's own segments at the
// bottleneck (sent as one burst, the k-th waits behind k - 1: half its serialisation at
// `bandwidth_bps`). tcp_probe's srtt on experiments/flap.yaml's pipeline pair (1 MiB at
// 1 Gbit/s, 40 ms): 44.3 ms.
int64_t tcp_message_srtt_ns(int64_t rtt_ns, int64_t bytes, double bandwidth_bps);
// When a timer armed `delay_ns` ahead fires: Linux's timer wheel (kernel/time/timer.c,
// calc_index) puts it in the level whose granularity (8^level clock ticks) its delay needs
// (under 63 ticks level 0, under 504 level 1, under 4032 level 2, ...) and fires it at the
// next multiple of that granularity after its expiry: a tick late at level 0, 1 to 8 at
// level 1 (4.5 expected), 1 to 64 at level 2. The expectation.
int64_t tcp_timer_fires_ns(int64_t delay_ns);
// `bytes` sent after a retransmission timeout, from a window of one segment doubling
// every `rtt_ns` (tcp_enter_loss, then slow start): a round trip per doubling until the
// last window holds the rest, plus the bytes' serialisation at the rate (not overlapped
// with the round trips: an upper bound once a window outlasts one).
int64_t tcp_slow_start_ns(int64_t bytes, int64_t rtt_ns, double bandwidth_bps);
inline constexpr int64_t kTcpNever = std::numeric_limits<int64_t>::max() / 4;
inline constexpr int64_t kTcpRtoMaxNs = 120'000'000'000;  // Linux's TCP_RTO_MAX
inline constexpr int64_t kTlpMinNs = 2'000'000;           // TCP_TIMEOUT_MIN_US
// When the segments a route cut lost first go again at or after `up_ns`. Linux's tail loss
// probe goes first (tcp_schedule_loss_probe): 2 srtt + 2 ms (TCP_TIMEOUT_MIN_US) after the
// last transmission or ACK `last_ns`, + rto_min instead with one segment out, never later
// than the RTO; the RTO
// is then armed afresh from the probe (tcp_rearm_rto) and doubles on each expiry (RFC 6298
// backoff), every timer fired as the wheel fires it. `one_segment`: the connection has one
// segment out. kTcpNever when `up_ns` is. Ground truth: the kernel's own retransmissions on
// a cut link (tests/network/tcp_cut_test.cpp).
int64_t tcp_retransmit_after(const TcpPath& p, int64_t srtt_ns, bool one_segment, int64_t last_ns,
                             int64_t up_ns);
// A segment that its sender's own qdisc drops (NET_XMIT_DROP: the host's tbf full) while
// its connection has nothing in flight stays unsent, and no ACK comes to send it again:
// Linux arms the probe timer (tcp_check_probe_timer, tcp_probe0_base: max(RTO, rto_min))
// and sends it when that fires. The wait from the drop until then, as the wheel fires it.
// Ground truth: tests/network/probe_timer_test.cpp.
int64_t tcp_local_drop_wait_ns(const TcpPath& p, int64_t srtt_ns);
// The chance that a TSO aggregate of `bytes` (payload) queued at a host's tbf finds no room:
// the tbf's bfifo takes an aggregate whole or drops it, so it needs `limit` - `bytes` of
// backlog or less. The connections sending through the port keep `backlog` queued at the
// top of their ACK clock; each queues a whole aggregate of `skb` at a time and the port
// drains it before the next, so the backlog runs down from there over one aggregate and the
// arrival, unrelated to their clock, meets any point of it alike. Ground truth: each of an
// 8-host LAN tensor-parallel run's stalls was a 45-segment aggregate dropped at the full
// port (docs/history/predictions.md), and tests/network/probe_timer_test.cpp.
double tcp_port_drop_chance(int64_t backlog, int64_t skb, int64_t limit, int64_t bytes);
// The same behind a window-limited connection of the port that overflows it at a window of
// `window_max` (bytes in flight: the port's bandwidth-delay product `bdp` and its queue):
// after each cut (kCubicBeta) its window regrows to there, so a burst unrelated to its clock
// meets it anywhere between, its backlog the window less `bdp`. The mean of
// tcp_port_drop_chance over that range, for a round of `bytes` (TCP small queues feed it to
// the qdisc over the round's first aggregates while that window keeps its level there).
// Ground truth: a TP all-reduce root's stripes cut behind its last data
// (tests/network/root_backlog_test.cpp).
double tcp_sawtooth_drop_chance(int64_t window_max, int64_t bdp, int64_t skb, int64_t limit,
                                int64_t bytes);
// Random loss (TcpPath::loss) is met, not capped: one segment in 1/loss of those a
// connection carries is lost. TcpConn::carried places them: evenly spaced (the
// expectation), or, on a connection with a loss stream (TcpConn::loss_draws), at gaps
// drawn as the emulator's per-packet Bernoulli loss makes them (geometric, mean 1/loss
// segments), so that seeded runs spread as measured runs do. A round
// that meets a loss sets ssthresh and the window to kCubicBeta of the window then (one
// reduction per round trip, SACK recovery; with n connections, the one that lost), and
// the lost segment goes again in the next round: a message whose last round meets a loss
// takes one round trip more. Idle restarts then regrow the window only to that ssthresh,
// so a connection that carries messages, not a stream, keeps the window its losses left
// (`ss` shows ssthresh below Mathis's window on such connections).
inline constexpr int64_t kLongInUse = int64_t{1} << 50;  // bytes carried: long in use

// State of one direction of a connection (of all `connections` of a path together): its
// congestion window and when it last sent.
struct TcpConn {
  int64_t cwnd = kTcpInitialWindow;
  int64_t last_send_ns = std::numeric_limits<int64_t>::min();  // never sent
  int64_t used_bytes = 0;  // most in flight since stamp_ns while the window was not full
  int64_t stamp_ns = 0;    // when the window was last full (or last decayed)
  // CUBIC's state after the first loss (ssthresh 0: none yet, slow start has no end).
  int64_t ssthresh = 0;
  int64_t w_max = 0;           // CUBIC's W_max: the window at the last loss (fast convergence)
  int64_t epoch_ns = 0;        // the last loss, moved later by the idle time since
  int64_t epoch_cwnd = 0;      // the window then, after the cut (the curve's start)
  int64_t reno_cwnd = 0;       // CUBIC's Reno-friendly estimate of the window (tcp_friendliness)
  bool hystart_found = false;  // HyStart ended a slow start (tcp_hystart_exit_bytes)
  int64_t round_ns = std::numeric_limits<int64_t>::min();  // the last round with bytes
  int64_t round_bytes = 0;
  int64_t carried = kLongInUse;  // bytes sent so far (random loss: where the next falls)
  // Drawn loss positions (splitmix64 state; 0: evenly spaced) and where, in carried
  // bytes, the next drawn loss falls (-1: not drawn yet).
  uint64_t loss_draws = 0;
  int64_t next_loss = -1;
  // Drawn jitter (splitmix64 state; 0: each message's expected lag): a band replica's
  // connections draw each phase's lag (tcp_jitter_lag_ns) from this stream.
  uint64_t jitter_draws = 0;
  // The packets it expected to lose at its hosts' ports so far, plus one half (tcp_port_loss).
  double port_share = 0.5;
  bool operator==(const TcpConn&) const = default;
};

// Carries `bytes` more on `c` over path `p`: how many segments of them random loss takes.
int64_t tcp_random_losses(TcpConn& c, const TcpPath& p, int64_t bytes);
// The start of loss stream `index` of `seed` (TcpConn::loss_draws): streams of different
// seeds or indices draw independently.
uint64_t tcp_loss_stream(uint64_t seed, uint64_t index);

// HyStart's ACK train over a slow start round of `round` bytes on `c` (n connections on
// `p`: the aggregate, their ACKs interleaved at the bottleneck): the bytes acknowledged
// when the train reaches its threshold, or -1 when the round ends first or HyStart does
// not act (done, not slow start, the window under hystart_low_window, no rate limit,
// ACKs further apart than hystart_ack_delta_us, not loss-based). `rtt_ns`: the path's
// round trip, HyStart's minimum.
int64_t tcp_hystart_exit_bytes(const TcpConn& c, const TcpPath& p, int64_t rtt_ns, int64_t round);

// Linux's cwnd restart for a send at `now_ns` (RTO = rtt + rto_min), and records the send.
void tcp_note_send(TcpConn& c, const TcpPath& p, int64_t rtt_ns, int64_t now_ns);

// One round trip's sending on `c` at `now_ns` with `offered` bytes waiting: restart after
// idle, then min(offered, cwnd, the buffer window) go (returned); the window bookkeeping of
// tcp_transmit below. The caller advances time (a round trip, or the bytes' serialisation).
// `overflow`, when given, receives the bytes of the round that its bottleneck's full queue
// dropped (0: none).
int64_t tcp_round(TcpConn& c, const TcpPath& p, int64_t rtt_ns, int64_t now_ns, int64_t offered,
                  int64_t* overflow = nullptr);

// A WAN connection meets its hosts' port full (LinkState decides when: a LAN connection
// there overflowing it, or the two together exceeding it; TcpPath::port_bottleneck):
// `expected` packets of its round are dropped there. The expectations add up (TcpConn::
// port_share), at most one a round (one backoff per round trip): at each whole one it
// loses a packet and backs off once as on a loss (its host's own tbf: a local drop, CWR;
// the gateway's: a loss, the segment sent again). Returns whether it lost one.
bool tcp_port_loss(TcpConn& c, const TcpPath& p, double expected, int64_t now_ns);

// Sends `bytes` from `start_ns` on `c` at `bandwidth_bps` (0 = infinite), restart after
// idle included; returns when the last byte has been serialised. Grows the window as slow
// start does: by the bytes acknowledged, while the window is at most twice what is in
// flight (Linux's tcp_is_cwnd_limited).
int64_t tcp_transmit(TcpConn& c, const TcpPath& p, double bandwidth_bps, int64_t rtt_ns,
                     int64_t start_ns, int64_t bytes);

}  // namespace xdc::sim
