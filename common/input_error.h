#pragma once
// Bad input from a user (YAML, CLI, CSV): the CLI prints what() and exits 2.
// what() reads "FILE:LINE:COL: KEY: expected ..., got ..." so editors can jump to it.
#include <stdexcept>
#include <string>

namespace xdc {

struct SourcePos {
  std::string file;  // path as the user gave it; empty when not from a file
  int line = 0;      // 1-based; 0 = unknown
  int col = 0;       // 1-based; 0 = unknown
};

class InputError : public std::runtime_error {
 public:
  InputError(const SourcePos& pos, const std::string& message)
      : std::runtime_error(format(pos, message)), pos_(pos), message_(message) {}
  explicit InputError(const std::string& message) : InputError(SourcePos{}, message) {}

  const SourcePos& pos() const { return pos_; }
  const std::string& message() const { return message_; }

 private:
  static std::string format(const SourcePos& pos, const std::string& message) {
    if (pos.file.empty()) return message;
    std::string out = pos.file;
    if (pos.line > 0) out += ":" + std::to_string(pos.line);
    if (pos.col > 0) out += ":" + std::to_string(pos.col);
    return out + ": " + message;
  }
  SourcePos pos_;
  std::string message_;
};

// Exit codes of the xdc CLI: 0 ok, 1 the run failed, 2 bad input.
enum ExitCode : int { kExitOk = 0, kExitRunFailed = 1, kExitBadInput = 2 };

}  // namespace xdc
