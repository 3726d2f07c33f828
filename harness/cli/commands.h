#pragma once
// The xdc CLI: each file cmd_*.cpp adds its subcommands to the app and says how to run
// them. main.cpp runs the one that parsed; InputError -> exit 2, other errors -> exit 1.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace xdc::cli {

struct Command {
  CLI::App* app;             // the subcommand (or nested subcommand)
  std::function<int()> run;  // returns the exit code
};
using Commands = std::vector<Command>;

// For an -o option naming a directory to write: a directory, or nothing yet (a file there
// is bad input, exit 2, not a filesystem error once the run has started).
inline const CLI::Validator kOutputDir(
    [](const std::string& path) -> std::string {
      std::error_code ec;
      if (!std::filesystem::exists(path, ec) || std::filesystem::is_directory(path, ec)) return "";
      return "expected a directory (or a path not there yet), got the file " + path;
    },
    "DIR");

// A command that builds, changes or reads a live network (namespaces, qdiscs, /run/xdc,
// delay lines' control sockets) calls this first: without root and CAP_NET_ADMIN and
// CAP_SYS_ADMIN it throws InputError "COMMAND needs root ...: run it with sudo" (exit 2)
// before anything is read or built, rather than failing halfway through.
void require_root(const std::string& command);

void add_network_commands(CLI::App& app, Commands& out);  // up, down, clean, exec, ls
void add_link_commands(CLI::App& app, Commands& out);  // link set|down|up|show, dc (cmd_link.cpp)
void add_check_command(CLI::App& app, Commands& out);  // check
void add_schedule_commands(CLI::App& app, Commands& out);  // schedule show (cmd_schedule.cpp)
void add_simulate_command(CLI::App& app, Commands& out);   // simulate (cmd_simulate.cpp)
void add_run_command(CLI::App& app, Commands& out);        // run, mpi-agent (cmd_run.cpp)
void add_sweep_command(CLI::App& app, Commands& out);      // sweep (cmd_sweep.cpp)
void add_report_command(CLI::App& app, Commands& out);     // report (cmd_report.cpp)
void add_profile_command(CLI::App& app, Commands& out);    // profile (cmd_profile.cpp)
void add_plan_command(CLI::App& app, Commands& out);       // plan (cmd_plan.cpp)

}  // namespace xdc::cli
