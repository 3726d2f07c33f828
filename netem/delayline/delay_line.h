#pragma once
// The userspace delay stage: packets that the gateway forwards out of one interface are
// steered (nfqueue_rule.h) into an NFQUEUE; this holds each packet's verdict until its
// send time (impairment.h decides drop / send now / hold until when), then accepts it.
//
// Mechanics that keep it faithful at Gbit/s:
//  - impairments act per wire packet: when loss, duplicate, corrupt or reorder is
//    configured, the queue is bound without NFQA_CFG_F_GSO, so the kernel segments
//    GSO/TSO aggregates (up to ~45 wire packets each on a veth) into MTU-sized packets
//    before queueing them, and each is decided on its own. Deciding per aggregate gave
//    TCP ~45x fewer loss events than the configured rate (40 ms RTT, 0.1%, CUBIC: 665
//    vs 24 Mbit/s). Delay, jitter and rate alone keep NFQA_CFG_F_GSO: aggregates are
//    queued whole, which is what carries 1 Gbit/s and more through one process;
//  - COPY_PACKET with a small range: only the metadata and headers cross to userspace
//    (duplicate/corrupt need whole packets: then full copies, GSO segmented, ~1 Gbit/s);
//  - queue maxlen sized from the BDP and a 64 MiB socket buffer (NETLINK_NO_ENOBUFS);
//  - FIFO release: send times never decrease, so one NFQNL_MSG_VERDICT_BATCH (which
//    accepts every queued id <= N) releases all packets that are due at once;
//  - an absolute CLOCK_MONOTONIC timerfd for the head of the queue, timer slack 1 ns,
//    armed early by the learnt wake-up latency so that the mean release is on time.
// It runs in the namespace the calling process stands in.
//
// Runtime changes (`xdc link set`): a unix SOCK_SEQPACKET socket at Config::ctl_path takes
// one message per connection, the whole new LinkParams as "--key=value" lines
// (link_params_args.h), and answers "ok <CLOCK_REALTIME ns when it took effect>" or
// "error: <why>". Packets read after that use the new parameters; held packets keep
// their send times and FIFO order stays (impairment.h). The queue's maxlen only grows,
// so a delay change never drops. Duplicate and corrupt cannot change (they pick the copy
// mode the queue was bound with).
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "netem/delayline/impairment.h"
#include "netem/shaper/link_params.h"

struct mnl_socket;

namespace xdc::delayline {

struct Config {
  std::string netns, ifname, tag;
  uint16_t queue_num = 0;
  netem::LinkParams params;
  std::string stats_path;  // "" = none
  std::string ctl_path;    // control socket (runtime changes); "" = none
  uint64_t seed = 0;
};

struct Stats {
  uint64_t packets = 0, bytes = 0;           // seen by the delay line
  uint64_t dropped = 0;                      // by the loss model
  uint64_t reordered = 0;                    // sent at once, ahead of held packets
  uint64_t released = 0, batches = 0;        // accepted after their delay; verdict messages
  uint64_t held = 0, max_held = 0;           // packets waiting now / at most
  int64_t late_max_ns = 0, late_sum_ns = 0;  // release time - send time (< 0: early)
  double late_sumsq_us2 = 0;                 // its squares (us^2): the release spread
  uint64_t nl_errors = 0;                    // netlink errors reported by the kernel
  uint64_t stamped = 0;                      // packets whose kernel arrival stamp was used
  uint64_t duplicated = 0, corrupted = 0;    // copies sent, packets with a bit flipped
  uint64_t copy_errors = 0;                  // copies the raw socket refused
  int64_t read_latency_sum_ns = 0;           // arrival stamp -> read by this process
  uint64_t kernel_queue_dropped = 0, kernel_user_dropped = 0;  // queue full / socket full
  uint64_t changes = 0;                                        // runtime changes applied
};

class DelayLine {
 public:
  // Binds NFQUEUE cfg.queue_num in the current namespace. Throws std::runtime_error
  // (e.g. the queue is already bound by another process).
  explicit DelayLine(Config cfg);
  ~DelayLine();  // unbinds; packets still held are accepted first
  DelayLine(const DelayLine&) = delete;
  DelayLine& operator=(const DelayLine&) = delete;

  // Serves packets until SIGTERM/SIGINT/SIGHUP, or until the namespace (checked every
  // second against /run/netns/<netns>) or the interface disappears. SIGUSR1 writes
  // the stats file at once. The caller must have blocked those signals.
  void run();
  // Accepts every held packet now, and those queued but not yet read (shutdown, after
  // the rules are gone).
  void release_all();
  const Stats& stats() const { return stats_; }
  void write_stats() const;
  // Applies `p` to the packets that arrive from now on (see the top of this file).
  // Throws std::invalid_argument when `p` changes duplicate or corrupt.
  void set_params(const netem::LinkParams& p);

 private:
  struct Held {
    uint32_t id;
    int64_t send_ns;
    std::vector<uint8_t> edited;  // corrupted: the bytes to send instead; else empty
  };
  void send_edited(uint32_t id, const std::vector<uint8_t>& pkt);
  void send_copy(const std::vector<uint8_t>& pkt);
  // Binds the queue (waiting for the kernel's acks), or, once serving, only re-sends its
  // copy mode, maxlen and GSO flag (the ack is read with the packets).
  void configure(uint32_t maxlen, bool bind);
  void serve_control(int listen_fd);
  void on_message(const void* buf, size_t len, int64_t now_ns);
  // Accepts the held packets due by now_ns + slack_ns (one batch verdict).
  void release_due(int64_t now_ns, int64_t slack_ns = 0);
  void arm_timer();
  void send_verdict(int type, uint32_t id);
  bool still_there() const;
  void read_kernel_counters();

  Config cfg_;
  Impairment impairment_;
  mnl_socket* nl_ = nullptr;
  uint32_t portid_ = 0;
  int timer_fd_ = -1;
  int stamp_fd_ = -1;               // SO_TIMESTAMP socket: keeps kernel RX stamps on
  int raw_fd_ = -1;                 // duplicates leave through it (marked)
  int ctl_fd_ = -1;                 // control socket, listening
  uint32_t maxlen_ = 0;             // the queue's maxlen now
  bool full_copy_ = false;          // duplicate/corrupt: whole packets
  bool per_wire_ = false;           // loss/duplicate/corrupt/reorder: GSO segmented
  size_t msg_buf_ = 0;              // receive buffer per message
  std::mt19937 edit_rng_;           // which bit to flip
  int64_t mono_minus_real_ns_ = 0;  // CLOCK_MONOTONIC - CLOCK_REALTIME, per batch
  int64_t armed_ns_ = -1;           // absolute time the timer is armed for; -1 none
  int64_t advance_ns_ = 20'000;     // learnt wake-up latency: the timer is armed this early
  std::deque<Held> held_;
  Stats stats_;
  int ifindex_ = 0;
  uint64_t netns_ino_ = 0;
};

}  // namespace xdc::delayline
