#include "workloads/worker/tracer.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "common/text_file.h"

namespace xdc::worker {

Tracer::Tracer(int world_rank, std::string path, size_t reserve_events)
    : rank_(world_rank), path_(std::move(path)) {
  events_.reserve(reserve_events);
  write_text_file(path_, trace::to_csv(trace::Trace{}));  // header only
}

void Tracer::record_send(sched::Kind kind, int stage, int mb, int64_t post_ns, int64_t done_ns,
                         int64_t bytes, int peer) {
  int64_t& last = last_send_end_[peer];
  const int64_t start = std::max(post_ns, last);
  const int64_t end = std::max(done_ns, start);
  last = end;
  events_.push_back(
      trace::Event{rank_, kind, stage, mb, start, end, bytes, peer, connections(peer)});
}

namespace {
std::string rows(std::vector<trace::Event> events) {
  trace::Trace t;
  t.events = std::move(events);
  std::string csv = trace::to_csv(t);
  return csv.substr(csv.find('\n') + 1);
}
}  // namespace

void Tracer::flush_iteration(int64_t offset_ns) {
  std::vector<trace::Event> out(events_.begin() + static_cast<ptrdiff_t>(flushed_), events_.end());
  flushed_ = events_.size();
  for (auto& e : out) e.start_ns += offset_ns, e.end_ns += offset_ns;
  std::ofstream f(path_, std::ios::app);
  f << rows(std::move(out));
  f.flush();
  if (!f) throw std::runtime_error("cannot append to " + path_);
}

void Tracer::write_final(const ClockSample& start, const ClockSample& end) const {
  trace::Trace t;
  t.events = events_;
  for (auto& e : t.events) {
    e.start_ns += offset_at(start, end, e.start_ns);
    e.end_ns += offset_at(start, end, e.end_ns);
  }
  write_text_file(path_, trace::to_csv(t));
}

}  // namespace xdc::worker
