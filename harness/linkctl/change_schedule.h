#pragma once
// A topology's scheduled WAN changes (`changes:`, topo::WanChange) played against a live
// network while a run goes on: each change at start + at x k of wall clock (k the
// network's time dilation), applied by change_links (link_control.h), so each is in the
// events log with the time it was in force. stop() puts every direction it touched back
// to the topology's parameters (and up), so the next schedule of a run starts from the
// same WAN and sees the same timeline.
#include <atomic>
#include <condition_variable>
#include <mutex>
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

  bool empty() const { return steps_.empty(); }
  size_t size() const { return steps_.size(); }
  // Starts the clock: a thread applies each change when due.
  void start();
  // Stops the thread (changes not yet due are dropped) and restores every direction it
  // changed. Idempotent. The first error of a change or of the restore, if any: error().
  void stop();
  const std::string& error() const { return error_; }
  int applied() const { return applied_; }

 private:
  struct Step {
    uint64_t at_us;  // undilated
    Direction dir;
    topo::WanChange change;
  };
  void loop();

  std::string net_;
  double k_;
  std::vector<Step> steps_;                                         // by time
  std::vector<std::pair<Direction, netem::LinkParams>> originals_;  // undilated
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::atomic<int> applied_{0};
  std::string error_;
};

}  // namespace xdc::linkctl
