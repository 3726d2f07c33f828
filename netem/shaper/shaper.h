#pragma once
// LinkShaper: one impaired direction of a link, realised on an interface's egress by
// one of two backends, as an RAII object.
//
//   kernel     sch_netem as root qdisc (libnl), the rate by a tbf/htb child
//              (kernel_netem.h, qdisc.h). With loss, duplicate, corrupt or reorder, the
//              veth peers feeding the namespace send wire packets, not GSO aggregates
//              (gso_max_segs 1, kernel_netem.h says why), restored by undo.
//   userspace  xdc-delayline, one process per shaped direction: NFQUEUE-held verdicts
//              for the packets leaving the interface (delay, jitter, loss models,
//              reorder, duplicate, corrupt; netem/delayline/), and tbf/htb as root
//              qdisc for the rate. Meant for forwarding hops (a gateway's WAN veth):
//              holding packets that a local TCP socket still owns throttles that socket.
//   auto       kernel when the kernel has sch_netem, else userspace.
// Both: the delay is one-way for this direction, packets keep their order (jitter does
// not reorder), the bottleneck queue is sized from the bandwidth-delay product
// (queue_sizing.h), loss/duplicate/corrupt are decided per packet at enqueue.
//
// Runtime changes (`xdc link set`, reshape_egress): the new parameters are applied in
// place by the backend that runs -- netem and tbf/htb changed through netlink (`tc qdisc
// change`), the delay line told through its control socket -- so nothing is torn down,
// no queued packet is dropped or reordered by the change, and packets keep FIFO order
// (after a delay decrease new packets wait behind those already queued).
//
// Destroying the shaper undoes it. detach() lets it outlive the caller (`xdc up`
// exits, the network stays): the caller keeps record().to_json() and may later call
// undo_shape()/undo_shapes() with it, or clean_delaylines() without one. The harness's
// `xdc down` / `xdc clean` call neither: they stop the network's delay lines by their
// command lines and delete its namespaces, with which the qdiscs and NFQUEUE rules go
// (harness/network/teardown.cpp). shape_egress may be called from several threads at once.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "netem/nl/socket.h"
#include "netem/shaper/delayline_process.h"
#include "netem/shaper/kernel_netem.h"
#include "netem/shaper/link_params.h"

namespace xdc::netem {

struct ShapeTarget {
  std::string netns;   // namespace holding the interface; "" = the caller's
  std::string ifname;  // the egress interface (a gateway's WAN veth)
  std::string tag;     // names the link in logs, stats files and errors, e.g. "east->west"
};

struct ShapeOptions {
  // Delay line stats and log files. The harness gives each network's own
  // (/run/xdc/<net>/delayline: harness/network/shaping.cpp), removed with the network.
  std::string state_dir = "/run/xdc-delayline";
  int rt_prio = 10;   // SCHED_FIFO priority of delay lines (0: normal scheduling)
  uint64_t seed = 0;  // delay line RNG seed; 0 = random
};

// Everything needed to undo a shaper from another process.
struct ShapeRecord {
  bool active = false;                    // false: params not impaired, nothing was installed
  Backend backend = Backend::kUserspace;  // kKernel or kUserspace, never kAuto
  std::string netns, ifname, tag;
  uint32_t root_handle = 0;  // our root qdisc on ifname (netem or tbf/htb); 0 = none
  std::string rate_qdisc;    // "tbf" | "htb" | "" (no rate)
  pid_t delayline_pid = 0;   // userspace: the xdc-delayline process; 0 = none
  uint16_t queue_num = 0;    // userspace: its NFQUEUE number
  std::string stats_path, log_path;
  std::string ctl_path;             // userspace: the delay line's control socket
  std::vector<WireFeeder> feeders;  // kernel: veth peers set to send wire packets

  // {"backend": "kernel"|"userspace"|"none", "netns", "ifname", "tag", "root_handle",
  //  "rate_qdisc", "delayline_pid", "queue_num", "stats_path", "log_path", "ctl_path",
  //  "feeders": [{"netns", "ifindex", "gso_max_segs"}...]}
  nlohmann::json to_json() const;
  static ShapeRecord from_json(const nlohmann::json& j);  // throws nlohmann::json::exception
};

class LinkShaper {
 public:
  explicit LinkShaper(ShapeRecord record) : record_(std::move(record)) {}
  ~LinkShaper();  // undo_shape(record()) unless detached
  LinkShaper(const LinkShaper&) = delete;
  LinkShaper& operator=(const LinkShaper&) = delete;

  const ShapeRecord& record() const { return record_; }
  Backend backend() const { return record_.backend; }
  const char* backend_name() const { return record_.active ? to_string(record_.backend) : "none"; }
  // Leave everything running when this object dies; undo later with undo_shape(record()).
  void detach() { detached_ = true; }

 private:
  friend std::unique_ptr<LinkShaper> shape_egress(Backend, const ShapeTarget&, const LinkParams&,
                                                  const ShapeOptions&);
  ShapeRecord record_;
  bool detached_ = false;
};

// kAuto -> kKernel if kernel_has_netem() else kUserspace. kKernel without netem throws
// std::runtime_error saying so.
Backend resolve_backend(Backend requested);

// Shapes the egress of target.ifname in target.netns with `p`. Unimpaired `p` gives an
// inactive shaper (record().active == false, backend_name() "none"). Throws
// std::runtime_error / nl::NlError with the link named; nothing is left behind then.
// The userspace backend duplicates and corrupts through whole-packet copies (slower:
// about 1 Gbit/s); without those two it only copies headers.
std::unique_ptr<LinkShaper> shape_egress(Backend backend, const ShapeTarget& target,
                                         const LinkParams& p, const ShapeOptions& opts = {});

// A shaped direction's netlink socket (opened in its namespace) and its interface's index,
// kept by a caller that changes the direction often (a change schedule, a benchmark), so
// that a change costs its qdisc requests only: in a UML guest, opening the socket and
// finding the index were most of a change's 1.2 ms (and, with the socket's setns, some of
// its outliers). reshape_egress fills it on first use. It keeps the namespace alive: drop
// it before the network is taken down.
struct ReshapeHandle {
  std::unique_ptr<nl::NlSocket> sock;
  int ifindex = 0;
};

// Changes the shaped direction `r` from `was` (what it runs now) to `p`, in place (see
// the top of this file), and updates `r` with what it had to add: a rate stage when
// `was` had no rate, a delay line (userspace) when `was` needed none, feeders sending
// wire packets (kernel) when `p` acts per packet. An inactive `r` (nothing installed)
// is shaped from scratch with `backend`. Queue limits follow `p`'s bandwidth-delay
// product, except that they never shrink while the rate stays (what is queued drains
// at that rate: a delay decrease must not drop it) and the delay stage's never shrinks.
// A rate removed (p.rate_bps 0 after a rate: a restore after a change that added one)
// goes once its queue has drained (remove_rate_qdisc, qdisc.h); a rate cannot cross the
// tbf/htb boundary in place. Returns the CLOCK_REALTIME ns at which all of it was in force. Throws
// std::runtime_error / nl::NlError naming the link; what was applied before stays.
// `ready`: the direction's handle, reused (and filled when empty); a failed change empties
// it, so the next one starts afresh.
// Fills `ready` for `r` ahead of its first change (nothing when `r` is inactive). Throws
// nl::NlError when the namespace or interface is gone.
void prepare_reshape(const ShapeRecord& r, ReshapeHandle& ready);
int64_t reshape_egress(ShapeRecord& r, const LinkParams& was, const LinkParams& p,
                       Backend backend = Backend::kAuto, const ShapeOptions& opts = {},
                       ReshapeHandle* ready = nullptr);

// A shaped direction's counters (kernel: the qdiscs' own; userspace: the delay line's
// stats plus the rate stage's qdisc).
struct ShapeCounters {
  uint64_t sent = 0;  // packets that left the direction
  // Their bytes as segments on a wire (each segment's Ethernet, IP and TCP headers; the
  // rate stage's qdisc counts a GSO aggregate so, QdiscCounters::bytes); 0 where the
  // direction has no qdisc of ours (userspace without a rate).
  uint64_t sent_bytes = 0;
  uint64_t loss_drops = 0;         // by the loss model (also while down); kernel: all of
                                   // netem's own drops, its limit's overflow included
  uint64_t delay_queue_drops = 0;  // userspace: the delay stage was full (NFQUEUE)
  uint64_t rate_queue_drops = 0;   // the rate stage's (bottleneck buffer's) overflow
  uint64_t queued = 0;             // packets inside the direction now (both stages)
};
ShapeCounters shape_counters(const ShapeRecord& r);

// Undoes what `r` describes: stops the delay line (only if `r.delayline_pid` still is
// one), removes its rules if it had to be killed, removes our root qdisc, deletes the
// stats and log files. Idempotent; never throws; a vanished namespace counts as undone.
void undo_shape(const ShapeRecord& r) noexcept;
// The same for many records, with their delay lines stopped in parallel (`xdc down`).
void undo_shapes(const std::vector<ShapeRecord>& records) noexcept;

// For `xdc clean`, which may have no records: stops every delay line serving a namespace
// whose name starts with `netns_prefix` and deletes the stats and log files under
// `state_dir` whose names start with it. Returns how many delay lines were stopped.
// (Qdiscs and rules go with the namespaces, which `xdc clean` deletes.)
int clean_delaylines(const std::string& netns_prefix,
                     const std::string& state_dir = ShapeOptions{}.state_dir);

// Counters of the delay line behind `r` (userspace backend; see delay_line.h Stats):
// asks it to write them now (SIGUSR1) and reads its stats file. {} when there is none.
nlohmann::json delayline_stats(const ShapeRecord& r);

// Which backends this machine can run, in words (for `xdc check` and test output).
std::string describe_backends();

}  // namespace xdc::netem
