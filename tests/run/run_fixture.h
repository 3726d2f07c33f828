#pragma once
// What the `xdc run` end-to-end tests share: a fresh results directory, the run itself
// through the built CLI, its summary.json, and the job processes a run must not leave.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/text_file.h"
#include "tests/network/leftovers.h"

namespace xdc::test {

namespace fs = std::filesystem;
using xdc::testing::run_xdc;

inline fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("xdc-run-test-" + name);
  fs::remove_all(d);
  return d;
}

// Workers or orteds of network `net` / results `dir` still running.
inline std::vector<std::string> job_processes(const std::string& net, const fs::path& dir) {
  return xdc::testing::processes_matching([&](const std::string& cmd) {
    return cmd.find(dir.string()) != std::string::npos ||
           (cmd.find("orted") != std::string::npos &&
            cmd.find("--name " + net) != std::string::npos);
  });
}

// `xdc run FILE -o DIR --name NET`, killed after timeout_s.
inline xdc::testing::CliResult xdc_run(const std::string& file, const fs::path& dir,
                                       const std::string& net, int timeout_s) {
  return run_xdc({"run", file, "-o", dir.string(), "--name", net}, timeout_s);
}

inline nlohmann::json summary_of(const fs::path& dir) {
  return nlohmann::json::parse(xdc::read_text_file_or_empty(dir / "summary.json"));
}

}  // namespace xdc::test
