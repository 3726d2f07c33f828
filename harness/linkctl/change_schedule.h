#pragma once
// WAN changes played against a live network while a run goes on, each applied by
// change_links (link_control.h), so each is in the events log with the time it was in force:
//  - a topology's scheduled changes (`changes:` / `trace:`, topo::WanChange), each at
//    start + at x k of wall clock (k the network's time dilation);
//  - changes asked for while it runs (apply_now: an experiment's events anchored to
//    training progress), applied at once, a `down_for` window closed by the same clock.
// stop() puts every direction it touched back to the topology's parameters (and up), so the
// next schedule of a run starts from the same WAN and sees the same timeline.
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness/linkctl/link_control.h"
#include "harness/topology/topology.h"

namespace xdc::linkctl {

class ChangeSchedule {
 public:
  ChangeSchedule(std::string net, const topo::Topology& t, double time_dilation);
  ~ChangeSchedule();  // stop()
  ChangeSchedule(const ChangeSchedule&) = delete;
  ChangeSchedule& operator=(const ChangeSchedule&) = delete;

  // The topology's scheduled changes (not counting apply_now's).
  bool empty() const { return scheduled_ == 0; }
  size_t size() const { return scheduled_; }
  // Starts the clock: a thread applies each change when due (and apply_now's restores).
  void start();
  // Applies `c` (its delay/jitter/loss/rate; at_us unused) to `dirs` now, cut when
  // down_for_us is set, and schedules their restore (up) down_for_us (undilated, x k) later.
  // `source` names the cause in the events log. Throws as change_links does.
  void apply_now(const std::vector<Direction>& dirs, const topo::WanChange& c,
                 std::optional<uint64_t> down_for_us, const std::string& source);
  // Stops the thread (changes not yet due are dropped) and restores every direction it
  // changed. Idempotent. The first error of a change or of the restore, if any: error().
  void stop();
  std::string error() const;
  int applied() const { return applied_; }

 private:
  struct Step {
    Direction dir;
    topo::WanChange change;
    std::string source;
  };
  using Clock = std::chrono::steady_clock;
  void loop();
  void apply(const Direction& d, const topo::WanChange& c, const std::string& source);

  std::string net_;
  double k_;
  size_t scheduled_ = 0;
  std::vector<std::pair<uint64_t, Step>> initial_;  // the topology's, by at_us
  std::map<std::string, std::pair<Direction, netem::LinkParams>> originals_;  // undilated
  std::set<std::string> touched_;
  std::multimap<Clock::time_point, Step> due_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::atomic<int> applied_{0};
  std::string error_;
  // Each direction's netlink socket and interface, found at its first change and kept
  // until stop() (shaper.h, ReshapeHandle); one change at a time uses them.
  std::mutex ready_mu_;
  std::map<std::string, netem::ReshapeHandle> ready_;
};

}  // namespace xdc::linkctl
