// Statistical tests of the samplers. Each uses fixed seeds and rejects at the
// 1e-6 significance level: a correct sampler fails fewer than once in 10^6
// runs with fresh seeds (and, with these fixed seeds, deterministically
// passes).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <vector>

#include "sampler/neighbor_sampler.h"

namespace fanout::sampler {
namespace {

// Upper 1e-6 quantile of chi-square with `df` degrees of freedom
// (Wilson-Hilferty; within a few percent for df >= 5).
double ChiSquareCritical(int df) {
  const double z = 4.753424;  // standard normal upper 1e-6 quantile
  double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3);
}

double ChiSquare(const std::vector<double>& observed, const std::vector<double>& expected) {
  double x = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    if (expected[i] == 0) {
      EXPECT_EQ(observed[i], 0) << "category " << i << " has zero probability but was drawn";
      continue;
    }
    x += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
  }
  return x;
}

// One node (0) with the given weights (unweighted if empty) and degree d.
CsrArrays Star(int64_t degree, std::vector<float> weights = {}) {
  CsrArrays g;
  g.indptr = {0, degree};
  g.indices.resize(degree);
  std::iota(g.indices.begin(), g.indices.end(), 1);
  g.indptr.resize(degree + 2, degree);  // nodes 1..degree have no edges
  g.weights = std::move(weights);
  return g;
}

// Calls fn(positions) for `trials` requests with distinct seeds.
void Trials(const CsrArrays& g, int64_t fanout, SamplingOptions o, int trials,
            const std::function<void(const std::vector<int64_t>&)>& fn) {
  o.with_edge_ids = true;
  OneHopResult r;
  for (int t = 0; t < trials; ++t) {
    ASSERT_TRUE(SampleOneHop(g.View(), std::vector<int64_t>{0}, fanout, 0, 1000003ULL * t + 17, o,
                             nullptr, &r)
                    .ok());
    fn(std::vector<int64_t>(r.edge_ids.begin(), r.edge_ids.end()));
  }
}

double CheckMarginals(const CsrArrays& g, int64_t fanout, SamplingOptions o, int trials,
                      const std::vector<double>& expected_per_trial) {
  int64_t d = g.indptr[1];
  std::vector<double> counts(d, 0);
  Trials(g, fanout, o, trials, [&](const std::vector<int64_t>& pos) {
    for (int64_t p : pos) counts[p]++;
  });
  std::vector<double> expected(d);
  int df = -1;
  for (int64_t i = 0; i < d; ++i) {
    expected[i] = expected_per_trial[i] * trials;
    df += expected[i] > 0;
  }
  double x = ChiSquare(counts, expected);
  EXPECT_LT(x, ChiSquareCritical(df))
      << "chi-square " << x << " with " << df << " degrees of freedom";
  return x;
}

TEST(SamplerStatsTest, UniformWithoutReplacementHasUniformMarginals) {
  for (auto [d, k] : {std::pair<int64_t, int64_t>{50, 5}, {200, 40}, {12, 11}}) {
    std::vector<double> p(d, static_cast<double>(k) / d);
    double x = CheckMarginals(Star(d), k, {}, 20000, p);
    std::printf(
        "uniform without replacement d=%lld k=%lld: chi-square %.1f (df %lld, critical %.1f)\n",
        static_cast<long long>(d), static_cast<long long>(k), x, static_cast<long long>(d - 1),
        ChiSquareCritical(static_cast<int>(d - 1)));
  }
}

TEST(SamplerStatsTest, UniformWithoutReplacementDrawsUniformSubsets) {
  // Every 2-subset of 8 edges equally likely (28 categories).
  const int64_t d = 8;
  std::map<std::pair<int64_t, int64_t>, double> counts;
  const int trials = 56000;
  Trials(Star(d), 2, {}, trials, [&](const std::vector<int64_t>& pos) {
    ASSERT_EQ(pos.size(), 2u);
    counts[{std::min(pos[0], pos[1]), std::max(pos[0], pos[1])}]++;
  });
  ASSERT_EQ(counts.size(), 28u);
  std::vector<double> obs, exp;
  for (auto& [key, c] : counts) {
    obs.push_back(c);
    exp.push_back(trials / 28.0);
  }
  EXPECT_LT(ChiSquare(obs, exp), ChiSquareCritical(27));
}

TEST(SamplerStatsTest, WithReplacementIsUniform) {
  SamplingOptions o;
  o.replace = true;
  std::vector<double> p(30, 10.0 / 30);
  CheckMarginals(Star(30), 10, o, 10000, p);
}

std::vector<float> TestWeights() {
  return {0.0f, 1.0f, 2.0f, 3.0f, 0.0f, 4.0f, 5.0f, 0.5f, 7.0f, 0.0f, 1.5f, 2.5f};
}

TEST(SamplerStatsTest, WeightedWithReplacementIsProportionalToWeight) {
  std::vector<float> w = TestWeights();
  double total = std::accumulate(w.begin(), w.end(), 0.0);
  std::vector<double> p(w.size());
  for (size_t i = 0; i < w.size(); ++i) p[i] = 10.0 * w[i] / total;
  SamplingOptions o;
  o.replace = o.weighted = true;
  CheckMarginals(Star(static_cast<int64_t>(w.size()), w), 10, o, 20000, p);
}

TEST(SamplerStatsTest, WeightedSingleDrawIsProportionalToWeight) {
  std::vector<float> w = TestWeights();
  double total = std::accumulate(w.begin(), w.end(), 0.0);
  std::vector<double> p(w.size());
  for (size_t i = 0; i < w.size(); ++i) p[i] = w[i] / total;
  SamplingOptions o;
  o.weighted = true;
  CheckMarginals(Star(static_cast<int64_t>(w.size()), w), 1, o, 50000, p);
}

// Inclusion probabilities of successive weighted draws without replacement.
void Inclusion(const std::vector<float>& w, std::vector<bool>& used, int k, double prob,
               std::vector<double>* pi) {
  if (k == 0) return;
  double rest = 0;
  for (size_t i = 0; i < w.size(); ++i)
    if (!used[i]) rest += w[i];
  for (size_t i = 0; i < w.size(); ++i) {
    if (used[i] || w[i] <= 0) continue;
    double p = prob * w[i] / rest;
    (*pi)[i] += p;
    used[i] = true;
    Inclusion(w, used, k - 1, p, pi);
    used[i] = false;
  }
}

TEST(SamplerStatsTest, WeightedWithoutReplacementMatchesSuccessiveDraws) {
  std::vector<float> w = {1.0f, 0.0f, 2.0f, 3.0f, 0.5f, 4.0f, 0.0f, 1.5f};
  std::vector<double> pi(w.size(), 0);
  std::vector<bool> used(w.size(), false);
  Inclusion(w, used, 3, 1.0, &pi);
  SamplingOptions o;
  o.weighted = true;
  CheckMarginals(Star(static_cast<int64_t>(w.size()), w), 3, o, 30000, pi);
}

}  // namespace
}  // namespace fanout::sampler
