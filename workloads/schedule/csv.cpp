#include "workloads/schedule/csv.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "common/input_error.h"
#include "common/text_file.h"

namespace xdc::sched {

namespace {
const std::map<std::string, Kind, std::less<>>& pytorch_names() {
  static const std::map<std::string, Kind, std::less<>> m = {{"F", Kind::F},
                                                             {"I", Kind::B},
                                                             {"W", Kind::W},
                                                             {"B", Kind::BW},
                                                             {"SEND_F", Kind::SEND_F},
                                                             {"RECV_F", Kind::RECV_F},
                                                             {"SEND_B", Kind::SEND_B},
                                                             {"RECV_B", Kind::RECV_B},
                                                             {"REDUCE_GRAD", Kind::ALLREDUCE},
                                                             {"ALLREDUCE", Kind::ALLREDUCE},
                                                             {"OPT", Kind::OPT}};
  return m;
}

std::string_view pytorch_name(Kind k) {
  switch (k) {
    case Kind::B:
      return "I";
    case Kind::BW:
      return "B";
    case Kind::ALLREDUCE:
      return "REDUCE_GRAD";
    default:
      return kind_name(k);
  }
}

bool all_digits(std::string_view s) {
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}
}  // namespace

std::string action_text(const Action& a) {
  std::string s = std::to_string(a.stage) + std::string(pytorch_name(a.kind));
  if (a.microbatch >= 0) s += std::to_string(a.microbatch);
  if (a.paired) s += '+';
  return s;
}

std::string to_csv(const Schedule& s, const CsvOptions& o) {
  std::string out;
  for (const auto& row : s.actions) {
    bool first = true;
    for (const Action& a : row) {
      if (!o.optimizer && (a.kind == Kind::ALLREDUCE || a.kind == Kind::OPT)) continue;
      if (!first) out += ',';
      out += action_text(a);
      first = false;
    }
    out += '\n';
  }
  return out;
}

namespace {

// One non-empty cell of row `rank` ("0F0", "1SEND_F2", "2F3+", "0OPT"), trimmed; InputError
// at (line, col) when it is not an action.
Action parse_cell(std::string_view cell, const std::string& file, int line_no, int col, int rank) {
  bool paired = false;
  if (cell.back() == '+') {
    paired = true;
    cell.remove_suffix(1);
  }
  size_t i = 0;
  while (i < cell.size() && cell[i] >= '0' && cell[i] <= '9') ++i;
  size_t j = cell.size();
  while (j > i && cell[j - 1] >= '0' && cell[j - 1] <= '9') --j;
  auto bad = [&](const std::string& why) {
    throw InputError(SourcePos{file, line_no, col}, "rank " + std::to_string(rank) + ": " + why +
                                                        ", got \"" + std::string(cell) + "\"");
  };
  if (i == 0) bad("expected [stage][action][microbatch] like 0F0 or 1SEND_F2");
  auto kind = pytorch_names().find(cell.substr(i, j - i));
  if (kind == pytorch_names().end())
    bad("unknown action (expected F, I, W, B, SEND_F, RECV_F, SEND_B, RECV_B, "
        "REDUCE_GRAD, OPT)");
  Action a;
  a.kind = kind->second;
  if (paired && a.kind != Kind::F)
    bad("only an F can be paired (\"+\": co-executed with the B after it)");
  a.paired = paired;
  auto number = [&](std::string_view digits, int max, const std::string& what) {
    int v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || v > max)
      bad("expected a " + what + " number in 0.." + std::to_string(max));
    return v;
  };
  a.stage = number(cell.substr(0, i), kMaxCsvStage, "stage");
  const bool per_iter = a.kind == Kind::ALLREDUCE || a.kind == Kind::OPT;
  if (j == cell.size() || !all_digits(cell.substr(j))) {
    if (!per_iter) bad("missing microbatch number");
    a.microbatch = -1;
  } else {
    if (per_iter) bad("ALLREDUCE/OPT take no microbatch");
    a.microbatch = number(cell.substr(j), kMaxCsvMicrobatch, "microbatch");
  }
  return a;
}

}  // namespace

namespace {
// A line of the text form that is a rank's row (the CR of a CRLF file already removed).
bool is_row(const std::string& line) {
  return !line.empty() && line[0] != '#';
}
}  // namespace

std::vector<int> csv_row_lines(std::string_view text) {
  std::vector<int> out;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (is_row(line)) out.push_back(line_no);
  }
  return out;
}

Schedule from_csv(std::string_view text, const std::string& file, const std::string& name) {
  std::vector<std::vector<Action>> rows;
  std::istringstream in{std::string(text)};
  std::string line;
  int line_no = 0, stages = 0, mbs = 0;
  bool any_comm = false;
  std::map<int, int> placed;  // stage -> rank
  SourcePos highest;          // the cell naming the highest stage
  // A paired F ("+") must be followed in its row by the B or BW it runs with; lower()
  // relies on it in the compute-only form. The first cell breaking that, kept until the
  // form is known.
  std::optional<InputError> unpaired;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!is_row(line)) continue;
    auto& row = rows.emplace_back();
    const int rank = static_cast<int>(rows.size()) - 1;
    std::optional<InputError> pending;  // the row's paired F still waiting for its partner
    size_t pos = 0;
    while (pos <= line.size()) {
      size_t end = line.find(',', pos);
      if (end == std::string::npos) end = line.size();
      std::string_view cell(line.data() + pos, end - pos);
      const int col = static_cast<int>(pos) + 1;
      while (!cell.empty() && (cell.front() == ' ' || cell.front() == '"')) cell.remove_prefix(1);
      while (!cell.empty() && (cell.back() == ' ' || cell.back() == '"')) cell.remove_suffix(1);
      if (!cell.empty()) {
        const Action a = parse_cell(cell, file, line_no, col, rank);
        const std::string shown(cell.substr(0, cell.size() - (a.paired ? 1 : 0)));
        if (is_compute(a.kind)) {
          if (pending && a.kind != Kind::B && a.kind != Kind::BW && !unpaired) unpaired = pending;
          pending.reset();
          if (a.paired)
            pending = InputError(
                SourcePos{file, line_no, col},
                "rank " + std::to_string(rank) +
                    ": expected a paired F (\"+\") followed by its B or BW, got \"" + shown + "\"");
          auto [it, fresh] = placed.emplace(a.stage, rank);
          if (!fresh && it->second != rank)
            throw InputError(SourcePos{file, line_no, col},
                             "rank " + std::to_string(rank) + ": stage " + std::to_string(a.stage) +
                                 " already runs on rank " + std::to_string(it->second) +
                                 ", got \"" + shown + "\"");
        }
        any_comm = any_comm || is_comm(a.kind);
        if (a.stage + 1 > stages) highest = {file, line_no, col};
        stages = std::max(stages, a.stage + 1);
        mbs = std::max(mbs, a.microbatch + 1);
        row.push_back(a);
      }
      pos = end + 1;
    }
    if (pending && !unpaired) unpaired = pending;
  }
  const int ranks = static_cast<int>(rows.size());
  if (ranks == 0)  // at its last line: where a row is missing
    throw InputError(SourcePos{file, std::max(line_no, 1), 1}, "schedule CSV has no rows");
  std::vector<int> stage_rank(stages, -1);
  for (int st = 0; st < stages; ++st) {
    auto it = placed.find(st);
    if (it == placed.end())
      throw InputError(highest,
                       "stage " + std::to_string(st) +
                           " has no compute action on any row (a later stage is named here)");
    stage_rank[st] = it->second;
  }
  if (!any_comm) {
    if (unpaired) throw *unpaired;
    // Compute-only form: drop any per-iteration cells, lower() re-adds them in order.
    bool opt = false;
    for (auto& row : rows)
      std::erase_if(row, [&](const Action& a) {
        const bool per_iter = a.kind == Kind::ALLREDUCE || a.kind == Kind::OPT;
        opt = opt || per_iter;
        return per_iter;
      });
    return lower(name, ranks, mbs, std::move(stage_rank), rows, opt);
  }
  Schedule s;
  s.name = name;
  s.ranks = ranks;
  s.stages = stages;
  s.microbatches = mbs;
  s.stage_rank = std::move(stage_rank);
  for (auto& row : rows)
    for (Action& a : row) {
      if (a.kind == Kind::SEND_F || a.kind == Kind::RECV_B)
        a.peer = a.stage + 1 < stages ? s.stage_rank[a.stage + 1] : -1;
      if (a.kind == Kind::RECV_F || a.kind == Kind::SEND_B)
        a.peer = a.stage > 0 ? s.stage_rank[a.stage - 1] : -1;
    }
  s.actions = std::move(rows);
  return s;
}

Schedule read_csv_file(const std::string& path) {
  const std::string text = read_input_file(path, "the schedule CSV");
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (auto dot = name.rfind('.'); dot != std::string::npos) name.resize(dot);
  return from_csv(text, path, name);
}

void write_csv_file(const std::string& path, const Schedule& s, const CsvOptions& o) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << to_csv(s, o);
}

}  // namespace xdc::sched
