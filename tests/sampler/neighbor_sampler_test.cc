#include "sampler/neighbor_sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "common/random.h"
#include "common/thread_pool.h"
#include "sampler/detail/sample_row.h"
#include "tests/sampler/test_graphs.h"

namespace fanout::sampler {
namespace {

using ::testing::HasSubstr;
using testing::RandomGraph;

std::vector<int64_t> AllNodes(int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// For each sampled edge: is it a real edge of that node's row, at a position
// not used twice (without replacement)?
void ExpectValidSample(const CsrArrays& g, const std::vector<int64_t>& nodes, const OneHopResult& r,
                       int64_t fanout, const SamplingOptions& o) {
  ASSERT_EQ(r.offsets.size(), nodes.size() + 1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    int64_t v = nodes[i] - o.node_offset;
    int64_t s = g.indptr[v], d = g.indptr[v + 1] - s;
    int64_t positive = d;
    if (o.weighted)
      positive = std::count_if(g.weights.begin() + s, g.weights.begin() + s + d,
                               [](float w) { return w > 0; });
    int64_t k = r.offsets[i + 1] - r.offsets[i];
    if (fanout < 0) {
      EXPECT_EQ(k, positive);
    } else if (o.replace) {
      EXPECT_EQ(k, positive > 0 ? fanout : 0);
    } else {
      EXPECT_EQ(k, std::min(fanout, positive)) << "node " << nodes[i];
    }
    std::set<int64_t> positions;
    for (int64_t e = r.offsets[i]; e < r.offsets[i + 1]; ++e) {
      // Edge ids identify the CSR position (here ids are positions or a known permutation).
      int64_t eid = r.edge_ids[e];
      int64_t pos = g.edge_ids.empty()
                        ? eid
                        : std::find(g.edge_ids.begin(), g.edge_ids.end(), eid) - g.edge_ids.begin();
      ASSERT_GE(pos, s) << "edge id " << eid << " is not in the row of node " << nodes[i];
      ASSERT_LT(pos, s + d) << "edge id " << eid << " is not in the row of node " << nodes[i];
      EXPECT_EQ(g.indices[pos], r.neighbors[e]) << "sampled node is not the edge's neighbor";
      if (o.weighted) {
        EXPECT_GT(g.weights[pos], 0.0f) << "zero-weight edge sampled";
      }
      if (!o.replace) {
        EXPECT_TRUE(positions.insert(pos).second) << "edge sampled twice for node " << nodes[i];
      }
    }
  }
}

class NeighborSamplerTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(NeighborSamplerTest, SamplesAreDistinctNeighborsWithExactCounts) {
  auto [replace, weighted] = GetParam();
  for (bool with_ids : {false, true}) {
    CsrArrays g = RandomGraph(400, 120, 7, weighted, with_ids);
    SamplingOptions o;
    o.replace = replace;
    o.weighted = weighted;
    std::vector<int64_t> nodes = AllNodes(g.num_nodes());
    for (int64_t fanout : {0, 1, 5, 15, 40, 100, -1}) {
      OneHopResult r;
      ASSERT_TRUE(SampleOneHop(g.View(), nodes, fanout, 0, 99, o, nullptr, &r).ok());
      ExpectValidSample(g, nodes, r, fanout, o);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, NeighborSamplerTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "Replace" : "NoReplace") +
                                  (std::get<1>(info.param) ? "Weighted" : "Uniform");
                         });

// The uniform hop has a path of its own (positions drawn as absolute CSR
// positions, short rows written without a branch on their length, picks
// resolved a group of nodes at a time): its output equals the row kernel
// (detail::SampleRowPositions, the one every other mode uses) node by node,
// for 64- and 32-bit neighbor ids, with and without edge ids, in one chunk
// and split over a pool, for fanouts around the short-row and small-k limits.
TEST(NeighborSamplerTest, UniformHopEqualsTheRowKernelNodeByNode) {
  CsrArrays g = RandomGraph(3000, 60, 21, /*weighted=*/false, /*edge_ids=*/true);
  std::vector<int32_t> narrow(g.indices.begin(), g.indices.end());
  CsrGraph wide, compact;
  ASSERT_TRUE(CsrGraph::Create(g.indptr, g.indices, g.edge_ids, {}, &wide).ok());
  ASSERT_TRUE(CsrGraph::Create32(g.indptr, narrow, g.edge_ids, {}, &compact).ok());
  CsrGraph positions;  // edge id = CSR position
  ASSERT_TRUE(CsrGraph::Create(g.indptr, g.indices, {}, {}, &positions).ok());
  std::vector<int64_t> nodes;
  for (int64_t v = 0; v < g.num_nodes(); ++v) nodes.push_back((v * 7919) % g.num_nodes());
  nodes.push_back(nodes.front());  // a repeat
  ThreadPool pool(2);
  const uint64_t seed = 1234;
  const int64_t hop = 2;
  for (bool scalar_draws : {false, true}) {  // AVX-512 draws where the CPU has them; scalar ones
    detail::SetFloydDrawsAvx512Off(scalar_draws);
    for (const CsrGraph* graph : {&wide, &compact, &positions}) {
      for (bool replace : {false, true}) {
        for (int64_t fanout : {-1, 0, 1, 5, 15, 16, 17, 32, 33, 50}) {
          if (replace && fanout >= 0) continue;  // with replacement: the generic path
          for (bool with_ids : {true, false}) {
            for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
              SamplingOptions o;
              o.replace = replace;
              o.with_edge_ids = with_ids;
              OneHopResult r;
              ASSERT_TRUE(SampleOneHop(*graph, nodes, fanout, hop, seed, o, p, &r).ok());
              detail::RowScratch scratch;
              std::vector<int64_t> want_nbr, want_eid, want_off{0};
              for (int64_t v : nodes) {
                const int64_t s = g.indptr[v], d = g.indptr[v + 1] - s;
                const int64_t k = detail::RowSampleCount(*graph, s, d, fanout, o);
                std::vector<int64_t> pos(static_cast<size_t>(k));
                detail::SampleRowPositions(*graph, s, d, fanout, k,
                                           NodeKey(seed, hop, static_cast<uint64_t>(v)), o,
                                           pos.data(), &scratch);
                for (int64_t q : pos) {
                  want_nbr.push_back(g.indices[s + q]);
                  want_eid.push_back(graph->edge_ids() ? g.edge_ids[s + q] : s + q);
                }
                want_off.push_back(static_cast<int64_t>(want_nbr.size()));
              }
              SCOPED_TRACE(std::string(scalar_draws ? "scalar draws, " : "") + "index bytes " +
                           std::to_string(graph->index_bytes()) + ", fanout " +
                           std::to_string(fanout) + (replace ? ", replace" : "") +
                           (with_ids ? ", edge ids" : "") + (p ? ", pool" : ""));
              EXPECT_EQ(std::vector<int64_t>(r.offsets.begin(), r.offsets.end()), want_off);
              EXPECT_EQ(std::vector<int64_t>(r.neighbors.begin(), r.neighbors.end()), want_nbr);
              if (with_ids)
                EXPECT_EQ(std::vector<int64_t>(r.edge_ids.begin(), r.edge_ids.end()), want_eid);
              else
                EXPECT_TRUE(r.edge_ids.empty());
            }
          }
        }
      }
    }
  }
  detail::SetFloydDrawsAvx512Off(false);
}

// The AVX-512 draws (eight at a time, a 64-bit high multiply made of 32-bit
// halves) equal the scalar ones draw for draw, for rows of every size up to
// 2^62 (where the high multiply's carries matter) and partial last groups.
TEST(NeighborSamplerTest, VectorFloydDrawsEqualTheScalarDraws) {
  if (!detail::HasFloydDrawsAvx512()) GTEST_SKIP() << "this CPU has no AVX-512 (F and DQ)";
  SplitMix64 rng(77);
  for (int trial = 0; trial < 2000; ++trial) {
    const uint64_t key = rng.Next();
    const int64_t count = 1 + static_cast<int64_t>(DrawBelow(rng.Next(), 32));
    const int bits = 1 + static_cast<int>(DrawBelow(rng.Next(), 62));
    const int64_t degree = count + static_cast<int64_t>(DrawBelow(rng.Next(), uint64_t{1} << bits));
    const int64_t j0 = degree - count;
    alignas(64) int64_t got[32 + 8];
    ASSERT_TRUE(detail::FloydDrawsAvx512(key, j0, count, got));
    for (int64_t i = 0; i < count; ++i) {
      const int64_t j = j0 + i;
      ASSERT_EQ(got[i], static_cast<int64_t>(DrawBelow(Draw(key, static_cast<uint64_t>(j)), j + 1)))
          << "key " << key << " j " << j;
    }
  }
}

TEST(NeighborSamplerTest, TakesTheWholeRowWhenDegreeIsAtMostFanout) {
  CsrArrays g = CsrArrays::FromEdges(3, {0, 0, 0, 1}, {1, 2, 2, 0});
  OneHopResult r;
  ASSERT_TRUE(SampleOneHop(g.View(), std::vector<int64_t>{0, 1, 2}, 3, 0, 1, {}, nullptr, &r).ok());
  EXPECT_EQ(std::vector<int64_t>(r.neighbors.begin(), r.neighbors.end()),
            (std::vector<int64_t>{1, 2, 2, 0}));
  EXPECT_EQ(std::vector<int64_t>(r.offsets.begin(), r.offsets.end()),
            (std::vector<int64_t>{0, 3, 4, 4}));
}

TEST(NeighborSamplerTest, IsAPureFunctionOfNodeHopAndSeed) {
  CsrArrays g = RandomGraph(5000, 60, 3, false, true);
  std::vector<int64_t> nodes = AllNodes(g.num_nodes());
  SamplingOptions o;
  OneHopResult one, two, again;
  ThreadPool pool(1);  // 2 threads: the caller and one worker
  ASSERT_TRUE(SampleOneHop(g.View(), nodes, 10, 2, 42, o, nullptr, &one).ok());
  ASSERT_TRUE(SampleOneHop(g.View(), nodes, 10, 2, 42, o, &pool, &two).ok());
  ASSERT_TRUE(SampleOneHop(g.View(), nodes, 10, 2, 42, o, nullptr, &again).ok());
  EXPECT_EQ(one.neighbors, two.neighbors);
  EXPECT_EQ(one.edge_ids, two.edge_ids);
  EXPECT_EQ(one.offsets, two.offsets);
  EXPECT_EQ(one.neighbors, again.neighbors);

  // Reversed order and single-node batches give each node the same sample.
  std::vector<int64_t> rev(nodes.rbegin(), nodes.rend());
  OneHopResult r;
  ASSERT_TRUE(SampleOneHop(g.View(), rev, 10, 2, 42, o, nullptr, &r).ok());
  int64_t n = g.num_nodes();
  for (int64_t i = 0; i < n; i += 37) {
    int64_t j = n - 1 - i;  // position of node i in rev
    std::vector<int64_t> a(one.neighbors.begin() + one.offsets[i],
                           one.neighbors.begin() + one.offsets[i + 1]);
    std::vector<int64_t> b(r.neighbors.begin() + r.offsets[j],
                           r.neighbors.begin() + r.offsets[j + 1]);
    EXPECT_EQ(a, b) << "node " << i;
    OneHopResult single;
    ASSERT_TRUE(
        SampleOneHop(g.View(), std::vector<int64_t>{i}, 10, 2, 42, o, nullptr, &single).ok());
    EXPECT_EQ(a, std::vector<int64_t>(single.neighbors.begin(), single.neighbors.end()))
        << "node " << i;
  }

  // Another seed or hop changes samples.
  OneHopResult other_seed, other_hop;
  ASSERT_TRUE(SampleOneHop(g.View(), nodes, 10, 2, 43, o, nullptr, &other_seed).ok());
  ASSERT_TRUE(SampleOneHop(g.View(), nodes, 10, 1, 42, o, nullptr, &other_hop).ok());
  EXPECT_NE(one.neighbors, other_seed.neighbors);
  EXPECT_NE(one.neighbors, other_hop.neighbors);
}

TEST(NeighborSamplerTest, PartitionViewWithNodeOffsetEqualsWholeGraph) {
  CsrArrays g = RandomGraph(300, 30, 11);
  // Rows [100, 200) as a partition with global neighbor ids.
  CsrArrays part;
  part.indptr.assign(1, 0);
  for (int64_t v = 100; v < 200; ++v) {
    part.indices.insert(part.indices.end(), g.indices.begin() + g.indptr[v],
                        g.indices.begin() + g.indptr[v + 1]);
    part.indptr.push_back(static_cast<int64_t>(part.indices.size()));
  }
  std::vector<int64_t> nodes;
  for (int64_t v = 100; v < 200; ++v) nodes.push_back(v);
  SamplingOptions whole, local;
  whole.with_edge_ids = local.with_edge_ids = false;
  local.node_offset = 100;
  OneHopResult a, b;
  ASSERT_TRUE(SampleOneHop(g.View(), nodes, 4, 0, 5, whole, nullptr, &a).ok());
  ASSERT_TRUE(SampleOneHop(part.View(), nodes, 4, 0, 5, local, nullptr, &b).ok());
  EXPECT_EQ(a.neighbors, b.neighbors);
  EXPECT_EQ(a.offsets, b.offsets);
  OneHopResult c;
  Status st =
      SampleOneHop(part.View(), std::vector<int64_t>{100, 250}, 4, 0, 5, local, nullptr, &c);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_THAT(st.message(), HasSubstr("node 250 (position 1) is outside [100, 200)"));
}

TEST(NeighborSamplerTest, RejectsInvalidInputNamingTheValue) {
  CsrArrays g = RandomGraph(50, 5, 1);
  OneHopResult r;
  Status st = SampleOneHop(g.View(), std::vector<int64_t>{3, 50}, 2, 0, 1, {}, nullptr, &r);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_THAT(st.message(), HasSubstr("node 50"));
  st = SampleOneHop(g.View(), std::vector<int64_t>{-1}, 2, 0, 1, {}, nullptr, &r);
  EXPECT_THAT(st.message(), HasSubstr("node -1"));
  st = SampleOneHop(g.View(), std::vector<int64_t>{3}, -2, 1, 1, {}, nullptr, &r);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_THAT(st.message(), HasSubstr("fanout -2 of hop 1"));
  SamplingOptions w;
  w.weighted = true;
  st = SampleOneHop(g.View(), std::vector<int64_t>{3}, 2, 0, 1, w, nullptr, &r);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_THAT(st.message(), HasSubstr("no edge weights"));

  CsrGraph view;
  std::vector<int64_t> indptr{0, 2, 3}, indices{1, 0};
  st = CsrGraph::Create(indptr, indices, {}, {}, &view);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_THAT(st.message(), HasSubstr("indptr ends at 3 but indices has 2 entries"));
  std::vector<int64_t> ok_indices{1, 0, 1}, short_ids{0};
  std::vector<float> long_weights{1, 1, 1, 1};
  EXPECT_THAT(CsrGraph::Create(indptr, ok_indices, short_ids, {}, &view).message(),
              HasSubstr("edge_ids has 1"));
  EXPECT_THAT(CsrGraph::Create(indptr, ok_indices, {}, long_weights, &view).message(),
              HasSubstr("weights has 4"));
  std::vector<int64_t> bad_neighbor{1, 0, 7};
  ASSERT_TRUE(CsrGraph::Create(indptr, bad_neighbor, {}, {}, &view).ok());
  EXPECT_THAT(view.Validate().message(), HasSubstr("edge 2 points at node 7, outside [0, 2)"));
  std::vector<float> neg{1, -1, 1};
  ASSERT_TRUE(CsrGraph::Create(indptr, ok_indices, {}, neg, &view).ok());
  EXPECT_THAT(view.Validate().message(), HasSubstr("edge 1 has weight"));
}

}  // namespace
}  // namespace fanout::sampler
