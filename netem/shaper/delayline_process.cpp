#include "netem/shaper/delayline_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/find_program.h"
#include "common/private_dir.h"
#include "common/spawn_daemon.h"
#include "netem/shaper/link_params_args.h"

#ifndef XDC_BUILD_DELAYLINE
#define XDC_BUILD_DELAYLINE ""
#endif

namespace xdc::netem {

namespace {

std::vector<std::string> cmdline(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(in, a, '\0')) args.push_back(a);
  return args;
}

std::string tail_of(const std::string& path, size_t max_bytes = 2000) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > max_bytes ? s.substr(s.size() - max_bytes) : s;
}

int pidfd_open(pid_t pid) {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}
int pidfd_signal(int fd, int sig) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0));
}

void make_parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return;
  make_private_dir(path.substr(0, slash));
}

}  // namespace

std::string delayline_program() {
  return find_program("xdc-delayline", "XDC_DELAYLINE", XDC_BUILD_DELAYLINE);
}

std::vector<std::string> delayline_argv(const std::string& program, const DelaylineSpec& s) {
  std::vector<std::string> argv = {program,
                                   "--netns=" + s.netns,
                                   "--if=" + s.ifname,
                                   "--tag=" + s.tag,
                                   "--queue=" + std::to_string(s.queue_num),
                                   "--stats=" + s.stats_path,
                                   "--rt-prio=" + std::to_string(s.rt_prio),
                                   "--seed=" + std::to_string(s.seed)};
  if (!s.ctl_path.empty()) argv.push_back("--ctl=" + s.ctl_path);
  for (auto& a : to_args(s.params)) argv.push_back(std::move(a));
  return argv;
}

pid_t start_delayline(const DelaylineSpec& spec) {
  std::vector<std::string> argv = delayline_argv(delayline_program(), spec);
  argv.push_back("--ready-fd=3");
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  if (!spec.log_path.empty()) make_parent_dir(spec.log_path);
  if (!spec.stats_path.empty()) make_parent_dir(spec.stats_path);
  const std::string log = spec.log_path.empty() ? "/dev/null" : spec.log_path;

  pid_t pid = -1;
  const int rc = spawn_daemon(argv, log, {{ready[1], 3}}, &pid);
  close(ready[1]);
  if (rc != 0) {
    close(ready[0]);
    throw std::system_error(rc, std::generic_category(), "spawn " + argv[0]);
  }

  // The child writes "ok\n" once ready, or "error: ...\n", then closes the pipe.
  std::string answer;
  pollfd pfd{ready[0], POLLIN, 0};
  for (int waited_ms = 0; waited_ms < 10000 && answer.find('\n') == std::string::npos;) {
    int r = poll(&pfd, 1, 100);
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) {
      waited_ms += 100;
      continue;
    }
    char buf[512];
    ssize_t n = read(ready[0], buf, sizeof buf);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  close(ready[0]);
  if (answer.rfind("ok", 0) == 0) return pid;

  stop_delayline(pid, std::chrono::milliseconds(500));
  int status = 0;
  waitpid(pid, &status, WNOHANG);
  if (answer.empty()) answer = "no answer within 10 s";
  throw std::runtime_error("xdc-delayline for " + spec.ifname + " in netns '" + spec.netns +
                           "' failed to start: " + answer +
                           (spec.log_path.empty() ? "" : "\n" + tail_of(spec.log_path)));
}

int64_t change_delayline(const std::string& ctl_path, const LinkParams& p) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (ctl_path.empty() || ctl_path.size() >= sizeof addr.sun_path)
    throw std::runtime_error("delay line control socket: bad path '" + ctl_path + "'");
  std::memcpy(addr.sun_path, ctl_path.c_str(), ctl_path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "control socket");
  std::string request;
  for (const auto& a : to_args(p)) request += a + "\n";
  std::string answer;
  timeval tv{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buf[1024];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) answer.assign(buf, static_cast<size_t>(n));
  }
  int err = errno;
  close(fd);
  if (answer.rfind("ok ", 0) == 0) return std::stoll(answer.substr(3));
  if (answer.empty()) answer = std::string("no answer (") + std::strerror(err) + ")";
  throw std::runtime_error("delay line at " + ctl_path + ": " + answer);
}

bool is_delayline(pid_t pid, const std::string& netns) {
  if (pid <= 0) return false;
  auto args = cmdline(pid);
  if (args.empty()) return false;
  const std::string& a0 = args[0];
  if (a0.size() < 13 || a0.compare(a0.size() - 13, 13, "xdc-delayline") != 0) return false;
  if (netns.empty()) return true;
  for (const auto& a : args)
    if (a == "--netns=" + netns) return true;
  return false;
}

StopResult stop_delayline(pid_t pid, std::chrono::milliseconds grace) {
  return stop_delaylines({pid}, grace).front();
}

std::vector<StopResult> stop_delaylines(const std::vector<pid_t>& pids,
                                        std::chrono::milliseconds grace) {
  std::vector<StopResult> result(pids.size(), StopResult::kNotRunning);
  std::vector<int> fds(pids.size(), -1);
  for (size_t i = 0; i < pids.size(); ++i) {
    pid_t pid = pids[i];
    if (pid <= 0) continue;
    // A child of ours that already exited is a zombie: reap it (its pid cannot be
    // reused before that, so this cannot touch another process).
    if (waitpid(pid, nullptr, WNOHANG) == pid) {
      result[i] = StopResult::kTerminated;
      continue;
    }
    if (!is_delayline(pid)) continue;
    fds[i] = pidfd_open(pid);
    if (fds[i] >= 0 && pidfd_signal(fds[i], SIGTERM) == 0) result[i] = StopResult::kTerminated;
  }
  // All were asked at once; now wait for each within the common deadline.
  auto deadline = std::chrono::steady_clock::now() + grace;
  for (size_t i = 0; i < pids.size(); ++i) {
    if (fds[i] < 0) continue;
    pollfd pfd{fds[i], POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (result[i] == StopResult::kTerminated &&
        poll(&pfd, 1, static_cast<int>(std::max<int64_t>(left.count(), 0))) <= 0) {
      pidfd_signal(fds[i], SIGKILL);
      poll(&pfd, 1, 2000);
      result[i] = StopResult::kKilled;
    }
    close(fds[i]);
    waitpid(pids[i], nullptr, WNOHANG);
  }
  return result;
}

std::vector<pid_t> find_delaylines(const std::string& netns_prefix) {
  std::vector<pid_t> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    if (!is_delayline(static_cast<pid_t>(pid))) continue;
    for (const auto& a : cmdline(static_cast<pid_t>(pid)))
      if (a.rfind("--netns=" + netns_prefix, 0) == 0) {
        pids.push_back(static_cast<pid_t>(pid));
        break;
      }
  }
  closedir(d);
  return pids;
}

}  // namespace xdc::netem
