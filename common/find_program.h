#pragma once
// Where a helper program xdc starts lives (xdc-delayline, xdc-mininet): $env_var when it
// is set and executable, else next to the running executable (an installed or built xdc),
// else `fallback` (the copy in the build or source tree); throws naming every place tried.
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace xdc {

inline std::string find_program(const std::string& name, const char* env_var,
                                const std::string& fallback) {
  std::string tried;
  auto consider = [&](const std::string& p) {
    if (!p.empty() && access(p.c_str(), X_OK) == 0) return true;
    if (!p.empty()) tried += (tried.empty() ? "" : ", ") + p;
    return false;
  };
  if (const char* env = std::getenv(env_var); env && consider(env)) return env;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    const std::string exe(self, static_cast<size_t>(n));
    const std::string next = exe.substr(0, exe.rfind('/') + 1) + name;
    if (consider(next)) return next;
  }
  if (consider(fallback)) return fallback;
  throw std::runtime_error(name + " not found (tried " + tried + "); build it or set " + env_var);
}

}  // namespace xdc
