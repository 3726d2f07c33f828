#pragma once
// Starting and stopping xdc-delayline, the userspace backend's delay stage (see
// netem/delayline/delay_line.h). It runs as a child process in its own session, so
// that it outlives a short-lived `xdc up`; it stops on SIGTERM/SIGINT, and by itself
// within a second when its namespace or interface disappears.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "netem/shaper/link_params.h"

namespace xdc::netem {

struct DelaylineSpec {
  std::string netns, ifname, tag;
  uint16_t queue_num = 0;
  LinkParams params;
  std::string stats_path;  // JSON counters, rewritten every second and on SIGUSR1
  std::string ctl_path;    // control socket for runtime changes; "" = none
  std::string log_path;    // stdout/stderr of the process
  int rt_prio = 0;         // SCHED_FIFO priority; 0 = normal scheduling
  uint64_t seed = 0;       // 0 = random
};

// The program: $XDC_DELAYLINE, else xdc-delayline next to /proc/self/exe, else the
// build tree's copy. Throws std::runtime_error naming the paths tried.
std::string delayline_program();

// Command line of the program for `spec` (argv[0] = program).
std::vector<std::string> delayline_argv(const std::string& program, const DelaylineSpec& spec);

// Starts the process and waits (up to 10 s) until its NFQUEUE is bound and its rules are
// in place. Throws std::runtime_error with the process's own message on failure.
pid_t start_delayline(const DelaylineSpec& spec);

// Hands the running delay line behind `ctl_path` its new parameters (the whole set; it
// keeps its held packets and their order, delay_line.h). Returns the CLOCK_REALTIME ns at
// which the delay line applied them. Throws std::runtime_error with its answer when it
// refuses, or when it does not answer within a second.
int64_t change_delayline(const std::string& ctl_path, const LinkParams& p);

// True when `pid` is an xdc-delayline (optionally: the one serving `netns`).
bool is_delayline(pid_t pid, const std::string& netns = "");

enum class StopResult {
  kNotRunning,  // `pid` is not (or no longer) a delay line
  kTerminated,  // it exited on SIGTERM, having removed its rules and stats file
  kKilled,      // it had to be SIGKILLed: its rules and stats file may remain
};
// SIGTERM, wait up to `grace`, then SIGKILL; reaps it when it is our child.
StopResult stop_delayline(pid_t pid, std::chrono::milliseconds grace = std::chrono::seconds(3));
// The same for many at once: all are signalled first, then awaited (one grace for all).
std::vector<StopResult> stop_delaylines(const std::vector<pid_t>& pids,
                                        std::chrono::milliseconds grace = std::chrono::seconds(3));

// Every running delay line whose namespace name starts with `netns_prefix`
// (for `xdc clean`, which has no record after a crash).
std::vector<pid_t> find_delaylines(const std::string& netns_prefix);

}  // namespace xdc::netem
