#pragma once
// Reading a whole file into a string and writing one, the one way the harness, the workers
// and the tests do it. A directory or an unreadable file is not read as empty text.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

#include "common/input_error.h"

namespace xdc {

// The file's bytes; nullopt when it cannot be opened or read (missing, a directory, no
// permission), with the reason in `why` when given.
inline std::optional<std::string> read_text_file(const std::string& path,
                                                 std::string* why = nullptr) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {  // it would open, and read as empty
    if (why) *why = "it is a directory";
    return std::nullopt;
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (why) *why = errno != 0 ? std::strerror(errno) : "cannot open it";
    return std::nullopt;
  }
  try {  // the iterator, unlike operator<<(streambuf*), passes a failed read on
    in.exceptions(std::ios::badbit);
    return std::string(std::istreambuf_iterator<char>(in), {});
  } catch (const std::exception&) {
    if (why) *why = "a read failed";
    return std::nullopt;
  }
}

// The file's bytes, or the empty string when it cannot be read (logs, optional outputs).
inline std::string read_text_file_or_empty(const std::string& path) {
  return read_text_file(path).value_or(std::string());
}

// A file the user named: InputError "PATH: cannot read WHAT: REASON" (the CLI exits 2).
inline std::string read_input_file(const std::string& path, const std::string& what) {
  std::string why;
  if (auto text = read_text_file(path, &why)) return std::move(*text);
  throw InputError(SourcePos{path, 0, 0}, "cannot read " + what + ": " + why);
}

// Writes `text` as the whole file at `path`, through a temporary beside it renamed over
// it, so a reader never sees half a file; throws std::runtime_error naming the file.
inline void write_text_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw std::runtime_error("cannot write " + path + ": " + ec.message());
}

}  // namespace xdc
