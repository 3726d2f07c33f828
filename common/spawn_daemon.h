#pragma once
// Starts one of xdc's long-lived helpers (a delay line, the Mininet driver): argv[0] with
// argv, in its own session (a Ctrl-C or hangup aimed at xdc's terminal does not reach
// it), an empty signal mask and default dispositions, stdin /dev/null, stdout and stderr
// appended to `log`, and each fds[i].first of this process as fd fds[i].second in the
// child (dup2 clears FD_CLOEXEC). Returns posix_spawn's result (0, or an errno value);
// `pid` is the child's.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

namespace xdc {

inline int spawn_daemon(const std::vector<std::string>& argv, const std::string& log,
                        const std::vector<std::pair<int, int>>& fds, pid_t* pid) {
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  for (const auto& [from, to] : fds) posix_spawn_file_actions_adddup2(&fa, from, to);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigfillset(&defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const int rc = posix_spawn(pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return rc;
}

}  // namespace xdc
