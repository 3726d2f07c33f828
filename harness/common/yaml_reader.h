#pragma once
// Reading user YAML (topologies, experiments, sweeps) with messages that point at the
// spot: every accessor checks type, units and range, and on failure throws InputError
//   "FILE:LINE:COL: PATH: expected WHAT, got WHAT-WAS-THERE"
// where PATH is the key path ("wan[0].delay") and LINE:COL are 1-based (yaml-cpp's
// marks are 0-based; a null value has no mark of its own, so its key's is used).
// Maps reject duplicate keys always, and unknown keys when the caller lists the allowed
// ones (with "did you mean" for near misses and synonyms).
//
//   Value root = yaml::parse(text, "topologies/x.yaml");
//   yaml::Map top = root.map({"name", "dcs"});
//   std::string name = top.require("name").scalar();
//   uint64_t d = top.get("delay") ? top.get("delay")->duration_us() : 0;
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/input_error.h"

namespace xdc::yaml {

class Map;

// A file a document names (Value::file_path): where, as written, and the path it resolves to.
struct FileRef {
  SourcePos pos;        // of the scalar (its first character, or its opening quote)
  std::string written;  // the scalar
  std::string path;     // resolved from the document's directory
};

class Value {
 public:
  Value(YAML::Node node, std::string path, std::string file, SourcePos fallback = {});

  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }  // "" for the document root
  const std::string& file() const { return file_; }
  SourcePos pos() const;

  // "PATH: expected EXPECTED, got <what is there>"
  [[noreturn]] void fail(const std::string& expected) const;
  // "PATH: MESSAGE"
  [[noreturn]] void error(const std::string& message) const;
  std::string describe() const;  // "\"fast\"", "a map", "a list", "nothing"

  bool is_map() const { return node_.IsMap(); }
  bool is_list() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool is_null() const { return !node_.IsDefined() || node_.IsNull(); }

  std::string scalar(const std::string& expected = "a string") const;
  int64_t integer(int64_t min, int64_t max) const;  // "expected an integer in MIN..MAX"
  double number(double min, double max) const;      // "expected a number in MIN..MAX"
  bool boolean() const;                             // true/false (also yes/no, on/off)
  uint64_t duration_us() const;                     // units.h
  uint64_t rate_bps() const;
  double percent() const;
  uint64_t size_bytes() const;
  // A file path; a relative one is taken from the directory of the YAML file itself
  // ("topology: ../topologies/two-dc.yaml" in experiments/x.yaml). Each is recorded in
  // file_refs() of the document it came from.
  std::string file_path() const;
  // The files this value's document has named so far through file_path(), in order
  // (shared by every Value of one parse()).
  const std::vector<FileRef>& file_refs() const { return *refs_; }
  // One of `options` ("expected one of: a, b, c, got ...").
  std::string choice(const std::vector<std::string>& options) const;
  std::vector<Value> list(const std::string& expected = "a list") const;
  // A map; when `allowed` is non-empty every key must be in it.
  Map map(const std::vector<std::string>& allowed = {},
          const std::string& expected = "a map") const;

  // Child path spelling: "a" + "b" -> "a.b", "" + "b" -> "b", index -> "a[3]".
  std::string child_path(const std::string& key) const;

 private:
  YAML::Node node_;
  std::string path_;
  std::string file_;
  SourcePos fallback_;
  std::shared_ptr<std::vector<FileRef>> refs_;  // of the document (shared by its values)
  // A value of the same document as `of`, sharing its refs_.
  Value(YAML::Node node, std::string path, const Value& of, SourcePos fallback);
  friend class Map;
};

class Map {
 public:
  struct Entry {
    std::string key;
    Value key_node;
    Value value;
  };
  explicit Map(const Value& self);  // checks: a map, string keys, no duplicate keys

  const Value& self() const { return self_; }
  const std::vector<Entry>& entries() const { return entries_; }
  bool has(const std::string& key) const { return find(key) != nullptr; }
  std::optional<Value> get(const std::string& key) const;
  Value require(const std::string& key) const;  // "PATH: missing required key 'KEY'"

  // Throws at the first key not in `allowed`:
  //   "PATH.key: unknown key; expected one of: a, b (did you mean 'a'?)"
  // `synonyms` maps likely words to the key meant ({"latency", "delay"}).
  void check_keys(const std::vector<std::string>& allowed,
                  const std::map<std::string, std::string>& synonyms = {}) const;

 private:
  const Entry* find(const std::string& key) const;
  Value self_;
  std::vector<Entry> entries_;
};

// Syntax errors become InputError at yaml-cpp's mark ("YAML syntax error: ...").
Value parse(const std::string& text, const std::string& file_label);
// Reads `path` (InputError naming the file when unreadable) and parses it.
Value load_file(const std::string& path);

// `text` (the document `refs` came from) with each recorded file's scalar replaced by
// rename(ref) where that returns a value: a plain or simply quoted scalar is replaced in
// place (plain where the new value can be, else double-quoted) and the rest of the text
// is kept as it was; a reference the text does not show as written at its position
// (escapes, a folded or block scalar, a tag or anchor before it) is left as it is.
std::string rename_files(const std::string& text, const std::vector<FileRef>& refs,
                         const std::function<std::optional<std::string>(const FileRef&)>& rename);

// Edit distance, for "did you mean".
size_t edit_distance(const std::string& a, const std::string& b);
// "a, b, c"
std::string join(const std::vector<std::string>& items, const std::string& sep = ", ");

}  // namespace xdc::yaml
