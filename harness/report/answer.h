#pragma once
// The report's answer, the page's first line: which schedule was fastest and by how much
// against the others, how sure the figure is (the 95% confidence interval of the mean
// over repeats), which schedules failed, and how far the measured means lay from the
// simulator's predictions. A simulation-only directory answers with the prediction and
// says nothing was measured. Plain text: escape() it for the page.
#include <string>

#include "harness/report/results_dir.h"

namespace xdc::report {

std::string answer_sentence(const RunData& d);

}  // namespace xdc::report
