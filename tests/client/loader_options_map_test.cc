// LoaderOptionsFromMap: the one parser of a loader's named options (the
// Python binding forwards to it): every key, top_k, and each mistake named.
#include "client/loader_options_map.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fanout::client {
namespace {

using ::testing::HasSubstr;
using V = OptionValue;

TEST(LoaderOptionsMapTest, EveryKeyLandsInItsField) {
  LoaderOptions o;
  const std::map<std::string, V> m = {
      {"num_neighbors", V::IntList({4, 3})},
      {"batch_size", V::Int(64)},
      {"shuffle", V::Bool(false)},
      {"replace", V::Bool(true)},
      {"weighted", V::Bool(true)},
      {"features", V::Bool(false)},
      {"labels", V::Bool(false)},
      {"edge_ids", V::Bool(true)},
      {"original_ids", V::Bool(true)},
      {"drop_last", V::Bool(true)},
      {"subgraph", V::Bool(true)},
      {"neg_strict", V::Bool(false)},
      {"num_workers", V::Int(3)},
      {"prefetch", V::Int(7)},
      {"seed", V::Int(99)},
      {"rank", V::Int(1)},
      {"world_size", V::Int(4)},
      {"link_edge_type", V::Int(2)},
      {"input_time", V::IntList({10, 20})},
      {"type_fanouts", V::IntLists({{1, 2}, {0, 3}})},
      {"temporal_strategy", V::String("last")},
      {"x_dtype", V::String("bfloat16")},
      {"neg_mode", V::String("triplet")},
      {"neg_amount", V::Double(2.5)},
      {"restart_prob", V::Int(0)},  // an integer is a number too
  };
  ASSERT_TRUE(LoaderOptionsFromMap(m, &o).ok());
  EXPECT_EQ(o.fanouts, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(o.batch_size, 64);
  EXPECT_FALSE(o.shuffle);
  EXPECT_TRUE(o.replace && o.weighted && o.edge_ids && o.original_ids && o.drop_last && o.subgraph);
  EXPECT_FALSE(o.features || o.labels || o.negative.strict);
  EXPECT_EQ(o.num_workers, 3);
  EXPECT_EQ(o.prefetch, 7);
  EXPECT_EQ(o.seed, 99u);
  EXPECT_EQ(o.rank, 1);
  EXPECT_EQ(o.world_size, 4);
  EXPECT_EQ(o.link_edge_type, 2);
  EXPECT_EQ(o.input_time, (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(o.edge_type_fanouts.size(), 2u);
  EXPECT_EQ(o.temporal_strategy, sampler::TemporalStrategy::kLast);
  EXPECT_EQ(o.x_dtype, FeatureDType::kBFloat16);
  EXPECT_EQ(o.negative.mode, sampler::NegativeMode::kTriplet);
  EXPECT_EQ(o.negative.amount, 2.5);
  EXPECT_EQ(o.walk.restart_prob, 0.0);
  // None resets what takes None.
  ASSERT_TRUE(LoaderOptionsFromMap({{"rank", V::None()}, {"input_time", V::None()}}, &o).ok());
  EXPECT_EQ(o.rank, -1);
  EXPECT_TRUE(o.input_time.empty());
}

TEST(LoaderOptionsMapTest, TopKIsEveryPinSageHopsCountInAnyOrder) {
  LoaderOptions o;
  // top_k before num_neighbors in the map's order: applied after every key.
  ASSERT_TRUE(LoaderOptionsFromMap({{"top_k", V::Int(5)},
                                    {"sampler", V::String("pinsage")},
                                    {"num_neighbors", V::IntList({10, 10, 2})},
                                    {"num_walks", V::Int(8)},
                                    {"walk_length", V::Int(3)},
                                    {"visit_stride", V::Int(2)}},
                                   &o)
                  .ok());
  EXPECT_TRUE(o.pinsage);
  EXPECT_EQ(o.fanouts, (std::vector<int64_t>{5, 5, 5}));
  EXPECT_EQ(o.walk.num_walks, 8);
  EXPECT_EQ(o.walk.walk_length, 3);
  EXPECT_EQ(o.walk.visit_stride, 2);
  LoaderOptions n;
  Status st = LoaderOptionsFromMap({{"top_k", V::Int(5)}}, &n);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("top_k is for sampler='pinsage'"));
  st = LoaderOptionsFromMap({{"top_k", V::Int(0)}, {"sampler", V::String("pinsage")}}, &n);
  EXPECT_THAT(st.message(), HasSubstr("top_k must be at least 1"));
  // None: not given.
  EXPECT_TRUE(LoaderOptionsFromMap({{"top_k", V::None()}}, &n).ok());
}

TEST(LoaderOptionsMapTest, EachMistakeNamesTheOption) {
  const std::pair<std::map<std::string, V>, const char*> bad[] = {
      {{{"batch_size", V::String("64")}}, "loader option batch_size must be an integer"},
      {{{"shuffle", V::Int(1)}}, "loader option shuffle must be True or False"},
      {{{"num_neighbors", V::Int(3)}}, "loader option num_neighbors must be a sequence"},
      {{{"num_neighbors", V::IntList({})}}, "num_neighbors must name at least one hop"},
      {{{"sampler", V::String("walk")}},
       "sampler 'walk' is not 'neighbor', 'labor', 'pinsage' or 'ppr'"},
      {{{"colour", V::String("red")}}, "unknown loader option 'colour'"},
      {{{"restart_prob", V::String("x")}}, "loader option restart_prob must be a number"},
      {{{"type_fanouts", V::IntList({1})}}, "one sequence of integers per edge type"},
      {{{"x_dtype", V::String("int8")}}, "int8"},
      {{{"temporal_strategy", V::String("first")}}, "first"},
      {{{"neg_temporal", V::String("recent")}}, "'recent' is not none, active or historical"},
      {{{"ppr_type_budgets", V::String("all")}}, "ppr_type_budgets"},
  };
  for (const auto& [m, want] : bad) {
    LoaderOptions o;
    Status st = LoaderOptionsFromMap(m, &o);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << want;
    EXPECT_THAT(st.message(), HasSubstr(want));
  }
}

}  // namespace
}  // namespace fanout::client
