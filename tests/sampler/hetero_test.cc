// Heterogeneous sampling (sampler/hetero.h): node ranges, the schema's type
// lookups, per-edge-type hops (counts, types, uniformity, the pure-function
// rule), typed negatives and edge checks.
#include "sampler/hetero.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "common/random.h"
#include "sampler/multihop.h"
#include "sampler/negative.h"

namespace fanout::sampler {
namespace {

using ::testing::HasSubstr;

TEST(NodeRangesTest, MapsIndicesToIdsAndBack) {
  NodeRanges r({{3, 5}, {5, 5}, {10, 13}});
  ASSERT_EQ(r.count(), 5);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < r.count(); ++i) ids.push_back(r.Id(i));
  EXPECT_EQ(ids, (std::vector<int64_t>{3, 4, 10, 11, 12}));
  for (int64_t i = 0; i < r.count(); ++i) EXPECT_EQ(r.IndexOf(ids[i]), i);
  EXPECT_EQ(r.IndexOf(5), -1);
  EXPECT_EQ(r.IndexOf(2), -1);
  EXPECT_EQ(r.IndexOf(13), -1);
  EXPECT_EQ(NodeRanges::All(4).Id(3), 3);
}

// Two partitions of types a (3, then 2 nodes) and b (1, then 4 nodes).
HeteroSchema TwoTypes() {
  HeteroSchema h;
  h.node_types = {"a", "b"};
  h.edge_types = {{0, "x", 1}, {1, "y", 1}, {0, "z", 0}};
  h.type_bounds = {0, 3, 4, 6, 10};  // part 0: a [0,3) b [3,4); part 1: a [4,6) b [6,10)
  h.feature_dims = {0, 2};
  return h;
}

TEST(HeteroSchemaTest, TypesOfNodesEdgesAndNames) {
  HeteroSchema h = TwoTypes();
  ASSERT_TRUE(h.Check(2, 10, 2).ok());
  std::vector<int32_t> types;
  for (int64_t v = 0; v < 10; ++v) types.push_back(h.NodeTypeOf(v));
  EXPECT_EQ(types, (std::vector<int32_t>{0, 0, 0, 1, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(h.NodesOfType(0).count(), 5);
  EXPECT_EQ(h.NodesOfType(1).Id(1), 6);
  EXPECT_EQ(h.EdgeTypeName(0), "a,x,b");
  EXPECT_EQ(h.RowType(0), 1);
  int e = -1;
  ASSERT_TRUE(h.FindEdgeType("y", &e).ok());
  EXPECT_EQ(e, 1);
  ASSERT_TRUE(h.FindEdgeType("a,z,a", &e).ok());
  EXPECT_EQ(e, 2);
  Status st = h.FindEdgeType("w", &e);
  EXPECT_THAT(st.ToString(), HasSubstr("a,x,b; b,y,b; a,z,a"));
  // Empty ranges (a type absent from a partition) are skipped.
  h.type_bounds = {0, 3, 3, 3, 10};
  EXPECT_EQ(h.NodeTypeOf(3), 1);
  EXPECT_EQ(h.NodeTypeOf(2), 0);
  // Bad schemas are named.
  HeteroSchema bad = TwoTypes();
  bad.type_bounds = {0, 3, 2, 6, 10};
  EXPECT_THAT(bad.Check(2, 10, 2).ToString(), HasSubstr("decrease"));
  bad = TwoTypes();
  bad.feature_dims = {0, 3};
  EXPECT_THAT(bad.Check(2, 10, 2).ToString(), HasSubstr("feature dim 3"));
  bad = TwoTypes();
  bad.edge_types.push_back({0, "x", 1});
  EXPECT_THAT(bad.Check(2, 10, 2).ToString(), HasSubstr("a,x,b is named twice"));
  std::vector<int64_t> per_hop;
  EXPECT_TRUE(HeteroHopFanouts(h, {{5, 2}, {0, -1}, {3, 1}}, &per_hop).ok());
  EXPECT_EQ(per_hop, (std::vector<int64_t>{5, -1}));
  EXPECT_THAT(HeteroHopFanouts(h, {{5, 2}, {0}, {3, 1}}, &per_hop).ToString(),
              HasSubstr("b,y,b has 1 fanouts"));
  EXPECT_THAT(HeteroHopFanouts(h, {{5}}, &per_hop).ToString(), HasSubstr("name 1 edge types"));
}

// A graph whose rows hold runs of types 0, 1 and 2 of random lengths.
struct TypedGraph {
  CsrArrays g;
  std::vector<int32_t> types;
};
TypedGraph RandomTypedGraph(int64_t n, uint64_t seed) {
  SplitMix64 rng(seed);
  TypedGraph t;
  for (int64_t v = 0; v < n; ++v) {
    for (int32_t e = 0; e < 3; ++e) {
      const int64_t d = static_cast<int64_t>(DrawBelow(rng.Next(), e == 1 ? 40 : 8));
      for (int64_t j = 0; j < d; ++j) {
        t.g.indices.push_back(static_cast<int64_t>(DrawBelow(rng.Next(), n)));
        t.types.push_back(e);
      }
    }
    t.g.indptr.push_back(static_cast<int64_t>(t.g.indices.size()));
  }
  return t;
}

TEST(HeteroHopTest, EachTypeDrawsMinOfFanoutAndItsEdgesAndKeysAreNodeLocal) {
  TypedGraph t = RandomTypedGraph(300, 7);
  const CsrGraph g = t.g.View();
  std::vector<int64_t> nodes(300);
  for (int64_t v = 0; v < 300; ++v) nodes[v] = v;
  const std::vector<int64_t> fanouts{3, 10, 0};
  SamplingOptions so;
  OneHopResult all;
  ASSERT_TRUE(SampleHeteroHop(g, t.types.data(), nodes, fanouts, 1, 99, so, &all).ok());
  for (int64_t v = 0; v < 300; ++v) {
    std::map<int32_t, int64_t> deg, got;
    for (int64_t e = t.g.indptr[v]; e < t.g.indptr[v + 1]; ++e) deg[t.types[e]]++;
    for (int64_t e = all.offsets[v]; e < all.offsets[v + 1]; ++e) {
      got[all.edge_types[e]]++;
      if (e > all.offsets[v]) ASSERT_LE(all.edge_types[e - 1], all.edge_types[e]);
      // The edge id names a position of that type in v's row holding that neighbor.
      const int64_t pos = all.edge_ids[e];
      ASSERT_GE(pos, t.g.indptr[v]);
      ASSERT_LT(pos, t.g.indptr[v + 1]);
      ASSERT_EQ(t.types[pos], all.edge_types[e]);
      ASSERT_EQ(t.g.indices[pos], all.neighbors[e]);
    }
    for (int32_t e = 0; e < 3; ++e)
      ASSERT_EQ(got[e], std::min(fanouts[e], deg[e])) << "node " << v << " type " << e;
  }
  // Pure function of (seed, hop, node, type): any order and subset agree.
  std::vector<int64_t> some{250, 3, 77, 3};
  OneHopResult part;
  ASSERT_TRUE(SampleHeteroHop(g, t.types.data(), some, fanouts, 1, 99, so, &part).ok());
  for (size_t i = 0; i < some.size(); ++i) {
    const int64_t v = some[i];
    ASSERT_EQ(part.offsets[i + 1] - part.offsets[i], all.offsets[v + 1] - all.offsets[v]);
    for (int64_t j = 0; j < part.offsets[i + 1] - part.offsets[i]; ++j)
      ASSERT_EQ(part.edge_ids[part.offsets[i] + j], all.edge_ids[all.offsets[v] + j]);
  }
  // Another hop or seed draws differently somewhere.
  OneHopResult other;
  ASSERT_TRUE(SampleHeteroHop(g, t.types.data(), nodes, fanouts, 2, 99, so, &other).ok());
  EXPECT_FALSE(std::equal(all.edge_ids.begin(), all.edge_ids.end(), other.edge_ids.begin(),
                          other.edge_ids.end()));
  // Out-of-range nodes are named.
  std::vector<int64_t> bad{5, 300};
  EXPECT_THAT(SampleHeteroHop(g, t.types.data(), bad, fanouts, 0, 1, so, &other).ToString(),
              HasSubstr("300"));
}

TEST(HeteroHopTest, DrawsWithinATypeAreUniform) {
  // One node: 10 edges of type 0, then 20 of type 1; fanout 4 of type 1.
  CsrArrays g;
  std::vector<int32_t> types;
  for (int64_t j = 0; j < 30; ++j) {
    g.indices.push_back(j);
    types.push_back(j < 10 ? 0 : 1);
  }
  g.indptr.push_back(30);
  std::vector<int64_t> counts(30, 0);
  const int64_t trials = 20000;
  SamplingOptions so;
  OneHopResult r;
  for (int64_t s = 0; s < trials; ++s) {
    std::vector<int64_t> node{0};
    ASSERT_TRUE(
        SampleHeteroHop(g.View(), types.data(), node, std::vector<int64_t>{0, 4}, 0, s, so, &r)
            .ok());
    ASSERT_EQ(r.neighbors.size(), 4u);
    for (int64_t x : r.neighbors) counts[x]++;
  }
  double chi = 0;
  const double expected = trials * 4.0 / 20;
  for (int64_t j = 0; j < 30; ++j) {
    if (j < 10) {
      ASSERT_EQ(counts[j], 0) << "an edge of an unsampled type was drawn";
      continue;
    }
    chi += (counts[j] - expected) * (counts[j] - expected) / expected;
  }
  EXPECT_LT(chi, 43.8);  // chi-square, 19 degrees of freedom, p = 0.001
}

TEST(HeteroHopTest, MultiHopFollowsTypesAndRefusesWithoutThem) {
  TypedGraph t = RandomTypedGraph(200, 3);
  MultiHopOptions o;
  o.edge_type_fanouts = {{2, 1}, {5, 0}, {0, 3}};
  MultiHopSampler s(t.g.View(), o);
  SampledSubgraph out;
  std::vector<int64_t> seeds{1, 2, 3};
  EXPECT_THAT(s.Sample(seeds, 1, &out).ToString(), HasSubstr("no edge types"));
  s.SetEdgeTypes(t.types.data());
  ASSERT_TRUE(s.Sample(seeds, 1, &out).ok());
  ASSERT_EQ(out.edge_type.size(), out.row.size());
  ASSERT_EQ(out.num_hops(), 2);
  for (int64_t e = 0; e < out.num_sampled_edges[0]; ++e) EXPECT_NE(out.edge_type[e], 2);
  for (size_t e = static_cast<size_t>(out.num_sampled_edges[0]); e < out.edge_type.size(); ++e)
    EXPECT_NE(out.edge_type[e], 1);
  o.edge_type_fanouts[1] = {5};
  MultiHopSampler uneven(t.g.View(), o);
  uneven.SetEdgeTypes(t.types.data());
  EXPECT_THAT(uneven.Sample(seeds, 1, &out).ToString(), HasSubstr("one per hop"));
}

TEST(HeteroNegativeTest, TypedNegativesDrawFromTheirTypesAndCheckTheirEdgeType) {
  HeteroSchema h = TwoTypes();
  NegativeOptions o;
  o.mode = NegativeMode::kBinary;
  o.amount = 50;
  std::vector<int64_t> pos_src{0, 4};
  std::vector<int64_t> neg_src, neg_dst;
  int asked = 0;
  ASSERT_TRUE(SampleNegatives(
                  o, pos_src, h.NodesOfType(0), h.NodesOfType(1), 7,
                  [&](ArrayView<const int64_t> s, ArrayView<const int64_t>, uint8_t* exists) {
                    ++asked;
                    std::fill(exists, exists + s.size(), 0);
                    return Status::OK();
                  },
                  &neg_src, &neg_dst)
                  .ok());
  ASSERT_EQ(neg_src.size(), 100u);
  std::map<int64_t, int> seen_src, seen_dst;
  for (size_t i = 0; i < neg_src.size(); ++i) {
    ASSERT_EQ(h.NodeTypeOf(neg_src[i]), 0);
    ASSERT_EQ(h.NodeTypeOf(neg_dst[i]), 1);
    seen_src[neg_src[i]]++, seen_dst[neg_dst[i]]++;
  }
  EXPECT_EQ(seen_src.size(), 5u);  // every a node drawn at least once in 100 draws
  EXPECT_EQ(seen_dst.size(), 5u);
  EXPECT_EQ(asked, 1);
  // Over all nodes, the typed call is the plain one.
  std::vector<int64_t> a_src, a_dst, b_src, b_dst;
  auto none = [](ArrayView<const int64_t> s, ArrayView<const int64_t>, uint8_t* exists) {
    std::fill(exists, exists + s.size(), 0);
    return Status::OK();
  };
  ASSERT_TRUE(SampleNegatives(o, pos_src, 10, 3, none, &a_src, &a_dst).ok());
  ASSERT_TRUE(
      SampleNegatives(o, pos_src, NodeRanges::All(10), NodeRanges::All(10), 3, none, &b_src, &b_dst)
          .ok());
  EXPECT_EQ(a_src, b_src);
  EXPECT_EQ(a_dst, b_dst);
}

TEST(HeteroNegativeTest, RowHasNeighborOfATypeLooksInThatTypesRunOnly) {
  CsrArrays g;
  g.indices = {7, 8, 7, 9};
  g.indptr.push_back(4);
  std::vector<int32_t> types{0, 0, 2, 2};
  EXPECT_TRUE(RowHasNeighbor(g.View(), 0, 9, types.data(), 2));
  EXPECT_FALSE(RowHasNeighbor(g.View(), 0, 9, types.data(), 0));
  EXPECT_FALSE(RowHasNeighbor(g.View(), 0, 8, types.data(), 1));
  EXPECT_TRUE(RowHasNeighbor(g.View(), 0, 8, types.data(), -1));
  EXPECT_TRUE(RowHasNeighbor(g.View(), 0, 9, nullptr, -1));
}

}  // namespace
}  // namespace fanout::sampler
