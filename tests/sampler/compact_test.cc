// Compact topology: every kernel gives the same samples over 32-bit neighbor
// ids as over 64-bit ones (the same graph, the same request seeds).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/thread_pool.h"
#include "sampler/csr_graph.h"
#include "sampler/hetero.h"
#include "sampler/multihop.h"
#include "sampler/negative.h"
#include "sampler/neighbor_sampler.h"
#include "sampler/temporal.h"
#include "sampler/walk.h"
#include "test_graphs.h"

namespace fanout::sampler {
namespace {

using testing::RandomGraph;

void ExpectSame(const OneHopResult& a, const OneHopResult& b, const char* what) {
  EXPECT_EQ(std::vector<int64_t>(a.offsets.begin(), a.offsets.end()),
            std::vector<int64_t>(b.offsets.begin(), b.offsets.end()))
      << what;
  EXPECT_EQ(std::vector<int64_t>(a.neighbors.begin(), a.neighbors.end()),
            std::vector<int64_t>(b.neighbors.begin(), b.neighbors.end()))
      << what;
  EXPECT_EQ(std::vector<int64_t>(a.edge_ids.begin(), a.edge_ids.end()),
            std::vector<int64_t>(b.edge_ids.begin(), b.edge_ids.end()))
      << what;
  EXPECT_EQ(std::vector<int32_t>(a.edge_types.begin(), a.edge_types.end()),
            std::vector<int32_t>(b.edge_types.begin(), b.edge_types.end()))
      << what;
  EXPECT_EQ(std::vector<float>(a.edge_weights.begin(), a.edge_weights.end()),
            std::vector<float>(b.edge_weights.begin(), b.edge_weights.end()))
      << what;
}

class CompactTopologyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_ = RandomGraph(kNodes, 60, 11, /*weighted=*/true, /*edge_ids=*/true);
    narrow_.assign(g_.indices.begin(), g_.indices.end());
    ASSERT_TRUE(CsrGraph::Create(g_.indptr, g_.indices, g_.edge_ids, g_.weights, &wide_).ok());
    ASSERT_TRUE(CsrGraph::Create32(g_.indptr, narrow_, g_.edge_ids, g_.weights, &compact_).ok());
    ASSERT_EQ(compact_.index_bytes(), 4);
    ASSERT_EQ(wide_.index_bytes(), 8);
    for (int64_t v = 0; v < kNodes; v += 3) nodes_.push_back(v);
    for (int64_t v = kNodes - 1; v >= 0; v -= 5) nodes_.push_back(v);  // repeats, any order
  }
  static constexpr int64_t kNodes = 3000;
  CsrArrays g_;
  std::vector<int32_t> narrow_;
  CsrGraph wide_, compact_;
  std::vector<int64_t> nodes_;
};

TEST_F(CompactTopologyTest, EveryOneHopOptionDrawsTheSameNeighborsAndEdgeIds) {
  ThreadPool pool(1);
  struct Case {
    const char* name;
    int64_t fanout;
    bool replace, weighted, eids, labor;
  };
  const Case cases[] = {{"uniform", 7, false, false, true, false},
                        {"uniform no edge ids", 7, false, false, false, false},
                        {"all", -1, false, false, true, false},
                        {"replace", 5, true, false, true, false},
                        {"weighted", 6, false, true, true, false},
                        {"weighted replace", 4, true, true, false, false},
                        {"large fanout", 40, false, false, true, false},
                        {"labor", 5, false, false, true, true},
                        {"weighted labor", 5, false, true, true, true}};
  for (const Case& c : cases) {
    SamplingOptions o;
    o.replace = c.replace;
    o.weighted = c.weighted;
    o.with_edge_ids = c.eids;
    o.labor = c.labor;
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      OneHopResult a, b;
      ASSERT_TRUE(SampleOneHop(wide_, nodes_, c.fanout, 1, 99, o, p, &a).ok()) << c.name;
      ASSERT_TRUE(SampleOneHop(compact_, nodes_, c.fanout, 1, 99, o, p, &b).ok()) << c.name;
      EXPECT_GT(a.neighbors.size(), 0u) << c.name;
      ExpectSame(a, b, c.name);
    }
  }
}

TEST_F(CompactTopologyTest, MultiHopAndInducedSubgraphsAreIdentical) {
  for (bool induced : {false, true}) {
    MultiHopOptions o;
    o.fanouts = {10, 5, 3};
    o.induced = induced;
    MultiHopSampler a(wide_, o), b(compact_, o);
    std::vector<int64_t> seeds(nodes_.begin(), nodes_.begin() + 64);
    SampledSubgraph x, y;
    ASSERT_TRUE(a.Sample(seeds, 5, &x).ok());
    ASSERT_TRUE(b.Sample(seeds, 5, &y).ok());
    EXPECT_EQ(x.n_id, y.n_id);
    EXPECT_EQ(x.row, y.row);
    EXPECT_EQ(x.col, y.col);
    EXPECT_EQ(x.edge_id, y.edge_id);
    EXPECT_EQ(x.num_sampled_edges, y.num_sampled_edges);
  }
}

TEST_F(CompactTopologyTest, WalkStepsTemporalAndTypedHopsAndEdgeLookupsAreIdentical) {
  // Walk steps, uniform and weighted.
  std::vector<uint64_t> keys(nodes_.size());
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = 0x9e3779b97f4a7c15ULL * (i + 1);
  for (bool weighted : {false, true}) {
    SamplingOptions o;
    o.weighted = weighted;
    OneHopResult a, b;
    ASSERT_TRUE(SampleWalkStep(wide_, nodes_, keys, o, &a).ok());
    ASSERT_TRUE(SampleWalkStep(compact_, nodes_, keys, o, &b).ok());
    ExpectSame(a, b, weighted ? "weighted walk" : "walk");
  }
  // Temporal: a time per edge (rows not in time order: the index sorts them).
  std::vector<int64_t> times(g_.indices.size());
  for (size_t e = 0; e < times.size(); ++e) times[e] = static_cast<int64_t>((e * 7919) % 1000);
  std::vector<int64_t> order_a, order_b;
  const int64_t* ia = PrepareTimeOrder(wide_, times.data(), &order_a);
  const int64_t* ib = PrepareTimeOrder(compact_, times.data(), &order_b);
  std::vector<int64_t> seed_times(nodes_.size(), 500);
  for (auto how : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
    OneHopResult a, b;
    SampleTemporalHop(wide_, times.data(), ia, 0, nodes_, seed_times, 4, 0, 3, how, true, &a);
    SampleTemporalHop(compact_, times.data(), ib, 0, nodes_, seed_times, 4, 0, 3, how, true, &b);
    ExpectSame(a, b, "temporal");
  }
  // Typed rows: each row's edges ordered by type (two types, by position).
  std::vector<int32_t> types(g_.indices.size());
  for (int64_t v = 0; v < kNodes; ++v)
    for (int64_t e = g_.indptr[v]; e < g_.indptr[v + 1]; ++e)
      types[e] = (e - g_.indptr[v]) * 2 < g_.indptr[v + 1] - g_.indptr[v] ? 0 : 1;
  std::vector<int64_t> fanouts{3, -1};
  OneHopResult a, b;
  SamplingOptions so;
  ASSERT_TRUE(SampleHeteroHop(wide_, types.data(), nodes_, fanouts, 0, 8, so, &a).ok());
  ASSERT_TRUE(SampleHeteroHop(compact_, types.data(), nodes_, fanouts, 0, 8, so, &b).ok());
  ExpectSame(a, b, "typed");
  // Edge lookups: every stored edge found, and absent ones (out of the
  // int32 range too) not.
  for (int64_t v = 0; v < kNodes; v += 17) {
    for (int64_t e = g_.indptr[v]; e < g_.indptr[v + 1]; ++e)
      EXPECT_TRUE(RowHasNeighbor(compact_, v, g_.indices[e], nullptr, -1));
    for (int64_t u : {int64_t{-1}, kNodes + 5, int64_t{1} << 33})
      EXPECT_EQ(RowHasNeighbor(compact_, v, u, nullptr, -1),
                RowHasNeighbor(wide_, v, u, nullptr, -1));
  }
}

TEST_F(CompactTopologyTest, ValidateChecksTheNarrowIds) {
  EXPECT_TRUE(compact_.Validate().ok());
  narrow_[5] = static_cast<int32_t>(kNodes);
  EXPECT_NE(compact_.Validate().message().find("points at node 3000"), std::string::npos);
  narrow_[5] = -3;
  EXPECT_NE(compact_.Validate().message().find("points at node -3"), std::string::npos);
}

}  // namespace
}  // namespace fanout::sampler
