// PyTorch pipelining's text/CSV form: exact round trips, hand-written files load.
#include "workloads/schedule/csv.h"

#include <gtest/gtest.h>

#include "common/input_error.h"
#include "workloads/schedule/generators.h"
#include "workloads/schedule/validate.h"

using namespace xdc::sched;

TEST(Csv, EveryGeneratorRoundTripsExactly) {
  for (const auto& name : schedule_names()) {
    Params x;
    x.ranks = 4;
    x.microbatches = 8;
    x.chunks = 2;
    x.milp_seconds = 0.5;
    x.links = two_dc_links(4, 2, {1, 0.5});
    Schedule s = generate(name, x);
    const std::string text = to_csv(s);
    Schedule back = from_csv(text);
    EXPECT_EQ(back, s) << name;
    EXPECT_EQ(to_csv(back), text) << name;
  }
}

TEST(Csv, ActionSpellingFollowsPyTorch) {
  EXPECT_EQ(action_text({Kind::F, 0, 0}), "0F0");
  EXPECT_EQ(action_text({Kind::B, 2, 3}), "2I3");   // input grad
  EXPECT_EQ(action_text({Kind::BW, 2, 3}), "2B3");  // full backward
  EXPECT_EQ(action_text({Kind::SEND_F, 1, 0, 2}), "1SEND_F0");
  EXPECT_EQ(action_text({Kind::ALLREDUCE, 1, -1}), "1REDUCE_GRAD");
}

// A two-stage zero-bubble schedule written by hand in PyTorch's compute+comms form.
TEST(Csv, HandWrittenPyTorchScheduleLoadsAndValidates) {
  const char* text =
      "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0I0,0W0,0RECV_B1,0I1,0W1\n"
      "1RECV_F0,1F0,1I0,1SEND_B0,1RECV_F1,1F1,1I1,1SEND_B1,1W0,1W1\n";
  Schedule s = from_csv(text, "hand.csv");
  EXPECT_EQ(s.ranks, 2);
  EXPECT_EQ(s.stages, 2);
  EXPECT_EQ(s.microbatches, 2);
  EXPECT_EQ(s.actions[0][1], (Action{Kind::SEND_F, 0, 0, 1}));
  auto rep = validate(s);
  EXPECT_TRUE(rep.ok()) << rep.message();
  EXPECT_DOUBLE_EQ(rep.peak_activations[1], 2);
}

// A validation error names its rank, whose row's line `xdc schedule validate` points at:
// here rank 1 waits for a backward rank 0 never sends (rank 0's row is on line 3).
TEST(Csv, AValidationErrorNamesTheRankWhoseRowItPointsAt) {
  const char* text =
      "# hand-written\n\n"
      "0F0,0SEND_F0,0I0,0W0\n"
      "1RECV_F0,1F0,1I0,1SEND_B0,1W0\n";
  EXPECT_EQ(csv_row_lines(text), (std::vector<int>{3, 4}));
  const auto rep = validate(from_csv(text, "bad.csv"));
  ASSERT_FALSE(rep.ok());
  ASSERT_EQ(rep.rank_of.size(), rep.errors.size());
  EXPECT_EQ(rep.rank_of[0], 0) << rep.message();
}

// PyTorch's compute-only form: empty cells are idle steps; communication is added.
TEST(Csv, ComputeOnlyFormGetsCommunication) {
  const char* text =
      "0F0,0F1,,0B0,,0B1\n"
      ",1F0,1B0,1F1,1B1\n";
  Schedule s = from_csv(text);
  auto rep = validate(s);
  EXPECT_TRUE(rep.ok()) << rep.message();
  EXPECT_EQ(s.actions[1][0], (Action{Kind::RECV_F, 1, 0, 0}));
  EXPECT_EQ(s.actions[1][3], (Action{Kind::SEND_B, 1, 0, 0}));
}

TEST(Csv, BadCellNamesFileLineAndColumn) {
  try {
    from_csv("0F0,0SEND_F0\n1RECV_F0,1X0\n", "bad.csv");
    FAIL() << "expected InputError";
  } catch (const xdc::InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("bad.csv:2:10: rank 1: unknown action", 0), 0u)
        << e.what();
  }
  EXPECT_THROW(from_csv("0F\n"), xdc::InputError);
  EXPECT_THROW(from_csv("0F0\n0F1\n"), xdc::InputError);  // stage 0 on two ranks
}

// An error about the rows as a whole has a position too (scripts/fuzz_cli.sh checks that
// every refusal through the CLI has one): no rows at the file's last line, a stage with no
// compute at the cell that names a later one.
TEST(Csv, MissingRowsAndStagesHaveAPosition) {
  auto error_of = [](const std::string& text) {
    try {
      from_csv(text, "rows.csv");
    } catch (const xdc::InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(error_of(""), "rows.csv:1:1: schedule CSV has no rows");
  EXPECT_EQ(error_of("# a comment\n\n"), "rows.csv:2:1: schedule CSV has no rows");
  EXPECT_EQ(error_of("0F0,0B0,0W0\n2F0,2B0,2W0\n"),
            "rows.csv:2:1: stage 1 has no compute action on any row (a later stage is named "
            "here)");
}

// Numbers too large for an int threw std::out_of_range, and a large microbatch number made
// the compute-only form take seconds to lower (found by tests/fuzz's schedule_csv target).
TEST(Csv, StageAndMicrobatchNumbersHaveLimits) {
  auto error_of = [](const std::string& text) {
    try {
      from_csv(text, "big.csv");
    } catch (const xdc::InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(error_of("0F0,1W2222222222222222222222\n"),
            "big.csv:1:5: rank 0: expected a microbatch number in 0..4095, got "
            "\"1W2222222222222222222222\"");
  EXPECT_EQ(error_of("0F81362\n").rfind("big.csv:1:1: rank 0: expected a microbatch number", 0),
            0u);
  EXPECT_EQ(error_of("99999999999F0\n"),
            "big.csv:1:1: rank 0: expected a stage number in 0..65535, got \"99999999999F0\"");
  EXPECT_EQ(error_of("0F4095\n"), "accepted");
}

// lower() threw std::invalid_argument for these (found by tests/fuzz's schedule_csv target).
TEST(Csv, APairedForwardNeedsItsBackwardNext) {
  auto error_of = [](const std::string& text) {
    try {
      from_csv(text, "pair.csv");
    } catch (const xdc::InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string says = "rank 0: expected a paired F (\"+\") followed by its B or BW";
  EXPECT_EQ(error_of("0F0+\n"), "pair.csv:1:1: " + says + ", got \"0F0\"");
  EXPECT_EQ(error_of("0F0,0F1+,0W0,0B1\n").rfind("pair.csv:1:5: " + says, 0), 0u);
  EXPECT_EQ(error_of("0F0+,0B0,0W0\n"), "accepted");
}

// The same, from a file written by hand (tests run from the repository root).
TEST(Csv, HandWrittenPyTorchFileLoadsAndValidates) {
  Schedule s = read_csv_file("tests/schedule/data/zb_2stage_pytorch.csv");
  EXPECT_EQ(s.name, "zb_2stage_pytorch");
  EXPECT_EQ(s.microbatches, 3);
  auto rep = validate(s, 3);
  EXPECT_TRUE(rep.ok()) << rep.message();
  EXPECT_DOUBLE_EQ(rep.peak_activations[0], 3);
  EXPECT_EQ(from_csv(to_csv(s, {.optimizer = false})), s);
}
