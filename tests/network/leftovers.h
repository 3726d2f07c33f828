#pragma once
// What an xdc network may leave on the machine, for tests that assert nothing leaks:
// namespaces, root links, state and /etc/netns files, helper processes.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "harness/process/process.h"

namespace xdc::testing {

// Everything on this machine that carries network `net`'s names ("" = any xdc network).
std::vector<std::string> leftovers(const std::string& net = "");

// Processes whose command line (arguments joined by spaces) `match` accepts, each as
// "pid <the first `width` characters of it>": what a job must not leave running.
std::vector<std::string> processes_matching(const std::function<bool(const std::string&)>& match,
                                            size_t width = 100);

// Runs the built xdc CLI with `args`; returns {exit code, stdout + stderr}.
struct CliResult {
  int rc;
  std::string out;
};
CliResult run_xdc(const std::vector<std::string>& args, int timeout_s = 300);

// Waits until `p` has stopped itself (SIGSTOP: `xdc up`'s XDC_TEST_STOP_UP_AT hook,
// harness/network/builder.h). False when it exits first, or has not stopped after
// `limit`: a guard against a hang, far above any build's time, not a timing bound.
bool wait_stopped(proc::Background& p, std::chrono::seconds limit = std::chrono::seconds(300));

}  // namespace xdc::testing
