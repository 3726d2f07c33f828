// Byte tokenizer and the corpus loader over /usr/share/common-licenses (every Debian system).
#include "workloads/model/data.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace xdc::model {
namespace {

TEST(Data, BytesRoundTrip) {
  const std::string text = "GNU GENERAL PUBLIC LICENSE\n\xc3\xa9\x01";
  const auto ids = encode_bytes(text);
  ASSERT_EQ(ids.size(), text.size());
  for (int32_t t : ids) EXPECT_TRUE(t >= 0 && t < 256);
  EXPECT_EQ(decode_bytes(ids), text);
}

TEST(Data, DefaultCorpusSplitIsDeterministicAndNinetyTen) {
  const auto a = TextCorpus::load_default(), b = TextCorpus::load_default();
  EXPECT_GT(a.files(), 10u);
  EXPECT_EQ(a.train(), b.train());
  EXPECT_EQ(a.validation(), b.validation());
  const double total = double(a.train().size() + a.validation().size());
  EXPECT_GT(total, 200e3);  // ~237 KB of licence texts
  EXPECT_NEAR(a.validation().size() / total, 0.1, 0.01);
}

TEST(Data, BatchesAreNextTokenPairsAndSeeded) {
  const auto corpus = TextCorpus::load_default();
  const int B = 3, T = 16;
  BatchLoader x(corpus.train(), B, T, 7), y(corpus.train(), B, T, 7), z(corpus.train(), B, T, 8);
  std::vector<int32_t> tx(B * T), gx(B * T), ty(B * T), gy(B * T), tz(B * T), gz(B * T);
  x.next(tx.data(), gx.data());
  y.next(ty.data(), gy.data());
  z.next(tz.data(), gz.data());
  EXPECT_EQ(tx, ty);
  EXPECT_NE(tx, tz);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t + 1 < T; ++t) EXPECT_EQ(gx[b * T + t], tx[b * T + t + 1]);
}

TEST(Data, LoadsAnyTextFilesAndRejectsTooLittle) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "xdc_model_corpus";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.txt") << std::string(30000, 'a');
  std::ofstream(dir / "b.txt") << std::string(30000, 'b');
  const auto c = TextCorpus::load({dir.string()});
  EXPECT_EQ(c.files(), 2u);
  EXPECT_EQ(c.train().size() + c.validation().size(), 60000u);
  std::filesystem::remove(dir / "b.txt");
  std::filesystem::resize_file(dir / "a.txt", 100);
  EXPECT_THROW(TextCorpus::load({dir.string()}), std::runtime_error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xdc::model
