// LABOR-0 and walk steps against their definitions (sampler/labor.h,
// sampler/walk.h): inclusion frequencies and step distributions by
// chi-square over many request seeds / keys, the one variate per node and
// hop shared by every seed, the importance weights' estimator, refusals.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "common/random.h"
#include "common/thread_pool.h"
#include "sampler/hetero.h"
#include "sampler/labor.h"
#include "sampler/multihop.h"
#include "sampler/temporal.h"
#include "sampler/walk.h"
#include "tests/sampler/test_graphs.h"

namespace fanout::sampler {
namespace {

using ::testing::HasSubstr;

// Node 0: neighbors 1..40; node 41: neighbors 1..20 (shared with node 0);
// node 42: neighbors 1..30 with weights 1..30; node 43: neighbors 1..3.
CsrArrays LaborGraph() {
  std::vector<int64_t> rows, cols;
  for (int64_t t = 1; t <= 40; ++t) rows.push_back(0), cols.push_back(t);
  for (int64_t t = 1; t <= 20; ++t) rows.push_back(41), cols.push_back(t);
  for (int64_t t = 1; t <= 30; ++t) rows.push_back(42), cols.push_back(t);
  for (int64_t t = 1; t <= 3; ++t) rows.push_back(43), cols.push_back(t);
  CsrArrays g = CsrArrays::FromEdges(44, rows, cols);
  g.weights.assign(g.indices.size(), 1.0f);
  for (int64_t p = g.indptr[42]; p < g.indptr[43]; ++p)
    g.weights[p] = static_cast<float>(g.indices[p]);
  return g;
}

// Bernoulli chi-square: sum over cells of (c - N pi)^2 / (N pi (1 - pi)).
double BernoulliChi(const std::map<int64_t, int64_t>& counts, const std::map<int64_t, double>& pi,
                    int64_t trials) {
  double chi = 0;
  for (const auto& [t, p] : pi) {
    if (p >= 1.0) continue;
    const double c = counts.count(t) ? static_cast<double>(counts.at(t)) : 0.0;
    const double e = trials * p;
    chi += (c - e) * (c - e) / (e * (1 - p));
  }
  return chi;
}

TEST(LaborTest, InclusionFrequenciesMatchKOverDegree) {
  CsrArrays g = LaborGraph();
  SamplingOptions so;
  so.labor = true;
  constexpr int64_t kTrials = 4000;
  std::map<int64_t, int64_t> in0, in41;
  std::vector<int64_t> nodes{0, 41, 43};
  for (uint64_t seed = 0; seed < kTrials; ++seed) {
    OneHopResult r;
    ASSERT_TRUE(SampleOneHop(g.View(), nodes, 5, 1, seed, so, nullptr, &r).ok());
    ASSERT_EQ(r.edge_weights.size(), r.neighbors.size());
    std::set<int64_t> a(r.neighbors.begin() + r.offsets[0], r.neighbors.begin() + r.offsets[1]);
    std::set<int64_t> b(r.neighbors.begin() + r.offsets[1], r.neighbors.begin() + r.offsets[2]);
    for (int64_t t : a) ++in0[t];
    for (int64_t t : b) ++in41[t];
    // One variate per node and hop: a neighbor node 0 takes (r_t <= 5/40),
    // node 41 takes too (r_t <= 5/20); and each inclusion is exactly r_t's.
    const uint64_t key = LaborKey(seed, 1);
    for (int64_t t = 1; t <= 20; ++t) {
      if (a.count(t)) EXPECT_TRUE(b.count(t)) << "seed " << seed << " t " << t;
      EXPECT_EQ(b.count(t) == 1, LaborVariate(key, t) <= 0.25) << t;
    }
    for (int64_t t = 1; t <= 40; ++t) EXPECT_EQ(a.count(t) == 1, LaborVariate(key, t) <= 0.125);
    // Degree <= fanout: every neighbor, weight 1/d.
    ASSERT_EQ(r.offsets[3] - r.offsets[2], 3);
    for (int64_t e = r.offsets[2]; e < r.offsets[3]; ++e)
      EXPECT_FLOAT_EQ(r.edge_weights[e], 1.0f / 3);
    // Degree > fanout: weight 1/k.
    for (int64_t e = 0; e < r.offsets[2]; ++e) EXPECT_FLOAT_EQ(r.edge_weights[e], 1.0f / 5);
  }
  std::map<int64_t, double> pi0, pi41;
  for (int64_t t = 1; t <= 40; ++t) pi0[t] = 5.0 / 40;
  for (int64_t t = 1; t <= 20; ++t) pi41[t] = 5.0 / 20;
  EXPECT_LT(BernoulliChi(in0, pi0, kTrials), 73.4);    // 40 dof, p = 0.001
  EXPECT_LT(BernoulliChi(in41, pi41, kTrials), 45.3);  // 20 dof
  // Each seed keeps k neighbors in expectation.
  const double mean0 = std::accumulate(in0.begin(), in0.end(), 0.0,
                                       [](double s, const auto& kv) { return s + kv.second; }) /
                       kTrials;
  EXPECT_NEAR(mean0, 5.0, 0.2);
}

TEST(LaborTest, WeightedInclusionFollowsThePapersWeightedForm) {
  CsrArrays g = LaborGraph();
  const float* w = g.weights.data() + g.indptr[42];
  const double c = LaborWeightScale(w, 30, 6);
  double sum = 0;
  std::map<int64_t, double> pi;
  for (int64_t t = 1; t <= 30; ++t) sum += pi[t] = std::min(1.0, c * t);
  EXPECT_NEAR(sum, 6.0, 1e-9);
  EXPECT_LT(pi[1], pi[30]);
  SamplingOptions so;
  so.labor = true;
  so.weighted = true;
  constexpr int64_t kTrials = 4000;
  std::map<int64_t, int64_t> in;
  double total_weight = 0;  // sum over t of a_t
  for (int64_t t = 1; t <= 30; ++t) total_weight += t;
  double estimate = 0;  // the importance-weighted mean of h_t = t, averaged
  std::vector<int64_t> nodes{42};
  for (uint64_t seed = 0; seed < kTrials; ++seed) {
    OneHopResult r;
    ASSERT_TRUE(SampleOneHop(g.View(), nodes, 6, 0, seed, so, nullptr, &r).ok());
    for (int64_t e = 0; e < r.offsets[1]; ++e) {
      const int64_t t = r.neighbors[e];
      ++in[t];
      EXPECT_NEAR(r.edge_weights[e], t / (pi[t] * total_weight), 1e-5);
      estimate += r.edge_weights[e] * t;
    }
  }
  EXPECT_LT(BernoulliChi(in, pi, kTrials), 59.7);  // 30 dof, p = 0.001
  // Unbiased for the weighted mean sum a_t h_t / sum a_t (h_t = t).
  double exact = 0;
  for (int64_t t = 1; t <= 30; ++t) exact += static_cast<double>(t) * t / total_weight;
  EXPECT_NEAR(estimate / kTrials, exact, 0.03 * exact);
}

TEST(LaborTest, ImportanceWeightsGiveAnUnbiasedMean) {
  CsrArrays g = LaborGraph();
  SamplingOptions so;
  so.labor = true;
  std::vector<int64_t> nodes{0};
  constexpr int64_t kTrials = 20000;
  double sum = 0, sq = 0;
  for (uint64_t seed = 0; seed < kTrials; ++seed) {
    OneHopResult r;
    ASSERT_TRUE(SampleOneHop(g.View(), nodes, 5, 2, seed, so, nullptr, &r).ok());
    double est = 0;
    for (int64_t e = 0; e < r.offsets[1]; ++e) est += r.edge_weights[e] * r.neighbors[e];
    sum += est;
    sq += est * est;
  }
  const double mean = sum / kTrials, var = sq / kTrials - mean * mean;
  EXPECT_NEAR(mean, 20.5, 4 * std::sqrt(var / kTrials));  // mean of 1..40
}

TEST(LaborTest, ThreadsEdgeIdsAndMultiHopAgree) {
  CsrArrays g = testing::RandomGraph(3000, 60, 7, /*weighted=*/true, /*edge_ids=*/true);
  ThreadPool pool(3);
  for (bool weighted : {false, true}) {
    SamplingOptions so;
    so.labor = true;
    so.weighted = weighted;
    std::vector<int64_t> nodes(2500);
    std::iota(nodes.begin(), nodes.end(), 200);
    OneHopResult a, b;
    ASSERT_TRUE(SampleOneHop(g.View(), nodes, 7, 0, 5, so, nullptr, &a).ok());
    ASSERT_TRUE(SampleOneHop(g.View(), nodes, 7, 0, 5, so, &pool, &b).ok());
    EXPECT_EQ(std::vector<int64_t>(a.neighbors.begin(), a.neighbors.end()),
              std::vector<int64_t>(b.neighbors.begin(), b.neighbors.end()));
    EXPECT_EQ(std::vector<int64_t>(a.edge_ids.begin(), a.edge_ids.end()),
              std::vector<int64_t>(b.edge_ids.begin(), b.edge_ids.end()));
    EXPECT_EQ(std::vector<float>(a.edge_weights.begin(), a.edge_weights.end()),
              std::vector<float>(b.edge_weights.begin(), b.edge_weights.end()));
    // Every sampled edge id names the CSR edge it came from; zero weights never taken.
    for (size_t i = 0; i < nodes.size(); ++i)
      for (int64_t e = a.offsets[i]; e < a.offsets[i + 1]; ++e) {
        const int64_t v = nodes[i];
        const auto* begin = g.edge_ids.data() + g.indptr[v];
        const auto* end = g.edge_ids.data() + g.indptr[v + 1];
        const auto* at = std::find(begin, end, a.edge_ids[e]);
        ASSERT_NE(at, end);
        EXPECT_EQ(g.indices[at - g.edge_ids.data()], a.neighbors[e]);
        if (weighted) {
          EXPECT_GT(g.weights[at - g.edge_ids.data()], 0.0f);
        }
      }
  }
  // Multi-hop: LABOR reaches no more distinct nodes than neighbor sampling
  // on average here, and its batches carry one weight per edge.
  MultiHopOptions mo;
  mo.fanouts = {5, 5};
  mo.sampling.labor = true;
  MultiHopSampler labor(g.View(), mo);
  mo.sampling.labor = false;
  MultiHopSampler neighbor(g.View(), mo);
  int64_t labor_nodes = 0, neighbor_nodes = 0;
  std::vector<int64_t> seeds(300);
  std::iota(seeds.begin(), seeds.end(), 0);
  for (uint64_t s = 0; s < 20; ++s) {
    SampledSubgraph a, b;
    ASSERT_TRUE(labor.Sample(seeds, s, &a).ok());
    ASSERT_TRUE(neighbor.Sample(seeds, s, &b).ok());
    EXPECT_EQ(a.edge_weight.size(), a.row.size());
    EXPECT_TRUE(b.edge_weight.empty());
    labor_nodes += static_cast<int64_t>(a.n_id.size());
    neighbor_nodes += static_cast<int64_t>(b.n_id.size());
  }
  EXPECT_LT(labor_nodes, neighbor_nodes);
}

TEST(LaborTest, UnsupportedCombinationsAreRefusedByName) {
  CsrArrays g = LaborGraph();
  SamplingOptions so;
  so.labor = true;
  so.replace = true;
  OneHopResult r;
  std::vector<int64_t> nodes{0};
  Status st = SampleOneHop(g.View(), nodes, 5, 0, 1, so, nullptr, &r);
  EXPECT_THAT(st.message(), HasSubstr("replace"));
  MultiHopOptions mo;
  mo.sampling.labor = true;
  mo.edge_type_fanouts = {{2, 2, 2}};
  EXPECT_THAT(CheckMultiHopOptions(mo, true).message(), HasSubstr("heterogeneous"));
  mo.edge_type_fanouts.clear();
  EXPECT_THAT(CheckTemporalOptions(mo).message(), HasSubstr("temporal"));
  std::vector<int32_t> types(g.indices.size(), 0);
  std::vector<int64_t> tf{3};
  so.replace = false;
  st = SampleHeteroHop(g.View(), types.data(), nodes, tf, 0, 1, so, &r);
  EXPECT_THAT(st.message(), HasSubstr("heterogeneous"));
  // Out-of-range nodes are named.
  std::vector<int64_t> bad{44};
  st = SampleOneHop(g.View(), bad, 5, 0, 1, so, nullptr, &r);
  EXPECT_THAT(st.message(), HasSubstr("44"));
}

// Node 0: neighbors 5, 6, 7, 7 (a multi-edge); node 1: weights 1, 0, 3 over
// 5, 6, 7; node 2: none; node 3: one edge of weight 0.
CsrArrays WalkGraph() {
  CsrArrays g = CsrArrays::FromEdges(8, {0, 0, 0, 0, 1, 1, 1, 3}, {5, 6, 7, 7, 5, 6, 7, 4});
  g.weights = {1, 1, 1, 1, 1, 0, 3, 0};
  return g;
}

TEST(WalkStepTest, UniformAndWeightedStepsFollowTheirDistributions) {
  CsrArrays g = WalkGraph();
  constexpr int64_t kWalks = 30000;
  std::vector<int64_t> nodes(kWalks, 0);
  std::vector<uint64_t> keys(kWalks);
  for (int64_t w = 0; w < kWalks; ++w) keys[w] = WalkStepKey(11, static_cast<uint64_t>(w), 1);
  SamplingOptions so;
  OneHopResult r;
  ASSERT_TRUE(SampleWalkStep(g.View(), nodes, keys, so, &r).ok());
  ASSERT_EQ(r.offsets[kWalks], kWalks);
  std::map<int64_t, int64_t> c;
  for (int64_t v : r.neighbors) ++c[v];
  auto chi = [&](const std::map<int64_t, double>& p) {
    double x = 0;
    for (const auto& [v, q] : p) {
      const double e = kWalks * q, o = c.count(v) ? c.at(v) : 0;
      x += (o - e) * (o - e) / e;
    }
    return x;
  };
  EXPECT_LT(chi({{5, 0.25}, {6, 0.25}, {7, 0.5}}), 13.8);  // 2 dof, p = 0.001
  so.weighted = true;
  std::fill(nodes.begin(), nodes.end(), 1);
  ASSERT_TRUE(SampleWalkStep(g.View(), nodes, keys, so, &r).ok());
  c.clear();
  for (int64_t v : r.neighbors) ++c[v];
  EXPECT_EQ(c.count(6), 0u);                     // weight 0: never
  EXPECT_LT(chi({{5, 0.25}, {7, 0.75}}), 10.8);  // 1 dof
  // Dead ends: no edge, or only weight-0 edges (weighted).
  std::vector<int64_t> dead{2, 3};
  std::vector<uint64_t> two{1, 2};
  ASSERT_TRUE(SampleWalkStep(g.View(), dead, two, so, &r).ok());
  EXPECT_EQ(r.offsets[2], 0);
  so.weighted = false;
  ASSERT_TRUE(SampleWalkStep(g.View(), dead, two, so, &r).ok());
  EXPECT_EQ(r.offsets[1], 0);
  EXPECT_EQ(r.offsets[2], 1);
  EXPECT_EQ(r.neighbors[0], 4);
  // The key alone decides: walks at one node with different keys move apart.
  std::vector<int64_t> same{0, 0};
  ASSERT_TRUE(SampleWalkStep(g.View(), same, two, so, &r).ok());
  OneHopResult again;
  ASSERT_TRUE(SampleWalkStep(g.View(), same, two, so, &again).ok());
  EXPECT_EQ(std::vector<int64_t>(r.neighbors.begin(), r.neighbors.end()),
            std::vector<int64_t>(again.neighbors.begin(), again.neighbors.end()));
  // Refusals.
  std::vector<uint64_t> one{1};
  EXPECT_THAT(SampleWalkStep(g.View(), same, one, so, &r).message(), HasSubstr("walk keys"));
  std::vector<int64_t> bad{8};
  EXPECT_THAT(SampleWalkStep(g.View(), bad, one, so, &r).message(), HasSubstr("8"));
}

}  // namespace
}  // namespace fanout::sampler
