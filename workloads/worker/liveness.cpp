#include "workloads/worker/liveness.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace xdc::worker {

namespace {

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::string path_of(const std::string& dir, int rank) {
  return dir + "/rank" + std::to_string(rank) + ".alive";
}

}  // namespace

Liveness::Liveness(const std::string& run_dir, int rank, int world_size)
    : dir_(run_dir), rank_(rank), world_(world_size) {
  if (dir_.empty()) return;
  const int fd = ::open(path_of(dir_, rank).c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (::ftruncate(fd, sizeof(Record)) == 0) {
    void* p = ::mmap(nullptr, sizeof(Record), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) mine_ = static_cast<Record*>(p);
  }
  ::close(fd);
  beat("start", -1, -1, 0);
  start_ns_ = monotonic_ns();
}

Liveness::~Liveness() {
  if (mine_) ::munmap(mine_, sizeof(Record));
}

void Liveness::beat(std::string_view what, int stage, int microbatch, int iteration) {
  if (!mine_) return;
  const size_t n = std::min(what.size(), sizeof mine_->what - 1);
  std::memcpy(mine_->what, what.data(), n);
  mine_->what[n] = '\0';
  mine_->stage = stage;
  mine_->microbatch = microbatch;
  mine_->iteration = iteration;
  mine_->beat_ns = monotonic_ns();
}

int64_t Liveness::since_beat() const {
  return mine_ ? monotonic_ns() - mine_->beat_ns : 0;
}

std::vector<std::string> Liveness::silent(const std::vector<std::string>& hosts) const {
  std::vector<std::pair<int64_t, std::string>> found;
  if (!mine_) return {};
  const int64_t now = monotonic_ns();
  for (int r = 0; r < world_; ++r) {
    if (r == rank_) continue;
    const int fd = ::open(path_of(dir_, r).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    Record rec{};
    const bool whole = ::pread(fd, &rec, sizeof rec, 0) == static_cast<ssize_t>(sizeof rec);
    ::close(fd);
    const int64_t age = now - rec.beat_ns;
    // A record from before this job (an earlier run in the same directory) is not a rank.
    if (!whole || rec.beat_ns < start_ns_ - kStaleNs || age <= kSilentNs) continue;
    rec.what[sizeof rec.what - 1] = '\0';
    if (std::strcmp(rec.what, kFinished) == 0) continue;
    std::string at = rec.what;
    if (rec.stage >= 0) at += " stage " + std::to_string(rec.stage);
    if (rec.microbatch >= 0) at += " microbatch " + std::to_string(rec.microbatch);
    char line[256];
    std::snprintf(line, sizeof line,
                  "rank %d (host %s): no sign of life for %.1f s, since %s of iteration %d", r,
                  r < static_cast<int>(hosts.size()) ? hosts[r].c_str() : "?", age / 1e9,
                  at.c_str(), rec.iteration);
    found.emplace_back(age, line);
  }
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

}  // namespace xdc::worker
