// Temporal sampling: no sampled edge is later than its seed's time (property
// test over many seeds), disjoint trees, the two strategies, uniformity,
// errors.
#include "sampler/temporal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>
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

// A random graph whose rows are ordered by edge type (3 types, stable), with
// random times (ties) that are in no order within a type's run.
struct TypedTimedGraph {
  CsrArrays g;
  std::vector<int32_t> types;
  std::vector<int64_t> times;
};
TypedTimedGraph RandomTypedTimedGraph(uint64_t seed) {
  TypedTimedGraph t;
  t.g = RandomGraph(300, 40, seed);
  SplitMix64 rng(seed + 1);
  t.types.resize(t.g.num_edges());
  for (auto& x : t.types) x = static_cast<int32_t>(DrawBelow(rng.Next(), 3));
  for (int64_t v = 0; v < t.g.num_nodes(); ++v)
    std::stable_sort(t.types.begin() + t.g.indptr[v], t.types.begin() + t.g.indptr[v + 1]);
  t.times = RandomTimes(t.g.num_edges(), 60, seed + 2);
  return t;
}

// Heterogeneous temporal hops: per edge type, every edge not later than the
// node's time (fanout -1), exactly min(fanout, eligible of the type) of them,
// the latest ones for "last"; types ascending, stored order within a type;
// never a later edge; the same draws with a typed index and with runs stored
// in time order.
TEST(TemporalTest, HeteroTemporalHopsDrawEachTypeAmongItsEligibleEdges) {
  TypedTimedGraph t = RandomTypedTimedGraph(21);
  const CsrArrays& g = t.g;
  EXPECT_FALSE(RowsSortedByTime(g.View(), t.times.data(), t.types.data()));
  std::vector<int64_t> order;
  BuildTimeOrder(g.View(), t.times.data(), &order, t.types.data());
  std::vector<int64_t> nodes, times;
  for (int64_t v = 0; v < 300; ++v) nodes.push_back(v), times.push_back((v * 13) % 70);
  const std::vector<int64_t> fanouts = {3, 0, -1};
  OneHopResult uni, last;
  ASSERT_TRUE(SampleHeteroTemporalHop(g.View(), t.types.data(), t.times.data(), order.data(), 0,
                                      nodes, times, fanouts, 1, 5, TemporalStrategy::kUniform, true,
                                      &uni)
                  .ok());
  ASSERT_TRUE(SampleHeteroTemporalHop(g.View(), t.types.data(), t.times.data(), order.data(), 0,
                                      nodes, times, fanouts, 1, 5, TemporalStrategy::kLast, true,
                                      &last)
                  .ok());
  int64_t drawn = 0;
  for (int64_t v = 0; v < 300; ++v) {
    for (int32_t type = 0; type < 3; ++type) {
      std::vector<int64_t> eligible;
      for (int64_t e = g.indptr[v]; e < g.indptr[v + 1]; ++e)
        if (t.types[e] == type && t.times[e] <= times[v]) eligible.push_back(e);
      const int64_t f = fanouts[type];
      const size_t want_count = f < 0 ? eligible.size() : std::min<size_t>(f, eligible.size());
      for (const OneHopResult* r : {&uni, &last}) {
        std::vector<int64_t> got;
        for (int64_t k = r->offsets[v]; k < r->offsets[v + 1]; ++k) {
          ASSERT_EQ(r->edge_types[k], t.types[r->edge_ids[k]]);
          ASSERT_EQ(r->neighbors[k], g.indices[r->edge_ids[k]]);
          if (r->edge_types[k] == type) got.push_back(r->edge_ids[k]);
        }
        ASSERT_EQ(got.size(), want_count) << "node " << v << " type " << type;
        EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
        for (int64_t e : got) {
          EXPECT_LE(t.times[e], times[v]) << "edge " << e << " looks ahead";
          EXPECT_TRUE(std::binary_search(eligible.begin(), eligible.end(), e));
        }
        if (r == &last) {
          std::vector<int64_t> want = eligible;
          std::sort(want.begin(), want.end(), [&](int64_t a, int64_t b) {
            return t.times[a] != t.times[b] ? t.times[a] > t.times[b] : a > b;
          });
          want.resize(want_count);
          std::sort(want.begin(), want.end());
          EXPECT_EQ(got, want) << "node " << v << " type " << type;
        }
        drawn += static_cast<int64_t>(got.size());
      }
    }
    // Types ascending within the node's edges.
    EXPECT_TRUE(std::is_sorted(uni.edge_types.begin() + uni.offsets[v],
                               uni.edge_types.begin() + uni.offsets[v + 1]));
  }
  EXPECT_GT(drawn, 3000);
  // Each type's run stored in time order instead: no index, the same draws.
  TypedTimedGraph s = t;
  for (int64_t v = 0; v < s.g.num_nodes(); ++v) {
    std::vector<std::tuple<int32_t, int64_t, int64_t>> row;
    for (int64_t e = s.g.indptr[v]; e < s.g.indptr[v + 1]; ++e)
      row.emplace_back(s.types[e], s.times[e], e);
    std::stable_sort(row.begin(), row.end(), [](const auto& a, const auto& b) {
      return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b)
                                              : std::get<1>(a) < std::get<1>(b);
    });
    for (int64_t e = s.g.indptr[v]; e < s.g.indptr[v + 1]; ++e) {
      const auto& [ty, tm, from] = row[e - s.g.indptr[v]];
      s.types[e] = ty, s.times[e] = tm, s.g.indices[e] = t.g.indices[from];
    }
  }
  ASSERT_TRUE(RowsSortedByTime(s.g.View(), s.times.data(), s.types.data()));
  EXPECT_FALSE(RowsSortedByTime(s.g.View(), s.times.data()));  // not across types
  std::vector<int64_t> none;
  EXPECT_EQ(PrepareTimeOrder(s.g.View(), s.times.data(), &none, s.types.data()), nullptr);
  for (auto strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
    OneHopResult a, b;
    ASSERT_TRUE(SampleHeteroTemporalHop(t.g.View(), t.types.data(), t.times.data(), order.data(), 0,
                                        nodes, times, fanouts, 2, 9, strategy, false, &a)
                    .ok());
    ASSERT_TRUE(SampleHeteroTemporalHop(s.g.View(), s.types.data(), s.times.data(), nullptr, 0,
                                        nodes, times, fanouts, 2, 9, strategy, false, &b)
                    .ok());
    EXPECT_EQ(std::vector<int64_t>(a.offsets.begin(), a.offsets.end()),
              std::vector<int64_t>(b.offsets.begin(), b.offsets.end()));
    // The same edges drawn (the k-th in time order is the same edge in both
    // layouts: ties keep their stored order), compared as (type, neighbor)
    // multisets per node since their stored positions differ.
    for (int64_t v = 0; v < 300; ++v) {
      std::multiset<std::pair<int32_t, int64_t>> x, y;
      for (int64_t k = a.offsets[v]; k < a.offsets[v + 1]; ++k)
        x.insert({a.edge_types[k], a.neighbors[k]});
      for (int64_t k = b.offsets[v]; k < b.offsets[v + 1]; ++k)
        y.insert({b.edge_types[k], b.neighbors[k]});
      EXPECT_EQ(x, y) << "node " << v;
    }
  }
  // The multi-hop sampler: disjoint trees, types on every edge, none later
  // than its tree's seed; a typed graph without per-type fanouts is refused.
  MultiHopOptions o;
  o.edge_type_fanouts = {{2, 1}, {0, 2}, {3, -1}};
  o.fanouts = {5, -1};
  o.sampling.with_edge_ids = true;
  TemporalSampler sampler(g.View(), t.times.data(), t.types.data(), o);
  SampledSubgraph out;
  std::vector<int64_t> seeds = {5, 17, 17, 250}, seed_times = {30, 45, 10, 69};
  ASSERT_TRUE(sampler.Sample(seeds, seed_times, 4, &out).ok());
  ASSERT_EQ(out.edge_type.size(), out.row.size());
  ASSERT_GT(out.row.size(), 10u);
  for (size_t e = 0; e < out.row.size(); ++e) {
    const int64_t tree = out.batch[out.col[e]];
    EXPECT_EQ(out.batch[out.row[e]], tree);
    EXPECT_EQ(t.types[out.edge_id[e]], out.edge_type[e]);
    EXPECT_LE(t.times[out.edge_id[e]], seed_times[tree]);
  }
  MultiHopOptions plain;
  plain.fanouts = {3};
  TemporalSampler untyped(g.View(), t.times.data(), t.types.data(), plain);
  EXPECT_THAT(untyped.Sample(seeds, seed_times, 4, &out).message(),
              HasSubstr("give per-edge-type fanouts"));
  OneHopResult r;
  EXPECT_THAT(SampleHeteroTemporalHop(g.View(), t.types.data(), t.times.data(), order.data(), 0,
                                      std::vector<int64_t>{300}, std::vector<int64_t>{1}, fanouts,
                                      0, 1, TemporalStrategy::kUniform, false, &r)
                  .message(),
              HasSubstr("300"));
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
