#include "sampler/multihop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "common/random.h"
#include "sampler/detail/id_map.h"
#include "tests/sampler/test_graphs.h"

namespace fanout::sampler {
namespace {

using ::testing::HasSubstr;
using testing::RandomGraph;

std::vector<int64_t> Std(const PodVector<int64_t>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

// Brute-force reference: per frontier node, a single-node one-hop request
// (the pure-function rule says it must equal the batched sample), then
// dedupe with a std::map, following the documented semantics literally.
SampledSubgraph Reference(const CsrArrays& g, const std::vector<int64_t>& seeds,
                          const MultiHopOptions& opts, uint64_t seed) {
  SampledSubgraph out;
  std::map<int64_t, int64_t> local;
  out.batch_size = static_cast<int64_t>(seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i) {
    out.n_id.push_back(seeds[i]);
    local.emplace(seeds[i], static_cast<int64_t>(i));  // keeps the first position
  }
  out.num_sampled_nodes.push_back(out.batch_size);
  size_t begin = 0, end = seeds.size();
  for (size_t h = 0; h < opts.fanouts.size(); ++h) {
    int64_t edges = 0;
    for (size_t f = begin; f < end; ++f) {
      OneHopResult r;
      Status st = SampleOneHop(g.View(), std::vector<int64_t>{out.n_id[f]}, opts.fanouts[h],
                               static_cast<int64_t>(h), seed, opts.sampling, nullptr, &r);
      EXPECT_TRUE(st.ok()) << st.ToString();
      for (size_t e = 0; e < r.neighbors.size(); ++e) {
        int64_t v = r.neighbors[e];
        auto it = local.find(v);
        if (it == local.end()) {
          it = local.emplace(v, static_cast<int64_t>(out.n_id.size())).first;
          out.n_id.push_back(v);
        }
        out.row.push_back(it->second);
        out.col.push_back(static_cast<int64_t>(f));
        if (opts.sampling.with_edge_ids) out.edge_id.push_back(r.edge_ids[e]);
        ++edges;
      }
    }
    out.num_sampled_edges.push_back(edges);
    out.num_sampled_nodes.push_back(static_cast<int64_t>(out.n_id.size() - end));
    begin = end;
    end = out.n_id.size();
  }
  return out;
}

void ExpectEqual(const SampledSubgraph& a, const SampledSubgraph& b) {
  EXPECT_EQ(a.batch_size, b.batch_size);
  EXPECT_EQ(Std(a.n_id), Std(b.n_id));
  EXPECT_EQ(Std(a.row), Std(b.row));
  EXPECT_EQ(Std(a.col), Std(b.col));
  EXPECT_EQ(Std(a.edge_id), Std(b.edge_id));
  EXPECT_EQ(a.num_sampled_nodes, b.num_sampled_nodes);
  EXPECT_EQ(a.num_sampled_edges, b.num_sampled_edges);
}

// Every edge's local indices point at n_id positions holding the edge's
// endpoints: n_id[row] is the neighbor stored at the edge's CSR position,
// which lies in the row of node n_id[col].
void ExpectEdgesPointIntoNid(const CsrArrays& g, const SampledSubgraph& s) {
  ASSERT_EQ(s.row.size(), s.col.size());
  ASSERT_EQ(s.row.size(), s.edge_id.size());
  for (size_t e = 0; e < s.row.size(); ++e) {
    ASSERT_GE(s.row[e], 0);
    ASSERT_LT(s.row[e], static_cast<int64_t>(s.n_id.size()));
    ASSERT_LT(s.col[e], static_cast<int64_t>(s.n_id.size()));
    int64_t pos = s.edge_id[e];  // graphs here have edge id = CSR position
    int64_t target = s.n_id[s.col[e]];
    EXPECT_GE(pos, g.indptr[target]);
    EXPECT_LT(pos, g.indptr[target + 1]);
    EXPECT_EQ(g.indices[pos], s.n_id[s.row[e]]);
  }
}

std::vector<int64_t> RandomSeeds(int64_t count, int64_t n, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<int64_t> s(count);
  for (auto& v : s) v = static_cast<int64_t>(DrawBelow(rng.Next(), n));
  return s;
}

TEST(MultiHopSamplerTest, EqualsBruteForceReferenceIncludingRepeatedSeeds) {
  for (uint64_t gseed : {1, 2, 3}) {
    CsrArrays g = RandomGraph(300, 25, gseed);
    for (auto fanouts : {std::vector<int64_t>{5, 3}, {15, 10, 5}, {-1, 2}, {0, 4}, {40}}) {
      MultiHopOptions opts;
      opts.fanouts = fanouts;
      MultiHopSampler sampler(g.View(), opts);
      for (uint64_t s = 0; s < 4; ++s) {
        // 64 seeds out of 300 nodes: repeats are certain.
        std::vector<int64_t> seeds = RandomSeeds(64, g.num_nodes(), s * 77 + gseed);
        SampledSubgraph got;
        ASSERT_TRUE(sampler.Sample(seeds, s, &got).ok());
        ExpectEqual(got, Reference(g, seeds, opts, s));
        ExpectEdgesPointIntoNid(g, got);
        EXPECT_EQ(Std(got.n_id).size() >= seeds.size(), true);
        EXPECT_EQ(std::vector<int64_t>(got.n_id.begin(), got.n_id.begin() + 64), seeds);
      }
    }
  }
}

TEST(MultiHopSamplerTest, ReplacementAndWeightedModesEqualReference) {
  CsrArrays g = RandomGraph(200, 20, 9, /*weighted=*/true);
  for (bool replace : {false, true}) {
    for (bool weighted : {false, true}) {
      MultiHopOptions opts;
      opts.fanouts = {6, 4};
      opts.sampling.replace = replace;
      opts.sampling.weighted = weighted;
      MultiHopSampler sampler(g.View(), opts);
      std::vector<int64_t> seeds = RandomSeeds(50, g.num_nodes(), 5);
      SampledSubgraph got;
      ASSERT_TRUE(sampler.Sample(seeds, 8, &got).ok());
      ExpectEqual(got, Reference(g, seeds, opts, 8));
      ExpectEdgesPointIntoNid(g, got);
    }
  }
}

TEST(MultiHopSamplerTest, OutputDoesNotDependOnThreadCountOrRuns) {
  CsrArrays g = RandomGraph(20000, 40, 4);
  MultiHopOptions opts;
  std::vector<int64_t> seeds = RandomSeeds(1024, g.num_nodes(), 6);
  ThreadPool pool(1);
  MultiHopSampler one(g.View(), opts), two(g.View(), opts, &pool);
  SampledSubgraph a, b, c;
  ASSERT_TRUE(one.Sample(seeds, 123, &a).ok());
  ASSERT_TRUE(two.Sample(seeds, 123, &b).ok());
  ExpectEqual(a, b);
  // Reusing a sampler (and its buffers) after other batches changes nothing.
  ASSERT_TRUE(one.Sample(RandomSeeds(1024, g.num_nodes(), 7), 5, &c).ok());
  ASSERT_TRUE(one.Sample(seeds, 123, &c).ok());
  ExpectEqual(a, c);
  EXPECT_GT(a.row.size(), 100000u);  // large enough that the pool split the hops
}

TEST(MultiHopSamplerTest, SeedsSplitAcrossBatchesKeepTheirFirstHop) {
  CsrArrays g = RandomGraph(1000, 30, 12);
  MultiHopOptions opts;
  opts.fanouts = {7, 3};
  MultiHopSampler sampler(g.View(), opts);
  std::vector<int64_t> seeds = RandomSeeds(200, g.num_nodes(), 13);
  SampledSubgraph whole, half;
  ASSERT_TRUE(sampler.Sample(seeds, 99, &whole).ok());
  auto first_hop = [](const SampledSubgraph& s, int64_t pos) {
    std::vector<int64_t> nb;
    for (int64_t e = 0; e < s.num_sampled_edges[0]; ++e)
      if (s.col[e] == pos) nb.push_back(s.n_id[s.row[e]]);
    return nb;
  };
  for (int part = 0; part < 2; ++part) {
    std::vector<int64_t> sub(seeds.begin() + part * 100, seeds.begin() + part * 100 + 100);
    ASSERT_TRUE(sampler.Sample(sub, 99, &half).ok());
    for (int64_t i = 0; i < 100; ++i)
      EXPECT_EQ(first_hop(half, i), first_hop(whole, part * 100 + i));
  }
}

TEST(MultiHopSamplerTest, RejectsInvalidSeedsAndFanouts) {
  CsrArrays g = RandomGraph(100, 5, 1);
  MultiHopOptions opts;
  opts.fanouts = {3, -4};
  SampledSubgraph out;
  Status st = MultiHopSampler(g.View(), opts).Sample(std::vector<int64_t>{1}, 0, &out);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_THAT(st.message(), HasSubstr("fanout -4 of hop 1"));
  opts.fanouts = {3};
  st = MultiHopSampler(g.View(), opts).Sample(std::vector<int64_t>{1, 2, 100}, 0, &out);
  EXPECT_THAT(st.message(), HasSubstr("seed 100 (position 2) is outside [0, 100)"));
  opts.sampling.weighted = true;
  st = MultiHopSampler(g.View(), opts).Sample(std::vector<int64_t>{1}, 0, &out);
  EXPECT_THAT(st.message(), HasSubstr("no edge weights"));
}

TEST(MultiHopSamplerTest, EmptyBatchAndZeroHops) {
  CsrArrays g = RandomGraph(100, 5, 1);
  MultiHopOptions opts;
  SampledSubgraph out;
  ASSERT_TRUE(MultiHopSampler(g.View(), opts).Sample(std::vector<int64_t>{}, 0, &out).ok());
  EXPECT_EQ(out.n_id.size(), 0u);
  EXPECT_EQ(out.num_sampled_edges, (std::vector<int64_t>{0, 0, 0}));
  opts.fanouts = {};
  ASSERT_TRUE(MultiHopSampler(g.View(), opts).Sample(std::vector<int64_t>{4, 4}, 0, &out).ok());
  EXPECT_EQ(Std(out.n_id), (std::vector<int64_t>{4, 4}));
}

}  // namespace
}  // namespace fanout::sampler

namespace fanout::sampler {
namespace {

// Subgraph mode, against the definition: the nodes of the node sampler; for
// each node in n_id order its CSR row in order, keeping neighbors in n_id
// (first position), with their edge ids.
TEST(MultiHopSamplerTest, InducedModeHoldsEveryEdgeAmongTheSampledNodes) {
  CsrArrays g = RandomGraph(400, 12, 3, /*weighted=*/true, /*edge_ids=*/true);
  for (bool weighted : {false, true}) {
    MultiHopOptions opts;
    opts.fanouts = {4, 3};
    opts.sampling.with_edge_ids = true;
    opts.sampling.weighted = weighted;
    std::vector<int64_t> seeds = {5, 77, 5, 390, 0};
    SampledSubgraph plain, induced;
    MultiHopSampler a(g.View(), opts);
    ASSERT_TRUE(a.Sample(seeds, 9, &plain).ok());
    opts.induced = true;
    MultiHopSampler b(g.View(), opts);
    ASSERT_TRUE(b.Sample(seeds, 9, &induced).ok());
    EXPECT_EQ(Std(induced.n_id), Std(plain.n_id));
    EXPECT_EQ(induced.num_sampled_nodes, plain.num_sampled_nodes);
    std::map<int64_t, int64_t> first;
    for (size_t i = 0; i < plain.n_id.size(); ++i)
      first.emplace(plain.n_id[i], static_cast<int64_t>(i));
    std::vector<int64_t> row, col, eid;
    for (size_t i = 0; i < plain.n_id.size(); ++i) {
      const int64_t v = plain.n_id[i];
      for (int64_t e = g.indptr[v]; e < g.indptr[v + 1]; ++e) {  // zero-weight edges too
        auto it = first.find(g.indices[e]);
        if (it == first.end()) continue;
        row.push_back(it->second);
        col.push_back(static_cast<int64_t>(i));
        eid.push_back(g.edge_ids.empty() ? e : g.edge_ids[e]);
      }
    }
    EXPECT_EQ(Std(induced.row), row);
    EXPECT_EQ(Std(induced.col), col);
    EXPECT_EQ(Std(induced.edge_id), eid);
    EXPECT_EQ(induced.num_sampled_edges, std::vector<int64_t>{static_cast<int64_t>(row.size())});
    EXPECT_GT(row.size(), plain.row.size());  // more than was sampled
  }
}

// The dense range changes where ids are kept, never what they map to: the
// same keys (inside, outside and far beyond the range, more outside than
// reserved) give the same values as the hash table alone, batch after batch.
TEST(IdMapTest, DenseRangeGivesTheSameMappingAsTheHashTable) {
  detail::IdMap dense, hash;
  dense.SetDenseRange(1000);
  SplitMix64 rng(5);
  for (int batch = 0; batch < 20; ++batch) {
    dense.Reset(16);
    hash.Reset(16);
    int64_t next = 0;
    for (int i = 0; i < 3000; ++i) {
      const uint64_t r = rng.Next();
      const int64_t key = r % 3 == 0   ? static_cast<int64_t>(r % 1000)
                          : r % 3 == 1 ? 1000 + static_cast<int64_t>(r % 5000)
                                       : static_cast<int64_t>(r >> 8);
      hash.Reserve(hash.size() + 1);
      const int64_t a = dense.FindOrInsert(key, next), b = hash.FindOrInsert(key, next);
      ASSERT_EQ(a, b) << "batch " << batch << " key " << key;
      if (a == next) ++next;
      ASSERT_EQ(dense.size(), hash.size());
      ASSERT_EQ(dense.Find(key), a);
    }
    EXPECT_EQ(dense.Find(999999999999), -1);
    EXPECT_EQ(dense.Find(999),
              hash.Find(999));  // absent inside the range: -1, not a wrapped slot value
  }
}

// Dense slots hold a batch epoch and a local index in 32 bits: a batch with
// more nodes than the index holds continues in the hash table, and epochs wrap
// (every 2^kDenseEpochBits - 1 batches) without a stale slot matching again.
// Both paths (one key at a time, and Relabel over a hop's keys: a batch's
// hops mix them) agree with the hash table alone.
template <class Map>
void ExpectSameMappingAsTheTable(int batches, int64_t dense_end, int64_t key_space, int big_batch,
                                 int small_batch) {
  Map narrow;
  detail::IdMap hash;  // no dense range
  narrow.SetDenseRange(dense_end);
  SplitMix64 rng(9), split(10);
  for (int batch = 0; batch < batches; ++batch) {
    narrow.Reset(8);
    hash.Reset(8);
    const int keys = batch % 3 == 0 ? big_batch : small_batch;
    std::vector<int64_t> k(keys);
    for (auto& x : k)
      x = static_cast<int64_t>(rng.Next() % key_space);  // inside and beyond the range
    std::vector<int64_t> local(keys), ref_local(keys), new_keys(keys + 1), ref_new(keys + 1);
    int64_t next = 0, ref_next = 0;
    hash.Reserve(keys);
    for (int i = 0; i < keys; ++i) {
      ref_local[i] = hash.FindOrInsert(k[i], ref_next);
      if (ref_local[i] == ref_next) ref_new[ref_next++] = k[i];
    }
    // The keys in hops of random lengths, each by Relabel or one at a time,
    // with lookups between them.
    for (int start = 0, hop = 0; start < keys; ++hop) {
      const int len = std::min(keys - start, 1 + static_cast<int>(split.Next() % (keys / 2 + 1)));
      if ((batch + hop) % 2 == 0) {
        next = narrow.Relabel(k.data() + start, len, next, local.data() + start, new_keys.data());
      } else {
        for (int i = start; i < start + len; ++i) {
          local[i] = narrow.FindOrInsert(k[i], next);
          if (local[i] == next) new_keys[next++] = k[i];
        }
      }
      start += len;
      if (hop % 3 == 2) {
        const int j = static_cast<int>(split.Next() % start);
        ASSERT_EQ(narrow.Find(k[j]), ref_local[j]) << "batch " << batch << " hop " << hop;
      }
    }
    ASSERT_EQ(local, ref_local) << "batch " << batch;
    ASSERT_EQ(next, ref_next) << "batch " << batch;
    // Entries from `next` on are Relabel's scratch: only the new keys count.
    new_keys.resize(next);
    ref_new.resize(ref_next);
    ASSERT_EQ(new_keys, ref_new) << "batch " << batch;
    ASSERT_EQ(narrow.size(), hash.size()) << "batch " << batch;
    for (int64_t key = 0; key < key_space; ++key)
      ASSERT_EQ(narrow.Find(key), hash.Find(key)) << "batch " << batch << " key " << key;
  }
}

TEST(IdMapTest, NarrowDenseSlotsOverflowToTheTable) {
  // Local indexes 0..15 fit a dense slot; some batches go past 16 nodes.
  ExpectSameMappingAsTheTable<detail::BasicIdMap<4>>(300, 200, 250, 60, 10);
}

TEST(IdMapTest, DenseEpochsWrapWithoutStaleMatches) {
  ExpectSameMappingAsTheTable<detail::BasicIdMap<29>>(300, 200, 250, 60,
                                                      10);  // 3 epoch bits: a wrap every 7 batches
}

TEST(IdMapTest, SmallBatchesInALargeRangeStartEmpty) {
  // Few ids per batch in a range far larger (as online inference on a large
  // graph): nothing of one batch may answer for the next (which a clearing
  // pass over the batch's ids instead of the epochs could get wrong).
  ExpectSameMappingAsTheTable<detail::IdMap>(50, 1 << 16, 300, 60, 10);
}

TEST(IdMapTest, RelabelPrefetchesAndMapsLongRuns) {
  // Runs far longer than the prefetch distance, a few keys beyond the range.
  ExpectSameMappingAsTheTable<detail::IdMap>(6, 5000, 6000, 4000, 4000);
}

// A partition's sampler: neighbors above its id range (later partitions' ids)
// fall outside the dense range and relabel exactly as with the hash table.
TEST(MultiHopSamplerTest, NeighborsBeyondTheDenseRangeRelabelAsWithTheHashTable) {
  CsrArrays g = RandomGraph(600, 8, 11);
  // Rows 0..299 only: a partition [0, 300) whose neighbors reach 600.
  CsrArrays part;
  part.indptr.assign(g.indptr.begin(), g.indptr.begin() + 301);
  part.indices.assign(g.indices.begin(), g.indices.begin() + part.indptr.back());
  MultiHopOptions opts;
  opts.fanouts = {6};
  MultiHopSampler sampler(part.View(), opts);
  std::vector<int64_t> seeds = {0, 17, 299, 150, 17, 42, 7};
  SampledSubgraph out;
  ASSERT_TRUE(sampler.Sample(seeds, 42, &out).ok());
  SubgraphBuilder builder;  // hash table only
  SampledSubgraph ref;
  builder.Begin(seeds, &ref);
  OneHopResult r;
  ASSERT_TRUE(
      SampleOneHop(part.View(), builder.Frontier(ref), 6, 0, 42, opts.sampling, nullptr, &r).ok());
  builder.AddHop(r, opts.sampling.with_edge_ids, &ref);
  int64_t beyond = 0;
  for (int64_t v : ref.n_id) beyond += v >= 300;
  EXPECT_GE(beyond, 5);  // the case this test is about
  EXPECT_EQ(Std(out.n_id), Std(ref.n_id));
  EXPECT_EQ(Std(out.row), Std(ref.row));
  EXPECT_EQ(Std(out.col), Std(ref.col));
}

}  // namespace
}  // namespace fanout::sampler
