// Every file in tests/topology/bad/ is a malformed topology whose first
// line says what load_topology must report:
//   # expect: LINE:COL: MESSAGE
// The error must read "<path>:LINE:COL: MESSAGE" (what the CLI prints before exit 2).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "harness/topology/topology.h"

namespace xdc::topo {
namespace {

namespace fs = std::filesystem;

const fs::path kBadDir = fs::path(XDC_SOURCE_DIR) / "tests/topology/bad";

std::vector<std::string> bad_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kBadDir))
    if (e.path().extension() == ".yaml") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

class BadTopology : public testing::TestWithParam<std::string> {};

TEST_P(BadTopology, ReportsFileLineColAndExpectation) {
  fs::path path = kBadDir / GetParam();
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  const std::string tag = "# expect: ";
  ASSERT_EQ(first.rfind(tag, 0), 0u) << path << " lacks a first line '# expect: L:C: msg'";
  std::string expected = first.substr(tag.size());
  try {
    load_topology(path.string());
    FAIL() << path << " was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ":" + expected);
    EXPECT_EQ(e.pos().file, path.string());
    EXPECT_GT(e.pos().line, 0);
    EXPECT_GT(e.pos().col, 0);
  }
}

std::string test_name(const testing::TestParamInfo<std::string>& info) {
  std::string s = info.param.substr(0, info.param.size() - 5);  // drop ".yaml"
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

INSTANTIATE_TEST_SUITE_P(Files, BadTopology, testing::ValuesIn(bad_files()), test_name);

TEST(BadTopologies, AtLeast25Cases) {
  EXPECT_GE(bad_files().size(), 25u);
}

}  // namespace
}  // namespace xdc::topo
