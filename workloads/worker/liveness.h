#pragma once
// Every rank's last sign of life, so that a rank which times out waiting can name the one
// that stopped the job, not only the peer it waited for (which may itself be waiting on
// the stalled rank, and a collective names no peer at all).
//
// run_dir/rank<r>.alive: one record, mapped shared and written in place: the steady
// (CLOCK_MONOTONIC) time in ns at which the rank's schedule thread last moved (an action
// began, or a wait looked again: at most kBeatNs apart) and the action it was in. Ranks
// on one machine read each other's; a rank whose file is not on this machine (another
// machine of a lab), or whose record is older than this job, is passed over. A record is
// read without locking: a torn read can only misname the action, never the rank or its
// silence.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xdc::worker {

class Liveness {
 public:
  static constexpr int64_t kBeatNs = 250'000'000;
  // A rank whose last sign of life is older than this is named silent.
  static constexpr int64_t kSilentNs = 1'000'000'000;
  // A rank past its last wait beats this: done, silent from then on, never named.
  static constexpr const char* kFinished = "finished";

  // Creates (truncates) run_dir/rank<rank>.alive. An empty run_dir or a file that can't
  // be made: inert (beats do nothing, silent() names nobody).
  Liveness(const std::string& run_dir, int rank, int world_size);
  ~Liveness();
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;

  // The schedule thread moved: in `what` (an action's kind name, or a wait's cause; the
  // first 23 characters kept), `stage` and `microbatch` (< 0: none) of `iteration`.
  void beat(std::string_view what, int stage, int microbatch, int iteration);
  // ns since this rank's own last beat: how long its schedule thread did not run (a
  // stopped or starved process sees a gap far over kBeatNs when it runs again).
  int64_t since_beat() const;
  // The other ranks silent for over kSilentNs now, the longest silent first, each
  // "rank R (host H): no sign of life for S s, since F stage 2 microbatch 0 of iteration
  // I". Empty when none is (or none can be read).
  std::vector<std::string> silent(const std::vector<std::string>& hosts) const;

 private:
  struct Record {
    int64_t beat_ns;
    int32_t stage, microbatch, iteration;
    char what[24];
  };
  std::string dir_;
  int rank_ = 0, world_ = 0;
  Record* mine_ = nullptr;
  int64_t start_ns_ = 0;
  // Ranks start within this of each other; an older record is another job's.
  static constexpr int64_t kStaleNs = 60'000'000'000;
};

}  // namespace xdc::worker
