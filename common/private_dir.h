#pragma once
// xdc's state and control sockets live in directories only root may enter (/run/xdc,
// /run/xdc-delayline and what lies below them): a user other than root can neither list
// them, read a file or connect to a socket there, nor create anything in them.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <system_error>

namespace xdc {

inline constexpr mode_t kPrivateDirMode = 0700;

// Creates `dir` and every missing directory above it with mode 0700, whatever the umask.
// A directory already there keeps its mode, unless `tighten`: then it is made 0700 too.
// Only a directory xdc owns outright (a state root) is tightened: never pass a user's.
inline void make_private_dir(const std::string& dir, bool tighten = false) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    const std::string part = dir.substr(0, i);
    if (mkdir(part.c_str(), kPrivateDirMode) == 0) {
      if (chmod(part.c_str(), kPrivateDirMode) != 0)  // the umask may have taken bits off
        throw std::system_error(errno, std::generic_category(), "chmod " + part);
    } else if (errno != EEXIST) {
      throw std::system_error(errno, std::generic_category(), "mkdir " + part);
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    throw std::system_error(errno, std::generic_category(), "stat " + dir);
  if (!S_ISDIR(st.st_mode))
    throw std::system_error(ENOTDIR, std::generic_category(), "mkdir " + dir);
  if (tighten && (st.st_mode & 07777) != kPrivateDirMode &&
      chmod(dir.c_str(), kPrivateDirMode) != 0)
    throw std::system_error(errno, std::generic_category(), "chmod " + dir);
}

// Writes `text` as the whole file at `path` with mode 0600 from its creation on, whatever
// the umask, through a temporary beside it renamed over it (a reader never sees half a
// file). Throws std::system_error naming the file.
inline void write_private_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "write " + tmp);
  int err = fchmod(fd, 0600) == 0 ? 0 : errno;  // a stale temporary keeps its old mode
  for (size_t done = 0; err == 0 && done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n > 0)
      done += static_cast<size_t>(n);
    else if (errno != EINTR)
      err = errno;
  }
  if (close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) throw std::system_error(err, std::generic_category(), "write " + path);
}

}  // namespace xdc
