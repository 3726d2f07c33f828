#pragma once
// Running a helper program (iptables-legacy) from an argv vector, never a shell
// string, optionally inside a named network namespace.
#include <string>
#include <vector>

namespace xdc::netem {

struct RunResult {
  int exit_code = -1;  // -1 when it could not be started or died by a signal
  std::string output;  // stdout and stderr together
};

// Runs argv[0] (searched in PATH) with its arguments inside `netns` ("" = current),
// `input` as its stdin (empty: /dev/null), and waits for it. Never throws for a failing
// program; throws std::system_error when the namespace cannot be entered.
RunResult run_argv(const std::vector<std::string>& argv, const std::string& netns = "",
                   const std::string& input = "");

}  // namespace xdc::netem
