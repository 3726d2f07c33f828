#include "harness/sim/tcp_model.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "common/mix64.h"

namespace xdc::sim {

int64_t tcp_send_buffer_window(uint64_t sndbuf) {
  const auto s = static_cast<double>(sndbuf);
  const double truesize = kTsoSkbPayload + kSkbOverhead;
  const auto full = static_cast<int64_t>(std::ceil(s / truesize));
  const auto wake = static_cast<int64_t>(std::floor(2 * s / 3 / truesize));
  if (wake < 2)
    return std::llround(2 * s / 3 * kTsoSkbPayload / truesize);  // skbs this few: not checked
  return 2 * (full - wake) * kTsoSkbPayload;
}

int64_t tcp_window_bytes(uint64_t sender_wmem_max, uint64_t receiver_rmem_max) {
  const auto send = static_cast<double>(tcp_send_buffer_window(sender_wmem_max));
  const double recv = kRecvBufferPayload * static_cast<double>(receiver_rmem_max);
  return std::max<int64_t>(kTcpMss, std::llround(std::min(send, recv)));
}

int64_t tcp_burst_bytes(uint64_t sender_wmem_max, uint64_t receiver_rmem_max) {
  const double recv = kRecvBufferAdvertised * static_cast<double>(receiver_rmem_max);
  return std::max<int64_t>(kTcpMss,
                           std::llround(std::min(static_cast<double>(sender_wmem_max), recv)));
}

int64_t tcp_loss_window_bytes(double loss) {
  if (!(loss > 0)) return 0;
  return std::max<int64_t>(
      kTcpMss, std::llround(static_cast<double>(kTcpMss) * std::sqrt(1.5 / std::min(loss, 1.0))));
}

double tcp_loss_limited_bps(int64_t rtt_ns, double loss) {
  if (!(loss > 0) || rtt_ns <= 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(tcp_loss_window_bytes(loss)) * 8e9 / static_cast<double>(rtt_ns);
}

TcpPath tcp_share(const TcpPath& p, int n, int weight) {
  TcpPath s = p;
  s.bdp_bytes = p.bdp_bytes * n / weight;
  s.queue_bytes = p.queue_bytes * n / weight;
  s.upstream_bytes = p.upstream_bytes * n / weight;
  if (p.idle_burst_bytes < kNoBurstLimit) s.idle_burst_bytes = p.idle_burst_bytes * n / weight;
  return s;
}

namespace {
// tcp_update_pacing_rate's share of cwnd / srtt: 200% below half of ssthresh, 120% above.
double pacing_ratio(const TcpConn& c) {
  return c.ssthresh <= 0 || c.cwnd < c.ssthresh / 2 ? 2.0 : 1.2;
}
// `ns` of the experiment's time on the kernel's wall clock, seconds (TcpPath::dilation).
double wall_s(const TcpPath& p, int64_t ns) {
  return p.dilation * static_cast<double>(ns) / 1e9;
}
}  // namespace

int64_t tcp_tso_segments(const TcpConn& c, const TcpPath& p, int64_t rtt_ns) {
  constexpr double kGsoMaxSize = 65536;  // the veths' gso_max_size
  const double n = std::max(p.connections, 1);
  const double cwnd = static_cast<double>(c.cwnd) / n;  // bytes, one connection's
  const double wall_rtt_s = wall_s(p, std::max<int64_t>(rtt_ns, 1000));
  double bytes = pacing_ratio(c) * cwnd / wall_rtt_s / 1024;       // sk_pacing_shift 10
  const auto shift = static_cast<int64_t>(wall_rtt_s * 1e6) >> 9;  // tcp_tso_rtt_log 9
  if (shift < 32) bytes += kGsoMaxSize / static_cast<double>(int64_t{1} << shift);
  const auto segs = static_cast<int64_t>(std::min(bytes, kGsoMaxSize) / kTcpMss);
  return std::max<int64_t>(segs, 2);  // tcp_min_tso_segs
}

namespace {
// A JitterLagTable column's value, value(m, k) at lambdas[m] and n = 2^k, interpolated in
// log2 n and in lambda (the last column beyond the grid).
template <typename Value>
double interpolate(const JitterLagTable& t, int64_t n, double lambda, const Value& value) {
  constexpr size_t kSlots = JitterLagTable::kSlots;
  const double x = std::log2(static_cast<double>(std::max<int64_t>(n, 1)));
  const auto k = std::min<size_t>(static_cast<size_t>(x), kSlots - 1);
  const double fk = k + 1 < kSlots ? x - static_cast<double>(k) : 0;
  auto column = [&](size_t m) {
    return value(m, k) + fk * (k + 1 < kSlots ? value(m, k + 1) - value(m, k) : 0);
  };
  const auto above = std::upper_bound(t.lambdas.begin(), t.lambdas.end(), lambda);
  if (above == t.lambdas.end()) return column(t.lambdas.size() - 1);
  const auto m = static_cast<size_t>(above - t.lambdas.begin());  // lambdas[m - 1] <= lambda
  const double f = (lambda - t.lambdas[m - 1]) / (t.lambdas[m] - t.lambdas[m - 1]);
  return column(m - 1) + f * (column(m) - column(m - 1));
}
}  // namespace

double JitterLagTable::at(int64_t n, double lambda) const {
  if (largest.empty()) return 0;
  return interpolate(*this, n, lambda, [&](size_t m, size_t k) { return largest[m][k]; });
}

double JitterLagTable::draw(int64_t n, double lambda, double u) const {
  if (quantiles.size() != lambdas.size() || quantiles.empty()) return at(n, lambda);
  const auto i =
      static_cast<size_t>(std::clamp(u * kQuantiles, 0.0, static_cast<double>(kQuantiles - 1)));
  return interpolate(*this, n, lambda, [&](size_t m, size_t k) { return quantiles[m][k][i]; });
}

int64_t tcp_jitter_lag_ns(const TcpPath& p, int64_t bytes, int64_t tso_segments, double rate_bps,
                          uint64_t draw) {
  if (p.jitter_hops.empty()) return 0;
  const int64_t packets = (std::max<int64_t>(bytes, 1) + kTcpMss - 1) / kTcpMss;
  const int64_t tso = std::max<int64_t>(tso_segments, 1);
  // ns per bit more at the rate than at the feed (0 where the rate is not the slower)
  const double slower = rate_bps > 0 && (p.feed_bps <= 0 || p.feed_bps > rate_bps)
                            ? 1e9 / rate_bps - (p.feed_bps > 0 ? 1e9 / p.feed_bps : 0)
                            : 0;
  double lag = 0;
  uint64_t hop = 0;
  for (const JitterHop& h : p.jitter_hops) {
    ++hop;
    if (!h.table || h.jitter_ns <= 0) continue;
    const int64_t units = h.per_wire ? packets : (packets + tso - 1) / tso;
    const double unit_bits = 8.0 * static_cast<double>(h.per_wire ? kTcpMss : tso * kTcpMss);
    const double lambda = unit_bits * slower / static_cast<double>(h.jitter_ns);
    const double u =
        static_cast<double>(mix64(draw + hop * kGoldenGamma) >> 11) / 9007199254740992.0;
    lag += static_cast<double>(h.jitter_ns) *
           (draw != 0 ? h.table->draw(units, lambda, u) : h.table->at(units, lambda));
  }
  return std::llround(lag);
}

namespace {
int64_t rto_jiffies(const TcpPath& p, int64_t srtt_ns) {
  return (srtt_ns + p.rto_min_ns + kJiffyNs - 1) / kJiffyNs;  // rounded up, as Linux
}
}  // namespace

int64_t tcp_rto_ns(const TcpPath& p, int64_t srtt_ns) {
  return rto_jiffies(p, srtt_ns) * kJiffyNs;
}

int64_t tcp_slow_start_ns(int64_t bytes, int64_t rtt_ns, double bandwidth_bps) {
  int64_t sent = 0, cwnd = kTcpMss, rounds = 0;
  while (sent + cwnd < bytes) {
    sent += cwnd;
    cwnd *= 2;
    ++rounds;
  }
  const int64_t serial =
      bandwidth_bps > 0 ? std::llround(static_cast<double>(bytes) * 8e9 / bandwidth_bps) : 0;
  return rounds * rtt_ns + serial;
}

int64_t tcp_message_srtt_ns(int64_t rtt_ns, int64_t bytes, double bandwidth_bps) {
  if (bandwidth_bps <= 0) return rtt_ns;
  return rtt_ns + std::llround(static_cast<double>(bytes) * 4e9 / bandwidth_bps);
}

int64_t tcp_timer_fires_ns(int64_t delay_ns) {
  // Levels of 64 buckets, each 8 times coarser; a level starts at 63 of the last one's
  // buckets (LVL_START), and a timer fires in the first bucket after its expiry.
  const int64_t ticks = (delay_ns + kJiffyNs - 1) / kJiffyNs;
  int64_t gran = 1;
  for (int64_t start = 63; ticks >= start; start *= 8) gran *= 8;
  // Expected lateness: one tick at level 0; (gran + 1) / 2 above (uniform in 1..gran).
  const int64_t late_half_ticks = gran == 1 ? 2 : gran + 1;
  return ticks * kJiffyNs + late_half_ticks * kJiffyNs / 2;
}

int64_t tcp_retransmit_after(const TcpPath& p, int64_t srtt_ns, bool one_segment, int64_t last_ns,
                             int64_t up_ns) {
  if (up_ns >= kTcpNever) return kTcpNever;
  const int64_t rto = tcp_rto_ns(p, srtt_ns);
  const int64_t probe = std::min(2 * srtt_ns + (one_segment ? p.rto_min_ns : kTlpMinNs), rto);
  int64_t at = last_ns + tcp_timer_fires_ns(probe);
  for (int64_t wait = rto; at < up_ns; wait = std::min(2 * wait, kTcpRtoMaxNs))
    at += tcp_timer_fires_ns(wait);
  return at;
}

double tcp_sawtooth_drop_chance(int64_t window_max, int64_t bdp, int64_t skb, int64_t limit,
                                int64_t bytes) {
  if (window_max <= bdp) return 0;
  constexpr int kSteps = 64;  // the window's range in equal steps, each at its middle
  const double low = kCubicBeta * static_cast<double>(window_max);
  const double step = (static_cast<double>(window_max) - low) / kSteps;
  double sum = 0;
  for (int k = 0; k < kSteps; ++k) {
    const auto w = static_cast<int64_t>(low + (k + 0.5) * step);
    sum += tcp_port_drop_chance(w - bdp, skb, limit, bytes);
  }
  return sum / kSteps;
}

int64_t tcp_local_drop_wait_ns(const TcpPath& p, int64_t srtt_ns) {
  return tcp_timer_fires_ns(std::max(tcp_rto_ns(p, srtt_ns), p.rto_min_ns));
}

double tcp_port_drop_chance(int64_t backlog, int64_t skb, int64_t limit, int64_t bytes) {
  if (limit <= 0 || bytes <= 0 || backlog <= 0) return 0;
  const int64_t room = limit - bytes;  // the most backlog the aggregate still fits behind
  if (backlog <= room) return 0;
  if (skb <= 0 || backlog - skb >= room) return 1;
  return static_cast<double>(backlog - room) / static_cast<double>(skb);
}

// The gap, in bytes carried, to the next loss on a connection that draws them: a
// geometric number of segments of mean `period` bytes (splitmix64 into an exponential).
namespace {
int64_t loss_gap(TcpConn& c, double period) {
  const uint64_t z = mix64(c.loss_draws += kGoldenGamma);
  const double u = (static_cast<double>(z >> 11) + 1.0) / 9007199254740993.0;  // (0, 1]
  const double segments = std::ceil(-std::log(u) * period / static_cast<double>(kTcpMss));
  return std::max<int64_t>(1, static_cast<int64_t>(segments)) * kTcpMss;
}

}  // namespace

uint64_t tcp_loss_stream(uint64_t seed, uint64_t index) {
  const uint64_t z = mix64(mix64(seed) ^ mix64(index + 0x632be59bd9b4e019ULL));
  return z | 1;  // never 0 (0: no stream)
}

int64_t tcp_random_losses(TcpConn& c, const TcpPath& p, int64_t bytes) {
  if (!(p.loss > 0) || bytes <= 0) return 0;
  const double period = static_cast<double>(kTcpMss) / std::min(p.loss, 1.0);
  if (c.loss_draws != 0) {
    if (c.next_loss < 0) c.next_loss = c.carried + loss_gap(c, period);
    c.carried += bytes;
    int64_t lost = 0;
    for (; c.next_loss <= c.carried; c.next_loss += loss_gap(c, period)) ++lost;
    return lost;
  }
  const auto before = static_cast<int64_t>(static_cast<double>(c.carried) / period);
  c.carried += bytes;
  return static_cast<int64_t>(static_cast<double>(c.carried) / period) - before;
}

namespace {

// CUBIC's reaction to a loss when the window is `w` (tcp_cubic.c's cubictcp_recalc_ssthresh):
// ssthresh and the window go to `cut` of it, and W_max, the plateau the curve returns
// to, is `w` or, with `converge` when `w` is below the previous W_max (fast convergence,
// on by default), (1 + beta) / 2 of it. With n connections one backs off: its share of
// the cut and of the fast convergence. A bottleneck's overflow passes converge = false:
// its `w` is what the queue let through, not the window then, and the window a
// window-limited connection overflows at stays about the same from one burst to the next
// (`ss`: cwnd 2126 segments, ssthresh 2017-2101, kCwndOverWindow), where fast convergence
// does not act.
void cubic_loss(TcpConn& c, int64_t w, double cut, int n, bool converge, int64_t now_ns) {
  const double fc = 1 - (1 - kCubicBeta) / (2.0 * n);
  c.w_max = converge && c.w_max > 0 && w < c.w_max ? std::llround(fc * static_cast<double>(w)) : w;
  c.ssthresh = std::max<int64_t>(2 * kTcpMss * n, std::llround(cut * static_cast<double>(w)));
  c.cwnd = c.ssthresh;
  c.epoch_ns = now_ns;
  c.epoch_cwnd = c.cwnd;
  c.reno_cwnd = c.cwnd;
}

// The bytes of a round of `round` at `now_ns` that get past the bottleneck (TcpPath::
// queue_bytes): what the previous round's ACKs do not clock out leaves as one burst. On an
// overflow CUBIC cuts the window to kCubicBeta of it; the rest follows in the next round.
// After idle the whole round is that burst (TcpPath::idle_burst_bytes).
int64_t through_bottleneck(TcpConn& c, const TcpPath& p, int64_t rtt_ns, int64_t now_ns,
                           int64_t round) {
  const int64_t serialised = p.bdp_bytes > 0 ? c.round_bytes * rtt_ns / p.bdp_bytes : 0;
  const bool clocked = c.round_ns != std::numeric_limits<int64_t>::min() &&
                       now_ns <= c.round_ns + std::max(rtt_ns, serialised) + kJiffyNs;
  const int64_t paced = clocked ? std::min(round, c.round_bytes) : 0;
  int64_t credit = std::min(p.bdp_bytes, paced);
  if (credit > 0 && rtt_ns > 0) {  // jitter's bunches (TcpPath::jitter_hold_ns)
    const int64_t packets = std::max<int64_t>(round / kTcpMss, 1);
    const int slot = std::min(TcpPath::kJitterHoldSlots - 1,
                              static_cast<int>(std::bit_width(static_cast<uint64_t>(packets))) - 1);
    const int64_t hold = p.jitter_hold_ns[static_cast<size_t>(slot)];
    credit = std::max<int64_t>(
        0, credit - static_cast<int64_t>(static_cast<double>(p.bdp_bytes) *
                                         static_cast<double>(hold) / static_cast<double>(rtt_ns)));
  }
  // Up to `paced` bytes beyond the clocked part go out interleaved with the ACKs (two
  // segments for each acknowledged), each queueing at the bottleneck; the rest leaves at
  // once, and the bottleneck serves part of it while it arrives (TcpPath::idle_burst_bytes:
  // all of a round after idle).
  int64_t queue = p.queue_bytes;
  if (p.idle_burst_bytes > queue && paced < queue)
    queue = p.idle_burst_bytes >= kNoBurstLimit
                ? kNoBurstLimit
                : paced + std::llround(static_cast<double>(queue - paced) *
                                       static_cast<double>(p.idle_burst_bytes) /
                                       static_cast<double>(queue));
  int64_t room = credit + queue;
  // The ACK-clocked part reaches the hops before the bottleneck at its rate; the burst
  // beyond it must fit what they pass (TcpPath::upstream_bytes).
  if (p.upstream_bytes > 0) room = std::min(room, paced + p.upstream_bytes);
  c.round_ns = now_ns;
  c.round_bytes = std::min(round, room);
  if (round > room) {
    // Drop-tail loses the packets that arrive at a full queue; the n connections' packets
    // arrive interleaved, so the first `excess` of them belong to as many connections, and
    // each connection that lost one backs off once (SACK recovery, one cut per round trip).
    const int n = std::max(p.connections, 1);
    const int64_t excess = (round - room + kTcpMss - 1) / kTcpMss;
    const double hit = static_cast<double>(std::min<int64_t>(n, excess)) / n;
    cubic_loss(c, std::max(room, std::min(round, c.cwnd)), 1 - (1 - kCubicBeta) * hit, n, false,
               now_ns);
  }
  return c.round_bytes;
}

// A round that filled the window grows it: slow start up to ssthresh, then as
// tcp_cubic.c's bictcp_update: towards CUBIC's curve a round trip ahead, W(t) = C (t -
// K)^3 + W_max with K = cbrt((W_max - the window at the loss's cut) / C), or the
// Reno-friendly estimate when that is more (one segment per kRenoAcked windows
// acknowledged: a window of a few dozen segments on a short round trip grows so, about
// half a segment per round trip; n connections, n such estimates), by at most half the
// bytes acknowledged; before any loss at least 5% a round trip (bictcp_update's cnt <= 20
// while last_max_cwnd is 0).
void grow(TcpConn& c, int64_t rtt_ns, int64_t now_ns, int64_t round, int n, double dilation) {
  if (c.ssthresh <= 0 || c.cwnd < c.ssthresh) {
    c.cwnd += round;
    if (c.ssthresh > 0) c.cwnd = std::min(c.cwnd, c.ssthresh);
    return;
  }
  const double cwnd = static_cast<double>(c.cwnd);
  const double t = dilation * static_cast<double>(now_ns + rtt_ns - c.epoch_ns) / 1e9;  // wall
  const double w_max = static_cast<double>(c.w_max) / kTcpMss;
  const double start = static_cast<double>(c.epoch_cwnd > 0 ? c.epoch_cwnd : c.cwnd) / kTcpMss;
  const double k = w_max > start ? std::cbrt((w_max - start) / kCubicC) : 0;
  const double origin = std::max(w_max, start);
  double target = (kCubicC * (t - k) * (t - k) * (t - k) + origin) * kTcpMss;
  c.reno_cwnd += std::llround(static_cast<double>(kTcpMss * n) * static_cast<double>(round) /
                              (kRenoAcked * cwnd));  // set to the window at the cut
  target = std::max(target, static_cast<double>(c.reno_cwnd));
  // Before any loss (HyStart ended slow start: no W_max) bictcp_update caps cnt at 20:
  // one segment per 20 acknowledged, 5% a round trip.
  if (c.w_max <= 0) target = std::max(target, cwnd + static_cast<double>(round) / 20);
  if (target <= cwnd) return;
  const double step = (target - cwnd) * std::min(1.0, static_cast<double>(round) / cwnd);
  c.cwnd = std::llround(cwnd + std::min(step, 0.5 * static_cast<double>(round)));
}
}  // namespace

int64_t tcp_hystart_exit_bytes(const TcpConn& c, const TcpPath& p, int64_t rtt_ns, int64_t round) {
  const int n = std::max(p.connections, 1);
  if (c.hystart_found || !p.loss_based || p.bdp_bytes <= 0 || rtt_ns <= 0 || round <= 0 ||
      (c.ssthresh > 0 && c.cwnd >= c.ssthresh) || c.cwnd < kHystartLowWindow * n)
    return -1;
  const double rate = static_cast<double>(p.bdp_bytes) / static_cast<double>(rtt_ns);  // B/ns
  // A delayed ACK covers two segments of a connection; n connections' ACKs interleave. The
  // kernel's limits are wall-clock time, 1 / dilation of theirs here (TcpPath::dilation).
  const double k = p.dilation;
  if (2.0 * kTcpMss / (rate / n) > static_cast<double>(kHystartAckDeltaNs) / k) return -1;
  const double pacing = 2.0 * static_cast<double>(c.cwnd) / n / static_cast<double>(rtt_ns);
  const double ack_delay =
      std::min(static_cast<double>(kHystartAckDelayMaxNs) / k, 4.0 * kGsoMaxBytes / pacing);
  const auto acked = static_cast<int64_t>((static_cast<double>(rtt_ns) + ack_delay) / 2 * rate);
  return acked < round ? acked : -1;
}

int64_t tcp_host_queue_overflow(const TcpConn& c, const TcpPath& p, int64_t rtt_ns, int64_t from) {
  if (p.host_queue_bytes <= 0 || p.feed_bps <= 0 || p.bdp_bytes <= 0 || rtt_ns <= 0) return 0;
  if (c.ssthresh > 0 && from >= c.ssthresh) return 0;  // not slow start
  const double neck_bps = static_cast<double>(p.bdp_bytes) * 8e9 / static_cast<double>(rtt_ns);
  if (2 * std::min(neck_bps, p.feed_bps) <= p.feed_bps) return 0;  // the host's tbf keeps up
  const int n = std::max(p.connections, 1);
  const double ratio = pacing_ratio(c);
  const double srtt_s = wall_s(p, rtt_ns);
  // n connections: n limits and n aggregates in the one qdisc.
  const double room = static_cast<double>(p.host_queue_bytes) -
                      static_cast<double>(n * tcp_tso_segments(c, p, rtt_ns) * kTcpMss);
  if (room >= static_cast<double>(n) * kTcpLimitOutputBytes) return 0;
  const double w = std::max(static_cast<double>(from), room * 1024 * srtt_s / ratio);
  return w <= static_cast<double>(c.cwnd) ? std::llround(w) : 0;
}

int64_t tcp_small_queue_bytes(const TcpConn& c, const TcpPath& p, int64_t srtt_ns) {
  const int64_t skb = tcp_tso_segments(c, p, srtt_ns) * kTcpMss;
  const double cwnd = static_cast<double>(c.cwnd) / std::max(p.connections, 1);
  const double paced = pacing_ratio(c) * cwnd / std::max(wall_s(p, srtt_ns), 1e-9) / 1024;
  const auto limit = std::min<int64_t>(kTcpLimitOutputBytes, std::llround(paced));
  return std::max(2 * skb, limit) + skb;
}

void tcp_note_send(TcpConn& c, const TcpPath& p, int64_t rtt_ns, int64_t now_ns) {
  // CUBIC's CA_EVENT_TX_START: a send into an empty pipe moves the epoch by the idle time.
  if (c.epoch_cwnd > 0 && c.last_send_ns != std::numeric_limits<int64_t>::min() &&
      now_ns - c.last_send_ns > rtt_ns)
    c.epoch_ns += now_ns - c.last_send_ns;
  if (p.slow_start_after_idle && c.last_send_ns != std::numeric_limits<int64_t>::min()) {
    const int64_t rto = rto_jiffies(p, rtt_ns);
    int64_t idle = (now_ns - c.last_send_ns) / kJiffyNs;
    if (idle > rto) {  // tcp_cwnd_restart
      const int64_t restart = std::min(kTcpInitialWindow * std::max(p.connections, 1), c.cwnd);
      int64_t cwnd = c.cwnd;
      if (c.ssthresh > 0) c.ssthresh = std::max(c.ssthresh, c.cwnd / 4 * 3);
      while ((idle -= rto) > 0 && cwnd > restart) cwnd /= 2;
      c.cwnd = std::max(cwnd, restart);
    }
  }
  c.last_send_ns = std::max(c.last_send_ns, now_ns);
}

bool tcp_port_loss(TcpConn& c, const TcpPath& p, double expected, int64_t now_ns) {
  if (!(expected > 0) || !p.loss_based) return false;
  const double before = c.port_share;
  c.port_share += std::min(expected, 1.0);
  if (std::floor(c.port_share) == std::floor(before)) return false;
  const int n = std::max(p.connections, 1);
  cubic_loss(c, c.cwnd, 1 - (1 - kCubicBeta) / n, n, true, now_ns);
  c.used_bytes = 0;
  c.stamp_ns = now_ns;
  return true;
}

int64_t tcp_round(TcpConn& c, const TcpPath& p, int64_t rtt_ns, int64_t now_ns, int64_t offered,
                  int64_t* overflow) {
  tcp_note_send(c, p, rtt_ns, now_ns);
  const int64_t rto_ns = rto_jiffies(p, rtt_ns) * kJiffyNs;
  const int n = std::max(p.connections, 1);  // n connections: n windows (tcp_model.h)
  const int64_t window = p.window_bytes * n;
  int64_t round = std::min(std::max<int64_t>(offered, 0), c.cwnd);
  if (window > 0) round = std::min(round, window);
  if (round == c.cwnd || round == window) {  // the window is full
    c.used_bytes = 0;
    c.stamp_ns = now_ns;
  } else {  // the application leaves the window part empty (tcp_cwnd_validate)
    c.used_bytes = std::max(c.used_bytes, round);
    if (p.slow_start_after_idle && now_ns - c.stamp_ns >= rto_ns) {
      const int64_t used = std::max(c.used_bytes, kTcpInitialWindow * n);
      if (used < c.cwnd) c.cwnd = (c.cwnd + used) / 2;  // tcp_cwnd_application_limited
      c.used_bytes = 0;
      c.stamp_ns = now_ns;
    }
  }
  if (p.queue_bytes > 0 && p.loss_based && round > 0) {  // congestion loss
    const int64_t through = through_bottleneck(c, p, rtt_ns, now_ns, round);
    if (through < round) {
      if (overflow) *overflow = round - through;
      tcp_random_losses(c, p, through);
      return through;
    }
  }
  if (const int64_t lost = tcp_random_losses(c, p, round); lost > 0) {
    // One reduction per round trip (SACK recovery): one of the n connections backs off.
    cubic_loss(c, c.cwnd, 1 - (1 - kCubicBeta) / n, n, true, now_ns);
    c.used_bytes = 0;
    c.stamp_ns = now_ns;
    return round - std::min(round, lost * kTcpMss);  // sent again in the next round
  }
  const int64_t acked = tcp_hystart_exit_bytes(c, p, rtt_ns, round);
  if (acked >= 0 || c.cwnd < 2 * round) {  // HyStart acts on every ACK; growth needs
    const int64_t from = c.cwnd;           // Linux's tcp_is_cwnd_limited
    if (acked >= 0) {
      // Slow start grew the window by what was acknowledged before the train ended it.
      if (c.cwnd < 2 * round) c.cwnd += acked;
      c.ssthresh = c.cwnd;
      c.hystart_found = true;
      c.w_max = 0;
      c.epoch_ns = now_ns;
      c.epoch_cwnd = c.cwnd;
      c.reno_cwnd = c.cwnd;
    } else {
      grow(c, rtt_ns, now_ns, round, n, p.dilation);
    }
    if (const int64_t w = tcp_host_queue_overflow(c, p, rtt_ns, from); w > 0)
      cubic_loss(c, w, 1 - (1 - kCubicBeta) / n, n, true, now_ns);  // one connection's CWR
  }
  // The bursts' losses keep it near the window where the queue cannot hold one (kCwndOverWindow).
  if (window > 0 &&
      (p.queue_bytes <= 0 || std::max(p.burst_bytes, p.window_bytes) * n > p.queue_bytes))
    c.cwnd = std::min<int64_t>(c.cwnd, std::llround(kCwndOverWindow * static_cast<double>(window)));
  return round;
}

int64_t tcp_transmit(TcpConn& c, const TcpPath& p, double bandwidth_bps, int64_t rtt_ns,
                     int64_t start_ns, int64_t bytes) {
  auto serialise = [&](int64_t b) -> int64_t {
    return bandwidth_bps <= 0 ? 0 : std::llround(static_cast<double>(b) * 8e9 / bandwidth_bps);
  };
  int64_t t = start_ns, left = std::max<int64_t>(bytes, 0);
  for (;;) {
    const int64_t round = tcp_round(c, p, rtt_ns, t, left);
    left -= round;
    if (left == 0) {
      t += serialise(round);
      break;
    }
    t += std::max(rtt_ns, serialise(round));
  }
  c.last_send_ns = std::max(c.last_send_ns, t);
  return t;
}

}  // namespace xdc::sim
