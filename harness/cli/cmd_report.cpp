// xdc report DIR: (re)build DIR/report.html from a results directory written by `xdc run`
// or `xdc simulate`, or each point's report.html in a sweep directory
// (harness/report/report.h).
#include <iostream>

#include "commands.h"
#include "common/input_error.h"
#include "harness/report/report.h"

namespace xdc::cli {

void add_report_command(CLI::App& app, Commands& out) {
  static std::string dir;
  auto* c = app.add_subcommand(
      "report", "(re)build the self-contained HTML report (DIR/report.html) of a results dir");
  c->add_option("dir", dir, "results directory (with summary.json), or a sweep's directory")
      ->required();
  out.push_back({c, [] {
                   for (const auto& path : report::write_reports(dir))
                     std::cout << "wrote " << path << "\n";
                   return kExitOk;
                 }});
}

}  // namespace xdc::cli
