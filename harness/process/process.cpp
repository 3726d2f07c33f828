#include "harness/process/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>
#include <filesystem>
#include <future>
#include <stdexcept>
#include <thread>

namespace xdc::proc {
namespace bp = boost::process;

// Boost 1.74's child::wait_for waits on SIGCHLD with sigtimedwait and can miss a child
// that exits before it starts waiting, then sleeps out the whole timeout. Poll instead:
// running() reaps with waitpid(WNOHANG). True when the child exited within `timeout`.
static bool wait_exit(bp::child& c, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(200);
  while (c.running()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(20));
  }
  return true;
}

Result run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  if (argv.empty()) throw std::invalid_argument("proc::run: empty argv");
  auto exe = argv[0].find('/') == std::string::npos ? bp::search_path(argv[0])
                                                    : boost::filesystem::path(argv[0]);
  if (exe.empty()) throw std::runtime_error("program not found in PATH: " + argv[0]);
  boost::asio::io_context io;
  std::future<std::string> out, err;
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  bp::child c(exe, bp::args(args), bp::std_in<bp::null, bp::std_out> out, bp::std_err > err, io);
  Result r;
  // io.run() drains the pipes; it returns when both are closed (the child exited).
  std::thread pump([&] { io.run(); });
  if (!wait_exit(c, timeout)) {
    r.timed_out = true;
    c.terminate();
  }
  pump.join();
  c.wait();
  r.exit_code = r.timed_out ? -1 : c.exit_code();
  r.out = out.get();
  r.err = err.get();
  return r;
}

int run_quiet(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  if (argv.empty()) throw std::invalid_argument("proc::run_quiet: empty argv");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> c;
  for (auto& a : argv) c.push_back(const_cast<char*>(a.c_str()));
  c.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, c[0], &fa, nullptr, c.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

struct Background::Impl {
  bp::child child;
};

Background::Background(const std::vector<std::string>& argv, const std::string& log_file) {
  if (argv.empty()) throw std::invalid_argument("proc::Background: empty argv");
  auto exe = argv[0].find('/') == std::string::npos ? bp::search_path(argv[0])
                                                    : boost::filesystem::path(argv[0]);
  if (exe.empty()) throw std::runtime_error("program not found in PATH: " + argv[0]);
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  if (log_file.empty())
    impl_ = new Impl{bp::child(exe, bp::args(args), bp::std_in<bp::null, bp::std_out> bp::null,
                               bp::std_err > bp::null)};
  else {
    // Boost.Process opens the file without O_TRUNC: a longer log from an earlier child
    // would keep its tail behind this one's output.
    if (int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); fd >= 0)
      ::close(fd);
    impl_ = new Impl{
        bp::child(exe, bp::args(args), bp::std_in<bp::null, (bp::std_out & bp::std_err)> log_file)};
  }
}

Background::Background(const std::vector<std::string>& argv, const std::string& out_file,
                       const std::string& err_file) {
  if (argv.empty()) throw std::invalid_argument("proc::Background: empty argv");
  auto exe = argv[0].find('/') == std::string::npos ? bp::search_path(argv[0])
                                                    : boost::filesystem::path(argv[0]);
  if (exe.empty()) throw std::runtime_error("program not found in PATH: " + argv[0]);
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  for (const auto& f : {out_file, err_file})  // emptied: Boost.Process does not truncate
    if (int fd = ::open(f.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); fd >= 0)
      ::close(fd);
  impl_ = new Impl{bp::child(exe, bp::args(args), bp::std_in<bp::null, bp::std_out> out_file,
                             bp::std_err > err_file)};
}

Background::~Background() {
  terminate();
  delete impl_;
}

void wait_any_exit(const std::vector<int>& pids, std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  for (int pid : pids) {
    const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) fds.push_back({fd, POLLIN, 0});
  }
  // A pid that has no pidfd has already gone: nothing to wait for.
  if (fds.size() == pids.size()) poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  for (const auto& f : fds) close(f.fd);
}

int Background::pid() const {
  return impl_->child.id();
}
bool Background::running() {
  return impl_->child.running();
}

int Background::wait_for(std::chrono::milliseconds timeout) {
  if (!wait_exit(impl_->child, timeout)) return -1;
  return impl_->child.exit_code();
}

void Background::terminate() {
  if (!impl_->child.valid() || !impl_->child.running()) return;
  ::kill(impl_->child.id(), SIGTERM);
  if (!wait_exit(impl_->child, std::chrono::seconds(2))) impl_->child.terminate();
}

std::string self_exe() {
  return std::filesystem::read_symlink("/proc/self/exe");
}

std::string xdc_exe() {
  if (const char* e = getenv("XDC_EXE"); e && *e) return e;
  std::string self = self_exe();
  if (std::filesystem::path(self).filename() == "xdc") return self;
  return sibling_exe("xdc");
}

std::string sibling_exe(const std::string& name) {
  return (std::filesystem::path(self_exe()).parent_path() / name).string();
}

std::vector<std::string> in_host(const std::string& net, const std::string& host,
                                 const std::vector<std::string>& argv) {
  std::vector<std::string> out{xdc_exe(), "exec", "--name", net, host, "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

}  // namespace xdc::proc
