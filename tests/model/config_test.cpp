#include "workloads/model/config.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "common/input_error.h"

namespace xdc::model {
namespace {

TEST(ModelConfig, PresetsAndOverrides) {
  auto c = ModelConfig::from_yaml(YAML::Load("{preset: tiny, layers: 3}"));
  EXPECT_EQ(c.layers, 3);
  EXPECT_EQ(c.dim, 128);
  EXPECT_EQ(c.kv_heads, 2);
  auto d = ModelConfig::from_yaml(
      YAML::Load("{layers: 4, dim: 256, heads: 8, ffn: 688, seq: 128, vocab: 256}"));
  EXPECT_EQ(d.heads, 8);
  EXPECT_EQ(d.kv_heads, 8);  // MHA unless kv_heads is given
  EXPECT_EQ(ModelConfig::preset("small").dim, 256);
}

TEST(ModelConfig, ErrorsNameFileLineAndKey) {
  try {
    ModelConfig::from_yaml(YAML::Load("preset: tiny\nlayers: many\n"), "exp.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "exp.yaml:2:9: model.layers: expected a number, got \"many\"");
  }
  EXPECT_THROW(ModelConfig::from_yaml(YAML::Load("{heads: 3}")), InputError);  // 256 % 3
  EXPECT_THROW(ModelConfig::from_yaml(YAML::Load("{heads: 4, kv_heads: 3}")), InputError);
  EXPECT_THROW(ModelConfig::from_yaml(YAML::Load("{dims: 4}")), InputError);
  EXPECT_THROW(ModelConfig::preset("huge"), std::invalid_argument);
}

TEST(ModelConfig, SplitLayers) {
  ModelConfig c;
  c.layers = 5;
  auto r = split_layers(c, 2);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].begin, 0);
  EXPECT_EQ(r[0].end, 3);
  EXPECT_EQ(r[1].end, 5);
  EXPECT_TRUE(r[0].first());
  EXPECT_TRUE(r[1].last(c));
  EXPECT_THROW(split_layers(c, 6), std::invalid_argument);
}

}  // namespace
}  // namespace xdc::model
