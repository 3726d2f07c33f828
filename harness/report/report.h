#pragma once
// The report of a run: ONE self-contained HTML file (inline SVG and CSS; no script, no
// font, no image fetched from anywhere) a researcher can open offline or put beside a
// paper. It shows, when the results directory holds what they need (results_dir.h):
// the experiment, backend and compute mode; a table comparing schedules; one timeline per
// schedule (measured over simulated, on one time scale); loss curves; the link check;
// notes on files that could not be read. Used by `xdc report DIR` and by `xdc run`.
#include <string>
#include <vector>

#include "harness/report/results_dir.h"

namespace xdc::report {

// The page for `d` (pure: no file access).
std::string render_html(const RunData& d);

// Reads DIR (read_results_dir) and writes DIR/report.html; returns that path.
// Throws InputError when DIR is not a results directory, std::runtime_error when the
// file cannot be written.
std::string write_report(const std::string& dir);

// `xdc report DIR`: DIR with a summary.json is one run (write_report); otherwise every
// immediate subdirectory with a summary.json (the points of a sweep, in name order) gets
// its report. Returns the paths written. Throws InputError when there is none.
std::vector<std::string> write_reports(const std::string& dir);

}  // namespace xdc::report
