// YAML reading with file:line:col messages (see yaml_reader.h).
#include "harness/common/yaml_reader.h"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/text_file.h"
#include "harness/common/units.h"

namespace xdc::yaml {

Value::Value(YAML::Node node, std::string path, std::string file, SourcePos fallback)
    : node_(std::move(node)),
      path_(std::move(path)),
      file_(std::move(file)),
      fallback_(fallback),
      refs_(std::make_shared<std::vector<FileRef>>()) {
  fallback_.file = file_;
}

Value::Value(YAML::Node node, std::string path, const Value& of, SourcePos fallback)
    : node_(std::move(node)),
      path_(std::move(path)),
      file_(of.file_),
      fallback_(fallback),
      refs_(of.refs_) {
  fallback_.file = file_;
}

SourcePos Value::pos() const {
  // A null value's mark is wherever the parser stood next (often the following line);
  // the key it belongs to is the better place to point at.
  if (node_.IsDefined() && !node_.IsNull() && !node_.Mark().is_null())
    return SourcePos{file_, node_.Mark().line + 1, node_.Mark().column + 1};
  if (fallback_.line > 0) return fallback_;
  if (node_.IsDefined() && !node_.Mark().is_null())
    return SourcePos{file_, node_.Mark().line + 1, node_.Mark().column + 1};
  return SourcePos{file_, 1, 1};
}

void Value::fail(const std::string& expected) const {
  error("expected " + expected + ", got " + describe());
}

void Value::error(const std::string& message) const {
  throw InputError(pos(), path_.empty() ? message : path_ + ": " + message);
}

std::string Value::describe() const {
  if (is_null()) return "nothing";
  if (node_.IsMap()) return node_.size() ? "a map" : "an empty map";
  if (node_.IsSequence()) return node_.size() ? "a list" : "an empty list";
  std::string s = node_.Scalar();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return "\"" + s + "\"";
}

std::string Value::child_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

std::string Value::scalar(const std::string& expected) const {
  if (!is_scalar()) fail(expected);
  return node_.Scalar();
}

int64_t Value::integer(int64_t min, int64_t max) const {
  const std::string expected = "an integer in " + std::to_string(min) + ".." + std::to_string(max);
  std::string s = scalar(expected);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < min || v > max) fail(expected);
  return v;
}

namespace {
std::string short_number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}
}  // namespace

double Value::number(double min, double max) const {
  const std::string expected = "a number in " + short_number(min) + ".." + short_number(max);
  std::string s = scalar(expected);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !(v >= min && v <= max)) fail(expected);
  return v;
}

bool Value::boolean() const {
  const std::string expected = "true or false";
  std::string s = scalar(expected);
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail(expected);
}

namespace {
template <typename T>
T unit_value(const Value& v, Parsed<T> (*parse)(std::string_view), const std::string& like) {
  if (!v.is_scalar()) v.fail(like);
  Parsed<T> p = parse(v.node().Scalar());
  if (!p) v.fail(p.expected);
  return *p.value;
}
}  // namespace

uint64_t Value::duration_us() const {
  return unit_value(*this, &parse_duration_us, "a duration like \"20ms\"");
}
uint64_t Value::rate_bps() const {
  return unit_value(*this, &parse_rate_bps, "a rate like \"1gbit\"");
}
double Value::percent() const {
  return unit_value(*this, &parse_percent, "a percentage like \"0.1%\"");
}
uint64_t Value::size_bytes() const {
  return unit_value(*this, &parse_size_bytes, "a size like \"64kb\"");
}

std::string Value::file_path() const {
  const std::string written = scalar("a file path");
  std::filesystem::path p = written;
  if (p.empty()) fail("a file path");
  if (p.is_relative()) p = std::filesystem::path(file_).parent_path() / p;
  FileRef ref{pos(), written, p.lexically_normal().string()};
  const bool seen = std::any_of(refs_->begin(), refs_->end(), [&](const FileRef& r) {
    return r.pos.line == ref.pos.line && r.pos.col == ref.pos.col;
  });
  if (!seen) refs_->push_back(ref);
  return ref.path;
}

namespace {
// `s` as a YAML scalar token: plain when it is only characters no YAML context reads
// otherwise (a path of letters, digits and ./_-+~@%=), else double-quoted with \\ and \"
// escaped.
std::string scalar_token(const std::string& s) {
  const bool plain = !s.empty() &&
                     std::all_of(s.begin(), s.end(),
                                 [](char c) {
                                   return std::isalnum(static_cast<unsigned char>(c)) ||
                                          std::strchr("./_-+~@%=", c);
                                 }) &&
                     s[0] != '-' && s[0] != '%' && s[0] != '@';
  if (plain) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}
}  // namespace

std::string rename_files(const std::string& text, const std::vector<FileRef>& refs,
                         const std::function<std::optional<std::string>(const FileRef&)>& rename) {
  // yaml-cpp counts columns in bytes and does not count a UTF-8 byte order mark.
  const size_t bom = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  std::vector<size_t> line_at{bom};  // offset of each line's first character
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') line_at.push_back(i + 1);
  struct Cut {
    size_t at, len;
    std::string with;
  };
  std::vector<Cut> cuts;
  for (const FileRef& r : refs) {
    const std::optional<std::string> to = rename(r);
    if (!to || r.pos.line < 1 || static_cast<size_t>(r.pos.line) > line_at.size()) continue;
    const size_t at =
        line_at[static_cast<size_t>(r.pos.line) - 1] + static_cast<size_t>(r.pos.col) - 1;
    if (at >= text.size()) continue;
    const char q = text[at];
    const size_t close = at + 1 + r.written.size();  // where the closing quote would be
    const bool quoted = (q == '"' || q == '\'') &&
                        text.compare(at + 1, r.written.size(), r.written) == 0 &&
                        close < text.size() && text[close] == q &&
                        (q == '"' || close + 1 == text.size() || text[close + 1] != '\'');
    if (quoted)
      cuts.push_back({at, r.written.size() + 2, scalar_token(*to)});
    else if (q != '"' && q != '\'' && text.compare(at, r.written.size(), r.written) == 0)
      cuts.push_back({at, r.written.size(), scalar_token(*to)});
  }
  std::sort(cuts.begin(), cuts.end(), [](const Cut& a, const Cut& b) { return a.at > b.at; });
  std::string out = text;
  for (const Cut& c : cuts) out.replace(c.at, c.len, c.with);
  return out;
}

std::string Value::choice(const std::vector<std::string>& options) const {
  const std::string expected = "one of: " + join(options);
  std::string s = scalar(expected);
  if (std::find(options.begin(), options.end(), s) == options.end()) fail(expected);
  return s;
}

std::vector<Value> Value::list(const std::string& expected) const {
  if (!is_list()) fail(expected);
  std::vector<Value> out;
  for (size_t i = 0; i < node_.size(); ++i)
    out.push_back(Value(node_[i], path_ + "[" + std::to_string(i) + "]", *this, pos()));
  return out;
}

Map Value::map(const std::vector<std::string>& allowed, const std::string& expected) const {
  if (!is_map()) fail(expected);
  Map m(*this);
  if (!allowed.empty()) m.check_keys(allowed);
  return m;
}

Map::Map(const Value& self) : self_(self) {
  if (!self.is_map()) self.fail("a map");
  for (auto it = self.node().begin(); it != self.node().end(); ++it) {
    Value key(it->first, self.path(), self.file(), self.pos());
    if (!key.is_scalar()) key.fail("a plain key");
    std::string k = it->first.Scalar();
    Value key_node(it->first, self.child_path(k), self, self.pos());
    if (const Entry* first = find(k))
      key_node.error("duplicate key (first at line " + std::to_string(first->key_node.pos().line) +
                     ")");
    entries_.push_back(
        Entry{k, key_node, Value(it->second, key_node.path(), self, key_node.pos())});
  }
}

const Map::Entry* Map::find(const std::string& key) const {
  for (const Entry& e : entries_)
    if (e.key == key) return &e;
  return nullptr;
}

std::optional<Value> Map::get(const std::string& key) const {
  if (const Entry* e = find(key)) return e->value;
  return std::nullopt;
}

Value Map::require(const std::string& key) const {
  if (const Entry* e = find(key)) return e->value;
  self_.error("missing required key '" + key + "'");
}

void Map::check_keys(const std::vector<std::string>& allowed,
                     const std::map<std::string, std::string>& synonyms) const {
  for (const Entry& e : entries_) {
    if (std::find(allowed.begin(), allowed.end(), e.key) != allowed.end()) continue;
    std::string hint;
    auto syn = synonyms.find(e.key);
    if (syn != synonyms.end() &&
        std::find(allowed.begin(), allowed.end(), syn->second) != allowed.end()) {
      hint = syn->second;
    } else {
      size_t best = SIZE_MAX;
      for (const std::string& a : allowed) {
        size_t d = edit_distance(e.key, a);
        if (d < best && d <= 2 && 2 * d <= std::max(a.size(), e.key.size())) best = d, hint = a;
      }
    }
    std::string msg = "unknown key; expected one of: " + join(allowed);
    if (!hint.empty()) msg += " (did you mean '" + hint + "'?)";
    e.key_node.error(msg);
  }
}

namespace {

// Where a document yaml-cpp's parser reports begins: the mark of its first node.
class DocumentStart : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> mark;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { see(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { see(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    see(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    see(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    see(m);
  }
  void OnMapEnd() override {}

 private:
  void see(const YAML::Mark& m) {
    if (!mark) mark = m;
  }
};

SourcePos pos_of(const YAML::Mark& m, const std::string& file) {
  return {file, m.is_null() ? 0 : m.line + 1, m.is_null() ? 0 : m.column + 1};
}

}  // namespace

Value parse(const std::string& text, const std::string& file_label) {
  // The documents counted with yaml-cpp's parser, not YAML::LoadAll: on a ',' at the top
  // level (and other tokens no node starts with) its parser reports an empty document
  // without consuming anything, again and again, and LoadAll loops forever. Such a
  // document starts where the one before it did (and every other one takes at least a
  // character, so there are never more documents than characters).
  size_t docs = 0;
  std::optional<YAML::Mark> second, last;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    for (DocumentStart d; parser.HandleNextDocument(d); d = DocumentStart()) {
      if ((last && d.mark && d.mark->pos == last->pos) || docs > text.size()) {
        const YAML::Mark at = d.mark.value_or(YAML::Mark::null_mark());
        const std::string token = at.pos >= 0 && at.pos < static_cast<int>(text.size())
                                      ? "'" + text.substr(at.pos, 1) + "'"
                                      : "the end";
        throw InputError(pos_of(at, file_label), "YAML syntax error: unexpected " + token);
      }
      if (++docs == 2) second = d.mark;
      last = d.mark;
    }
  } catch (const YAML::Exception& e) {
    throw InputError(pos_of(e.mark, file_label), "YAML syntax error: " + e.msg);
  }
  // A second document would be ignored silently by YAML::Load: say so instead.
  if (docs > 1)
    throw InputError(
        pos_of(second.value_or(YAML::Mark::null_mark()), file_label),
        "expected one YAML document, got " + std::to_string(docs) + " (a second '---')");
  return Value(docs == 0 ? YAML::Node() : YAML::Load(text), "", file_label);
}

Value load_file(const std::string& path) {
  return parse(read_input_file(path, "the file"), path);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

}  // namespace xdc::yaml
