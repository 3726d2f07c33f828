// The run spec (run_spec.h) read back as written, and a bad one refused with
// xdc::InputError "PATH:LINE:COL: ..." (the fixtures are the fuzz target's finds too,
// tests/fuzz/corpus/run_spec/).
#include "workloads/worker/run_spec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/input_error.h"

namespace xdc::worker {
namespace {

std::string spec_file(const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("xdc-run-spec-test-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << text;
  return path.string();
}

std::string error_of(const std::string& text) {
  const std::string path = spec_file(text);
  try {
    read_run_spec(path);
  } catch (const InputError& e) {
    std::filesystem::remove(path);
    return std::string(e.what()).substr(path.size());  // ":LINE:COL: ..."
  }
  std::filesystem::remove(path);
  return "accepted";
}

TEST(RunSpec, ReadsBackWhatWasWritten) {
  RunSpec s;
  s.run_dir = "/tmp/r";
  s.schedule_csv = "/tmp/r/1f1b.csv";
  s.pipeline_ranks = 2;
  s.learning_rate = 0.25;
  s.modeled.f_ns = {1000, 2000};
  s.prefill.ns_per_token = {1.5, 2.5};
  s.dp_sync = {"streaming", 30,  4,   1,     0.5,
               true,        0.5, 0.8, "fp4", {{{{0, 10}}, {{10, 5}, {20, 5}}}}};
  const std::string path = spec_file("");
  write_run_spec(path, s);
  const RunSpec back = read_run_spec(path);
  std::filesystem::remove(path);
  EXPECT_EQ(back.pipeline_ranks, 2);
  EXPECT_EQ(back.learning_rate, 0.25);
  EXPECT_EQ(back.modeled.f_ns, s.modeled.f_ns);
  EXPECT_EQ(back.prefill.ns_per_token, s.prefill.ns_per_token);
  EXPECT_TRUE(back.dp_sync.outer_loop());
  EXPECT_EQ(back.dp_sync.inner_steps, 30);
  EXPECT_EQ(back.dp_sync.sync_steps, 4);
  EXPECT_EQ(back.dp_sync.outer_lr, 0.5);
  EXPECT_EQ(back.dp_sync.outer_momentum, 0.8);
  EXPECT_EQ(back.dp_sync.payload, "fp4");
  EXPECT_EQ(back.dp_sync.overlap_steps, 1);
  EXPECT_EQ(back.dp_sync.merge, 0.5);
  EXPECT_TRUE(back.dp_sync.eager);
  EXPECT_EQ(back.dp_sync.fragment_runs, s.dp_sync.fragment_runs);
  EXPECT_FALSE(RunSpec{}.dp_sync.outer_loop());  // synchronous unless the experiment says
}

TEST(RunSpec, MalformedJsonIsRefusedAtItsLineAndColumn) {
  EXPECT_EQ(error_of("{\"run_dir\": \"/r\",\n  \"schedule_csv\": ]}").rfind(":2:19: ", 0), 0u)
      << error_of("{\"run_dir\": \"/r\",\n  \"schedule_csv\": ]}");
  EXPECT_EQ(error_of("").rfind(":1:1: ", 0), 0u) << error_of("");
  EXPECT_NE(error_of("{\"run_dir\": 3, \"schedule_csv\": \"/s\"}").find("type must be string"),
            std::string::npos);
  EXPECT_NE(error_of("{\"schedule_csv\": \"/s\"}").find("run_dir"), std::string::npos);
}

// An error of a valid JSON document points at the top-level key whose value is wrong
// (its last occurrence), and at 1:1 when no key is to blame.
TEST(RunSpec, WrongValuesAreRefusedAtTheirKey) {
  EXPECT_EQ(error_of("{\"run_dir\": 3, \"schedule_csv\": \"/s\"}").rfind(":1:2: run_dir: ", 0), 0u);
  EXPECT_EQ(
      error_of("{\"run_dir\": \"/r\", \"schedule_csv\": \"/s\",\n \"modeled\": {\"f_ns\": \"x\"}}")
          .rfind(":2:2: modeled: ", 0),
      0u);
  EXPECT_EQ(
      error_of("{\"run_dir\": \"/r\",\n \"schedule_csv\": \"/s\", \"seed\": 1,\n  \"seed\": -2.5}")
          .rfind(":3:3: seed: ", 0),
      0u);
  EXPECT_EQ(error_of("{\"schedule_csv\": \"/s\"}").rfind(":1:1: ", 0), 0u);
  EXPECT_EQ(error_of("[1.5e40]").rfind(":1:1: ", 0), 0u);
}

// A fraction no field can hold is refused before nlohmann converts it (undefined
// behaviour for 1e300 as an int or -2.5 as an unsigned seed; found by the fuzz target).
TEST(RunSpec, FractionsOutOfRangeAreRefused) {
  const std::string head = "{\"run_dir\": \"/r\", \"schedule_csv\": \"/s\", ";
  EXPECT_NE(error_of(head + "\"pipeline_ranks\": 1e300}").find("fractions in 0..2^31, got 1e+300"),
            std::string::npos)
      << error_of(head + "\"pipeline_ranks\": 1e300}");
  EXPECT_NE(error_of(head + "\"seed\": -2.5}").find("got -2.5"), std::string::npos);
  EXPECT_NE(error_of(head + "\"modeled\": {\"f_ns\": [1, 5e20]}}").find("got 5e+20"),
            std::string::npos);
  EXPECT_EQ(error_of(head + "\"learning_rate\": 0.001, \"time_dilation\": 2.5}"), "accepted");
}

// A number past double's range is refused at the number (nlohmann throws out_of_range,
// not parse_error, with no offset; found by the fuzz target).
TEST(RunSpec, ANumberPastDoubleIsRefusedWhereItStands) {
  EXPECT_EQ(error_of("{\"run_dir\": \"/r\",\n  \"seed\": 1e999}").rfind(":2:11: ", 0), 0u)
      << error_of("{\"run_dir\": \"/r\",\n  \"seed\": 1e999}");
  EXPECT_NE(error_of("5555E55555.5").find("number overflow"), std::string::npos);
}

}  // namespace
}  // namespace xdc::worker
