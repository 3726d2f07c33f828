// xdc: the multi-datacenter emulation testbed CLI (docs/commands.md lists the commands).
#include <fcntl.h>
#include <linux/capability.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "common/input_error.h"

namespace xdc::cli {

void require_root(const std::string& command) {
  // CapEff in /proc/self/status: the effective capabilities, a hexadecimal bit set.
  uint64_t effective = 0;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("CapEff:", 0) == 0) std::istringstream(line.substr(7)) >> std::hex >> effective;
  const bool net_admin = (effective >> CAP_NET_ADMIN) & 1,
             sys_admin = (effective >> CAP_SYS_ADMIN) & 1;
  if (geteuid() != 0)
    throw InputError(
        command + " needs root (CAP_NET_ADMIN; /run/xdc is root's alone): " + "run it with sudo");
  if (!net_admin || !sys_admin)
    throw InputError(command + " needs CAP_NET_ADMIN and CAP_SYS_ADMIN, which this " +
                     "root lacks (a container started without them?)");
}

}  // namespace xdc::cli

int main(int argc, char** argv) {
  // Started without stdin/stdout/stderr (CI, daemons), the next file or pipe opened would
  // take fd 0-2 and be mistaken for them by every child: fill them with /dev/null.
  for (int fd = 0; fd <= 2; ++fd)
    if (fcntl(fd, F_GETFD) == -1) open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
  CLI::App app{
      "xdc: emulate datacenters and WAN links, run pipeline-parallel training across them"};
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "debug logging");
  xdc::cli::Commands commands;
  xdc::cli::add_network_commands(app, commands);
  xdc::cli::add_link_commands(app, commands);
  xdc::cli::add_check_command(app, commands);
  xdc::cli::add_schedule_commands(app, commands);
  xdc::cli::add_simulate_command(app, commands);
  xdc::cli::add_run_command(app, commands);
  xdc::cli::add_sweep_command(app, commands);
  xdc::cli::add_report_command(app, commands);
  xdc::cli::add_profile_command(app, commands);
  xdc::cli::add_plan_command(app, commands);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : xdc::kExitBadInput;
  }
  // Progress and messages go to standard error: standard output carries only what a
  // command produces (`xdc check --json | jq`, `xdc schedule show --csv > x.csv`).
  spdlog::set_default_logger(spdlog::stderr_color_mt("xdc"));
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  spdlog::set_pattern("%^xdc: %v%$");
  try {
    for (auto& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const xdc::InputError& e) {
    std::cerr << "xdc: " << e.what() << "\n";
    return xdc::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "xdc: error: " << e.what() << "\n";
    return xdc::kExitRunFailed;
  }
  std::cerr << "xdc: no command ran\n";
  return xdc::kExitBadInput;
}
