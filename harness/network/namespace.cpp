#include "harness/network/namespace.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "common/private_dir.h"
#include "netem/nl/netns.h"

namespace xdc::net {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void create_mount_target(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
  if (fd < 0) fail("create " + path);
  close(fd);
}

int open_self_ns(const char* kind) {
  std::string p = std::string("/proc/thread-self/ns/") + kind;
  int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("open " + p);
  return fd;
}

}  // namespace

void make_shared_mount_dir(const std::string& dir) {
  std::filesystem::create_directories(dir);
  if (mount("", dir.c_str(), "none", MS_SHARED | MS_REC, nullptr) == 0) return;
  if (errno != EINVAL) fail("make " + dir + " shared");
  if (mount(dir.c_str(), dir.c_str(), "none", MS_BIND | MS_REC, nullptr) != 0) fail("bind " + dir);
  if (mount("", dir.c_str(), "none", MS_SHARED | MS_REC, nullptr) != 0)
    fail("make " + dir + " shared");
}

bool unmount_shared_mount_dir(const std::string& dir) {
  // /proc/self/mountinfo: "id parent major:minor root mount-point options ...".
  bool gone = false;
  for (int stacked = 0; stacked < 16; ++stacked) {
    std::ifstream info("/proc/self/mountinfo");
    std::string line;
    bool bound = false;
    while (std::getline(info, line)) {
      std::istringstream in(line);
      std::string id, parent, dev, root, point;
      in >> id >> parent >> dev >> root >> point;
      if (point == dir && root == dir) bound = true;
    }
    if (!bound || umount2(dir.c_str(), MNT_DETACH) != 0) break;
    gone = true;
  }
  return gone;
}

void unpin(const std::string& path) {
  if (umount2(path.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
    fail("umount " + path);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) fail("unlink " + path);
}

void create_uts_ns(const std::string& hostname, const std::string& uts_path) {
  make_private_dir(std::filesystem::path(uts_path).parent_path());
  create_mount_target(uts_path);
  int saved = open_self_ns("uts");
  int err = 0;
  std::string what;
  if (unshare(CLONE_NEWUTS) != 0) {
    err = errno, what = "unshare UTS for " + hostname;
  } else if (sethostname(hostname.data(), hostname.size()) != 0) {
    err = errno, what = "sethostname " + hostname;
  } else if (mount("/proc/thread-self/ns/uts", uts_path.c_str(), "none", MS_BIND, nullptr) != 0) {
    err = errno, what = "bind uts ns of " + hostname;
  }
  // A thread left in the new namespace would name the rest wrongly.
  if (setns(saved, CLONE_NEWUTS) != 0) std::terminate();
  close(saved);
  if (err != 0) {
    unpin(uts_path);
    throw std::system_error(err, std::generic_category(), what);
  }
}

void create_netns(const std::string& name, const std::string& hostname,
                  const std::string& uts_path) {
  const std::string path = nl::netns_path(name);
  make_shared_mount_dir("/run/netns");
  create_mount_target(path);
  int saved = open_self_ns("net");
  int err = 0;
  std::string what;
  if (unshare(CLONE_NEWNET) != 0) {
    err = errno, what = "unshare for " + name;
  } else if (mount("/proc/thread-self/ns/net", path.c_str(), "none", MS_BIND, nullptr) != 0) {
    err = errno, what = "bind netns " + name;
  }
  // A thread left in the new namespace would build the rest in the wrong place.
  if (setns(saved, CLONE_NEWNET) != 0) std::terminate();
  close(saved);
  try {
    if (err != 0) throw std::system_error(err, std::generic_category(), what);
    if (!hostname.empty()) create_uts_ns(hostname, uts_path);
  } catch (...) {
    delete_netns(name);
    throw;
  }
}

void pin_netns(const std::string& name, pid_t pid) {
  const std::string path = nl::netns_path(name);
  make_shared_mount_dir("/run/netns");
  create_mount_target(path);
  std::string src = "/proc/" + std::to_string(pid) + "/ns/net";
  if (mount(src.c_str(), path.c_str(), "none", MS_BIND, nullptr) != 0) {
    int err = errno;
    unpin(path);
    throw std::system_error(err, std::generic_category(), "bind " + src + " as netns " + name);
  }
}

void delete_netns(const std::string& name, const std::string& uts_path) {
  if (name.empty()) throw std::invalid_argument("delete_netns: empty name");
  unpin(nl::netns_path(name));
  if (!uts_path.empty()) unpin(uts_path);
}

std::vector<std::string> list_netns() {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator("/run/netns", ec))
    out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<pid_t> netns_pids(const std::string& name) {
  return netns_pids(std::vector<std::string>{name});
}

std::vector<pid_t> netns_pids(const std::vector<std::string>& names) {
  std::vector<pid_t> out;
  std::set<std::pair<dev_t, ino_t>> targets;
  for (const std::string& name : names) {
    struct stat target {};
    if (stat(nl::netns_path(name).c_str(), &target) == 0)
      targets.insert({target.st_dev, target.st_ino});
  }
  if (targets.empty()) return out;
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    struct stat st {};
    std::string p = std::string("/proc/") + e->d_name + "/ns/net";
    if (stat(p.c_str(), &st) == 0 && targets.count({st.st_dev, st.st_ino}))
      out.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return out;
}

int kill_netns_processes(const std::vector<std::string>& names, int grace_ms) {
  auto pids = netns_pids(names);
  for (pid_t p : pids) kill(p, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (!pids.empty() && !netns_pids(names).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!pids.empty())
    for (pid_t p : netns_pids(names)) kill(p, SIGKILL);
  // Some of them may be this process's own children (delay lines started by a build in
  // a long-running `xdc run`/`xdc sweep`): reap those, or they stay as zombies.
  for (int tries = 0; tries < 50; ++tries) {
    bool pending = false;
    for (pid_t p : pids)
      if (p > 0 && waitpid(p, nullptr, WNOHANG) == 0) pending = true;  // ours, not dead yet
    if (!pending) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return static_cast<int>(pids.size());
}

void no_ipv6(const std::string& ns) {
  nl::write_sysctl(ns, "net/ipv6/conf/all/disable_ipv6", "1");
  nl::write_sysctl(ns, "net/ipv6/conf/default/disable_ipv6", "1");
}

void gateway_sysctls(const std::string& ns) {
  nl::write_sysctl(ns, "net/ipv4/ip_forward", "1");
  for (const std::string conf : {"all", "default"}) {
    nl::write_sysctl(ns, "net/ipv4/conf/" + conf + "/send_redirects", "0");
    nl::write_sysctl(ns, "net/ipv4/conf/" + conf + "/rp_filter", "0");
  }
}

}  // namespace xdc::net
