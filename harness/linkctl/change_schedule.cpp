#include "harness/linkctl/change_schedule.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "harness/common/units.h"

namespace xdc::linkctl {

ChangeSchedule::ChangeSchedule(std::string net, const topo::Topology& t, double time_dilation)
    : net_(std::move(net)), k_(time_dilation) {
  for (const auto& l : t.wan)
    for (int dir = 0; dir < 2; ++dir) {
      Direction d{dir ? l.b : l.a, dir ? l.a : l.b};
      const auto& changes = dir ? l.b_to_a_changes : l.a_to_b_changes;
      if (changes.empty()) continue;
      originals_.push_back({d, dir ? l.b_to_a : l.a_to_b});
      for (const auto& c : changes) steps_.push_back({c.at_us, d, c});
    }
  std::stable_sort(steps_.begin(), steps_.end(),
                   [](const Step& a, const Step& b) { return a.at_us < b.at_us; });
}

ChangeSchedule::~ChangeSchedule() {
  stop();
}

void ChangeSchedule::start() {
  if (steps_.empty() || thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { loop(); });
}

void ChangeSchedule::loop() {
  const auto t0 = std::chrono::steady_clock::now();
  for (const Step& s : steps_) {
    auto due =
        t0 + std::chrono::microseconds(static_cast<int64_t>(static_cast<double>(s.at_us) * k_));
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_until(lock, due, [this] { return stopping_; })) return;
    }
    LinkChange c;
    c.delay_us = s.change.delay_us;
    c.jitter_us = s.change.jitter_us;
    c.loss_pct = s.change.loss_pct;
    c.rate_bps = s.change.rate_bps;
    c.down = s.change.down;
    c.source = s.change.pos.file + ":" + std::to_string(s.change.pos.line) + " (at " +
               format_duration(s.at_us) + ")";
    try {
      change_links(net_, {s.dir}, c);
      ++applied_;
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu_);
      if (error_.empty()) error_ = "change of " + s.dir.name() + ": " + e.what();
    }
  }
}

void ChangeSchedule::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (applied_ == 0) return;
  for (const auto& [d, params] : originals_) {
    LinkChange c;
    c.params = params;
    c.down = false;
    c.source = "the end of the schedule's run";
    try {
      change_links(net_, {d}, c);
    } catch (const std::exception& e) {
      if (error_.empty()) error_ = "restoring " + d.name() + ": " + e.what();
    }
  }
}

}  // namespace xdc::linkctl
