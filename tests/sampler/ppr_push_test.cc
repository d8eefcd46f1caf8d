// One PPR push round (sampler/ppr_push.h) against its definition: the
// fixed-point split, the shares summed per (query, node), a partition's node
// offset, the reply bound (done < entries), the override row of a live
// partition, and refusals naming what was wrong.
#include "sampler/ppr_push.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace fanout::sampler {
namespace {

using ::testing::HasSubstr;

// Rows of global nodes 10..13 (node offset 10): 10 -> {20, 21, 21}, 11 -> {20},
// 12 -> {} and 13 -> {10, 11, 20, 21}.
CsrArrays Rows() {
  CsrArrays g;
  g.indptr = {0, 3, 4, 4, 8};
  g.indices = {20, 21, 21, 20, 10, 11, 20, 21};
  return g;
}

std::map<std::pair<int32_t, int64_t>, uint64_t> Spread(const PprPushResult& r) {
  std::map<std::pair<int32_t, int64_t>, uint64_t> m;
  for (size_t j = 0; j < r.nodes.size(); ++j) {
    const auto key = std::make_pair(r.queries[j], r.nodes[j]);
    EXPECT_EQ(m.count(key), 0u) << "pair (" << key.first << ", " << key.second << ") twice";
    m[key] += r.mass[j];
  }
  return m;
}

TEST(PprPushTest, PushesSplitSumAndBoundAsDefined) {
  const CsrArrays g = Rows();
  const uint64_t alpha = PprAlphaFixed(0.25), eps = PprEpsFixed(1e-3);
  EXPECT_EQ(alpha, uint64_t{1} << 30);
  EXPECT_EQ(PprKept(kPprOne, alpha), kPprOne / 4);
  const uint64_t half = kPprOne / 2;
  // Query 0 pushes node 10 (mass 1) and node 11 (mass 1/2); query 1 pushes
  // node 13 (1/2); query 1's node 12 has an empty row; query 0's node 13
  // holds too little (eps * 4 is over it).
  const std::vector<int32_t> q = {0, 0, 1, 1, 0};
  const std::vector<int64_t> v = {10, 11, 13, 12, 13};
  const std::vector<uint64_t> r = {kPprOne, half, half, half, PprEpsFixed(1e-3) * 3};
  PprPushRequest in{q, v, r, alpha, eps};
  PprPushResult out;
  detail::IdMap map;
  ASSERT_TRUE(PprPushRound(g.View(), 10, in, 1000, &out, &map).ok());
  EXPECT_EQ(out.done, 5u);
  EXPECT_EQ(out.pushed, (std::vector<uint8_t>{1, 1, 1, 1, 0}));
  EXPECT_EQ(out.degrees, (std::vector<int64_t>{3, 1, 4, 0, 4}));
  const uint64_t s10 = (kPprOne - PprKept(kPprOne, alpha)) / 3;
  const uint64_t s11 = half - PprKept(half, alpha);
  const uint64_t s13 = (half - PprKept(half, alpha)) / 4;
  std::map<std::pair<int32_t, int64_t>, uint64_t> want = {
      {{0, 20}, s10 + s11}, {{0, 21}, 2 * s10},  // a repeated neighbor gets a share per entry
      {{1, 10}, s13},       {{1, 11}, s13},     {{1, 20}, s13}, {{1, 21}, s13}};
  EXPECT_EQ(Spread(out), want);

  // A reply bound of 4 pairs: the first entry's 2 pairs fit, the second's
  // one more, the third's 4 would not: done = 2, and the rest gives the same
  // sums when sent again.
  PprPushResult part;
  ASSERT_TRUE(PprPushRound(g.View(), 10, in, 4, &part, &map).ok());
  EXPECT_EQ(part.done, 2u);
  EXPECT_EQ(part.pushed.size(), 2u);
  PprPushRequest rest{ArrayView<const int32_t>(q.data() + 2, 3),
                      ArrayView<const int64_t>(v.data() + 2, 3),
                      ArrayView<const uint64_t>(r.data() + 2, 3), alpha, eps};
  PprPushResult tail;
  ASSERT_TRUE(PprPushRound(g.View(), 10, rest, 4, &tail, &map).ok());
  EXPECT_EQ(tail.done, 3u);
  auto merged = Spread(part);
  for (const auto& [k, m] : Spread(tail)) merged[k] += m;
  EXPECT_EQ(merged, want);

  // A live partition's changed row replaces the CSR's.
  PprRowOverride changed = [](int64_t node, std::vector<int64_t>* row) {
    if (node != 11) return false;
    *row = {30, 31};
    return true;
  };
  PprPushRequest one{ArrayView<const int32_t>(q.data() + 1, 1),
                     ArrayView<const int64_t>(v.data() + 1, 1),
                     ArrayView<const uint64_t>(r.data() + 1, 1), alpha, eps};
  ASSERT_TRUE(PprPushRound(g.View(), 10, one, 1000, &out, &map, &changed).ok());
  EXPECT_EQ(out.degrees, (std::vector<int64_t>{2}));
  EXPECT_EQ(Spread(out), (std::map<std::pair<int32_t, int64_t>, uint64_t>{{{0, 30}, s11 / 2},
                                                                          {{0, 31}, s11 / 2}}));
}

TEST(PprPushTest, BadRequestsAreRefusedByName) {
  const CsrArrays g = Rows();
  PprPushResult out;
  detail::IdMap map;
  const std::vector<int32_t> q = {0};
  const std::vector<int64_t> v = {10}, far = {14}, two = {10, 11};
  const std::vector<uint64_t> r = {kPprOne};
  const uint64_t a = PprAlphaFixed(0.15), e = PprEpsFixed(1e-4);
  auto run = [&](PprPushRequest in, size_t max_out = 100) {
    return PprPushRound(g.View(), 10, in, max_out, &out, &map).message();
  };
  EXPECT_THAT(run({q, two, r, a, e}), HasSubstr("2 nodes, 1 query ids and 1 residuals"));
  EXPECT_THAT(run({q, far, r, a, e}), HasSubstr("PPR node 14"));
  const std::vector<int32_t> bad_q = {kMaxPprQueries};
  EXPECT_THAT(run({bad_q, v, r, a, e}), HasSubstr("query 4194304"));
  EXPECT_THAT(run({q, v, r, 0, e}), HasSubstr("alpha"));
  EXPECT_THAT(run({q, v, r, uint64_t{1} << 32, e}), HasSubstr("alpha"));
  EXPECT_THAT(run({q, v, r, a, 0}), HasSubstr("eps"));
  EXPECT_THAT(run({q, v, r, a, e}, 2), HasSubstr("row of 3 neighbors is over the reply's limit"));
  EXPECT_EQ(PprAlphaFixed(1e-12), 1u);
  EXPECT_EQ(PprEpsFixed(1e-30), 1u);
}

}  // namespace
}  // namespace fanout::sampler
