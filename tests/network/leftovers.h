#pragma once
// What an xdc network may leave on the machine, for tests that assert nothing leaks:
// namespaces, root links, state and /etc/netns files, helper processes.
#include <string>
#include <vector>

namespace xdc::testing {

// Everything on this machine that carries network `net`'s names ("" = any xdc network).
std::vector<std::string> leftovers(const std::string& net = "");

// Runs the built xdc CLI with `args`; returns {exit code, stdout + stderr}.
struct CliResult {
  int rc;
  std::string out;
};
CliResult run_xdc(const std::vector<std::string>& args, int timeout_s = 300);

}  // namespace xdc::testing
