#pragma once
// PyTorch pipelining's text form of a schedule, so schedules move between the tools:
// one row per rank, one action per cell, "[stage][action][microbatch]", empty cell =
// idle step (ignored on read). PyTorch's action names differ from ours for the
// backward: PyTorch "I" (input grad) = our B, PyTorch "B" (full backward) = our BW;
// "REDUCE_GRAD" = our ALLREDUCE; "OPT" is an xdc extension (omit it for PyTorch), and so
// is a "+" after an F ("1F3+"): co-executed with the backward after it (schedule.h).
// Peers are not in the text: they follow from the placement, which is read back from
// which row holds each stage's compute. A file with no communication cells (PyTorch's
// compute-only form) gets its SEND/RECV added by lower().
#include <string>
#include <string_view>
#include <vector>

#include "workloads/schedule/schedule.h"

namespace xdc::sched {

std::string action_text(const Action& a);  // "0F0", "2I3", "1SEND_F0", "0REDUCE_GRAD"

struct CsvOptions {
  bool optimizer = true;  // write ALLREDUCE (REDUCE_GRAD) and OPT cells
};
std::string to_csv(const Schedule& s, const CsvOptions& o = {});
// Throws xdc::InputError with file:line:col on a malformed cell, and on a stage or
// microbatch number beyond what an experiment can hold (1024 ranks x 64 chunks, 4096
// microbatches: harness/experiment/experiment.h).
inline constexpr int kMaxCsvStage = 1024 * 64 - 1;
inline constexpr int kMaxCsvMicrobatch = 4096 - 1;
Schedule from_csv(std::string_view text, const std::string& file = "",
                  const std::string& name = "csv");

// The line (1-based) of each rank's row in `text`, as from_csv numbers the rows (blank and
// "#" lines are not rows): where a validation error about rank r points.
std::vector<int> csv_row_lines(std::string_view text);

Schedule read_csv_file(const std::string& path);
void write_csv_file(const std::string& path, const Schedule& s, const CsvOptions& o = {});

}  // namespace xdc::sched
