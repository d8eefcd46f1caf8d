// Temporal sampling: no sampled edge is later than its seed's time (property
// test over many seeds), disjoint trees, the two strategies, uniformity,
// errors.
#include "sampler/temporal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "common/random.h"
#include "sampler/detail/sample_row.h"
#include "tests/sampler/test_graphs.h"

namespace fanout::sampler {
namespace {

using ::testing::HasSubstr;
using testing::RandomGraph;

std::vector<int64_t> RandomTimes(int64_t n, int64_t range, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<int64_t> t(n);
  for (auto& x : t) x = static_cast<int64_t>(DrawBelow(rng.Next(), static_cast<uint64_t>(range)));
  return t;
}

TEST(TemporalTest, NoSampledEdgeIsLaterThanItsSeedAndTreesStayDisjoint) {
  CsrArrays g = RandomGraph(400, 25, 3);  // edge id = CSR position
  std::vector<int64_t> et = RandomTimes(g.num_edges(), 1000, 4);
  for (TemporalStrategy strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
    MultiHopOptions o;
    o.fanouts = {5, 3, -1};
    o.temporal_strategy = strategy;
    TemporalSampler sampler(g.View(), et.data(), o);
    int64_t edges = 0;
    for (uint64_t rs = 0; rs < 60; ++rs) {
      SplitMix64 rng(rs);
      std::vector<int64_t> seeds(40), times(40);
      for (int i = 0; i < 40; ++i) {
        seeds[i] = static_cast<int64_t>(DrawBelow(rng.Next(), 400));
        times[i] = static_cast<int64_t>(DrawBelow(rng.Next(), 1100));
      }
      seeds[7] = seeds[3];  // a repeated seed is its own tree
      SampledSubgraph out;
      ASSERT_TRUE(sampler.Sample(seeds, times, rs, &out).ok());
      ASSERT_EQ(out.batch.size(), out.n_id.size());
      std::set<std::pair<int64_t, int64_t>> seen;
      for (size_t k = 0; k < out.n_id.size(); ++k) {
        EXPECT_TRUE(seen.insert({out.batch[k], out.n_id[k]}).second || k < 40)
            << "a node twice in one tree";
        if (k < 40) {
          EXPECT_EQ(out.batch[k], static_cast<int64_t>(k));
        }
      }
      for (size_t e = 0; e < out.row.size(); ++e) {
        const int64_t tree = out.batch[out.col[e]];
        EXPECT_EQ(out.batch[out.row[e]], tree);
        const int64_t pos = out.edge_id[e];
        EXPECT_LE(et[pos], times[tree]) << "edge " << pos << " is later than its seed";
        // It is an edge of the target's row.
        const int64_t target = out.n_id[out.col[e]];
        EXPECT_TRUE(pos >= g.indptr[target] && pos < g.indptr[target + 1]);
        EXPECT_EQ(g.indices[pos], out.n_id[out.row[e]]);
        ++edges;
      }
    }
    EXPECT_GT(edges, 1000);
  }
}

TEST(TemporalTest, StrategiesPickTheRightEdges) {
  CsrArrays g = RandomGraph(200, 40, 9);
  std::vector<int64_t> et = RandomTimes(g.num_edges(), 50, 10);  // many equal times
  std::vector<int64_t> nodes, times, order;
  for (int64_t v = 0; v < 200; ++v) nodes.push_back(v), times.push_back(v % 60);
  BuildTimeOrder(g.View(), et.data(), &order);
  OneHopResult all, last, uni;
  SampleTemporalHop(g.View(), et.data(), order.data(), 0, nodes, times, -1, 0, 1,
                    TemporalStrategy::kUniform, true, &all);
  SampleTemporalHop(g.View(), et.data(), order.data(), 0, nodes, times, 4, 0, 1,
                    TemporalStrategy::kLast, true, &last);
  SampleTemporalHop(g.View(), et.data(), order.data(), 0, nodes, times, 4, 0, 1,
                    TemporalStrategy::kUniform, true, &uni);
  for (int64_t v = 0; v < 200; ++v) {
    std::vector<int64_t> eligible;
    for (int64_t e = g.indptr[v]; e < g.indptr[v + 1]; ++e)
      if (et[e] <= times[v]) eligible.push_back(e);
    std::vector<int64_t> got(all.edge_ids.begin() + all.offsets[v],
                             all.edge_ids.begin() + all.offsets[v + 1]);
    EXPECT_EQ(got, eligible) << "fanout -1: every eligible edge, stored order";
    // last: the 4 latest (later position first among equal times), in stored order.
    std::vector<int64_t> want = eligible;
    std::sort(want.begin(), want.end(),
              [&](int64_t a, int64_t b) { return et[a] != et[b] ? et[a] > et[b] : a > b; });
    if (want.size() > 4) want.resize(4);
    std::sort(want.begin(), want.end());
    std::vector<int64_t> l(last.edge_ids.begin() + last.offsets[v],
                           last.edge_ids.begin() + last.offsets[v + 1]);
    EXPECT_EQ(l, want) << "node " << v;
    std::vector<int64_t> u(uni.edge_ids.begin() + uni.offsets[v],
                           uni.edge_ids.begin() + uni.offsets[v + 1]);
    EXPECT_EQ(u.size(), std::min<size_t>(4, eligible.size()));
    EXPECT_TRUE(std::is_sorted(u.begin(), u.end()));
    for (int64_t e : u) EXPECT_TRUE(std::binary_search(eligible.begin(), eligible.end(), e));
  }
}

TEST(TemporalTest, UniformDrawsAreUniformOverTheEligibleEdges) {
  // One row of 12 edges; seed time 7: 8 eligible edges, 2 drawn. Times in
  // stored order, then shuffled (the time order differs from the stored one).
  std::vector<int64_t> rows(12, 0), cols;
  for (int64_t j = 0; j < 12; ++j) cols.push_back(j + 1);
  CsrArrays g = CsrArrays::FromEdges(13, rows, cols);
  for (int64_t mult : {1, 5}) {
    std::vector<int64_t> et(12);
    for (int64_t j = 0; j < 12; ++j) et[j] = (j * mult) % 12;
    std::vector<int64_t> order;
    BuildTimeOrder(g.View(), et.data(), &order);
    std::map<int64_t, int64_t> counts;
    const int trials = 8000;
    for (int s = 0; s < trials; ++s) {
      OneHopResult r;
      SampleTemporalHop(g.View(), et.data(), order.data(), 0, std::vector<int64_t>{0},
                        std::vector<int64_t>{7}, 2, 0, static_cast<uint64_t>(s),
                        TemporalStrategy::kUniform, true, &r);
      ASSERT_EQ(r.offsets[1], 2);
      ASSERT_LT(r.edge_ids[0], r.edge_ids[1]);  // distinct, stored order
      for (int64_t e : r.edge_ids) ++counts[e];
    }
    ASSERT_EQ(counts.size(), 8u);
    const double expected = 2.0 * trials / 8;
    double chi = 0;
    for (auto [e, c] : counts) {
      EXPECT_LE(et[e], 7);
      chi += (c - expected) * (c - expected) / expected;
    }
    EXPECT_LT(chi, 24.3) << "times x" << mult;  // chi-square(7) at 0.999
  }
}

// Rows stored in time order need no index: the same draws as with one.
TEST(TemporalTest, RowsInTimeOrderNeedNoIndexAndDrawTheSame) {
  CsrArrays g = RandomGraph(300, 30, 12);
  std::vector<int64_t> et = RandomTimes(g.num_edges(), 40, 13);  // ties
  EXPECT_FALSE(RowsSortedByTime(g.View(), et.data()));
  for (int64_t v = 0; v < g.num_nodes();
       ++v) {  // sort each row by time (stable), moving the neighbors along
    std::vector<std::pair<int64_t, int64_t>> row;
    for (int64_t e = g.indptr[v]; e < g.indptr[v + 1]; ++e) row.emplace_back(et[e], g.indices[e]);
    std::stable_sort(row.begin(), row.end(), [](auto a, auto b) { return a.first < b.first; });
    for (int64_t e = g.indptr[v]; e < g.indptr[v + 1]; ++e)
      et[e] = row[e - g.indptr[v]].first, g.indices[e] = row[e - g.indptr[v]].second;
  }
  ASSERT_TRUE(RowsSortedByTime(g.View(), et.data()));
  std::vector<int64_t> order, nodes, times;
  BuildTimeOrder(g.View(), et.data(), &order);
  for (int64_t v = 0; v < 300; ++v) nodes.push_back(v), times.push_back((v * 7) % 45);
  for (auto strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
    OneHopResult a, b;
    SampleTemporalHop(g.View(), et.data(), nullptr, 0, nodes, times, 5, 1, 77, strategy, true, &a);
    SampleTemporalHop(g.View(), et.data(), order.data(), 0, nodes, times, 5, 1, 77, strategy, true,
                      &b);
    EXPECT_EQ(std::vector<int64_t>(a.offsets.begin(), a.offsets.end()),
              std::vector<int64_t>(b.offsets.begin(), b.offsets.end()));
    EXPECT_EQ(std::vector<int64_t>(a.edge_ids.begin(), a.edge_ids.end()),
              std::vector<int64_t>(b.edge_ids.begin(), b.edge_ids.end()));
  }
}

TEST(TemporalTest, BadInputGivesClearErrors) {
  CsrArrays g = RandomGraph(50, 5, 1);
  std::vector<int64_t> et(g.num_edges(), 0);
  MultiHopOptions o;
  o.fanouts = {3};
  TemporalSampler s(g.View(), et.data(), o);
  SampledSubgraph out;
  EXPECT_THAT(s.Sample(std::vector<int64_t>{1, 2}, std::vector<int64_t>{5}, 0, &out).message(),
              HasSubstr("one time per seed"));
  EXPECT_THAT(s.Sample(std::vector<int64_t>{50}, std::vector<int64_t>{5}, 0, &out).message(),
              HasSubstr("50"));
  o.sampling.replace = true;
  EXPECT_THAT(CheckTemporalOptions(o).message(), HasSubstr("without replacement"));
  o.sampling.replace = false;
  o.induced = true;
  EXPECT_THAT(CheckTemporalOptions(o).message(), HasSubstr("induced"));
  TemporalStrategy t;
  EXPECT_THAT(ParseTemporalStrategy("first", &t).message(),
              HasSubstr("'first' is not uniform or last"));
  TemporalSampler none(g.View(), nullptr, MultiHopOptions{});
  EXPECT_THAT(none.Sample(std::vector<int64_t>{1}, std::vector<int64_t>{5}, 0, &out).message(),
              HasSubstr("needs edge timestamps"));
}

}  // namespace
}  // namespace fanout::sampler

namespace fanout::sampler::detail {
namespace {

// The textbook Floyd (an O(k^2) membership scan), as the temporal hop had it:
// the one shared FloydSample gives the same positions in the same order.
std::vector<int64_t> TextbookFloyd(int64_t degree, int64_t k, uint64_t key) {
  std::vector<int64_t> out;
  for (int64_t j = degree - k; j < degree; ++j) {
    int64_t r = static_cast<int64_t>(
        DrawBelow(Draw(key, static_cast<uint64_t>(j)), static_cast<uint64_t>(j + 1)));
    bool taken = false;
    for (int64_t c : out) taken |= c == r;
    out.push_back(taken ? j : r);
  }
  return out;
}

TEST(FloydSampleTest, EqualsTheTextbookAlgorithmDrawForDrawForSmallAndLargeK) {
  RowScratch scratch;
  for (int64_t degree : {1, 2, 7, 40, 64, 65, 200, 5000})
    for (int64_t k :
         {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{32}, int64_t{33}, degree / 2, degree}) {
      if (k > degree) continue;
      for (uint64_t key = 1; key < 40; ++key) {
        std::vector<int64_t> got(static_cast<size_t>(k));
        FloydSample(degree, k, Mix64(key * 977 + static_cast<uint64_t>(degree)), got.data(),
                    &scratch);
        ASSERT_EQ(got, TextbookFloyd(degree, k, Mix64(key * 977 + static_cast<uint64_t>(degree))))
            << "degree " << degree << " k " << k << " key " << key;
      }
    }
  // The scratch bitmap is left clear for the next row.
  for (uint64_t w : scratch.bits) ASSERT_EQ(w, 0u);
}

}  // namespace
}  // namespace fanout::sampler::detail
