#pragma once
// What every fuzz target shares (tests/fuzz): the contract is that a parser given any
// bytes returns or throws xdc::InputError ("FILE:LINE:COL: ..."); each target catches
// only that, so any other exception, a crash, a sanitizer report or a hang is a finding.
//
// Paths: a YAML input is parsed as if it were experiments/fuzz-input.yaml in this
// checkout (XDC_SOURCE_DIR), so the files a seed names relative to experiments/
// (../topologies/two-dc.yaml, traces/wan-10min.csv, profiles/...) are read as a user's
// would be. A parser that takes a path reads the input from a scratch file.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/input_error.h"

namespace xdc::fuzz {

inline std::string text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// The label a YAML input is parsed under (see above).
inline std::string yaml_label() {
  return XDC_SOURCE_DIR "/experiments/fuzz-input.yaml";
}

// Writes the input to NAME in this process's scratch directory; returns its path. The
// directory is removed when the process exits normally (libFuzzer ends with exit()).
inline std::string scratch_file(const std::string& name, const uint8_t* data, size_t size) {
  struct Scratch {
    std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("xdc-fuzz-" + std::to_string(getpid()));
    Scratch() { std::filesystem::create_directories(dir); }
    ~Scratch() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  };
  static const Scratch scratch;
  const std::string path = (scratch.dir / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace xdc::fuzz
