#include "harness/linkctl/change_schedule.h"

#include <algorithm>
#include <chrono>

#include "harness/common/units.h"

namespace xdc::linkctl {

ChangeSchedule::ChangeSchedule(std::string net, const topo::Topology& t, double time_dilation)
    : net_(std::move(net)), k_(time_dilation) {
  for (const auto& l : t.wan)
    for (int dir = 0; dir < 2; ++dir) {
      Direction d{dir ? l.b : l.a, dir ? l.a : l.b};
      originals_[d.name()] = {d, dir ? l.b_to_a : l.a_to_b};
      const auto& changes = dir ? l.b_to_a_changes : l.a_to_b_changes;
      for (const auto& c : changes)
        initial_.push_back({c.at_us,
                            {d, c,
                             c.pos.file + ":" + std::to_string(c.pos.line) + " (at " +
                                 format_duration(c.at_us) + ")"}});
    }
  scheduled_ = initial_.size();
  std::stable_sort(initial_.begin(), initial_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
}

ChangeSchedule::~ChangeSchedule() {
  stop();
}

std::string ChangeSchedule::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void ChangeSchedule::start() {
  if (thread_.joinable()) return;
  {
    std::vector<Direction> dirs;
    for (const auto& [name, d] : originals_) dirs.push_back(d.first);
    std::lock_guard<std::mutex> lock(ready_mu_);
    prepare_links(net_, dirs, ready_);
  }
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = false;
  const auto t0 = Clock::now();
  for (const auto& [at_us, step] : initial_)
    due_.emplace(
        t0 + std::chrono::microseconds(static_cast<int64_t>(static_cast<double>(at_us) * k_)),
        step);
  thread_ = std::thread([this] { loop(); });
}

void ChangeSchedule::apply(const Direction& d, const topo::WanChange& s,
                           const std::string& source) {
  topo::WanChange c = s;
  c.source = source;
  {
    std::lock_guard<std::mutex> lock(mu_);
    touched_.insert(d.name());
  }
  {
    std::lock_guard<std::mutex> lock(ready_mu_);
    change_links(net_, {d}, c, &ready_);
  }
  ++applied_;
}

void ChangeSchedule::apply_now(const std::vector<Direction>& dirs, const topo::WanChange& c,
                               std::optional<uint64_t> down_for_us, const std::string& source) {
  topo::WanChange now = c;
  if (down_for_us) now.down = true;
  for (const Direction& d : dirs) apply(d, now, source);
  if (!down_for_us) return;
  topo::WanChange up;
  up.down = false;
  const auto at = Clock::now() + std::chrono::microseconds(
                                     static_cast<int64_t>(static_cast<double>(*down_for_us) * k_));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Direction& d : dirs)
      due_.emplace(at, Step{d, up, source + " (up after " + format_duration(*down_for_us) + ")"});
  }
  cv_.notify_all();
}

void ChangeSchedule::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (due_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const auto when = due_.begin()->first;
    if (Clock::now() < when) {
      cv_.wait_until(lock, when);
      continue;  // woken early (stop, or an earlier step added): look again
    }
    const Step s = due_.begin()->second;
    due_.erase(due_.begin());
    lock.unlock();
    try {
      apply(s.dir, s.change, s.source);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> l(mu_);
      if (error_.empty()) error_ = "change of " + s.dir.name() + ": " + e.what();
    }
    lock.lock();
  }
}

void ChangeSchedule::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    due_.clear();
  }
  cv_.notify_all();
  thread_.join();
  for (const std::string& name : touched_) {
    const auto& [d, params] = originals_.at(name);
    topo::WanChange c;
    c.params = params;
    c.down = false;
    c.source = "the end of the schedule's run";
    try {
      std::lock_guard<std::mutex> lock(ready_mu_);
      change_links(net_, {d}, c, &ready_);
    } catch (const std::exception& e) {
      if (error_.empty()) error_ = "restoring " + d.name() + ": " + e.what();
    }
  }
  touched_.clear();
  std::lock_guard<std::mutex> lock(ready_mu_);
  ready_.clear();  // the sockets would keep the namespaces alive
}

}  // namespace xdc::linkctl
