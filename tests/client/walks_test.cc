// client/walks.h against the definitions, on small hand-made graphs served
// by an in-memory Session (the step and has_edges kernels the servers run):
// node2vec's p/q ratios and restarts by chi-square, dead ends, PinSAGE's
// top-k, refusals. Distributed == local runs in loader_test.cc.
#include "client/walks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "sampler/walk.h"

namespace fanout::client {
namespace {

using ::testing::HasSubstr;

// A Session over CSR arrays answering walk steps and edge existence only.
class GraphSession : public Session {
 public:
  explicit GraphSession(sampler::CsrArrays g) : g_(std::move(g)) {}
  Status WalkStep(ArrayView<const int64_t> nodes, ArrayView<const uint64_t> keys, bool weighted,
                  int64_t* next, int edge_type = -1) override {
    sampler::SamplingOptions so;
    so.weighted = weighted;
    sampler::OneHopResult r;
    FANOUT_RETURN_IF_ERROR(
        sampler::SampleWalkStep(g_.View(), nodes, keys, so, &r, nullptr, edge_type));
    for (size_t i = 0; i < nodes.size(); ++i)
      next[i] = r.offsets[i + 1] > r.offsets[i] ? r.neighbors[r.offsets[i]] : -1;
    ++steps_calls;
    return Status::OK();
  }
  bool StoresIncoming() const override { return true; }
  Status HasEdges(ArrayView<const int64_t> src, ArrayView<const int64_t> dst, uint8_t* exists,
                  int) override {
    for (size_t i = 0; i < src.size(); ++i) {  // "in": row dst holds src
      exists[i] = 0;
      for (int64_t e = g_.indptr[dst[i]]; e < g_.indptr[dst[i] + 1]; ++e)
        if (g_.indices[e] == src[i]) exists[i] = 1;
    }
    return Status::OK();
  }
  Status Sample(ArrayView<const int64_t>, uint64_t, const sampler::MultiHopOptions&,
                sampler::SampledSubgraph*) override {
    return Status::NotSupported("walks only");
  }
  Status SampleTemporal(ArrayView<const int64_t>, ArrayView<const int64_t>, uint64_t,
                        const sampler::MultiHopOptions&, sampler::SampledSubgraph*) override {
    return Status::NotSupported("walks only");
  }
  Status Features(ArrayView<const int64_t>, float*) override { return Status::NotSupported("-"); }
  Status Labels(ArrayView<const int64_t>, int64_t*) override { return Status::NotSupported("-"); }
  Status OriginalIds(ArrayView<const int64_t>, int64_t*) override {
    return Status::NotSupported("-");
  }
  Status Degrees(ArrayView<const int64_t>, int64_t*) override { return Status::NotSupported("-"); }
  Status SplitNodes(int, std::vector<int64_t>*) override { return Status::NotSupported("-"); }
  int steps_calls = 0;

 private:
  sampler::CsrArrays g_;
};

// Undirected: 0-1, 0-2, 1-2, 1-3 (row v holds v's neighbors).
sampler::CsrArrays Diamond() {
  return sampler::CsrArrays::FromEdges(4, {0, 0, 1, 1, 1, 2, 2, 3}, {1, 2, 0, 2, 3, 0, 1, 1});
}

double Chi(const std::map<int64_t, int64_t>& c, const std::map<int64_t, double>& p, int64_t n) {
  double x = 0;
  for (const auto& [v, q] : p) {
    const double e = n * q, o = c.count(v) ? c.at(v) : 0;
    x += (o - e) * (o - e) / e;
  }
  return x;
}

TEST(WalksTest, Node2VecSecondStepsFollowThePAndQRatios) {
  for (auto [p, q] : {std::pair{0.5, 2.0}, std::pair{4.0, 0.25}, std::pair{1.0, 1.0}}) {
    GraphSession s(Diamond());
    WalkOptions o;
    o.walk_length = 2;
    o.num_walks = 40000;
    o.p = p;
    o.q = q;
    WalkResult r;
    std::vector<int64_t> seeds{0};
    ASSERT_TRUE(RandomWalks(s, seeds, 5, o, &r).ok());
    // Walks 0 -> 1 -> x: x = 0 returns (1/p), 2 neighbors 0 (1), 3 does not (1/q).
    std::map<int64_t, int64_t> c;
    int64_t n = 0;
    for (int64_t w = 0; w < o.num_walks; ++w) {
      if (r.walks[w * 3 + 1] != 1) continue;
      ++c[r.walks[w * 3 + 2]];
      ++n;
    }
    const double a = 1 / p, b = 1.0, d = 1 / q, z = a + b + d;
    EXPECT_LT(Chi(c, {{0, a / z}, {2, b / z}, {3, d / z}}, n), 13.8)  // 2 dof, p = 0.001
        << "p " << p << " q " << q;
    EXPECT_NEAR(static_cast<double>(n) / o.num_walks, 0.5, 0.02);  // the first step is uniform
  }
}

TEST(WalksTest, RestartsJumpBackWithTheirProbabilityAndDeadEndsEndAWalk) {
  // A chain 0 -> 1 -> 2 -> 3 (row v holds v + 1), 3 a dead end.
  GraphSession s(sampler::CsrArrays::FromEdges(4, {0, 1, 2}, {1, 2, 3}));
  WalkOptions o;
  o.walk_length = 5;
  o.num_walks = 20000;
  o.restart_prob = 0.3;
  WalkResult r;
  std::vector<int64_t> seeds{0};
  ASSERT_TRUE(RandomWalks(s, seeds, 9, o, &r).ok());
  for (int64_t t = 2; t <= 3; ++t) {
    int64_t at_start = 0;
    for (int64_t w = 0; w < o.num_walks; ++w) at_start += r.walks[w * 6 + t] == 0;
    const double e = 0.3 * o.num_walks, sd = std::sqrt(o.num_walks * 0.3 * 0.7);
    EXPECT_NEAR(at_start, e, 4 * sd) << "step " << t;
  }
  for (int64_t w = 0; w < o.num_walks; ++w) {
    EXPECT_EQ(r.walks[w * 6 + 1], 1);  // no restart before the first step
    for (int64_t t = 1; t <= 5; ++t) {
      const int64_t v = r.walks[w * 6 + t], u = r.walks[w * 6 + t - 1];
      if (u == -1) {
        EXPECT_EQ(v, -1);  // past a dead end
      } else if (u == 3) {
        EXPECT_TRUE(v == -1 || (t >= 2 && v == 0)) << v;  // the dead end, or a restart before it
      } else {
        EXPECT_TRUE(v == u + 1 || v == 0) << u << " -> " << v;
      }
    }
  }
  // Without restarts: 0 1 2 3 -1 -1.
  o.restart_prob = 0;
  o.num_walks = 1;
  ASSERT_TRUE(RandomWalks(s, seeds, 9, o, &r).ok());
  EXPECT_EQ(r.walks, (std::vector<int64_t>{0, 1, 2, 3, -1, -1}));
  EXPECT_EQ(r.steps, 3);
}

TEST(WalksTest, TopVisitedRanksByCountThenIdAndWalksArePureFunctions) {
  // Two seeds, two walks each of length 3 (seed first in every row).
  std::vector<int64_t> walks{7, 1, 2,  1,  7, 2, 7, 3,  //
                             8, 9, -1, -1, 8, 5, 9, 5};
  WalkResult r;
  TopVisited(walks, 2, 2, 3, 2, &r);
  EXPECT_EQ(r.offsets, (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(r.nodes, (std::vector<int64_t>{1, 2, 5, 9}));  // seed 7 not counted; ties by id
  EXPECT_EQ(r.counts, (std::vector<int64_t>{2, 2, 2, 2}));
  // Every second step only (items of a user-item walk): steps 2 of each walk.
  TopVisited(walks, 2, 2, 3, 2, &r, 2);
  EXPECT_EQ(r.nodes, (std::vector<int64_t>{2, 9}));  // 7's: 2 (and 7 itself); 8's: -1, 9
  EXPECT_EQ(r.counts, (std::vector<int64_t>{1, 1}));
  GraphSession s(Diamond());
  WalkOptions o;
  o.walk_length = 4;
  o.num_walks = 3;
  o.p = 2;
  o.q = 0.5;
  o.top_k = 2;
  std::vector<int64_t> seeds{0, 3, 0};
  WalkResult a, b;
  ASSERT_TRUE(RandomWalks(s, seeds, 4, o, &a).ok());
  ASSERT_TRUE(RandomWalks(s, seeds, 4, o, &b).ok());
  EXPECT_EQ(a.walks, b.walks);
  EXPECT_EQ(a.nodes, b.nodes);
  EXPECT_EQ(a.offsets.size(), 4u);
  WalkResult c;
  ASSERT_TRUE(RandomWalks(s, seeds, 5, o, &c).ok());
  EXPECT_NE(a.walks, c.walks);  // another request seed, other walks
  // Seeds 0 and 2 are the same node but different walks (the walk id is the position).
  EXPECT_NE(std::vector<int64_t>(a.walks.begin(), a.walks.begin() + 15),
            std::vector<int64_t>(a.walks.begin() + 30, a.walks.end()));
}

TEST(WalksTest, BadOptionsAreRefusedByName) {
  GraphSession s(Diamond());
  std::vector<int64_t> seeds{0};
  WalkResult r;
  auto refused = [&](WalkOptions o) { return RandomWalks(s, seeds, 1, o, &r).message(); };
  WalkOptions o;
  o.walk_length = 0;
  EXPECT_THAT(refused(o), HasSubstr("walk_length"));
  o = WalkOptions();
  o.p = 0;
  EXPECT_THAT(refused(o), HasSubstr("p"));
  o = WalkOptions();
  o.q = -1;
  EXPECT_THAT(refused(o), HasSubstr("q"));
  o = WalkOptions();
  o.restart_prob = 1;
  EXPECT_THAT(refused(o), HasSubstr("restart_prob"));
  o = WalkOptions();
  o.num_walks = 2;
  o.walk_length = 3;
  o.top_k = 7;
  EXPECT_THAT(refused(o), HasSubstr("top_k 7"));
  o = WalkOptions();
  o.visit_stride = 0;
  EXPECT_THAT(refused(o), HasSubstr("visit_stride"));
  o = WalkOptions();
  o.walk_length = int64_t{1} << 40;
  EXPECT_THAT(refused(o), HasSubstr("over the limit"));
  o = WalkOptions();
  o.num_walks = 60000;
  o.walk_length = 60000;
  EXPECT_THAT(refused(o), HasSubstr("walk fewer seeds"));
  o = WalkOptions();
  o.num_walks = 0;
  EXPECT_THAT(refused(o), HasSubstr("num_walks"));
  EXPECT_EQ(s.steps_calls, 0);
}

}  // namespace
}  // namespace fanout::client
