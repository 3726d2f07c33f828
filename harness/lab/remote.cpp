#include "harness/lab/remote.h"

#include <algorithm>

namespace xdc::lab {

std::string shell_quote(const std::string& word) {
  const bool safe =
      !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) {
        return std::isalnum(c) || std::string_view("@%+=:,./-_").find(static_cast<char>(c)) !=
                                      std::string_view::npos;
      });
  if (safe) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> ssh_argv(const Machine& m, const std::vector<std::string>& remote_argv) {
  std::vector<std::string> argv = {"ssh",
                                   "-o", "BatchMode=yes",
                                   "-o", "ConnectTimeout=10",
                                   "-o", "StrictHostKeyChecking=no",
                                   "-o", "UserKnownHostsFile=/dev/null",
                                   "-o", "LogLevel=ERROR",
                                   "-p", std::to_string(m.port)};
  if (!m.key.empty()) argv.insert(argv.end(), {"-i", m.key, "-o", "IdentitiesOnly=yes"});
  argv.push_back(m.user + "@" + m.ssh);
  argv.push_back("--");
  std::string command = m.user == "root" ? "" : "sudo -n";
  for (const std::string& w : remote_argv) command += (command.empty() ? "" : " ") + shell_quote(w);
  argv.push_back(command);
  return argv;
}

proc::Result run_on(const Machine& m, const std::vector<std::string>& remote_argv,
                    std::chrono::milliseconds timeout) {
  return proc::run(ssh_argv(m, remote_argv), timeout);
}

std::vector<MachineOutcome> clean_lab(const Lab& lab) {
  std::vector<MachineOutcome> out;
  for (const Machine& m : lab.machines) {
    MachineOutcome o{m.name, false, ""};
    try {
      proc::Result r = run_on(m, {lab.xdc, "clean"}, std::chrono::minutes(2));
      std::string said = r.err + r.out;
      while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
      o.ok = r.exit_code == 0;
      o.message = r.timed_out          ? "no answer within 2 min"
                  : r.exit_code == 255 ? "ssh to " + m.user + "@" + m.ssh + " failed: " + said
                                       : said;
    } catch (const std::exception& e) {
      o.message = e.what();
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace xdc::lab
