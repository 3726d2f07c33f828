#include "netem/shaper/run.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "netem/nl/netns.h"

extern char** environ;

namespace xdc::netem {

namespace {

// A file holding `text`, read from its start: the program's stdin (a memfd, so a long
// input cannot block us as a pipe's full buffer would). -1 with `error` set on failure.
int input_fd(const std::string& text, std::string& error) {
  int fd = memfd_create("xdc-run-input", MFD_CLOEXEC);
  if (fd < 0) {
    error = std::string("memfd_create: ") + std::strerror(errno);
    return -1;
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = std::string("memfd write: ") + std::strerror(errno);
      close(fd);
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  if (lseek(fd, 0, SEEK_SET) < 0) {
    error = std::string("memfd seek: ") + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

RunResult run_argv(const std::vector<std::string>& argv, const std::string& netns,
                   const std::string& input) {
  RunResult r;
  int in = -1;
  if (!input.empty() && (in = input_fd(input, r.output)) < 0) return r;
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    r.output = std::string("pipe: ") + std::strerror(errno);
    if (in >= 0) close(in);
    return r;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (in >= 0)
    posix_spawn_file_actions_adddup2(&fa, in, 0);
  else
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  // Our caller may block signals (the delay line reads them from a signalfd); the
  // program must not inherit that.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  int rc;
  try {
    // The child is created from this thread, so it starts in this thread's namespace.
    nl::NetnsGuard in(netns);
    rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  } catch (...) {  // no such namespace: nothing spawned, nothing left open
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(out[0]);
    close(out[1]);
    if (in >= 0) close(in);
    throw;
  }
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(out[1]);
  if (in >= 0) close(in);
  if (rc != 0) {
    close(out[0]);
    r.output = argv[0] + ": " + std::strerror(rc);
    return r;
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) r.output.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace xdc::netem
