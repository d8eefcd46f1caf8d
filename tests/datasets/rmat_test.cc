#include "datasets/rmat.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace fanout::datasets {
namespace {

TEST(RmatTest, BenchmarkGraphMatchesPublishedCheckValues) {
  RmatOptions o;  // scale 20, edge factor 16, seed 42
  sampler::CsrArrays g;
  ASSERT_TRUE(GenerateRmat(o, &g).ok());
  const int64_t n = int64_t{1} << 20;
  ASSERT_EQ(g.num_nodes(), n);
  ASSERT_EQ(g.num_edges(), 16 * n);
  int64_t zero = 0, max_deg = 0;
  for (int64_t v = 0; v < n; ++v) {
    int64_t d = g.indptr[v + 1] - g.indptr[v];
    zero += d == 0;
    max_deg = std::max(max_deg, d);
  }
  EXPECT_EQ(zero, 501584);
  EXPECT_EQ(max_deg, 69516);
  EXPECT_EQ(g.indptr[n / 2], 12754809);
  EXPECT_EQ(CsrChecksum(g), 0x9dfb4e99095000caULL);
}

TEST(RmatTest, CsrKeepsEdgesOfEachRowInGenerationOrder) {
  RmatOptions o;
  o.scale = 8;
  sampler::CsrArrays g;
  ASSERT_TRUE(GenerateRmat(o, &g).ok());
  std::vector<std::vector<int64_t>> rows(256);
  ASSERT_TRUE(ForEachRmatEdge(o, [&](int64_t s, int64_t d) { rows[s].push_back(d); }).ok());
  for (int64_t v = 0; v < 256; ++v)
    EXPECT_EQ(
        std::vector<int64_t>(g.indices.begin() + g.indptr[v], g.indices.begin() + g.indptr[v + 1]),
        rows[v]);
  EXPECT_TRUE(g.View().Validate().ok());
}

TEST(RmatTest, RejectsBadParameters) {
  sampler::CsrArrays g;
  RmatOptions o;
  o.scale = 0;
  EXPECT_THAT(GenerateRmat(o, &g).message(), ::testing::HasSubstr("scale 0"));
  o.scale = 4;
  o.a = 0.9;
  EXPECT_TRUE(GenerateRmat(o, &g).IsInvalidArgument());
}

}  // namespace
}  // namespace fanout::datasets
