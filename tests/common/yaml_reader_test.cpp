// The YAML reader: positions are 1-based line:col of the offending node, messages name
// the key path and what was expected.
#include "harness/common/yaml_reader.h"

#include <gtest/gtest.h>

#include "common/text_file.h"

namespace xdc::yaml {
namespace {

// Runs `f` and returns the InputError's what(), or "" when nothing was thrown.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(YamlReader, ValuesAndPaths) {
  Value root = parse("a:\n  b: [1, 20ms]\n  c: {d: 1gbit}\n", "f.yaml");
  Map top = root.map({"a"});
  Map a = top.require("a").map({"b", "c"});
  std::vector<Value> b = a.require("b").list();
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].integer(0, 5), 1);
  EXPECT_EQ(b[1].duration_us(), 20'000u);
  EXPECT_EQ(b[1].path(), "a.b[1]");
  EXPECT_EQ(b[1].pos().line, 2);
  EXPECT_EQ(b[1].pos().col, 10);
  EXPECT_EQ(a.require("c").map().require("d").rate_bps(), 1'000'000'000u);
  EXPECT_FALSE(top.get("zzz").has_value());
}

TEST(YamlReader, ErrorsCarryFileLineColAndPath) {
  Value root = parse("x:\n  delay: fast\n", "t.yaml");
  Value delay = root.map().require("x").map().require("delay");
  EXPECT_EQ(error_of([&] { delay.duration_us(); }),
            "t.yaml:2:10: x.delay: expected a duration like \"20ms\" (units s, ms, us), got "
            "\"fast\"");
  EXPECT_EQ(error_of([&] { delay.integer(1, 3); }),
            "t.yaml:2:10: x.delay: expected an integer in 1..3, got \"fast\"");
  EXPECT_EQ(error_of([&] { root.map().require("x").scalar(); }),
            "t.yaml:2:3: x: expected a string, got a map");
  EXPECT_EQ(error_of([&] {
              delay.choice({"a", "b"});
            }),
            "t.yaml:2:10: x.delay: expected one of: a, b, got \"fast\"");
}

TEST(YamlReader, NumbersAndBooleans) {
  Map m = parse("lr: 3e-4\non: yes\noff: false\nbad: 2x\n", "b.yaml").map();
  EXPECT_DOUBLE_EQ(m.require("lr").number(0, 1), 3e-4);
  EXPECT_TRUE(m.require("on").boolean());
  EXPECT_FALSE(m.require("off").boolean());
  EXPECT_EQ(error_of([&] { m.require("bad").number(0, 1); }),
            "b.yaml:4:6: bad: expected a number in 0..1, got \"2x\"");
  EXPECT_EQ(error_of([&] { m.require("lr").number(1, 2); }),
            "b.yaml:1:5: lr: expected a number in 1..2, got \"3e-4\"");
  EXPECT_EQ(error_of([&] { m.require("bad").boolean(); }),
            "b.yaml:4:6: bad: expected true or false, got \"2x\"");
}

TEST(YamlReader, FilePathsAreRelativeToTheYamlFile) {
  Map m = parse("t: ../topologies/two-dc.yaml\nabs: /x/y.yaml\n", "experiments/e.yaml").map();
  EXPECT_EQ(m.require("t").file_path(), "topologies/two-dc.yaml");
  EXPECT_EQ(m.require("abs").file_path(), "/x/y.yaml");
  Map bare = parse("t: two-dc.yaml\n", "e.yaml").map();
  EXPECT_EQ(bare.require("t").file_path(), "two-dc.yaml");
}

TEST(YamlReader, NullValuePointsAtItsKey) {
  Value root = parse("a: 1\nb:\nc: 2\n", "n.yaml");
  EXPECT_EQ(error_of([&] { root.map().require("b").duration_us(); }),
            "n.yaml:2:1: b: expected a duration like \"20ms\", got nothing");
}

TEST(YamlReader, UnknownKeysListAllowedAndSuggest) {
  Value root = parse("name: x\nlatency: 2ms\n", "u.yaml");
  EXPECT_EQ(error_of([&] {
              root.map({"name", "delay"});
            }),
            "u.yaml:2:1: latency: unknown key; expected one of: name, delay");
  EXPECT_EQ(error_of([&] {
              root.map().check_keys({"name", "delay"}, {{"latency", "delay"}});
            }),
            "u.yaml:2:1: latency: unknown key; expected one of: name, delay (did you mean "
            "'delay'?)");
  // A synonym for a key not allowed here is no hint.
  EXPECT_EQ(error_of([&] {
              root.map().check_keys({"name", "rate"}, {{"latency", "delay"}});
            }),
            "u.yaml:2:1: latency: unknown key; expected one of: name, rate");
  Value typo = parse("naem: x\n", "u.yaml");
  EXPECT_EQ(error_of([&] {
              typo.map({"name", "delay"});
            }),
            "u.yaml:1:1: naem: unknown key; expected one of: name, delay (did you mean 'name'?)");
}

TEST(YamlReader, DuplicateKeysRefused) {
  Value root = parse("a: 1\nb: 2\na: 3\n", "d.yaml");
  EXPECT_EQ(error_of([&] { root.map(); }), "d.yaml:3:1: a: duplicate key (first at line 1)");
}

TEST(YamlReader, MissingKeyPointsAtTheMap) {
  Value root = parse("top:\n  a: 1\n", "m.yaml");
  EXPECT_EQ(error_of([&] { root.map().require("top").map().require("b"); }),
            "m.yaml:2:3: top: missing required key 'b'");
}

TEST(YamlReader, SyntaxErrorsHaveAPosition) {
  EXPECT_EQ(error_of([] { parse("a: [1, 2\nb: 3\n", "s.yaml"); }),
            "s.yaml:2:2: YAML syntax error: end of sequence flow not found");
}

TEST(YamlReader, OneDocumentOnly) {
  EXPECT_EQ(error_of([] { parse("a: 1\n---\nb: 2\n", "two.yaml"); }),
            "two.yaml:3:1: expected one YAML document, got 2 (a second '---')");
  EXPECT_TRUE(parse("---\na: 1\n", "one.yaml").is_map());
}

// yaml-cpp's LoadAll loops forever on these (its parser reports an empty document again
// and again without consuming the ','); found by the fuzz targets (tests/fuzz).
TEST(YamlReader, AStrayCommaIsASyntaxErrorNotAHang) {
  EXPECT_EQ(error_of([] { parse(",", "c.yaml"); }),
            "c.yaml:1:1: YAML syntax error: unexpected ','");
  EXPECT_EQ(error_of([] { parse("a: 1\n---\n, null\n", "c.yaml"); }),
            "c.yaml:3:1: YAML syntax error: unexpected ','");
  EXPECT_EQ(error_of([] { parse("a: 1\n---\n---\n", "c.yaml"); }),
            "c.yaml:3:1: expected one YAML document, got 3 (a second '---')");
}

TEST(YamlReader, EmptyDocumentIsNothingAtLineOne) {
  Value root = parse("", "e.yaml");
  EXPECT_TRUE(root.is_null());
  EXPECT_EQ(error_of([&] { root.map(); }), "e.yaml:1:1: expected a map, got nothing");
}

TEST(YamlReader, UnreadableFileIsInputError) {
  std::string msg = error_of([] { load_file("/nonexistent/x.yaml"); });
  EXPECT_EQ(msg.rfind("/nonexistent/x.yaml: cannot read", 0), 0u) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  // A directory opens as a file does and would read as an empty document: refused with why.
  const std::string dir = ::testing::TempDir();
  msg = error_of([&] { load_file(dir); });
  EXPECT_NE(msg.find("cannot read the file: it is a directory"), std::string::npos) << msg;
  EXPECT_FALSE(read_text_file(dir).has_value());
  EXPECT_EQ(read_text_file_or_empty("/nonexistent/x.yaml"), "");
}

TEST(YamlReader, FilesNamedAreRecordedAndRenamedInPlace) {
  const std::string text =
      "a: x.csv\nb: [\"sub/y.csv\", 'z.csv']\nc: 3  # x.csv\nd: /abs.csv\ne: {f: w.csv, g: 1}\n";
  Value root = parse(text, "/d/f.yaml");
  Map top = root.map();
  EXPECT_EQ(top.require("a").file_path(), "/d/x.csv");
  for (const Value& v : top.require("b").list()) v.file_path();
  top.require("a").file_path();  // named twice, recorded once
  EXPECT_EQ(top.require("d").file_path(), "/abs.csv");
  top.require("e").map().require("f").file_path();
  const std::vector<FileRef>& refs = root.file_refs();
  ASSERT_EQ(refs.size(), 5u);
  EXPECT_EQ(refs[1].path, "/d/sub/y.csv");
  EXPECT_EQ(refs[2].pos.line, 2);
  EXPECT_EQ(refs[2].pos.col, 18);  // the opening quote
  auto renamed = [&](const std::string& t, const std::string& prefix) {
    return rename_files(t, refs, [&](const FileRef& r) -> std::optional<std::string> {
      if (r.written == "/abs.csv") return std::nullopt;
      return prefix + r.path;
    });
  };
  // Plain where the new path can be, with the quotes dropped; the rest as it was.
  EXPECT_EQ(renamed(text, "/n"),
            "a: /n/d/x.csv\nb: [/n/d/sub/y.csv, /n/d/z.csv]\nc: 3  # x.csv\nd: /abs.csv\n"
            "e: {f: /n/d/w.csv, g: 1}\n");
  // A path YAML would read otherwise (a space and '#', ',' in a flow map, a quote) is
  // double-quoted and escaped, and reads back as the path.
  const std::string odd = renamed(text, "/my dir #1,\"q\"");
  EXPECT_EQ(odd.substr(0, odd.find('\n')), R"(a: "/my dir #1,\"q\"/d/x.csv")");
  Map back = parse(odd, "/d/f.yaml").map();
  EXPECT_EQ(back.require("a").scalar(), "/my dir #1,\"q\"/d/x.csv");
  EXPECT_EQ(back.require("b").list().at(1).scalar(), "/my dir #1,\"q\"/d/z.csv");
  EXPECT_EQ(back.require("e").map().require("f").scalar(), "/my dir #1,\"q\"/d/w.csv");
  EXPECT_EQ(back.require("e").map().require("g").scalar(), "1");
  EXPECT_EQ(back.require("d").scalar(), "/abs.csv");
  // A text that does not show the scalar at its place is left alone.
  EXPECT_EQ(rename_files("a: other\n", refs, [](const FileRef&) { return std::string("q"); }),
            "a: other\n");
}

TEST(YamlReader, RenamedFilesFollowYamlCppsPositions) {
  // CRLF line ends, a byte order mark, a tab and a multi-byte character before the scalar.
  const std::string text =
      "\xEF\xBB\xBF"
      "a: x.csv\r\nb:\t{c: \xC3\xA9, d: y.csv}\r\n";
  Value root = parse(text, "/d/f.yaml");
  Map top = root.map();
  top.require("a").file_path();
  top.require("b").map().require("d").file_path();
  EXPECT_EQ(
      rename_files(text, root.file_refs(),
                   [](const FileRef& r) { return std::optional<std::string>("N" + r.written); }),
      "\xEF\xBB\xBF"
      "a: Nx.csv\r\nb:\t{c: \xC3\xA9, d: Ny.csv}\r\n");
  // A single-quoted name ending in an escaped quote (YAML 'x''' is x') is not cut short.
  const std::string quoted = "a: 'x'''\n";
  Value q = parse(quoted, "/d/f.yaml");
  q.map().require("a").file_path();
  ASSERT_EQ(q.file_refs().at(0).written, "x'");
  EXPECT_EQ(rename_files(quoted, q.file_refs(), [](const FileRef&) { return std::string("n"); }),
            quoted);
}

TEST(YamlReader, EditDistance) {
  EXPECT_EQ(edit_distance("delay", "dealy"), 2u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("rate", "rate"), 0u);
}

}  // namespace
}  // namespace xdc::yaml
