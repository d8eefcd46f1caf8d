// Negative sampling: counts and shapes, strictness, uniformity over the
// non-edges (chi-square), the pure-function rule, errors.
#include "sampler/negative.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "common/random.h"
#include "tests/sampler/test_graphs.h"

namespace fanout::sampler {
namespace {

using ::testing::HasSubstr;
using testing::RandomGraph;

// The oracle of a graph stored "in": edge s -> d lives in row d.
EdgeOracle OracleOf(const CsrArrays& g, int64_t* calls = nullptr) {
  return [&g, calls](ArrayView<const int64_t> s, ArrayView<const int64_t> d, uint8_t* exists) {
    if (calls) ++*calls;
    for (size_t i = 0; i < s.size(); ++i) exists[i] = RowHasNeighbor(g.View(), d[i], s[i]);
    return Status::OK();
  };
}

std::set<std::pair<int64_t, int64_t>> EdgesOf(const CsrArrays& g) {
  std::set<std::pair<int64_t, int64_t>> e;
  for (int64_t d = 0; d < g.num_nodes(); ++d)
    for (int64_t k = g.indptr[d]; k < g.indptr[d + 1]; ++k) e.insert({g.indices[k], d});
  return e;
}

// Pearson's chi-square statistic of `counts` against a uniform expectation.
double ChiSquare(const std::map<std::pair<int64_t, int64_t>, int64_t>& counts, int64_t cells,
                 int64_t total) {
  const double expected = static_cast<double>(total) / cells;
  double chi = 0;
  int64_t seen = 0;
  for (const auto& [cell, c] : counts) {
    chi += (c - expected) * (c - expected) / expected;
    ++seen;
  }
  chi += static_cast<double>(cells - seen) * expected;  // cells never drawn
  return chi;
}

TEST(NegativeTest, CountsAndShapesFollowPyG) {
  NegativeOptions o;
  o.mode = NegativeMode::kBinary;
  o.amount = 0.5;
  EXPECT_EQ(NumNegatives(o, 7), 4);  // ceil(3.5)
  o.amount = 2;
  EXPECT_EQ(NumNegatives(o, 7), 14);
  o.mode = NegativeMode::kTriplet;
  o.amount = 3;
  EXPECT_EQ(NumNegatives(o, 7), 21);
  o.mode = NegativeMode::kNone;
  EXPECT_EQ(NumNegatives(o, 7), 0);

  CsrArrays g = RandomGraph(500, 8, 3);
  std::vector<int64_t> pos_src{4, 9, 9, 100};
  std::vector<int64_t> ns, nd;
  o.mode = NegativeMode::kTriplet;
  ASSERT_TRUE(SampleNegatives(o, pos_src, 500, 11, OracleOf(g), &ns, &nd).ok());
  EXPECT_TRUE(ns.empty());
  ASSERT_EQ(nd.size(), 12u);
  for (int64_t d : nd) EXPECT_TRUE(d >= 0 && d < 500);
  o.mode = NegativeMode::kBinary;
  o.amount = 1.5;
  ASSERT_TRUE(SampleNegatives(o, pos_src, 500, 11, OracleOf(g), &ns, &nd).ok());
  EXPECT_EQ(ns.size(), 6u);
  EXPECT_EQ(nd.size(), 6u);
}

TEST(NegativeTest, StrictNegativesAreNeverEdgesAndNonStrictOnesAreTheFirstDraws) {
  // Dense: 40 nodes, up to 30 in-neighbors each, so first draws often hit edges.
  CsrArrays g = RandomGraph(40, 30, 5);
  const auto edges = EdgesOf(g);
  for (NegativeMode mode : {NegativeMode::kBinary, NegativeMode::kTriplet}) {
    NegativeOptions strict, loose;
    strict.mode = loose.mode = mode;
    strict.amount = loose.amount = 3;
    loose.strict = false;
    int64_t hits_loose = 0, differ = 0;
    for (uint64_t seed = 0; seed < 200; ++seed) {
      std::vector<int64_t> pos_src{1, 2, 3, 3, 39};
      std::vector<int64_t> ss, sd, ls, ld;
      int64_t loose_calls = 0;
      ASSERT_TRUE(SampleNegatives(strict, pos_src, 40, seed, OracleOf(g), &ss, &sd).ok());
      ASSERT_TRUE(
          SampleNegatives(loose, pos_src, 40, seed, OracleOf(g, &loose_calls), &ls, &ld).ok());
      EXPECT_EQ(loose_calls, 0);  // non-strict never asks
      ASSERT_EQ(sd.size(), ld.size());
      for (size_t j = 0; j < sd.size(); ++j) {
        const int64_t s = mode == NegativeMode::kBinary ? ss[j] : pos_src[j / 3];
        const int64_t l = mode == NegativeMode::kBinary ? ls[j] : pos_src[j / 3];
        EXPECT_EQ(edges.count({s, sd[j]}), 0u)
            << "strict negative " << s << " -> " << sd[j] << " is an edge";
        const bool loose_edge = edges.count({l, ld[j]}) > 0;
        hits_loose += loose_edge;
        // Where the first draw was no edge, strict kept it.
        if (!loose_edge) {
          EXPECT_EQ(std::make_pair(s, sd[j]), std::make_pair(l, ld[j]));
        }
        differ += loose_edge;
      }
    }
    EXPECT_GT(hits_loose, 0) << "the dense graph should make some first draws edges";
    EXPECT_GT(differ, 0);
  }
}

TEST(NegativeTest, StrictNegativesAreUniformOverTheNonEdges) {
  // Triplet: source 0's destinations over the nodes that are not its
  // out-neighbors; binary: pairs over every (s, d) that is not an edge.
  CsrArrays g = RandomGraph(12, 5, 21);
  const auto edges = EdgesOf(g);
  NegativeOptions o;
  o.mode = NegativeMode::kTriplet;
  o.amount = 50;
  std::map<std::pair<int64_t, int64_t>, int64_t> counts;
  int64_t total = 0;
  for (uint64_t seed = 0; seed < 800; ++seed) {
    std::vector<int64_t> ns, nd;
    ASSERT_TRUE(SampleNegatives(o, std::vector<int64_t>{0}, 12, seed, OracleOf(g), &ns, &nd).ok());
    for (int64_t d : nd) ++counts[{0, d}], ++total;
  }
  int64_t cells = 0;
  for (int64_t d = 0; d < 12; ++d) cells += edges.count({0, d}) == 0;
  ASSERT_GE(cells, 5);
  ASSERT_LT(cells, 12);  // source 0 has out-edges: strictness matters
  EXPECT_EQ(static_cast<int64_t>(counts.size()), cells);
  // df = cells - 1 <= 11: the 0.999 quantile of chi-square(11) is 31.3.
  EXPECT_LT(ChiSquare(counts, cells, total), 31.3);

  o.mode = NegativeMode::kBinary;
  o.amount = 4;
  counts.clear();
  total = 0;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    std::vector<int64_t> ns, nd;
    ASSERT_TRUE(
        SampleNegatives(o, std::vector<int64_t>{0, 1, 2, 3, 4}, 12, seed, OracleOf(g), &ns, &nd)
            .ok());
    for (size_t j = 0; j < nd.size(); ++j) ++counts[{ns[j], nd[j]}], ++total;
  }
  cells = 144 - static_cast<int64_t>(edges.size());
  EXPECT_EQ(static_cast<int64_t>(counts.size()), cells);
  for (const auto& [cell, c] : counts) EXPECT_EQ(edges.count(cell), 0u);
  // df = cells - 1 (about 110): mean df, sd sqrt(2 df); 0.999 quantile below df + 4.5 sd.
  const double df = static_cast<double>(cells - 1);
  EXPECT_LT(ChiSquare(counts, cells, total), df + 4.5 * std::sqrt(2 * df));
}

TEST(NegativeTest, NegativesAreAPureFunctionOfTheRequestSeed) {
  CsrArrays g = RandomGraph(300, 20, 8);
  NegativeOptions o;
  o.mode = NegativeMode::kBinary;
  o.amount = 2;
  std::vector<int64_t> pos_src{5, 6, 7, 8};
  std::vector<int64_t> a_s, a_d, b_s, b_d, c_s, c_d;
  ASSERT_TRUE(SampleNegatives(o, pos_src, 300, 42, OracleOf(g), &a_s, &a_d).ok());
  ASSERT_TRUE(SampleNegatives(o, pos_src, 300, 42, OracleOf(g), &b_s, &b_d).ok());
  ASSERT_TRUE(SampleNegatives(o, pos_src, 300, 43, OracleOf(g), &c_s, &c_d).ok());
  EXPECT_EQ(a_s, b_s);
  EXPECT_EQ(a_d, b_d);
  EXPECT_NE(a_d, c_d);
  // An oracle answering in pieces (as servers do, per partition) changes nothing.
  EdgeOracle split = [&g](ArrayView<const int64_t> s, ArrayView<const int64_t> d, uint8_t* exists) {
    for (size_t i = s.size(); i-- > 0;) exists[i] = RowHasNeighbor(g.View(), d[i], s[i]);
    return Status::OK();
  };
  ASSERT_TRUE(SampleNegatives(o, pos_src, 300, 42, split, &b_s, &b_d).ok());
  EXPECT_EQ(a_d, b_d);
}

// Temporal negatives over a random event stream: "active" destinations were
// first seen strictly before their positive's time (uniformly among those:
// every such destination drawn), "historical" ones were linked from the
// positive's source strictly before it and are not its own destination
// (else an active draw); a negative keeps its positive's source; without
// times the options are refused.
TEST(NegativeTest, TemporalNegativesNeverLookAheadAndHistoricalOnesAreEarlierLinks) {
  const int64_t events = 3000;  // 20 sources, 40 destinations (ids 20..59)
  SplitMix64 rng(17);
  std::vector<int64_t> src(events), dst(events), times(events);
  for (int64_t i = 0; i < events; ++i) {
    src[i] = static_cast<int64_t>(DrawBelow(rng.Next(), 20));
    dst[i] = 20 + static_cast<int64_t>(DrawBelow(rng.Next(), 40));
    times[i] = static_cast<int64_t>(DrawBelow(rng.Next(), 100000));
  }
  EdgeHistory h(src, dst, times);
  // First sight of each destination, and of each pair.
  std::map<int64_t, int64_t> first_dst;
  std::map<std::pair<int64_t, int64_t>, int64_t> first_pair;
  for (int64_t i = 0; i < events; ++i) {
    auto a = first_dst.emplace(dst[i], times[i]).first;
    a->second = std::min(a->second, times[i]);
    auto b = first_pair.emplace(std::pair{src[i], dst[i]}, times[i]).first;
    b->second = std::min(b->second, times[i]);
  }
  for (int64_t t : {int64_t{0}, int64_t{500}, int64_t{50000}, int64_t{200000}}) {
    int64_t want = 0;
    for (auto [d, ft] : first_dst) want += ft < t;
    ASSERT_EQ(h.ActiveBefore(t), want) << t;
    for (int64_t k = 0; k < want; ++k) EXPECT_LT(first_dst.at(h.Active(k)), t);
    auto [b, e] = h.LinkedBefore(3, t);
    int64_t linked = 0;
    for (auto [pair, ft] : first_pair) linked += pair.first == 3 && ft < t;
    ASSERT_EQ(e - b, linked) << t;
    for (int64_t k = b; k < e; ++k) EXPECT_LT((first_pair.at({3, h.Linked(k)})), t);
  }
  // A batch of positives: the events 0..199 (their own times).
  const int64_t p = 200;
  std::vector<int64_t> ps(src.begin(), src.begin() + p), pd(dst.begin(), dst.begin() + p),
      pt(times.begin(), times.begin() + p);
  TemporalPositives pos{&h, pd, pt};
  const NodeRanges srcs({{0, 20}}), dsts({{20, 60}});
  // No edge at all exists in the oracle: strict active draws stand.
  EdgeOracle none = [](ArrayView<const int64_t> s, ArrayView<const int64_t>, uint8_t* exists) {
    std::fill(exists, exists + s.size(), 0);
    return Status::OK();
  };
  for (auto mode : {NegativeMode::kBinary, NegativeMode::kTriplet}) {
    for (auto temporal : {TemporalNegatives::kActive, TemporalNegatives::kHistorical}) {
      NegativeOptions o;
      o.mode = mode;
      o.amount = 3;
      o.temporal = temporal;
      std::set<int64_t> seen_early;
      int64_t historical = 0;
      for (uint64_t seed = 0; seed < 20; ++seed) {
        std::vector<int64_t> ns, nd;
        ASSERT_TRUE(SampleNegatives(o, ps, srcs, dsts, seed, none, &ns, &nd, &pos).ok());
        ASSERT_EQ(static_cast<int64_t>(nd.size()), 3 * p);
        for (int64_t j = 0; j < 3 * p; ++j) {
          const int64_t i = mode == NegativeMode::kBinary ? j % p : j / 3;
          if (mode == NegativeMode::kBinary) ASSERT_EQ(ns[j], ps[i]);
          const int64_t d = nd[j], t = pt[i];
          ASSERT_GE(d, 20);
          const bool any_active = h.ActiveBefore(t) > 0;
          if (any_active) {
            ASSERT_LT(first_dst.at(d), t) << "negative " << d << " first seen at or after " << t;
          }
          if (temporal == TemporalNegatives::kHistorical) {
            auto it = first_pair.find({ps[i], d});
            if (it != first_pair.end() && it->second < t && d != pd[i]) ++historical;
          }
          if (t > 60000 && temporal == TemporalNegatives::kActive) seen_early.insert(d);
        }
      }
      if (temporal == TemporalNegatives::kActive)
        EXPECT_GE(seen_early.size(), 35u);  // uniform over the (nearly all) active ones
      else
        EXPECT_GT(historical, 20 * 3 * p / 2);  // most sources have earlier links
    }
  }
  // Refusals: no positives' times.
  NegativeOptions o;
  o.mode = NegativeMode::kBinary;
  o.temporal = TemporalNegatives::kActive;
  std::vector<int64_t> ns, nd;
  EXPECT_THAT(SampleNegatives(o, ps, srcs, dsts, 0, none, &ns, &nd).message(),
              HasSubstr("edge_label_time"));
  TemporalNegatives t;
  EXPECT_THAT(ParseTemporalNegatives("recent", &t).message(),
              HasSubstr("'recent' is not none, active or historical"));
}

TEST(NegativeTest, BadOptionsAndImpossibleStrictnessGiveClearErrors) {
  NegativeOptions o;
  o.mode = NegativeMode::kBinary;
  o.amount = 0;
  EXPECT_THAT(CheckNegativeOptions(o).message(), HasSubstr("amount must be > 0"));
  o.amount = NAN;
  EXPECT_FALSE(CheckNegativeOptions(o).ok());
  o.mode = NegativeMode::kTriplet;
  o.amount = 1.5;
  EXPECT_THAT(CheckNegativeOptions(o).message(), HasSubstr("integer amount"));
  o.amount = 1;
  o.max_draws = 0;
  EXPECT_THAT(CheckNegativeOptions(o).message(), HasSubstr("max_draws"));
  NegativeMode m;
  EXPECT_THAT(ParseNegativeMode("pairs", &m).message(),
              HasSubstr("'pairs' is not none, binary or triplet"));
  ASSERT_TRUE(ParseNegativeMode("triplet", &m).ok());
  EXPECT_EQ(m, NegativeMode::kTriplet);

  // A complete graph has no non-edge: strict sampling gives up and says why.
  std::vector<int64_t> rows, cols;
  for (int64_t s = 0; s < 6; ++s)
    for (int64_t d = 0; d < 6; ++d) rows.push_back(d), cols.push_back(s);
  CsrArrays full = CsrArrays::FromEdges(6, rows, cols);
  o.max_draws = 100;
  std::vector<int64_t> ns, nd;
  Status st = SampleNegatives(o, std::vector<int64_t>{2}, 6, 1, OracleOf(full), &ns, &nd);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_THAT(st.message(), HasSubstr("source node 2"));
  EXPECT_THAT(st.message(), HasSubstr("strict=false"));
  // An oracle error comes back as it is.
  EdgeOracle failing = [](ArrayView<const int64_t>, ArrayView<const int64_t>, uint8_t*) {
    return Status::Unavailable("server 10.0.0.1:9000 is down");
  };
  EXPECT_THAT(SampleNegatives(o, std::vector<int64_t>{2}, 6, 1, failing, &ns, &nd).message(),
              HasSubstr("is down"));
  EXPECT_FALSE(SampleNegatives(o, std::vector<int64_t>{2}, 0, 1, OracleOf(full), &ns, &nd).ok());
}

}  // namespace
}  // namespace fanout::sampler
