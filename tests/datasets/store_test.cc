// Round trips through fanout's partition store, and opening damaged stores.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "datasets/detail/chunks.h"
#include "datasets/formats.h"
#include "datasets/partition_store.h"
#include "datasets/partitioner.h"
#include "tests/datasets/test_util.h"

namespace fanout::datasets {
namespace {

using testing::DataDir;
using ::testing::HasSubstr;
using testing::TempDir;
namespace fs = std::filesystem;

RawDataset Load(const std::string& format, const std::string& input, LoadOptions lo = {}) {
  lo.quiet = true;
  RawDataset ds;
  std::vector<std::string> notes;
  Status st = LoadDataset(format, input, lo, &ds, &notes);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return ds;
}

std::string Partition(const RawDataset& ds, int k, PartitionMethod m, const std::string& dir,
                      WriteOptions wo = {}, DatasetMeta* meta = nullptr) {
  PartitionOptions po;
  po.num_parts = k;
  po.method = m;
  po.quiet = true;
  po.store_by_target = wo.incoming;
  std::vector<int32_t> part;
  std::vector<std::string> notes;
  Status st = ComputePartition(ds, po, &part, &notes);
  EXPECT_TRUE(st.ok()) << st.ToString();
  wo.quiet = true;
  st = WritePartitionedDataset(ds, part, k, wo, dir, meta);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return dir;
}

// Loads every partition and checks the store against the raw dataset: each
// edge exactly once, in the partition owning its stored endpoint, under its
// edge id; features, labels and splits of every node under its new id; the
// id mapping a bijection back to the original ids.
void ExpectRoundTrip(const RawDataset& ds, const std::string& dir, int k, bool incoming = true,
                     FeatureDType dtype = FeatureDType::kFloat32) {
  std::vector<PartitionData> parts(k);
  OpenOptions oo;
  oo.expected_num_parts = k;
  for (int p = 0; p < k; ++p) {
    Status st = OpenPartition(dir, p, oo, &parts[p]);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  const DatasetMeta& meta = parts[0].meta;
  EXPECT_EQ(meta.has_edge_weights, !ds.edge_weights.empty());
  for (int p = 0; p < k; ++p) {
    EXPECT_EQ(parts[p].edge_weights.size(), ds.edge_weights.empty() ? 0u : parts[p].indices.size());
    EXPECT_EQ(parts[p].Graph().has_weights(), !ds.edge_weights.empty());
  }
  // What fanout-ctl resources sizes servers by: the loaded arrays, from meta.json alone.
  for (int p = 0; p < k; ++p) {
    int64_t bytes = -1;
    ASSERT_TRUE(PartitionArrayBytes(meta, p, &bytes).ok());
    EXPECT_EQ(bytes, parts[p].RawBytes()) << "partition " << p;
  }
  int64_t unused = 0;
  EXPECT_EQ(PartitionArrayBytes(meta, k, &unused).code(), Status::Code::kInvalidArgument);
  ASSERT_EQ(meta.num_nodes, ds.num_nodes);
  ASSERT_EQ(meta.num_edges, ds.num_edges());
  // New id -> old (dense input) id, via original ids (unique per node here:
  // original_ids are distinct in every format; per node type in
  // heterogeneous ones, whose stored type comes from the meta's bounds).
  std::map<std::pair<int32_t, int64_t>, int64_t> old_of_orig;
  for (int64_t v = 0; v < ds.num_nodes; ++v)
    old_of_orig[{ds.hetero() ? ds.node_type[v] : 0, ds.original_ids[v]}] = v;
  std::vector<int64_t> old_of_new(ds.num_nodes, -1);
  std::vector<int> seen(ds.num_nodes, 0);
  for (int p = 0; p < k; ++p) {
    const PartitionData& d = parts[p];
    EXPECT_EQ(d.node_begin, meta.offsets[p]);
    for (int64_t i = 0; i < d.num_nodes(); ++i) {
      auto it = old_of_orig.find(
          {ds.hetero() ? meta.hetero.NodeTypeOf(d.node_begin + i) : 0, d.original_ids[i]});
      ASSERT_NE(it, old_of_orig.end()) << "unknown original id " << d.original_ids[i];
      old_of_new[d.node_begin + i] = it->second;
      ASSERT_EQ(seen[it->second]++, 0) << "node stored twice";
      if (!ds.original_names.empty()) {
        EXPECT_EQ(d.original_names[i], ds.original_names[it->second]);
      }
    }
  }
  std::vector<int> edge_seen(ds.num_edges(), 0);
  for (int p = 0; p < k; ++p) {
    const PartitionData& d = parts[p];
    ASSERT_TRUE(d.Graph().Validate(ds.num_nodes).ok());
    for (int64_t i = 0; i < d.num_nodes(); ++i) {
      int64_t old = old_of_new[d.node_begin + i];
      for (int64_t e = d.indptr[i]; e < d.indptr[i + 1]; ++e) {
        int64_t id = d.edge_ids[e];
        ASSERT_GE(id, 0);
        ASSERT_LT(id, ds.num_edges());
        ASSERT_EQ(edge_seen[id]++, 0) << "edge " << id << " stored twice";
        int64_t owner = incoming ? ds.dst[id] : ds.src[id];
        int64_t other = incoming ? ds.src[id] : ds.dst[id];
        EXPECT_EQ(owner, old) << "edge " << id << " stored in the wrong row";
        EXPECT_EQ(old_of_new[d.indices[e]], other) << "edge " << id << " has the wrong neighbor";
        if (!ds.edge_weights.empty()) {
          ASSERT_EQ(d.edge_weights[e], ds.edge_weights[id]) << "edge " << id << "'s weight";
        }
        if (!ds.edge_times.empty()) {
          ASSERT_EQ(d.edge_times[e], ds.edge_times[id]) << "edge " << id << "'s time";
        }
      }
      if (ds.feature_dim > 0) {
        for (int64_t j = 0; j < ds.feature_dim; ++j) {
          float want = ds.features[old * ds.feature_dim + j];
          if (dtype == FeatureDType::kFloat32) {
            ASSERT_EQ(d.Feature(i, j), want) << "feature (" << old << ", " << j << ")";
          } else {
            const float tolerance =
                dtype == FeatureDType::kInt8       ? float(meta.feature_scales[j]) / 2 * 1.0001f
                : dtype == FeatureDType::kBFloat16 ? std::max(4e-3f * std::fabs(want), 1e-30f)
                                                   : std::max(1e-3f * std::fabs(want), 1e-7f);
            ASSERT_NEAR(d.Feature(i, j), want, tolerance) << "feature (" << old << ", " << j << ")";
          }
        }
      }
      if (!ds.labels.empty()) {
        EXPECT_EQ(d.labels[i], ds.labels[old]);
      }
      if (!ds.split.empty()) {
        EXPECT_EQ(d.split[i], ds.split[old]);
      }
    }
  }
  for (int64_t e = 0; e < ds.num_edges(); ++e)
    ASSERT_EQ(edge_seen[e], 1) << "edge " << e << " missing";
  for (int64_t v = 0; v < ds.num_nodes; ++v) ASSERT_EQ(seen[v], 1) << "node " << v << " missing";
}

TEST(PartitionStoreTest, CoraRoundTripsWithEveryMethod) {
  RawDataset ds = Load("linqs", DataDir() + "/cora");
  ASSERT_EQ(ds.num_nodes, 2708);
  ASSERT_EQ(ds.num_edges(), 5429);
  TempDir tmp;
  for (auto [k, m] : {std::pair{1, PartitionMethod::kMetis},
                      {2, PartitionMethod::kMetis},
                      {3, PartitionMethod::kRandom},
                      {3, PartitionMethod::kRange}}) {
    std::string dir = tmp.Sub("cora-" + std::to_string(k) + PartitionMethodName(m));
    Partition(ds, k, m, dir);
    ExpectRoundTrip(ds, dir, k);
  }
}

// Compact topology: 32-bit neighbor ids, no edge ids and no features read
// hold the same graph as the default open; the edge ids read alone later
// equal the ones read with it.
TEST(PartitionStoreTest, CompactOpenHoldsTheSameGraphAndEdgeIdsComeLater) {
  RawDataset ds = Load("linqs", DataDir() + "/cora");
  TempDir tmp;
  std::string dir = tmp.Sub("cora2");
  Partition(ds, 2, PartitionMethod::kMetis, dir);
  for (int p = 0; p < 2; ++p) {
    PartitionData wide, narrow;
    ASSERT_TRUE(OpenPartition(dir, p, {}, &wide).ok());
    OpenOptions o;
    o.index_bits = 0;  // 32 where they fit: Cora's do
    o.edge_ids = false;
    o.features = false;
    Status st = OpenPartition(dir, p, o, &narrow);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_TRUE(narrow.indices.empty());
    ASSERT_EQ(narrow.indices32.size(), wide.indices.size());
    EXPECT_EQ(narrow.num_edges, static_cast<int64_t>(wide.indices.size()));
    EXPECT_TRUE(std::equal(wide.indices.begin(), wide.indices.end(), narrow.indices32.begin()));
    EXPECT_EQ(narrow.indptr, wide.indptr);
    EXPECT_TRUE(narrow.edge_ids.empty());
    EXPECT_TRUE(narrow.features.empty());
    EXPECT_EQ(narrow.labels, wide.labels);
    EXPECT_EQ(narrow.View().num_edges(), wide.View().num_edges());
    EXPECT_EQ(narrow.RawBytes() + static_cast<int64_t>(wide.indices.size()) * (4 + 8) +
                  static_cast<int64_t>(wide.features.size()),
              wide.RawBytes());
    std::vector<int64_t> ids;
    st = ReadPartitionEdgeIds(dir, p, narrow.num_edges, true, &ids);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(ids, wide.edge_ids);
    st = ReadPartitionEdgeIds(dir, p, narrow.num_edges + 1, true, &ids);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
    o.index_bits = 16;
    EXPECT_EQ(OpenPartition(dir, p, o, &narrow).code(), Status::Code::kInvalidArgument);
  }
}

TEST(PartitionStoreTest, PlanetoidCiteSeerAndSnapRoundTrip) {
  TempDir tmp;
  RawDataset pc = Load("planetoid", DataDir() + "/planetoid/cora");
  EXPECT_EQ(pc.num_nodes, 2708);
  EXPECT_EQ(std::count(pc.split.begin(), pc.split.end(), uint8_t(Split::kTrain)), 140);
  EXPECT_EQ(std::count(pc.split.begin(), pc.split.end(), uint8_t(Split::kVal)), 500);
  EXPECT_EQ(std::count(pc.split.begin(), pc.split.end(), uint8_t(Split::kTest)), 1000);
  Partition(pc, 2, PartitionMethod::kMetis, tmp.Sub("pc"));
  ExpectRoundTrip(pc, tmp.Sub("pc"), 2);

  RawDataset cs = Load("linqs", DataDir() + "/citeseer");
  EXPECT_EQ(cs.num_nodes, 3312);
  EXPECT_EQ(cs.num_edges(), 4732 - 17);        // 17 edges to unknown ids are skipped
  EXPECT_EQ(cs.original_names.size(), 3312u);  // alphanumeric ids are kept as names
  Partition(cs, 3, PartitionMethod::kMetis, tmp.Sub("cs"));
  ExpectRoundTrip(cs, tmp.Sub("cs"), 3);

  RawDataset snap = Load("snap", DataDir() + "/snap/CA-GrQc.txt.gz");
  EXPECT_EQ(snap.num_nodes, 5242);
  EXPECT_EQ(snap.num_edges(), 28980);
  WriteOptions out;
  out.incoming = false;
  Partition(snap, 4, PartitionMethod::kRandom, tmp.Sub("snap"), out);
  ExpectRoundTrip(snap, tmp.Sub("snap"), 4, /*incoming=*/false);
}

// A heterogeneous store: every edge once with its type, each partition's
// nodes ordered by type (the meta's bounds give each node's type), each row
// ordered by edge type, per-type feature dims kept; both directions; the
// reader refuses a store whose rows lost their type order.
TEST(PartitionStoreTest, HeterogeneousMovieLensRoundTripsWithTypes) {
  RawDataset ds = Load("movielens", DataDir() + "/movielens/ml-latest-small");
  EdgeOptions eo;
  eo.make_undirected = true;
  ApplyEdgeOptions(eo, &ds);
  TempDir tmp;
  for (auto [k, m, incoming] :
       {std::tuple{2, PartitionMethod::kMetis, true}, {3, PartitionMethod::kRandom, false}}) {
    const std::string dir = tmp.Sub("ml" + std::to_string(k));
    WriteOptions wo;
    wo.incoming = incoming;
    DatasetMeta meta;
    Partition(ds, k, m, dir, wo, &meta);
    ExpectRoundTrip(ds, dir, k, incoming);
    ASSERT_FALSE(meta.hetero.empty());
    EXPECT_EQ(meta.hetero.node_types, ds.node_types);
    EXPECT_EQ(meta.hetero.feature_dims, (std::vector<int64_t>{0, 20, 0}));
    EXPECT_EQ(meta.hetero.type_bounds.size(), static_cast<size_t>(k * 3 + 1));
    int64_t typed_edges = 0;
    for (int p = 0; p < k; ++p) {
      PartitionData d;
      ASSERT_TRUE(OpenPartition(dir, p, {}, &d).ok());
      EXPECT_EQ(d.meta.hetero.type_bounds, meta.hetero.type_bounds);
      ASSERT_EQ(d.edge_types.size(), d.indices.size());
      for (int64_t r = 0; r < d.num_nodes(); ++r) {
        const int64_t v = d.node_begin + r;
        const int32_t t = meta.hetero.NodeTypeOf(v);
        // The original id of a node of type t is its id in that type's file.
        if (t == 0) EXPECT_GE(d.original_ids[r], 1);
        for (int64_t e = d.indptr[r]; e < d.indptr[r + 1]; ++e, ++typed_edges) {
          const int64_t id = d.edge_ids[e];
          ASSERT_EQ(d.edge_types[e], ds.edge_type[id]) << "edge " << id;
          if (e > d.indptr[r]) ASSERT_LE(d.edge_types[e - 1], d.edge_types[e]);
          ASSERT_EQ(meta.hetero.RowType(d.edge_types[e]), t);
          ASSERT_EQ(
              meta.hetero.NodeTypeOf(d.indices[e]),
              incoming ? ds.edge_types[ds.edge_type[id]].src : ds.edge_types[ds.edge_type[id]].dst);
        }
      }
    }
    EXPECT_EQ(typed_edges, ds.num_edges());
  }
  // Damage: a meta.json whose bounds do not start a partition at its offset.
  const std::string dir = tmp.Sub("ml2");
  std::ifstream in(dir + "/meta.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  DatasetMeta m;
  ASSERT_TRUE(DatasetMeta::FromJson(text, "meta.json", &m).ok());
  m.hetero.type_bounds[3] += 1;
  DatasetMeta back;
  Status st = DatasetMeta::FromJson(m.ToJson(), "meta.json", &back);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.ToString(), HasSubstr("node_type_bounds"));
}

// A weight per edge: stored beside each edge in every row order the writer
// uses (input order; by time; by type), read back into the sampler's graph.
TEST(PartitionStoreTest, EdgeWeightsFollowTheirEdgesThroughEveryRowOrder) {
  TempDir tmp;
  RawDataset cora = Load("linqs", DataDir() + "/cora");
  for (int64_t i = 0; i < cora.num_edges(); ++i)
    cora.edge_weights.push_back(static_cast<float>((i * 7919) % 1000) / 250.0f);
  cora.edge_weights[3] = 0;  // zero is a weight (never drawn)
  EdgeOptions eo;
  eo.make_undirected = true;
  eo.drop_duplicates = true;
  eo.drop_self_loops = true;
  RawDataset undirected = cora;
  ApplyEdgeOptions(eo, &undirected);
  ASSERT_EQ(undirected.edge_weights.size(), undirected.src.size());
  ASSERT_TRUE(undirected.Validate().ok());
  for (int k : {1, 3}) {
    const std::string dir = tmp.Sub("cora" + std::to_string(k));
    Partition(undirected, k, PartitionMethod::kRandom, dir);
    ExpectRoundTrip(undirected, dir, k);
  }
  // With times: rows in time order, the weights with them.
  RawDataset timed = cora;
  for (int64_t i = 0; i < timed.num_edges(); ++i) timed.edge_times.push_back((i * 31) % 97);
  Partition(timed, 2, PartitionMethod::kHash, tmp.Sub("timed"));
  ExpectRoundTrip(timed, tmp.Sub("timed"), 2);
  // Heterogeneous: rows in type order.
  RawDataset ml = Load("movielens", DataDir() + "/movielens/ml-latest-small");
  for (int64_t i = 0; i < ml.num_edges(); ++i) ml.edge_weights.push_back(0.5f + (i % 9));
  ApplyEdgeOptions(eo, &ml);
  Partition(ml, 2, PartitionMethod::kRandom, tmp.Sub("ml"));
  ExpectRoundTrip(ml, tmp.Sub("ml"), 2);
  // A bad weight is refused before anything is written.
  cora.edge_weights[5] = -1;
  std::vector<int32_t> part(static_cast<size_t>(cora.num_nodes), 0);
  WriteOptions wo;
  wo.quiet = true;
  Status st = WritePartitionedDataset(cora, part, 1, wo, tmp.Sub("bad"), nullptr);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("edge 5 has weight -1"));
  EXPECT_FALSE(fs::exists(tmp.Sub("bad")));
  cora.edge_weights.pop_back();
  EXPECT_THAT(cora.Validate().message(), HasSubstr("weights"));
}

TEST(PartitionStoreTest, ReducedFeatureTypesRoundTripWithinTheirPrecision) {
  TempDir tmp;
  LoadOptions lo;
  lo.rmat.scale = 10;
  lo.feature_dim = 8;
  lo.num_classes = 4;
  lo.split_fractions = {0.6, 0.2, 0.2};
  RawDataset ds = Load("rmat", "", lo);
  // Column j's values scaled by 1 + j: per-column int8 scales then differ.
  for (size_t i = 0; i < ds.features.size(); ++i) ds.features[i] *= 1.0f + float(i % 8);
  for (FeatureDType t : {FeatureDType::kFloat16, FeatureDType::kBFloat16, FeatureDType::kInt8}) {
    for (bool files : {false, true}) {
      WriteOptions wo;
      wo.feature_dtype = t;
      wo.feature_files = files;  // the flat feature file instead of the chunks
      wo.chunk_nodes = 100;      // many chunks, a short last one
      std::string dir = tmp.Sub(std::string(FeatureDTypeName(t)) + (files ? "-file" : ""));
      Partition(ds, 3, PartitionMethod::kMetis, dir, wo);
      ExpectRoundTrip(ds, dir, 3, true, t);
      DatasetMeta meta;
      ASSERT_TRUE(ReadDatasetMeta(dir, &meta).ok());
      EXPECT_EQ(meta.has_feature_files(), files);
      if (t == FeatureDType::kInt8) {
        ASSERT_EQ(meta.feature_scales.size(), 8u);
        EXPECT_GT(meta.feature_scales[7], 6 * meta.feature_scales[0]);  // one scale per column
      }
    }
  }
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.0f)), 1.0f);
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.00390625f)), 1.0f);       // halfway: to even
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.01171875f)), 1.015625f);  // halfway: to even (up)
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(std::nanf("")))));
  EXPECT_EQ(HalfToFloat(FloatToHalf(0.5f)), 0.5f);
  EXPECT_EQ(HalfToFloat(FloatToHalf(-3.0f)), -3.0f);
  EXPECT_EQ(HalfToFloat(FloatToHalf(65504.0f)), 65504.0f);
  EXPECT_EQ(HalfToFloat(FloatToHalf(5.960464e-8f)), 5.960464477539063e-8f);  // smallest subnormal
}

TEST(PartitionStoreTest, MetisCutsFewerEdgesThanRandom) {
  for (auto [format, input, undirected] : {std::tuple{"linqs", DataDir() + "/cora", false},
                                           {"snap", DataDir() + "/snap/CA-GrQc.txt.gz", true}}) {
    RawDataset ds = Load(format, input);
    if (undirected) {
      EdgeOptions eo;
      eo.make_undirected = eo.drop_duplicates = true;
      ApplyEdgeOptions(eo, &ds);
    }
    for (int k : {2, 4}) {
      std::vector<std::string> notes;
      PartitionOptions po;
      po.num_parts = k;
      po.quiet = true;
      std::vector<int32_t> metis, random;
      po.method = PartitionMethod::kMetis;
      ASSERT_TRUE(ComputePartition(ds, po, &metis, &notes).ok());
      po.method = PartitionMethod::kRandom;
      ASSERT_TRUE(ComputePartition(ds, po, &random, &notes).ok());
      PartitionStats sm = ComputePartitionStats(ds, metis, k, true);
      PartitionStats sr = ComputePartitionStats(ds, random, k, true);
      std::printf(
          "%s k=%d: edge cut metis %.4f (%lld edges, node balance %.3f) vs random %.4f (%lld "
          "edges)\n",
          ds.name.c_str(), k, sm.edge_cut_fraction, static_cast<long long>(sm.cut_edges),
          sm.node_balance, sr.edge_cut_fraction, static_cast<long long>(sr.cut_edges));
      EXPECT_LT(sm.cut_edges, sr.cut_edges / 2);
      EXPECT_LE(sm.node_balance, 1.05);
      EXPECT_EQ(sr.node_balance,
                static_cast<double>(*std::max_element(sr.nodes.begin(), sr.nodes.end())) /
                    (double(ds.num_nodes) / k));
    }
  }
}

class DamagedStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ds_ = Load("linqs", DataDir() + "/cora");
    WriteOptions wo;
    wo.chunk_nodes = 512;
    dir_ = Partition(ds_, 2, PartitionMethod::kMetis, tmp_.Sub("cora"), wo);
  }
  Status Open(int part, int expected = -1) {
    OpenOptions oo;
    oo.expected_num_parts = expected;
    PartitionData d;
    return OpenPartition(dir_, part, oo, &d);
  }
  std::string Sst(int part) {
    for (const auto& e : fs::directory_iterator(dir_ + "/part-" + std::to_string(part)))
      if (e.path().extension() == ".sst") return e.path().string();
    return "";
  }
  void EditMeta(const std::string& from, const std::string& to) {
    std::ifstream in(dir_ + "/meta.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, from.size(), to);
    std::ofstream(dir_ + "/meta.json") << text;
  }
  TempDir tmp_;
  RawDataset ds_;
  std::string dir_;
};

TEST_F(DamagedStoreTest, IntactStoreOpens) { EXPECT_TRUE(Open(0, 2).ok()); }

TEST_F(DamagedStoreTest, OtherPartitionCountIsInvalidArgument) {
  Status st = Open(0, 3);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_THAT(st.message(), HasSubstr("has 2 partitions, expected 3"));
  st = Open(2);
  EXPECT_THAT(st.message(), HasSubstr("partition 2 is outside [0, 2)"));
}

TEST_F(DamagedStoreTest, AVersionOneStoreStillOpens) {
  EditMeta("\"format_version\": 2", "\"format_version\": 1");
  EXPECT_TRUE(Open(0).ok());
}

TEST_F(DamagedStoreTest, OtherFormatVersionIsInvalidArgument) {
  EditMeta("\"format_version\": 2", "\"format_version\": 7");
  Status st = Open(0);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_THAT(st.message(), HasSubstr("format version 7"));
}

TEST_F(DamagedStoreTest, TruncatedMetaIsCorruption) {
  fs::resize_file(dir_ + "/meta.json", 100);
  Status st = Open(0);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_THAT(st.message(), HasSubstr("meta.json"));
}

TEST_F(DamagedStoreTest, MissingMetaIsNotFound) {
  fs::remove(dir_ + "/meta.json");
  Status st = Open(0);
  EXPECT_TRUE(st.IsNotFound());
  EXPECT_THAT(st.message(), HasSubstr("meta.json: missing"));
}

TEST_F(DamagedStoreTest, TruncatedPartitionIsCorruption) {
  std::string sst = Sst(1);
  fs::resize_file(sst, fs::file_size(sst) / 2);
  Status st = Open(1);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("part-1"));
}

TEST_F(DamagedStoreTest, FlippedByteIsCorruption) {
  std::string sst = Sst(0);
  {
    std::fstream f(sst, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(sst) / 3));
    char c;
    f.read(&c, 1);
    f.seekp(static_cast<std::streamoff>(fs::file_size(sst) / 3));
    c ^= 0x5a;
    f.write(&c, 1);
  }
  Status st = Open(0);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("part-0"));
}

TEST_F(DamagedStoreTest, PartitionOfAnotherDatasetIsCorruption) {
  std::string other = Partition(ds_, 2, PartitionMethod::kRandom, tmp_.Sub("other"));
  fs::remove_all(dir_ + "/part-1");
  fs::copy(other + "/part-1", dir_ + "/part-1");
  Status st = Open(1);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_THAT(st.message(), HasSubstr("belongs to another dataset"));
}

TEST_F(DamagedStoreTest, MissingPartitionFolderIsCorruption) {
  fs::remove_all(dir_ + "/part-1");
  Status st = Open(1);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_THAT(st.message(), HasSubstr("part-1: missing partition folder"));
}

TEST(PartitionStoreWriteTest, RefusesAnExistingOutputAndLeavesNothingOnFailure) {
  TempDir tmp;
  RawDataset ds = Load("linqs", DataDir() + "/cora");
  std::vector<int32_t> part(ds.num_nodes, 0);
  WriteOptions wo;
  wo.quiet = true;
  std::string dir = tmp.Sub("out");
  ASSERT_TRUE(WritePartitionedDataset(ds, part, 1, wo, dir, nullptr).ok());
  Status st = WritePartitionedDataset(ds, part, 1, wo, dir, nullptr);
  EXPECT_THAT(st.message(), HasSubstr("already exists"));
  wo.overwrite = true;
  EXPECT_TRUE(WritePartitionedDataset(ds, part, 1, wo, dir, nullptr).ok());
  EXPECT_EQ(tmp.List(), std::vector<std::string>{"out"});  // no temporary or old folders left

  // A bad assignment fails before anything is written.
  part[5] = 3;
  st = WritePartitionedDataset(ds, part, 2, wo, tmp.Sub("bad"), nullptr);
  EXPECT_THAT(st.message(), HasSubstr("node 5 is assigned to part 3, outside [0, 2)"));
  // An output whose parent is a file fails, and leaves nothing.
  tmp.Write("file", "x");
  part[5] = 0;
  st = WritePartitionedDataset(ds, part, 1, wo, tmp.Sub("file/sub"), nullptr);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(tmp.List().size(), 2u);  // "out" and "file"
}

// Each chunk kind's encoder and decoder agree, and the decoders name what is
// wrong with a chunk instead of reading past it.
// Compact topology: the same chunk decoded into int32 neighbor ids, without
// edge ids, and the edge ids read alone afterwards.
TEST(ChunkCodecTest, AdjacencyDecodesIntoInt32WithoutEdgeIdsAndEdgeIdsAlone) {
  PartitionData d;
  d.meta.num_nodes = 100;
  d.indptr.assign(4, 0);
  d.indices32.resize(5);
  d.num_edges = 5;
  std::string v;
  detail::EncodeAdjChunk(std::vector<int64_t>{2, 0, 3}, std::vector<int64_t>{5, 6, 7, 8, 99},
                         std::vector<int64_t>{10, 11, 12, 13, 14}, &v);
  int64_t edge_pos = 0;
  EXPECT_EQ(detail::DecodeAdjChunk(v.data(), v.size(), 3, 0, 100, &edge_pos, &d), "");
  EXPECT_EQ(d.indptr, (std::vector<int64_t>{0, 2, 2, 5}));
  EXPECT_EQ(d.indices32, (std::vector<int32_t>{5, 6, 7, 8, 99}));
  EXPECT_TRUE(d.indices.empty());
  EXPECT_TRUE(d.edge_ids.empty());
  edge_pos = 0;
  EXPECT_NE(detail::DecodeAdjChunk(v.data(), v.size(), 3, 0, 99, &edge_pos, &d).find("node 99"),
            std::string::npos);
  std::vector<int64_t> ids(5);
  edge_pos = 0;
  EXPECT_EQ(detail::DecodeAdjEdgeIds(v.data(), v.size(), 3, 5, &edge_pos, ids.data()), "");
  EXPECT_EQ(ids, (std::vector<int64_t>{10, 11, 12, 13, 14}));
  edge_pos = 1;
  EXPECT_EQ(detail::DecodeAdjEdgeIds(v.data(), v.size(), 3, 5, &edge_pos, ids.data()),
            "holds more edges than the partition");
  edge_pos = 0;
  EXPECT_EQ(detail::DecodeAdjEdgeIds(v.data(), v.size() - 8, 3, 5, &edge_pos, ids.data()),
            "has the wrong size");
}

TEST(ChunkCodecTest, EveryKindRoundTripsAndRejectsDamage) {
  PartitionData d;
  d.meta.num_nodes = 100;
  d.meta.feature_dim = 3;
  d.meta.feature_dtype = FeatureDType::kFloat16;
  d.indptr.assign(4, 0);
  d.indices.resize(5);
  d.edge_ids.resize(5);
  d.num_edges = 5;
  d.features.resize(3 * 3 * 2);
  std::string v;
  detail::EncodeAdjChunk(std::vector<int64_t>{2, 0, 3}, std::vector<int64_t>{5, 6, 7, 8, 99},
                         std::vector<int64_t>{10, 11, 12, 13, 14}, &v);
  int64_t edge_pos = 0;
  EXPECT_EQ(detail::DecodeAdjChunk(v.data(), v.size(), 3, 0, 100, &edge_pos, &d), "");
  EXPECT_EQ(edge_pos, 5);
  EXPECT_EQ(d.indptr, (std::vector<int64_t>{0, 2, 2, 5}));
  EXPECT_EQ(d.indices, (std::vector<int64_t>{5, 6, 7, 8, 99}));
  EXPECT_EQ(d.edge_ids, (std::vector<int64_t>{10, 11, 12, 13, 14}));
  edge_pos = 0;
  EXPECT_EQ(detail::DecodeAdjChunk(v.data(), v.size() - 1, 3, 0, 100, &edge_pos, &d),
            "has the wrong size");
  EXPECT_EQ(detail::DecodeAdjChunk(v.data(), v.size(), 4, 0, 100, &edge_pos, &d),
            "holds 3 nodes, expected 4");
  EXPECT_THAT(detail::DecodeAdjChunk(v.data(), v.size(), 3, 0, 50, &edge_pos, &d),
              ::testing::HasSubstr("pointing at node 99, outside [0, 50)"));

  std::vector<float> rows = {1.5f, -2.0f, 0.25f, 3, 4, 5, 6, 7, 8};
  for (int r = 0; r < 3; ++r)
    detail::EncodeFeatureRow(FeatureDType::kFloat16, nullptr, rows.data() + 3 * r, 3,
                             reinterpret_cast<char*>(d.features.data()) + 6 * r);
  std::vector<float> back(3);
  DecodeFeatureRow(FeatureDType::kFloat16, nullptr,
                   reinterpret_cast<const char*>(d.features.data()), 3, back.data());
  EXPECT_EQ(back, (std::vector<float>{1.5f, -2.0f, 0.25f}));
  std::string feat(reinterpret_cast<const char*>(d.features.data()), d.features.size());
  EXPECT_EQ(detail::DecodeFeatureChunk(feat.data(), feat.size(), 3, 0, &d), "");
  EXPECT_EQ(detail::DecodeFeatureChunk(feat.data(), feat.size(), 2, 0, &d), "has the wrong size");
  char i8[3];
  const double half[3] = {0.5, 0.5, 0.5}, per_column[3] = {0.5, 1.0, 0.125};
  detail::EncodeFeatureRow(FeatureDType::kInt8, half, rows.data(), 3, i8);
  DecodeFeatureRow(FeatureDType::kInt8, half, i8, 3, back.data());
  EXPECT_EQ(back, (std::vector<float>{1.5f, -2.0f, 0.0f}));  // 0.25 / 0.5 rounds to 0 (even)
  detail::EncodeFeatureRow(FeatureDType::kInt8, per_column, rows.data(), 3, i8);
  DecodeFeatureRow(FeatureDType::kInt8, per_column, i8, 3, back.data());
  EXPECT_EQ(back, (std::vector<float>{1.5f, -2.0f, 0.25f}));  // each column its own scale

  v.clear();
  detail::EncodeInt64Chunk(std::vector<int64_t>{-1, 7}, &v);
  std::vector<int64_t> labels(4, 9);
  EXPECT_EQ(detail::DecodeInt64Chunk(v.data(), v.size(), 2, 2, labels.data()), "");
  EXPECT_EQ(labels, (std::vector<int64_t>{9, 9, -1, 7}));
  EXPECT_EQ(detail::DecodeInt64Chunk(v.data(), v.size(), 3, 0, labels.data()),
            "has the wrong size");

  // etime / etype: per-edge columns appended across chunks.
  v.clear();
  detail::EncodeInt64Chunk(std::vector<int64_t>{2, 0, 1}, &v);
  std::vector<int64_t> times(5, -1);
  int64_t pos = 1;
  EXPECT_EQ(detail::DecodeEdgeTimeChunk(v.data(), v.size(), 5, &pos, times.data()), "");
  EXPECT_EQ(pos, 4);
  EXPECT_EQ(times, (std::vector<int64_t>{-1, 2, 0, 1, -1}));
  EXPECT_EQ(detail::DecodeEdgeTimeChunk(v.data(), v.size(), 5, &pos, times.data()),
            "has the wrong size");
  std::vector<int32_t> types(3);
  pos = 0;
  EXPECT_EQ(detail::DecodeEdgeTypeChunk(v.data(), v.size(), 3, 3, &pos, types.data()), "");
  EXPECT_EQ(types, (std::vector<int32_t>{2, 0, 1}));
  pos = 0;
  EXPECT_EQ(detail::DecodeEdgeTypeChunk(v.data(), v.size(), 3, 2, &pos, types.data()),
            "holds edge type 2, outside [0, 2)");
  pos = 0;
  EXPECT_EQ(detail::DecodeEdgeTypeChunk(v.data(), v.size() - 1, 3, 3, &pos, types.data()),
            "has the wrong size");

  // eweight: float32 per edge, finite and >= 0.
  v.clear();
  detail::EncodeFloatChunk(std::vector<float>{0.5f, 0.0f, 3.0f}, &v);
  std::vector<float> weights(4, -7);
  pos = 1;
  EXPECT_EQ(detail::DecodeEdgeWeightChunk(v.data(), v.size(), 4, &pos, weights.data()), "");
  EXPECT_EQ(weights, (std::vector<float>{-7, 0.5f, 0.0f, 3.0f}));
  pos = 0;
  EXPECT_EQ(detail::DecodeEdgeWeightChunk(v.data(), v.size() - 2, 4, &pos, weights.data()),
            "has the wrong size");
  for (float bad : {-1.0f, std::nanf(""), INFINITY}) {
    std::memcpy(v.data() + 4, &bad, 4);
    pos = 0;
    EXPECT_THAT(detail::DecodeEdgeWeightChunk(v.data(), v.size(), 4, &pos, weights.data()),
                HasSubstr("(weights are finite and >= 0)"));
  }

  v.clear();
  detail::EncodeSplitChunk(std::vector<uint8_t>{1, 2, 3}, &v);
  std::vector<uint8_t> split(3);
  EXPECT_EQ(detail::DecodeSplitChunk(v.data(), v.size(), 3, 0, split.data()), "");
  EXPECT_EQ(split, (std::vector<uint8_t>{1, 2, 3}));
  v[1] = 9;
  EXPECT_EQ(detail::DecodeSplitChunk(v.data(), v.size(), 3, 0, split.data()),
            "holds an invalid split value");

  v.clear();
  std::string a = "alpha", b = "";
  detail::EncodeNameChunk({a, b}, &v);
  std::vector<std::string> names;
  EXPECT_EQ(detail::DecodeNameChunk(v.data(), v.size(), 2, &names), "");
  EXPECT_EQ(names, (std::vector<std::string>{"alpha", ""}));
  EXPECT_EQ(detail::DecodeNameChunk(v.data(), v.size() - 1, 2, &names), "is truncated");
  EXPECT_EQ(detail::DecodeNameChunk(v.data(), v.size(), 1, &names), "has trailing bytes");
}

}  // namespace
}  // namespace fanout::datasets
