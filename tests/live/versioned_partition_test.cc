// A live partition's versions: at every committed version, its hops equal the
// same hops on the graph rebuilt from scratch with the batches up to it
// (property test over random batches, homogeneous and temporal); readers at
// a version see the same while a writer goes on; bad batches are refused
// naming the operation; the batch codec refuses what does not add up.
#include "live/versioned_partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "live/base_file.h"
#include "live/updates.h"
#include "sampler/csr_graph.h"
#include "sampler/hetero.h"
#include "sampler/temporal.h"
#include "sampler/walk.h"
#include "tests/datasets/test_util.h"

namespace fanout::live {
namespace {

using ::testing::HasSubstr;

// The model: each row's edges in the store's order, applied batch by batch
// by the definition (removals of a batch first, then its additions).
struct ModelEdge {
  int64_t dst, eid, time;
};
using Model = std::vector<std::vector<ModelEdge>>;  // by local row

struct Fixture {
  int64_t node_begin = 0, n_local = 0, n_total = 0;
  std::vector<int64_t> indptr, indices, eids, times;
  sampler::PartitionView view;
  Model model;
};

// A random partition: rows [begin, begin + n_local) of a graph of n_total
// nodes, `temporal`: rows in time order.
Fixture MakeBase(uint64_t seed, int64_t begin, int64_t n_local, int64_t n_total, bool temporal) {
  Fixture f;
  f.node_begin = begin;
  f.n_local = n_local;
  f.n_total = n_total;
  std::mt19937_64 rng(seed);
  f.model.resize(n_local);
  int64_t eid = 0;
  for (int64_t r = 0; r < n_local; ++r) {
    const int64_t deg = static_cast<int64_t>(rng() % 12);
    for (int64_t k = 0; k < deg; ++k)
      f.model[r].push_back({static_cast<int64_t>(rng() % n_total), eid++,
                            temporal ? static_cast<int64_t>(rng() % 100) : 0});
    if (temporal)
      std::stable_sort(f.model[r].begin(), f.model[r].end(),
                       [](const ModelEdge& a, const ModelEdge& b) { return a.time < b.time; });
  }
  f.indptr.push_back(0);
  for (const auto& row : f.model) {
    for (const ModelEdge& e : row) {
      f.indices.push_back(e.dst);
      f.eids.push_back(e.eid);
      f.times.push_back(e.time);
    }
    f.indptr.push_back(static_cast<int64_t>(f.indices.size()));
  }
  f.view.part = 1;
  f.view.node_begin = begin;
  f.view.node_end = begin + n_local;
  f.view.indptr = ArrayView<const int64_t>(f.indptr);
  f.view.indices = ArrayView<const int64_t>(f.indices);
  f.view.edge_ids = ArrayView<const int64_t>(f.eids);
  if (temporal) f.view.edge_times = ArrayView<const int64_t>(f.times);
  return f;
}

// The model's rows as a CSR (what the partitioner would write).
struct Csr {
  std::vector<int64_t> indptr{0}, indices, eids;
  sampler::CsrGraph g;
};
void Build(const Model& m, Csr* c) {
  for (const auto& row : m) {
    for (const ModelEdge& e : row) {
      c->indices.push_back(e.dst);
      c->eids.push_back(e.eid);
    }
    c->indptr.push_back(static_cast<int64_t>(c->indices.size()));
  }
  ASSERT_TRUE(sampler::CsrGraph::Create(ArrayView<const int64_t>(c->indptr),
                                        ArrayView<const int64_t>(c->indices),
                                        ArrayView<const int64_t>(c->eids), {}, &c->g)
                  .ok());
}

void ApplyToModel(const Fixture& f, const UpdateBatch& b, const LiveShape& s, int part,
                  int64_t* ordinal, bool temporal, Model* m) {
  for (const EdgeUpdate& e : b.remove_edges) {
    auto& row = (*m)[e.src - f.node_begin];
    row.erase(
        std::remove_if(row.begin(), row.end(), [&](const ModelEdge& x) { return x.dst == e.dst; }),
        row.end());
  }
  for (const EdgeUpdate& e : b.add_edges) {
    auto& row = (*m)[e.src - f.node_begin];
    row.push_back({e.dst, s.base_edges_total + s.num_parts * (*ordinal)++ + part, e.time});
    if (temporal)
      std::stable_sort(row.begin(), row.end(),
                       [](const ModelEdge& a, const ModelEdge& b) { return a.time < b.time; });
  }
}

UpdateBatch RandomBatch(std::mt19937_64& rng, const Fixture& f, const Model& m, bool temporal) {
  UpdateBatch b;
  const int adds = static_cast<int>(rng() % 6), removes = static_cast<int>(rng() % 4);
  for (int i = 0; i < adds; ++i) {
    EdgeUpdate e;
    e.src = f.node_begin + static_cast<int64_t>(rng() % f.n_local);
    e.dst = static_cast<int64_t>(rng() % f.n_total);
    if (temporal) e.time = static_cast<int64_t>(rng() % 100);
    b.add_edges.push_back(e);
  }
  for (int i = 0; i < removes; ++i) {
    EdgeUpdate e;
    e.src = f.node_begin + static_cast<int64_t>(rng() % f.n_local);
    const auto& row = m[e.src - f.node_begin];
    // Mostly an edge that is there; sometimes one that is not.
    e.dst = !row.empty() && rng() % 4 != 0 ? row[rng() % row.size()].dst
                                           : static_cast<int64_t>(rng() % f.n_total);
    b.remove_edges.push_back(e);
  }
  return b;
}

void ExpectSameHops(const VersionedPartition& vp, const Csr& rebuilt, const Fixture& f,
                    uint64_t version, uint64_t seed, const std::string& where) {
  // Every row once; on alternate versions every row 40 times over, sampled
  // with a pool (a hop of many nodes is split into chunks on its threads).
  static ThreadPool pool(3);
  const bool many = version % 4 < 2;
  std::vector<int64_t> nodes;
  for (int copy = 0; copy < (many ? 40 : 1); ++copy)
    for (int64_t i = 0; i < f.n_local; ++i) nodes.push_back(f.node_begin + i);
  for (bool replace : {false, true})
    for (int64_t fanout : {int64_t{3}, int64_t{-1}}) {
      if (replace && fanout < 0) continue;
      sampler::SamplingOptions o;
      o.replace = replace;
      // Edge ids asked for on alternate versions (a hop without them
      // resolves its draws on its own path).
      o.with_edge_ids = version % 2 == 0;
      sampler::OneHopResult got, want;
      ASSERT_TRUE(vp.SampleHop(ArrayView<const int64_t>(nodes), fanout, 1, seed, o, version, &got,
                               nullptr, many ? &pool : nullptr)
                      .ok());
      o.node_offset = f.node_begin;
      ASSERT_TRUE(sampler::SampleOneHop(rebuilt.g, ArrayView<const int64_t>(nodes), fanout, 1, seed,
                                        o, nullptr, &want)
                      .ok());
      ASSERT_EQ(std::vector<int64_t>(got.offsets.begin(), got.offsets.end()),
                std::vector<int64_t>(want.offsets.begin(), want.offsets.end()))
          << where << " replace " << replace << " fanout " << fanout;
      ASSERT_EQ(std::vector<int64_t>(got.neighbors.begin(), got.neighbors.end()),
                std::vector<int64_t>(want.neighbors.begin(), want.neighbors.end()))
          << where;
      ASSERT_EQ(std::vector<int64_t>(got.edge_ids.begin(), got.edge_ids.end()),
                std::vector<int64_t>(want.edge_ids.begin(), want.edge_ids.end()))
          << where;
    }
}

// The base a compaction made at `version`: row for row the model's rows at
// that version (neighbors, edge ids, times), the CSR the partitioner writes.
void ExpectBaseIsModel(const VersionedPartition& vp, uint64_t version, const Model& m,
                       bool temporal, const std::string& where) {
  std::shared_ptr<const Generation> g;
  ASSERT_TRUE(vp.GenerationFor(version, &g).ok()) << where;
  ASSERT_EQ(g->base_version(), version) << where;
  const sampler::PartitionView& v = g->view();
  ASSERT_EQ(v.indptr.size(), m.size() + 1) << where;
  for (size_t r = 0; r < m.size(); ++r) {
    ASSERT_EQ(v.indptr[r + 1] - v.indptr[r], static_cast<int64_t>(m[r].size()))
        << where << " row " << r;
    for (size_t k = 0; k < m[r].size(); ++k) {
      const int64_t e = v.indptr[r] + static_cast<int64_t>(k);
      ASSERT_EQ(v.indices[e], m[r][k].dst) << where << " row " << r << " edge " << k;
      ASSERT_EQ(v.edge_ids[e], m[r][k].eid) << where << " row " << r << " edge " << k;
      if (temporal) {
        ASSERT_EQ(v.edge_times[e], m[r][k].time) << where;
      }
    }
  }
  EXPECT_TRUE(g->EdgesAsBase(version));
}

// `compact`: fold versions into new bases while batches go on (at 10 after
// batch 12, the older generation kept; then released, and again at 20 after
// batch 25): every version a generation keeps samples as the rebuild, and
// versions folded away are refused by name.
void RunProperty(bool temporal, bool compact) {
  for (uint64_t seed = 0; seed < 6; ++seed) {
    Fixture f = MakeBase(seed, 100, 40, 300, temporal);
    LiveShape s;
    s.num_parts = 3;
    s.num_nodes_total = 300;
    s.base_edges_total = 5000;
    s.temporal = temporal;
    VersionedPartition vp(f.view, s);
    std::mt19937_64 rng(seed * 7 + 1);
    std::vector<Model> models{f.model};  // models[v]: the rows at version v
    Model m = f.model;
    int64_t ordinal = 0;
    const std::string where = "seed " + std::to_string(seed);
    for (uint64_t seq = 1; seq <= 25; ++seq) {
      UpdateBatch b = RandomBatch(rng, f, m, temporal);
      ASSERT_TRUE(vp.Check(b).ok()) << vp.Check(b).ToString();
      vp.Apply(seq, b);
      ApplyToModel(f, b, s, f.view.part, &ordinal, temporal, &m);
      models.push_back(m);
      if (seq % 5 == 0 || (compact && seq == 12)) vp.Publish(seq);
      if (compact && seq == 12) {
        CompactionReport r;
        ASSERT_TRUE(vp.Compact(10, {}, &r).ok()) << where;
        EXPECT_EQ(r.version, 10u);
        EXPECT_EQ(r.edges, [&] {
          int64_t e = 0;
          for (const auto& row : models[10]) e += static_cast<int64_t>(row.size());
          return e;
        }());
        ExpectBaseIsModel(vp, 10, models[10], temporal, where + " compacted at 10");
        // One generation kept beside the current: a second compaction waits.
        EXPECT_EQ(vp.Compact(12, {}, nullptr).code(), Status::Code::kAborted);
        EXPECT_EQ(vp.Stats().retained, 0);
      }
    }
    EXPECT_EQ(vp.committed(), 25u);
    // Every version, including those applied between publishes.
    for (uint64_t v = 0; v < models.size(); ++v) {
      Csr rebuilt;
      Build(models[v], &rebuilt);
      ExpectSameHops(vp, rebuilt, f, v, seed * 31 + v, where + " version " + std::to_string(v));
    }
    if (!compact) continue;
    EXPECT_FALSE(vp.ReleaseIdle(3600));  // read just now
    EXPECT_TRUE(vp.ReleaseIdle(0));
    EXPECT_EQ(vp.Stats().retained, -1);
    uint64_t at = 0;
    Status gone = vp.ResolveVersion(9, &at);
    EXPECT_EQ(gone.code(), Status::Code::kNotFound);
    EXPECT_THAT(gone.message(), HasSubstr("the oldest version it reads is 10"));
    std::vector<int64_t> one{100};
    sampler::OneHopResult hop;
    EXPECT_EQ(vp.SampleHop(ArrayView<const int64_t>(one), 2, 0, 1, {}, 3, &hop).code(),
              Status::Code::kNotFound);
    // A budget too small is refused before anything is made.
    CompactionOptions small;
    small.max_bytes = 64;
    EXPECT_EQ(vp.Compact(20, small, nullptr).code(), Status::Code::kResourceExhausted);
    ASSERT_TRUE(vp.Compact(20, {}, nullptr).ok());
    ExpectBaseIsModel(vp, 20, models[20], temporal, where + " compacted at 20");
    EXPECT_EQ(vp.Stats().compactions, 2);
    EXPECT_EQ(vp.Stats().base_version, 20u);
    for (uint64_t v = 10; v < models.size(); ++v) {
      Csr rebuilt;
      Build(models[v], &rebuilt);
      ExpectSameHops(vp, rebuilt, f, v, seed * 31 + v,
                     where + " after two compactions, version " + std::to_string(v));
    }
  }
}

TEST(VersionedPartitionTest, EveryVersionSamplesAsTheGraphRebuiltWithItsBatches) {
  RunProperty(/*temporal=*/false, /*compact=*/false);
}

TEST(VersionedPartitionTest, TemporalRowsStayInTimeOrderAtEveryVersion) {
  RunProperty(/*temporal=*/true, /*compact=*/false);
}

TEST(VersionedPartitionTest, CompactionFoldsVersionsIntoANewBaseThatSamplesAsTheRebuild) {
  RunProperty(/*temporal=*/false, /*compact=*/true);
}

TEST(VersionedPartitionTest, TemporalCompactionKeepsRowsInTimeOrder) {
  RunProperty(/*temporal=*/true, /*compact=*/true);
}

// Every other sampler over changed rows (VersionedPartition::SampleAnyHop):
// walk steps (and metapath steps), LABOR, weighted, temporal (uniform and
// last), per-edge-type and heterogeneous temporal hops at every version
// equal the same sampler on the graph rebuilt with the batches up to it.
struct FullEdge {
  int64_t dst, eid, time;
  int32_t type;
  float weight;
};
using FullModel = std::vector<std::vector<FullEdge>>;

struct FullCsr {
  std::vector<int64_t> indptr{0}, indices, eids, times;
  std::vector<int32_t> types;
  std::vector<float> weights;
  sampler::CsrGraph g;
  RowArrays arrays;
};

void BuildFull(const FullModel& m, int64_t node_begin, FullCsr* c) {
  for (const auto& row : m) {
    for (const FullEdge& e : row) {
      c->indices.push_back(e.dst);
      c->eids.push_back(e.eid);
      c->times.push_back(e.time);
      c->types.push_back(e.type);
      c->weights.push_back(e.weight);
    }
    c->indptr.push_back(static_cast<int64_t>(c->indices.size()));
  }
  ASSERT_TRUE(sampler::CsrGraph::Create(
                  ArrayView<const int64_t>(c->indptr), ArrayView<const int64_t>(c->indices),
                  ArrayView<const int64_t>(c->eids), ArrayView<const float>(c->weights), &c->g)
                  .ok());
  c->arrays.graph = &c->g;
  c->arrays.edge_types = c->types.data();
  c->arrays.edge_times = c->times.data();
  c->arrays.node_offset = node_begin;
}

void SortRow(std::vector<FullEdge>* row, bool typed, bool temporal) {
  std::stable_sort(row->begin(), row->end(), [&](const FullEdge& a, const FullEdge& b) {
    if (typed && a.type != b.type) return a.type < b.type;
    return temporal && a.time < b.time;
  });
}

void RunEverySampler(bool temporal, bool typed) {
  const int num_types = typed ? 2 : 0;
  const int64_t begin = 100, n_local = 40, n_total = 300, base_total = 5000;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    std::mt19937_64 rng(seed * 13 + (temporal ? 5 : 0) + (typed ? 9 : 0));
    auto weight = [&] { return rng() % 5 == 0 ? 0.0f : 0.25f * static_cast<float>(1 + rng() % 8); };
    FullModel m(n_local);
    int64_t eid = 0;
    for (auto& row : m) {
      const int64_t deg = static_cast<int64_t>(rng() % 12);
      for (int64_t k = 0; k < deg; ++k)
        row.push_back({static_cast<int64_t>(rng() % n_total), eid++,
                       temporal ? static_cast<int64_t>(rng() % 100) : 0,
                       typed ? static_cast<int32_t>(rng() % num_types) : 0, weight()});
      SortRow(&row, typed, temporal);
    }
    FullCsr base;
    BuildFull(m, begin, &base);
    sampler::PartitionView view;
    view.part = 1;
    view.node_begin = begin;
    view.node_end = begin + n_local;
    view.indptr = ArrayView<const int64_t>(base.indptr);
    view.indices = ArrayView<const int64_t>(base.indices);
    view.edge_ids = ArrayView<const int64_t>(base.eids);
    view.edge_weights = ArrayView<const float>(base.weights);
    if (temporal) view.edge_times = ArrayView<const int64_t>(base.times);
    if (typed) view.edge_types = ArrayView<const int32_t>(base.types);
    LiveShape s;
    s.num_parts = 3;
    s.num_nodes_total = n_total;
    s.base_edges_total = base_total;
    s.temporal = temporal;
    s.num_edge_types = num_types;
    VersionedPartition vp(view, s);
    std::vector<FullModel> models{m};
    int64_t ordinal = 0;
    for (uint64_t seq = 1; seq <= 20; ++seq) {
      UpdateBatch b;
      for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i) {
        EdgeUpdate e;
        e.src = begin + static_cast<int64_t>(rng() % n_local);
        const auto& row = m[e.src - begin];
        e.dst = !row.empty() && rng() % 4 != 0 ? row[rng() % row.size()].dst
                                               : static_cast<int64_t>(rng() % n_total);
        e.type = rng() % 2 == 0 ? -1 : typed ? static_cast<int32_t>(rng() % num_types) : 0;
        b.remove_edges.push_back(e);
      }
      for (int i = 0, n = static_cast<int>(rng() % 6); i < n; ++i) {
        EdgeUpdate e;
        e.src = begin + static_cast<int64_t>(rng() % n_local);
        e.dst = static_cast<int64_t>(rng() % n_total);
        if (temporal) e.time = static_cast<int64_t>(rng() % 100);
        if (typed) e.type = static_cast<int32_t>(rng() % num_types);
        e.weight = weight();
        b.add_edges.push_back(e);
      }
      ASSERT_TRUE(vp.Check(b).ok()) << vp.Check(b).ToString();
      vp.Apply(seq, b);
      if (seq % 5 == 0) vp.Publish(seq);
      for (const EdgeUpdate& e : b.remove_edges) {
        auto& row = m[e.src - begin];
        row.erase(std::remove_if(row.begin(), row.end(),
                                 [&](const FullEdge& x) {
                                   return x.dst == e.dst && (e.type < 0 || x.type == e.type);
                                 }),
                  row.end());
      }
      for (const EdgeUpdate& e : b.add_edges) {
        auto& row = m[e.src - begin];
        row.push_back(
            {e.dst, base_total + s.num_parts * ordinal++ + view.part, e.time, e.type, e.weight});
        SortRow(&row, typed, temporal);
      }
      models.push_back(m);
    }
    // Every row twice (the second time in reverse), one repeated at once.
    std::vector<int64_t> nodes;
    for (int64_t i = 0; i < n_local; ++i) nodes.push_back(begin + i);
    for (int64_t i = n_local; i-- > 0;) nodes.push_back(begin + i);
    nodes.push_back(nodes.back());
    std::vector<int64_t> times(nodes.size());
    std::vector<uint64_t> keys(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      times[i] = static_cast<int64_t>(rng() % 110);
      keys[i] = rng();
    }
    using Sample =
        std::function<Status(const RowArrays&, ArrayView<const int64_t>, ArrayView<const int64_t>,
                             ArrayView<const uint64_t>, sampler::OneHopResult*)>;
    std::vector<std::pair<std::string, Sample>> samplers;
    for (bool weighted : {false, true}) {
      const std::string w = weighted ? " weighted" : "";
      samplers.push_back(
          {"walk" + w, [=](const RowArrays& a, ArrayView<const int64_t> n, ArrayView<const int64_t>,
                           ArrayView<const uint64_t> k, sampler::OneHopResult* o) {
             sampler::SamplingOptions so;
             so.weighted = weighted;
             so.node_offset = a.node_offset;
             return sampler::SampleWalkStep(*a.graph, n, k, so, o);
           }});
      samplers.push_back({"LABOR" + w, [=](const RowArrays& a, ArrayView<const int64_t> n,
                                           ArrayView<const int64_t>, ArrayView<const uint64_t>,
                                           sampler::OneHopResult* o) {
                            sampler::SamplingOptions so;
                            so.weighted = weighted;
                            so.labor = true;
                            so.node_offset = a.node_offset;
                            return sampler::SampleOneHop(*a.graph, n, 3, 1, 77, so, nullptr, o);
                          }});
      if (weighted)
        for (bool replace : {false, true})
          samplers.push_back(
              {std::string("weighted hop") + (replace ? " replace" : ""),
               [=](const RowArrays& a, ArrayView<const int64_t> n, ArrayView<const int64_t>,
                   ArrayView<const uint64_t>, sampler::OneHopResult* o) {
                 sampler::SamplingOptions so;
                 so.weighted = true;
                 so.replace = replace;
                 so.node_offset = a.node_offset;
                 return sampler::SampleOneHop(*a.graph, n, 3, 1, 78, so, nullptr, o);
               }});
    }
    const std::vector<int64_t> type_fanouts{2, -1};
    for (auto strategy : {sampler::TemporalStrategy::kUniform, sampler::TemporalStrategy::kLast}) {
      if (!temporal) break;
      const std::string name =
          strategy == sampler::TemporalStrategy::kLast ? "temporal last" : "temporal uniform";
      samplers.push_back(
          {name,
           [=](const RowArrays& a, ArrayView<const int64_t> n, ArrayView<const int64_t> t,
               ArrayView<const uint64_t>, sampler::OneHopResult* o) -> Status {
             if (typed)
               return sampler::SampleHeteroTemporalHop(
                   *a.graph, a.edge_types, a.edge_times, a.time_index, a.node_offset, n, t,
                   ArrayView<const int64_t>(type_fanouts), 2, 79, strategy, true, o);
             sampler::SampleTemporalHop(*a.graph, a.edge_times, a.time_index, a.node_offset, n, t,
                                        3, 2, 79, strategy, true, o);
             return Status::OK();
           }});
    }
    if (typed) {
      samplers.push_back(
          {"per-edge-type hop",
           [=](const RowArrays& a, ArrayView<const int64_t> n, ArrayView<const int64_t>,
               ArrayView<const uint64_t>, sampler::OneHopResult* o) {
             sampler::SamplingOptions so;
             so.node_offset = a.node_offset;
             return sampler::SampleHeteroHop(*a.graph, a.edge_types, n,
                                             ArrayView<const int64_t>(type_fanouts), 0, 80, so, o);
           }});
      samplers.push_back(
          {"metapath step",
           [=](const RowArrays& a, ArrayView<const int64_t> n, ArrayView<const int64_t>,
               ArrayView<const uint64_t> k, sampler::OneHopResult* o) {
             sampler::SamplingOptions so;
             so.node_offset = a.node_offset;
             return sampler::SampleWalkStep(*a.graph, n, k, so, o, a.edge_types, 1);
           }});
    }
    for (uint64_t v = 0; v < models.size(); ++v) {
      FullCsr rebuilt;
      BuildFull(models[v], begin, &rebuilt);
      std::shared_ptr<const Generation> gen;
      ASSERT_TRUE(vp.GenerationFor(v, &gen).ok());
      for (const auto& [name, sample] : samplers) {
        const std::string where = "seed " + std::to_string(seed) + " version " + std::to_string(v) +
                                  " " + name + (typed ? " typed" : "") +
                                  (temporal ? " temporal" : "");
        sampler::OneHopResult got, want;
        std::vector<int64_t> sub_times;
        std::vector<uint64_t> sub_keys;
        ASSERT_TRUE(vp.SampleAnyHop(
                          *gen, v, ArrayView<const int64_t>(nodes),
                          [&](const RowArrays& a, ArrayView<const int64_t> part_nodes,
                              ArrayView<const int64_t> which, sampler::OneHopResult* o) {
                            sub_times.clear();
                            sub_keys.clear();
                            for (int64_t i : which) {
                              EXPECT_EQ(part_nodes[sub_times.size()], nodes[i]);
                              sub_times.push_back(times[i]);
                              sub_keys.push_back(keys[i]);
                            }
                            return sample(a, part_nodes, ArrayView<const int64_t>(sub_times),
                                          ArrayView<const uint64_t>(sub_keys), o);
                          },
                          &got)
                        .ok())
            << where;
        ASSERT_TRUE(sample(rebuilt.arrays, ArrayView<const int64_t>(nodes),
                           ArrayView<const int64_t>(times), ArrayView<const uint64_t>(keys), &want)
                        .ok())
            << where;
        auto vec = [](const auto& x) {
          return std::vector<std::decay_t<decltype(x[0])>>(x.begin(), x.end());
        };
        ASSERT_EQ(vec(got.offsets), vec(want.offsets)) << where;
        ASSERT_EQ(vec(got.neighbors), vec(want.neighbors)) << where;
        ASSERT_EQ(vec(got.edge_ids), vec(want.edge_ids)) << where;
        ASSERT_EQ(vec(got.edge_types), vec(want.edge_types)) << where;
        ASSERT_EQ(vec(got.edge_weights), vec(want.edge_weights)) << where;
        if (v == 20 && seed == 0) EXPECT_GT(got.neighbors.size(), 0u) << where;
      }
    }
  }
}

TEST(VersionedPartitionTest, EverySamplerReadsChangedRowsAsTheRebuild) {
  RunEverySampler(/*temporal=*/false, /*typed=*/false);
}

TEST(VersionedPartitionTest, TemporalSamplersReadChangedRowsAsTheRebuild) {
  RunEverySampler(/*temporal=*/true, /*typed=*/false);
}

TEST(VersionedPartitionTest, HeterogeneousSamplersReadChangedRowsAsTheRebuild) {
  RunEverySampler(/*temporal=*/false, /*typed=*/true);
}

TEST(VersionedPartitionTest, HeterogeneousTemporalSamplersReadChangedRowsAsTheRebuild) {
  RunEverySampler(/*temporal=*/true, /*typed=*/true);
}

// A compacted base written to disk (live/base_file.h) and restored into a
// fresh partition over the dataset's base, with the batches after it
// applied again: every version from the base's on samples as the rebuild,
// and the added edges keep their ids. Every byte of the file flipped, and
// every cut, is refused; so is another partition's file.
void RunBaseFile(bool temporal) {
  datasets::testing::TempDir dir;
  const std::string path = dir.Sub("part-1.base");
  for (uint64_t seed = 0; seed < 3; ++seed) {
    Fixture f = MakeBase(seed, 100, 40, 300, temporal);
    LiveShape s;
    s.num_parts = 3;
    s.num_nodes_total = 300;
    s.base_edges_total = 5000;
    s.temporal = temporal;
    s.row_bytes = 4;
    s.has_labels = true;
    VersionedPartition vp(f.view, s);
    std::mt19937_64 rng(seed * 5 + 3);
    std::vector<Model> models{f.model};
    std::vector<UpdateBatch> batches{UpdateBatch()};
    Model m = f.model;
    int64_t ordinal = 0;
    for (uint64_t seq = 1; seq <= 25; ++seq) {
      UpdateBatch b = RandomBatch(rng, f, m, temporal);
      if (seq % 3 == 0) {
        b.feature_rows = {100 + static_cast<int64_t>(seq)};
        b.row_bytes = 4;
        b.feature_bytes = std::string(4, static_cast<char>(seq));
        b.label_rows = {101};
        b.labels = {static_cast<int64_t>(seq)};
      }
      ASSERT_TRUE(vp.Check(b).ok()) << vp.Check(b).ToString();
      vp.Apply(seq, b);
      vp.Publish(seq);
      ApplyToModel(f, b, s, f.view.part, &ordinal, temporal, &m);
      models.push_back(m);
      batches.push_back(b);
    }
    ASSERT_TRUE(vp.Compact(20, {}, nullptr).ok());
    std::shared_ptr<const Generation> g;
    BaseOverlay overlay;
    BaseFileHeader h;
    ASSERT_TRUE(vp.BaseToWrite(&g, &overlay, &h.next_ordinal).ok());
    h.part = 1;
    h.version = g->base_version();
    h.node_begin = 100;
    h.rows = 40;
    RetryState table;
    table.writers = {{7, 3, 4}, {9, 1, 11}, {8, 5, 19}};
    table.forgotten = 2;
    int64_t written = 0;
    ASSERT_TRUE(WriteBaseFile(path, h, g->view(), overlay, table, &written).ok());
    BaseFileHeader rh;
    auto arrays = std::make_unique<Generation::Arrays>();
    BaseOverlay ro;
    RetryState rt;
    ASSERT_TRUE(ReadBaseFile(path, s, 1, 100, 40, &rh, arrays.get(), &ro, &rt).ok());
    EXPECT_EQ(rh.version, 20u);
    EXPECT_EQ(rh.next_ordinal, h.next_ordinal);
    EXPECT_EQ(rh.file_bytes, written);
    EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(path)), written);
    ASSERT_EQ(rt.writers.size(), 3u);
    EXPECT_EQ(rt.writers[2].writer, 8u);
    EXPECT_EQ(rt.writers[2].heard, 19u);
    EXPECT_EQ(rt.forgotten, 2);
    EXPECT_EQ(ro.feature_nodes.size(), overlay.feature_nodes.size());
    VersionedPartition restored(f.view, s);
    ASSERT_TRUE(restored.RestoreBase(std::move(arrays), rh.version, rh.next_ordinal, ro).ok());
    EXPECT_EQ(restored.committed(), 20u);
    for (uint64_t seq = 21; seq <= 25; ++seq) {
      restored.Apply(seq, batches[seq]);
      restored.Publish(seq);
    }
    const std::string where = "seed " + std::to_string(seed);
    ExpectBaseIsModel(restored, 20, models[20], temporal, where + " restored");
    for (uint64_t v = 20; v <= 25; ++v) {
      Csr rebuilt;
      Build(models[v], &rebuilt);
      ExpectSameHops(restored, rebuilt, f, v, seed * 31 + v,
                     where + " restored, version " + std::to_string(v));
      for (int64_t node = 100; node < 140; ++node) {
        std::string a, b;
        EXPECT_EQ(vp.FeatureRow(node, v, &a), restored.FeatureRow(node, v, &b)) << node;
        EXPECT_EQ(a, b) << where << " feature row " << node << " version " << v;
        int64_t la = -1, lb = -1;
        EXPECT_EQ(vp.Label(node, v, &la), restored.Label(node, v, &lb)) << node;
        EXPECT_EQ(la, lb) << where << " label " << node << " version " << v;
      }
    }
    uint64_t at = 0;
    EXPECT_EQ(restored.ResolveVersion(19, &at).code(), Status::Code::kNotFound);
    if (seed != 0) continue;
    // Damage: every byte flipped, every cut.
    std::string bytes;
    {
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    const std::string bad = dir.Sub("bad.base");
    auto refused = [&](const std::string& content, const std::string& what) {
      { std::ofstream(bad, std::ios::binary | std::ios::trunc) << content; }
      BaseFileHeader bh;
      Generation::Arrays ba;
      BaseOverlay bo;
      RetryState bt;
      Status st = ReadBaseFile(bad, s, 1, 100, 40, &bh, &ba, &bo, &bt);
      EXPECT_EQ(st.code(), Status::Code::kCorruption) << what << ": " << st.ToString();
      EXPECT_THAT(st.message(), HasSubstr(bad)) << what;
    };
    for (size_t i = 0; i < bytes.size(); ++i) {
      std::string d = bytes;
      d[i] = static_cast<char>(d[i] ^ 0x41);
      refused(d, "byte " + std::to_string(i) + " flipped");
    }
    for (size_t n = 0; n < bytes.size(); n += 7)
      refused(bytes.substr(0, n), "cut at " + std::to_string(n));
    refused(bytes + "x", "a byte past the end");
    // Another partition's rows.
    BaseFileHeader oh;
    Generation::Arrays oa;
    BaseOverlay oo;
    RetryState ot;
    Status other = ReadBaseFile(path, s, 2, 140, 40, &oh, &oa, &oo, &ot);
    EXPECT_EQ(other.code(), Status::Code::kCorruption);
    EXPECT_THAT(other.message(), HasSubstr("this server serves partition 2"));
    EXPECT_EQ(ReadBaseFile(dir.Sub("none.base"), s, 1, 100, 40, &oh, &oa, &oo, &ot).code(),
              Status::Code::kNotFound);
  }
}

TEST(VersionedPartitionTest, ACompactedBaseOnDiskRestoresEveryLaterVersion) {
  RunBaseFile(/*temporal=*/false);
}

TEST(VersionedPartitionTest, ATemporalCompactedBaseOnDiskRestoresEveryLaterVersion) {
  RunBaseFile(/*temporal=*/true);
}

// The base-file fuzzer's seeds (fuzz/make_seeds.py writes them) are files
// ReadBaseFile accepts, so that fuzzing starts past the checks into the
// restore and the samplers.
TEST(BaseFileTest, TheFuzzersSeedsAreAcceptedFiles) {
  const std::string dir = std::string(FANOUT_SOURCE_DIR) + "/fuzz/corpus/fuzz_base_file/";
  datasets::testing::TempDir tmp;
  for (const char* name : {"plain", "temporal", "typed", "typed_temporal"}) {
    std::ifstream in(dir + name, std::ios::binary);
    ASSERT_TRUE(in) << dir << name;
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    ASSERT_GT(bytes.size(), 1u);
    const uint8_t flags = static_cast<uint8_t>(bytes[0]);
    const std::string path = tmp.Sub(name);
    { std::ofstream(path, std::ios::binary) << bytes.substr(1); }
    LiveShape shape;
    shape.num_parts = 2;
    shape.num_nodes_total = 64;
    shape.base_edges_total = 1000;  // as the fuzzer's
    shape.row_bytes = 4;
    shape.has_labels = true;
    shape.temporal = flags & 2;
    shape.num_edge_types = (flags & 4) ? 2 : 0;
    shape.weighted = flags & 8;
    int part = 0;
    int64_t begin = 0, rows = 0;
    std::memcpy(&part, bytes.data() + 1 + 12, 4);
    std::memcpy(&begin, bytes.data() + 1 + 24, 8);
    std::memcpy(&rows, bytes.data() + 1 + 32, 8);
    BaseFileHeader h;
    Generation::Arrays a;
    BaseOverlay o;
    RetryState t;
    Status st = ReadBaseFile(path, shape, part, begin, rows, &h, &a, &o, &t);
    EXPECT_TRUE(st.ok()) << name << ": " << st.ToString();
    EXPECT_EQ(a.edge_ids.size(), 6u) << name;
  }
}

// A base whose every edge was removed has no per-edge arrays: it reads back
// for a temporal, typed, weighted dataset; with edges, arrays the dataset
// does not have (or lacks) are refused by name.
TEST(BaseFileTest, ABaseWithoutEdgesReadsBackAndArraysMustMatchTheDataset) {
  datasets::testing::TempDir tmp;
  const std::string path = tmp.Sub("part-0.base");
  std::vector<int64_t> indptr(5, 0);
  sampler::PartitionView empty;
  empty.node_end = 4;
  empty.indptr = ArrayView<const int64_t>(indptr);
  BaseFileHeader h;
  h.version = 3;
  h.rows = 4;
  ASSERT_TRUE(WriteBaseFile(path, h, empty, {}, {}).ok());
  LiveShape shape;
  shape.num_nodes_total = 4;
  shape.base_edges_total = 100;  // edge id 9 below: the dataset's
  shape.temporal = shape.weighted = true;
  shape.num_edge_types = 2;
  BaseFileHeader rh;
  Generation::Arrays a;
  BaseOverlay o;
  RetryState t;
  Status st = ReadBaseFile(path, shape, 0, 0, 4, &rh, &a, &o, &t);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rh.edges, 0);
  // One edge, no times: refused for a temporal dataset.
  indptr = {0, 1, 1, 1, 1};
  std::vector<int64_t> nbr{2}, eid{9};
  empty.indices = ArrayView<const int64_t>(nbr);
  empty.edge_ids = ArrayView<const int64_t>(eid);
  ASSERT_TRUE(WriteBaseFile(path, h, empty, {}, {}).ok());
  st = ReadBaseFile(path, shape, 0, 0, 4, &rh, &a, &o, &t);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_THAT(st.message(), HasSubstr("times, types or weights do not match"));
  shape.temporal = shape.weighted = false;
  shape.num_edge_types = 0;
  a = Generation::Arrays();
  st = ReadBaseFile(path, shape, 0, 0, 4, &rh, &a, &o, &t);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(a.indices, nbr);
}

TEST(VersionedPartitionTest, ReadersAtAVersionSeeTheSameWhileAWriterGoesOn) {
  Fixture f = MakeBase(9, 0, 64, 64, false);
  LiveShape s;
  s.num_nodes_total = 64;
  s.base_edges_total = static_cast<int64_t>(f.indices.size());
  VersionedPartition vp(f.view, s);
  std::vector<int64_t> nodes(64);
  for (int64_t i = 0; i < 64; ++i) nodes[i] = i;
  std::mt19937_64 rng(3);
  Model m = f.model;
  uint64_t seq = 0;
  for (; seq < 10; ++seq) {
    UpdateBatch b = RandomBatch(rng, f, m, false);
    vp.Apply(seq + 1, b);
  }
  vp.Publish(seq);
  sampler::OneHopResult pinned;
  ASSERT_TRUE(vp.SampleHop(ArrayView<const int64_t>(nodes), 4, 0, 77, {}, 10, &pinned).ok());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::mt19937_64 wr(4);
    while (!stop) {
      UpdateBatch b = RandomBatch(wr, f, m, false);
      vp.Apply(++seq, b);
      vp.Publish(seq);
    }
  });
  // At least 200 reads, and until the writer has published 20 versions past
  // the pinned one.
  for (int i = 0; i < 200 || vp.committed() < 30; ++i) {
    sampler::OneHopResult again;
    ASSERT_TRUE(vp.SampleHop(ArrayView<const int64_t>(nodes), 4, 0, 77, {}, 10, &again).ok());
    ASSERT_EQ(std::vector<int64_t>(again.neighbors.begin(), again.neighbors.end()),
              std::vector<int64_t>(pinned.neighbors.begin(), pinned.neighbors.end()))
        << "read " << i;
  }
  stop = true;
  writer.join();
  EXPECT_GE(vp.committed(), 30u);
  uint64_t v = 0;
  EXPECT_EQ(vp.ResolveVersion(static_cast<int64_t>(vp.committed()) + 1, &v).code(),
            Status::Code::kUnavailable);
  ASSERT_TRUE(vp.ResolveVersion(-1, &v).ok());
  EXPECT_EQ(v, vp.committed());
  ASSERT_TRUE(vp.ResolveVersion(0, &v).ok());  // the base itself
  EXPECT_EQ(v, 0u);
}

// A compaction hands over while a writer applies and readers sample: a read
// pinned below the new base (the kept generation) and one above it (the new
// base and the carried delta) see the same before, during and after.
TEST(VersionedPartitionTest, ACompactionWhileWritersAndReadersGoOnChangesNoPinnedRead) {
  Fixture f = MakeBase(11, 0, 256, 256, false);
  LiveShape s;
  s.num_nodes_total = 256;
  s.base_edges_total = static_cast<int64_t>(f.indices.size());
  VersionedPartition vp(f.view, s);
  std::vector<int64_t> nodes(256);
  for (int64_t i = 0; i < 256; ++i) nodes[i] = i;
  std::mt19937_64 rng(5);
  Model m = f.model;
  uint64_t seq = 0;
  for (; seq < 15; ++seq) vp.Apply(seq + 1, RandomBatch(rng, f, m, false));
  vp.Publish(seq);
  sampler::OneHopResult at10, at15;
  ASSERT_TRUE(vp.SampleHop(ArrayView<const int64_t>(nodes), 4, 0, 77, {}, 10, &at10).ok());
  ASSERT_TRUE(vp.SampleHop(ArrayView<const int64_t>(nodes), 4, 0, 77, {}, 15, &at15).ok());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::mt19937_64 wr(6);
    while (!stop) {
      vp.Apply(seq + 1, RandomBatch(wr, f, m, false));
      vp.Publish(++seq);
    }
  });
  std::thread compactor([&] { EXPECT_TRUE(vp.Compact(12, {}, nullptr).ok()); });
  for (int i = 0; i < 300 || vp.Stats().compactions == 0; ++i) {
    sampler::OneHopResult again;
    ASSERT_TRUE(vp.SampleHop(ArrayView<const int64_t>(nodes), 4, 0, 77, {}, 10, &again).ok());
    ASSERT_EQ(std::vector<int64_t>(again.neighbors.begin(), again.neighbors.end()),
              std::vector<int64_t>(at10.neighbors.begin(), at10.neighbors.end()))
        << "read " << i;
    ASSERT_TRUE(vp.SampleHop(ArrayView<const int64_t>(nodes), 4, 0, 77, {}, 15, &again).ok());
    ASSERT_EQ(std::vector<int64_t>(again.edge_ids.begin(), again.edge_ids.end()),
              std::vector<int64_t>(at15.edge_ids.begin(), at15.edge_ids.end()))
        << "read " << i;
  }
  compactor.join();
  stop = true;
  writer.join();
  EXPECT_EQ(vp.Stats().base_version, 12u);
  EXPECT_EQ(vp.Stats().retained, 0);
}

TEST(VersionedPartitionTest, FeatureRowsAndLabelsAreVersioned) {
  Fixture f = MakeBase(1, 10, 5, 20, false);
  LiveShape s;
  s.num_nodes_total = 20;
  s.row_bytes = 4;
  s.has_labels = true;
  VersionedPartition vp(f.view, s);
  UpdateBatch b1;
  b1.feature_rows = {12};
  b1.row_bytes = 4;
  b1.feature_bytes = "aaaa";
  b1.label_rows = {12};
  b1.labels = {7};
  vp.Apply(1, b1);
  UpdateBatch b2 = b1;
  b2.feature_bytes = "bbbb";
  b2.labels = {8};
  vp.Apply(2, b2);
  vp.Publish(2);
  std::string row;
  int64_t label = 0;
  EXPECT_FALSE(vp.FeatureRow(12, 0, &row));
  ASSERT_TRUE(vp.FeatureRow(12, 1, &row));
  EXPECT_EQ(row, "aaaa");
  ASSERT_TRUE(vp.FeatureRow(12, 2, &row));
  EXPECT_EQ(row, "bbbb");
  ASSERT_TRUE(vp.Label(12, 1, &label));
  EXPECT_EQ(label, 7);
  ASSERT_TRUE(vp.Label(12, 2, &label));
  EXPECT_EQ(label, 8);
  EXPECT_FALSE(vp.Label(13, 2, &label));
  EXPECT_EQ(vp.Stats().feature_rows, 2);
  // A compaction at 2 keeps the newest version at or below it, and later ones.
  UpdateBatch b3 = b1;
  b3.feature_bytes = "cccc";
  b3.labels = {9};
  vp.Apply(3, b3);
  vp.Publish(3);
  ASSERT_TRUE(vp.Compact(2, {}, nullptr).ok());
  ASSERT_TRUE(vp.ReleaseIdle(0));
  EXPECT_EQ(vp.Stats().feature_rows, 2);
  ASSERT_TRUE(vp.FeatureRow(12, 2, &row));
  EXPECT_EQ(row, "bbbb");
  ASSERT_TRUE(vp.FeatureRow(12, 3, &row));
  EXPECT_EQ(row, "cccc");
  ASSERT_TRUE(vp.Label(12, 2, &label));
  EXPECT_EQ(label, 8);
  ASSERT_TRUE(vp.Label(12, 3, &label));
  EXPECT_EQ(label, 9);
  EXPECT_FALSE(vp.FeatureRow(12, 1, &row));  // folded away
}

TEST(VersionedPartitionTest, BadBatchesAreRefusedNamingTheOperation) {
  Fixture f = MakeBase(2, 10, 5, 20, false);
  LiveShape s;
  s.num_nodes_total = 20;
  s.row_bytes = 8;
  VersionedPartition vp(f.view, s);
  auto refused = [&](const UpdateBatch& b, const std::string& want) {
    Status st = vp.Check(b);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << want;
    EXPECT_THAT(st.message(), HasSubstr(want));
  };
  UpdateBatch b;
  b.add_edges = {{10, 1}, {3, 1}};
  refused(b, "added edge 1: source 3 is not in this partition's rows [10, 15)");
  b.add_edges = {{10, 20}};
  refused(b, "added edge 0: destination 20 is out of range [0, 20)");
  b.add_edges = {{10, 1, 0, 1, 2}};
  refused(b, "edge type 2 on a homogeneous dataset");
  b.add_edges = {{10, 1, 5}};
  refused(b, "a time on a dataset without edge times");
  b.add_edges = {{10, 1, 0, -1.0f}};
  refused(b, "weight");
  b.add_edges.clear();
  b.feature_rows = {11};
  b.row_bytes = 4;
  b.feature_bytes = "abcd";
  refused(b, "feature rows of 4 bytes; this dataset's rows are 8 bytes");
  b.feature_rows.clear();
  b.feature_bytes.clear();
  b.label_rows = {11};
  b.labels = {1};
  refused(b, "labels given for a dataset without labels");
  EXPECT_EQ(vp.Stats().applied, 0u);
}

TEST(UpdateBatchCodecTest, RoundTripsAndRefusesWhatDoesNotAddUp) {
  UpdateBatch b;
  b.add_edges = {{1, 2, 3, 0.5f, 1}, {4, 5}};
  b.remove_edges = {{6, 7, 0, 1, -1}};
  b.feature_rows = {8, 9};
  b.row_bytes = 3;
  b.feature_bytes = "abcdef";
  b.label_rows = {10};
  b.labels = {11};
  b.writer = 77;
  b.writer_seq = 4;
  const std::string bytes = EncodeUpdateBatch(b);
  EXPECT_EQ(EncodedBatchBytes(b), static_cast<int64_t>(bytes.size()));
  UpdateBatch d;
  ASSERT_TRUE(DecodeUpdateBatch(bytes, &d).ok());
  EXPECT_EQ(d.writer, 77u);
  EXPECT_EQ(d.writer_seq, 4u);
  ASSERT_EQ(d.add_edges.size(), 2u);
  EXPECT_EQ(d.add_edges[0].time, 3);
  EXPECT_EQ(d.add_edges[0].weight, 0.5f);
  EXPECT_EQ(d.add_edges[0].type, 1);
  EXPECT_EQ(d.remove_edges[0].type, -1);
  EXPECT_EQ(d.feature_bytes, "abcdef");
  EXPECT_EQ(d.labels[0], 11);
  EXPECT_EQ(d.size(), 6);
  // Every cut, and a byte too many, are refused (never read past the end).
  for (size_t cut = 0; cut < bytes.size(); ++cut)
    EXPECT_FALSE(DecodeUpdateBatch(std::string_view(bytes).substr(0, cut), &d).ok()) << cut;
  Status st = DecodeUpdateBatch(bytes + "x", &d);
  EXPECT_THAT(st.message(), HasSubstr("holds"));
  std::string huge = bytes;
  const uint64_t many = uint64_t{1} << 40;
  std::memcpy(&huge[8], &many, 8);  // add_edges count
  st = DecodeUpdateBatch(huge, &d);
  EXPECT_THAT(st.message(), HasSubstr("more than"));
  st = DecodeUpdateBatch("not a batch at all, just words here to fill", &d);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  // A writer's batch numbered 0 is refused (they count from 1).
  std::string zero = bytes;
  std::memset(&zero[56], 0, 8);  // writer_seq
  st = DecodeUpdateBatch(zero, &d);
  EXPECT_THAT(st.message(), HasSubstr("numbers a batch 0"));
  // A batch of the first byte form (no writer, as logs of before hold) reads.
  std::string v1 = bytes.substr(0, 48) + bytes.substr(64);
  const uint32_t one = 1;
  std::memcpy(&v1[4], &one, 4);
  ASSERT_TRUE(DecodeUpdateBatch(v1, &d).ok());
  EXPECT_EQ(d.writer, 0u);
  EXPECT_EQ(d.add_edges.size(), 2u);
  EXPECT_EQ(d.feature_bytes, "abcdef");
}

TEST(RetryTableTest, TellsRetriesFromNewBatchesAndForgetsTheLeastRecentWriter) {
  RetryTable t(2);
  EXPECT_TRUE(t.Admit(1, 1, 1));
  EXPECT_FALSE(t.Admit(1, 1, 2));  // the same batch again
  EXPECT_TRUE(t.Admit(1, 2, 3));
  EXPECT_FALSE(t.Admit(1, 1, 4));  // an older one, late
  EXPECT_TRUE(t.Admit(0, 1, 5));   // no writer: always new
  EXPECT_TRUE(t.Admit(0, 1, 6));
  EXPECT_TRUE(t.Admit(2, 1, 7));
  EXPECT_EQ(t.size(), 2u);
  EXPECT_FALSE(t.Admit(1, 2, 8));  // writer 1 heard last now; writer 2 is the least recent
  EXPECT_TRUE(t.Admit(3, 1, 9));   // forgets writer 2
  EXPECT_EQ(t.forgotten(), 1);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_TRUE(t.Admit(2, 1, 10));   // forgotten: taken as new (what the bound costs)
  EXPECT_FALSE(t.Admit(3, 1, 11));  // writer 3 remembered (writer 1 was forgotten)
  EXPECT_EQ(t.forgotten(), 2);
}

// A table exported (as a base file keeps it) and imported decides every later
// batch as the original does, its order of who was heard from least
// recently included; an import past the capacity forgets the oldest.
TEST(RetryTableTest, ExportedAndImportedDecidesAsTheOriginal) {
  std::mt19937_64 rng(3);
  RetryTable a(4);
  uint64_t seq = 0;
  std::vector<uint64_t> next(8, 1);
  auto random_batch = [&](RetryTable* t, RetryTable* u) {
    const uint64_t w = 1 + rng() % 7;
    const uint64_t n = rng() % 3 == 0 && next[w] > 1 ? next[w] - 1 : next[w]++;  // some retries
    ++seq;
    const bool x = t->Admit(w, n, seq);
    if (u != nullptr) EXPECT_EQ(u->Admit(w, n, seq), x) << "batch " << seq;
  };
  for (int i = 0; i < 200; ++i) random_batch(&a, nullptr);
  RetryState st;
  a.Export(&st);
  EXPECT_EQ(st.writers.size(), a.size());
  for (size_t i = 1; i < st.writers.size(); ++i)
    EXPECT_LT(st.writers[i - 1].heard, st.writers[i].heard);
  RetryTable b(4);
  b.Import(st);
  EXPECT_EQ(b.forgotten(), a.forgotten());
  for (int i = 0; i < 500; ++i) random_batch(&a, &b);
  EXPECT_EQ(b.forgotten(), a.forgotten());
  RetryTable small(2);
  small.Import(st);
  EXPECT_EQ(small.size(), 2u);
  EXPECT_EQ(small.forgotten(), st.forgotten + static_cast<int64_t>(st.writers.size()) - 2);
}

}  // namespace
}  // namespace fanout::live
