// Partitioning in bounded memory: the streamed writer's stores equal the
// in-memory writer's, key for key and byte for byte (only the random dataset
// id differs), on Cora, CiteSeer, CA-GrQc and R-MAT, through many slices and
// shared spill files; the process stays under its limit; a limit too small,
// a full disk or an unwritable spill folder fail clearly and leave nothing.
#include "datasets/bounded_partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

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

std::shared_ptr<RawDataset> Load(const std::string& format, const std::string& input,
                                 LoadOptions lo = {}, EdgeOptions eo = {}) {
  lo.quiet = true;
  auto ds = std::make_shared<RawDataset>();
  std::vector<std::string> notes;
  Status st = LoadDataset(format, input, lo, ds.get(), &notes);
  EXPECT_TRUE(st.ok()) << st.ToString();
  ApplyEdgeOptions(eo, ds.get());
  return ds;
}

// Every key and value of a RocksDB store; "info" without its dataset id.
std::map<std::string, std::string> ReadStore(const std::string& path) {
  rocksdb::Options opts;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(opts, path, &raw);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::map<std::string, std::string> out;
  if (!s.ok()) return out;
  std::unique_ptr<rocksdb::DB> db(raw);
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string value = it->value().ToString();
    if (it->key().ToString() == "info") {
      nlohmann::json info = nlohmann::json::parse(value.substr(0, value.size() - 4));
      info.erase("dataset_id");
      value = info.dump();
    }
    out[it->key().ToString()] = value;
  }
  return out;
}

void ExpectSameStore(const std::string& a, const std::string& b) {
  DatasetMeta ma, mb;
  ASSERT_TRUE(ReadDatasetMeta(a, &ma).ok());
  ASSERT_TRUE(ReadDatasetMeta(b, &mb).ok());
  mb.dataset_id = ma.dataset_id;
  EXPECT_EQ(ma.ToJson(), mb.ToJson());
  for (int p = 0; p < ma.num_parts; ++p) {
    auto sa = ReadStore(a + "/part-" + std::to_string(p)),
         sb = ReadStore(b + "/part-" + std::to_string(p));
    ASSERT_EQ(sa.size(), sb.size()) << "part " << p;
    for (const auto& [key, value] : sa) {
      auto it = sb.find(key);
      ASSERT_NE(it, sb.end()) << "part " << p << " lacks " << key;
      EXPECT_TRUE(it->second == value) << "part " << p << " differs at " << key;
    }
  }
}

void WriteInMemory(const RawDataset& ds, const PartitionOptions& po, const WriteOptions& wo,
                   const std::string& dir) {
  std::vector<int32_t> part;
  std::vector<std::string> notes;
  ASSERT_TRUE(ComputePartition(ds, po, &part, &notes).ok());
  Status st = WritePartitionedDataset(ds, part, po.num_parts, wo, dir, nullptr);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

BoundedReport WriteBounded(const StreamedGraph& g, const PartitionOptions& po,
                           const WriteOptions& wo, const std::string& dir,
                           int64_t max_slice_edges) {
  BoundedOptions bo;
  bo.memory_limit_bytes = int64_t{4} << 30;
  bo.max_slice_edges = max_slice_edges;
  BoundedReport report;
  Status st = WritePartitionedStream(g, po, wo, bo, dir, nullptr, &report);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return report;
}

PartitionOptions Options(int k, PartitionMethod m, bool incoming) {
  PartitionOptions po;
  po.num_parts = k;
  po.method = m;
  po.seed = 7;
  po.quiet = true;
  po.store_by_target = incoming;
  return po;
}

WriteOptions Write(bool incoming, FeatureDType dtype, int64_t chunk_nodes,
                   const std::string& method) {
  WriteOptions wo;
  wo.incoming = incoming;
  wo.feature_dtype = dtype;
  wo.chunk_nodes = chunk_nodes;
  wo.method = method;
  wo.quiet = true;
  return wo;
}

// A stream whose play fails: InvalidArgument naming `what`, no `dir` left.
void ExpectTheWriteFailsAndLeavesNothing(const StreamedGraph& g, PartitionMethod m,
                                         const std::string& dir, const std::string& what) {
  BoundedOptions bo;
  bo.memory_limit_bytes = int64_t{1} << 30;
  Status st = WritePartitionedStream(g, Options(2, m, true),
                                     Write(true, FeatureDType::kFloat32, 100, "random"), bo, dir,
                                     nullptr, nullptr);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr(what));
  EXPECT_FALSE(fs::exists(dir));
}

// A loaded dataset written in memory and its stream written in bounded
// memory (3 hash parts, slices of at most 700 edges) give the same store.
void ExpectTheStreamWritesTheLoadedStore(const RawDataset& ds, const StreamedGraph& g,
                                         FeatureDType dtype, const std::string& a,
                                         const std::string& b) {
  PartitionOptions po = Options(3, PartitionMethod::kHash, true);
  WriteOptions wo = Write(true, dtype, 300, "hash");
  WriteInMemory(ds, po, wo, a);
  BoundedReport r = WriteBounded(g, po, wo, b, 700);
  EXPECT_GT(r.slices, 3);
  ExpectSameStore(a, b);
}

TEST(BoundedPartitionTest, CoraAndCiteSeerEqualTheInMemoryStoreThroughManySlices) {
  TempDir tmp;
  int run = 0;
  for (const char* name : {"cora", "citeseer"}) {
    auto ds = Load("linqs", DataDir() + "/" + name);
    ASSERT_GT(ds->num_nodes, 0);
    for (PartitionMethod m :
         {PartitionMethod::kRandom, PartitionMethod::kRange, PartitionMethod::kHash})
      for (int k : {1, 3})
        for (bool incoming : {true, false}) {
          const FeatureDType dtype = k == 3 ? FeatureDType::kInt8 : FeatureDType::kFloat32;
          SCOPED_TRACE(std::string(name) + " " + PartitionMethodName(m) +
                       " k=" + std::to_string(k) + (incoming ? " in" : " out"));
          PartitionOptions po = Options(k, m, incoming);
          WriteOptions wo = Write(incoming, dtype, 97, PartitionMethodName(m));
          std::string a = tmp.Sub("mem" + std::to_string(run)),
                      b = tmp.Sub("bounded" + std::to_string(run));
          ++run;
          WriteInMemory(*ds, po, wo, a);
          BoundedReport r = WriteBounded(StreamOf(ds), po, wo, b, 400);
          EXPECT_GT(r.slices, 2 * k);  // many slices, each a read of the spill
          EXPECT_GE(r.spill_read_bytes,
                    r.spill_bytes);  // every spilled edge read back at least once
          ExpectSameStore(a, b);
        }
  }
  // Nothing left but the stores: no spill or temporary folder.
  for (const std::string& e : tmp.List())
    EXPECT_TRUE(e.rfind("mem", 0) == 0 || e.rfind("bounded", 0) == 0) << e;
}

TEST(BoundedPartitionTest, StreamedRmatEqualsTheLoadedOneWithEdgeOptionsAndSharedSpillFiles) {
  TempDir tmp;
  LoadOptions lo;
  lo.rmat.scale = 10;
  lo.rmat.edge_factor = 8;
  lo.feature_dim = 6;
  lo.num_classes = 3;
  lo.split_fractions = {0.6, 0.2, 0.2};
  lo.seed = 3;
  lo.quiet = true;
  struct Case {
    EdgeOptions eo;
    int k;
    PartitionMethod m;
  };
  EdgeOptions plain, both;
  both.drop_self_loops = true;
  both.make_undirected = true;
  int run = 0;
  // k = 70 > 64 spill files: partitions share files, each slice skips the others' edges.
  for (const Case& c :
       {Case{plain, 4, PartitionMethod::kHash}, Case{both, 4, PartitionMethod::kRandom},
        Case{plain, 70, PartitionMethod::kRange}, Case{both, 1, PartitionMethod::kRange}}) {
    SCOPED_TRACE("case " + std::to_string(run));
    auto ds = Load("rmat", "", lo, c.eo);
    StreamedGraph g;
    Status st = StreamRmat(lo, c.eo, &g);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(g.num_nodes, ds->num_nodes);
    PartitionOptions po = Options(c.k, c.m, true);
    WriteOptions wo = Write(true, FeatureDType::kFloat16, 50, PartitionMethodName(c.m));
    std::string a = tmp.Sub("mem" + std::to_string(run)),
                b = tmp.Sub("bounded" + std::to_string(run));
    ++run;
    WriteInMemory(*ds, po, wo, a);
    BoundedReport r = WriteBounded(g, po, wo, b, 1000);
    EXPECT_GE(r.slices, c.k);
    ExpectSameStore(a, b);
  }
}

TEST(BoundedPartitionTest, StreamedSnapEqualsTheLoadedOneWithLabelsSplitAndReverseEdges) {
  TempDir tmp;
  const std::string input = DataDir() + "/snap/CA-GrQc.txt.gz";
  // Labels for a few nodes, one of them absent from the graph.
  std::string labels = tmp.Write("labels.txt", "# node label\n3466 2\n937 0\n5233 1\n99999999 4\n");
  LoadOptions lo;
  lo.labels_path = labels;
  lo.split_fractions = {0.5, 0.25, 0.25};
  lo.quiet = true;
  EdgeOptions eo;
  eo.make_undirected = true;
  auto ds = Load("snap", input, lo, eo);
  StreamedGraph g;
  std::vector<std::string> notes;
  Status st = StreamSnap(input, lo, eo, &g, &notes);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(g.num_nodes, ds->num_nodes);
  EXPECT_EQ(g.num_edges, ds->num_edges());
  EXPECT_EQ(g.num_classes, ds->num_classes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("skipped 1 label(s)"));
  PartitionOptions po = Options(3, PartitionMethod::kRandom, false);
  WriteOptions wo = Write(false, FeatureDType::kFloat32, 1000, "random");
  WriteInMemory(*ds, po, wo, tmp.Sub("mem"));
  BoundedReport r = WriteBounded(g, po, wo, tmp.Sub("bounded"), 5000);
  EXPECT_GT(r.slices, 3);
  ExpectSameStore(tmp.Sub("mem"), tmp.Sub("bounded"));

  // --drop-duplicates needs the whole list: refused, not silently ignored.
  eo.drop_duplicates = true;
  st = StreamSnap(input, lo, eo, &g, &notes);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("--drop-duplicates"));
}

// Cora written out as an OGB folder (gzip edges, features, labels with
// unlabeled nodes, one split).
std::string WriteOgbFolder(const TempDir& tmp, const RawDataset& cora) {
  std::string edges, feats, labels, train, valid, test;
  for (int64_t i = 0; i < cora.num_edges(); ++i)
    edges += std::to_string(cora.src[i]) + "," + std::to_string(cora.dst[i]) + "\n";
  edges += "5,5\n";  // a self-loop, for --drop-self-loops
  for (int64_t v = 0; v < cora.num_nodes; ++v) {
    for (int64_t j = 0; j < cora.feature_dim; ++j)
      feats +=
          (j ? "," : "") + std::to_string(cora.features[v * cora.feature_dim + j] * (1 + v % 3));
    feats += "\n";
    labels += v % 10 == 0 ? std::string("nan\n") : std::to_string(cora.labels[v]) + "\n";
    (v % 5 < 3 ? train : v % 5 == 3 ? valid : test) += std::to_string(v) + "\n";
  }
  tmp.Write("ogb/raw/num-node-list.csv", std::to_string(cora.num_nodes) + "\n");
  tmp.Write("ogb/raw/edge.csv", edges);
  tmp.Write("ogb/raw/node-feat.csv", feats);
  tmp.Write("ogb/raw/node-label.csv", labels);
  tmp.Write("ogb/split/s/train.csv", train);
  tmp.Write("ogb/split/s/valid.csv", valid);
  tmp.Write("ogb/split/s/test.csv", test);
  return tmp.Sub("ogb");
}

TEST(BoundedPartitionTest, StreamedOgbEqualsTheLoadedOneAndRemovesItsFeatureFile) {
  TempDir tmp;
  auto cora = Load("linqs", DataDir() + "/cora");
  const std::string input = WriteOgbFolder(tmp, *cora);
  int run = 0;
  for (bool edge_options : {false, true}) {
    EdgeOptions eo;
    eo.drop_self_loops = eo.make_undirected = edge_options;
    LoadOptions lo;
    lo.quiet = true;
    auto ds = Load("ogb", input, lo, eo);
    StreamedGraph g;
    std::vector<std::string> notes;
    const std::string scratch = tmp.Sub("features.f32");
    Status st = StreamOgb(input, lo, eo, scratch, &g, &notes);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_TRUE(fs::exists(scratch));
    EXPECT_EQ(g.feature_dim, 1433);
    ExpectTheStreamWritesTheLoadedStore(
        *ds, g, edge_options ? FeatureDType::kInt8 : FeatureDType::kFloat16,
        tmp.Sub("mem" + std::to_string(run)), tmp.Sub("bounded" + std::to_string(run)));
    ++run;
    g = StreamedGraph();
    EXPECT_FALSE(fs::exists(scratch));
  }
  // A bad edge line is named by the play, and nothing is left behind.
  tmp.Write("ogb/raw/edge.csv", "0,1\n1,99999\n");
  StreamedGraph g;
  std::vector<std::string> notes;
  LoadOptions lo;
  lo.quiet = true;
  ASSERT_TRUE(StreamOgb(input, lo, {}, tmp.Sub("f2.f32"), &g, &notes).ok());
  ExpectTheWriteFailsAndLeavesNothing(g, PartitionMethod::kRandom, tmp.Sub("bad"),
                                      "edge.csv:2: edge 1,99999 has an id outside [0, 2708)");
}

// Cora as tables (string or integer ids, a list feature column, labels, a
// split, a few edges naming no node): streamed, it writes the store the
// tables read whole write, with and without edge options.
TEST(BoundedPartitionTest, StreamedTablesEqualTheLoadedOnesAndRemoveTheirFeatureFile) {
  TempDir tmp;
  auto cora = Load("linqs", DataDir() + "/cora");
  int run = 0;
  for (bool string_ids : {true, false}) {
    auto id = [&](int64_t v) {
      return string_ids ? "paper-" + std::to_string(v) : std::to_string(1000 + 3 * v);
    };
    std::string nodes = "id,emb,cls,part\n", edges = "a,b\n";
    for (int64_t v = 0; v < cora->num_nodes; ++v) {
      nodes += id(v) + ",\"";
      for (int64_t k = 0; k < cora->feature_dim; ++k)
        nodes += (k ? " " : "") + std::to_string(cora->features[v * cora->feature_dim + k]);
      const char* split[] = {"", "train", "val", "test"};
      nodes += "\"," + std::to_string(cora->labels[v]) + "," +
               split[cora->split.empty() ? 0 : cora->split[v]] + "\n";
    }
    for (int64_t e = 0; e < cora->num_edges(); ++e) {
      edges += id(cora->src[e]) + "," + id(cora->dst[e]) + "\n";
      if (e % 1000 == 0) edges += id(cora->src[e]) + "," + (string_ids ? "ghost" : "7") + "\n";
    }
    tmp.Write("t/nodes.csv", nodes);
    tmp.Write("t/edges.csv", edges);
    const std::string schema =
        tmp.Write("t/graph.json", std::string(R"({"name": "cora-tables", "dangling_edges": "drop",
        "nodes": [{"files": "nodes.csv", "id": "id", "id_type": ")") +
                                      (string_ids ? "string" : "int64") +
                                      R"(", "features": "emb", "label": "cls", "split": "part"}],
        "edges": [{"files": "edges.csv", "source": "a", "destination": "b"}]})");
    for (bool edge_options : {false, true}) {
      EdgeOptions eo;
      eo.drop_self_loops = eo.make_undirected = edge_options;
      LoadOptions lo;
      lo.quiet = true;
      auto ds = Load("tables", schema, lo, eo);
      StreamedGraph g;
      std::vector<std::string> notes;
      const std::string scratch = tmp.Sub("features.f32");
      Status st = StreamTables(schema, lo, eo, scratch, &g, &notes);
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_TRUE(fs::exists(scratch));
      EXPECT_EQ(g.feature_dim, cora->feature_dim);
      EXPECT_EQ(g.has_names, string_ids);
      ExpectTheStreamWritesTheLoadedStore(*ds, g, FeatureDType::kFloat32,
                                          tmp.Sub("mem" + std::to_string(run)),
                                          tmp.Sub("bounded" + std::to_string(run)));
      ++run;
      ASSERT_TRUE(g.late_notes);
      const std::vector<std::string> late = g.late_notes();
      ASSERT_EQ(late.size(), 1u);
      EXPECT_THAT(late[0], HasSubstr("dropped " + std::to_string((cora->num_edges() + 999) / 1000) +
                                     " edges"));
      g = StreamedGraph();
      EXPECT_FALSE(fs::exists(scratch));
    }
  }
  // A bad row after the scratch file was begun: named, and the file goes.
  tmp.Write("t/bad.csv", "id,emb\n1,1 2\n2,1 x\n");
  tmp.Write("t/graph2.json", R"({"nodes": [{"files": "bad.csv", "id": "id", "features": "emb"}],
      "edges": [{"files": "edges.csv", "source": "a", "destination": "b", "reverse": "r"}]})");
  StreamedGraph g;
  std::vector<std::string> notes;
  LoadOptions lo;
  lo.quiet = true;
  Status st = StreamTables(tmp.Sub("t/graph2.json"), lo, {}, tmp.Sub("f3.f32"), &g, &notes);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("bad.csv:3: column 'emb'"));
  EXPECT_FALSE(fs::exists(tmp.Sub("f3.f32")));
  EXPECT_FALSE(fs::exists(tmp.Sub("f3.f32.t0")));
}

// Edge times and weights ride through the spill; each row is stored by time,
// then input order, as the in-memory writer stores it.
TEST(BoundedPartitionTest, StreamedTablesWithEdgeTimesAndWeightsEqualTheLoadedOnes) {
  TempDir tmp;
  auto cora = Load("linqs", DataDir() + "/cora");
  std::string nodes = "id,cls\n", edges = "a,b,t,w\n";
  for (int64_t v = 0; v < cora->num_nodes; ++v)
    nodes += std::to_string(5 * v + 2) + "," + std::to_string(cora->labels[v]) + "\n";
  for (int64_t e = 0; e < cora->num_edges(); ++e)
    edges += std::to_string(5 * cora->src[e] + 2) + "," + std::to_string(5 * cora->dst[e] + 2) +
             "," + std::to_string((e * 7) % 13) /* many ties */ + "," +
             std::to_string((e % 17) * 0.25) + "\n";
  tmp.Write("t/nodes.csv", nodes);
  tmp.Write("t/edges.csv", edges);
  int run = 0;
  for (bool timed : {true, false}) {
    const std::string schema =
        tmp.Write("t/graph" + std::to_string(run) + ".json",
                  std::string(R"({"nodes": [{"files": "nodes.csv", "id": "id", "label": "cls"}],
        "edges": [{"files": "edges.csv", "source": "a", "destination": "b", "weight": "w")") +
                      (timed ? R"(, "time": "t")" : "") + "}]}");
    for (bool edge_options : {false, true}) {
      EdgeOptions eo;
      eo.drop_self_loops = eo.make_undirected = edge_options;
      LoadOptions lo;
      lo.quiet = true;
      auto ds = Load("tables", schema, lo, eo);
      ASSERT_EQ(ds->edge_weights.size(), ds->src.size());
      ASSERT_EQ(ds->edge_times.size(), timed ? ds->src.size() : 0u);
      StreamedGraph g;
      std::vector<std::string> notes;
      Status st = StreamTables(schema, lo, eo, tmp.Sub("features.f32"), &g, &notes);
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(g.has_edge_times, timed);
      EXPECT_TRUE(g.has_edge_weights);
      ExpectTheStreamWritesTheLoadedStore(*ds, g, FeatureDType::kFloat32,
                                          tmp.Sub("mem" + std::to_string(run)),
                                          tmp.Sub("bounded" + std::to_string(run)));
      // A loaded dataset's stream (StreamOf) carries them too.
      StreamedGraph of = StreamOf(ds);
      EXPECT_EQ(of.has_edge_times, timed);
      PartitionOptions po = Options(3, PartitionMethod::kHash, true);
      WriteBounded(of, po, Write(true, FeatureDType::kFloat32, 300, "hash"),
                   tmp.Sub("of" + std::to_string(run)), 500);
      ExpectSameStore(tmp.Sub("mem" + std::to_string(run)), tmp.Sub("of" + std::to_string(run)));
      ++run;
    }
  }
  // A negative weight is named, and nothing is left.
  tmp.Write("t/edges.csv", "a,b,t,w\n2,7,1,0.5\n7,2,1,-3\n");
  StreamedGraph g;
  std::vector<std::string> notes;
  LoadOptions lo;
  lo.quiet = true;
  ASSERT_TRUE(StreamTables(tmp.Sub("t/graph0.json"), lo, {}, tmp.Sub("f.f32"), &g, &notes).ok());
  ExpectTheWriteFailsAndLeavesNothing(g, PartitionMethod::kHash, tmp.Sub("neg"),
                                      "edges.csv:3: column 'w': edge weight -3");
}

// Several node and edge types: nodes numbered by part, then type; each row
// stored by type, then time, then input order; features padded to the
// widest type; reverse and undirected types as LoadTables and
// ApplyEdgeOptions make them.
TEST(BoundedPartitionTest, StreamedHeterogeneousTablesEqualTheLoadedOnes) {
  TempDir tmp;
  uint64_t x = 12345;
  auto next = [&](uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (x >> 33) % n;
  };
  const int U = 300, I = 200, T = 40;
  std::string users = "uid,age,score,cls\n", items = "iid,emb\n", tags = "tid\n";
  for (int u = 0; u < U; ++u)
    users += "user-" + std::to_string(u) + "," + std::to_string(next(80)) + "," +
             std::to_string(next(1000) / 7.0) + "," + std::to_string(next(3)) + "\n";
  for (int i = 0; i < I; ++i)
    items += std::to_string(10 * i + 3) + ",\"" + std::to_string(next(9)) + " " +
             std::to_string(next(9)) + " " + std::to_string(next(9)) + "\"\n";
  for (int t = 0; t < T; ++t) tags += std::to_string(t) + "\n";
  std::string rated = "u,i,ts,w\n", tagged = "i,t,ts\n", similar = "a,b,ts\n";
  for (int e = 0; e < 4000; ++e)
    rated += "user-" + std::to_string(next(U)) + "," + std::to_string(10 * next(I) + 3) + "," +
             std::to_string(next(50)) + "," + std::to_string(next(8) * 0.5) + "\n";
  rated += "user-ghost,3,1,1\n";  // dropped
  for (int e = 0; e < 1500; ++e)
    tagged += std::to_string(10 * next(I) + 3) + "," + std::to_string(next(T)) + "," +
              std::to_string(next(50)) + "\n";
  for (int e = 0; e < 1500; ++e) {
    const uint64_t a = next(I), b = e % 10 == 0 ? a : next(I);  // self-loops among them
    similar += std::to_string(10 * a + 3) + "," + std::to_string(10 * b + 3) + "," +
               std::to_string(next(50)) + "\n";
  }
  tmp.Write("h/users.csv", users);
  tmp.Write("h/items.csv", items);
  tmp.Write("h/tags.csv", tags);
  tmp.Write("h/rated.csv", rated);
  tmp.Write("h/tagged.csv", tagged);
  tmp.Write("h/similar.csv", similar);
  const std::string schema = tmp.Write("h/graph.json", R"({"name": "shop", "dangling_edges": "drop",
    "nodes": [{"type": "user", "files": "users.csv", "id": "uid", "id_type": "string",
               "features": ["age", "score"], "label": "cls"},
              {"type": "item", "files": "items.csv", "id": "iid", "features": "emb"},
              {"type": "tag", "files": "tags.csv", "id": "tid"}],
    "edges": [{"type": "rated", "files": "rated.csv", "source": "u", "source_type": "user",
               "destination": "i", "destination_type": "item", "time": "ts", "weight": "w",
               "reverse": "rated_by"},
              {"type": "tagged", "files": "tagged.csv", "source": "i", "source_type": "item",
               "destination": "t", "destination_type": "tag", "time": "ts"},
              {"type": "similar", "files": "similar.csv", "source": "a", "source_type": "item",
               "destination": "b", "destination_type": "item", "time": "ts"}]})");
  int run = 0;
  for (bool edge_options : {false, true}) {
    for (bool incoming : {true, false}) {
      EdgeOptions eo;
      eo.drop_self_loops = eo.make_undirected = edge_options;
      LoadOptions lo;
      lo.quiet = true;
      auto ds = Load("tables", schema, lo, eo);
      ASSERT_TRUE(ds->hetero());
      StreamedGraph g;
      std::vector<std::string> notes;
      const std::string scratch = tmp.Sub("hf" + std::to_string(run) + ".f32");
      // The users' string ids go to disk in half the runs (the edge join beside ids in memory).
      if (incoming) lo.string_id_memory_bytes = 4 << 10;
      Status st = StreamTables(schema, lo, eo, scratch, &g, &notes);
      EXPECT_EQ(notes.size(), incoming ? 1u : 0u);
      ASSERT_TRUE(st.ok()) << st.ToString();
      ASSERT_TRUE(g.hetero());
      EXPECT_EQ(g.node_types, ds->node_types);
      ASSERT_EQ(g.edge_types.size(), ds->edge_types.size());
      for (size_t t = 0; t < g.edge_types.size(); ++t)
        EXPECT_EQ(g.edge_types[t].rel, ds->edge_types[t].rel);
      EXPECT_EQ(g.type_feature_dims, (std::vector<int64_t>{2, 3, 0}));
      EXPECT_TRUE(fs::exists(scratch + ".t0") && fs::exists(scratch + ".t1"));
      EXPECT_FALSE(fs::exists(scratch + ".t2"));  // tags have no features
      PartitionOptions po = Options(3, PartitionMethod::kHash, incoming);
      WriteOptions wo = Write(incoming, FeatureDType::kFloat32, 64, "hash");
      const std::string a = tmp.Sub("hmem" + std::to_string(run)),
                        b = tmp.Sub("hbounded" + std::to_string(run));
      WriteInMemory(*ds, po, wo, a);
      BoundedReport r = WriteBounded(g, po, wo, b, 900);
      EXPECT_GT(r.slices, 6);
      ExpectSameStore(a, b);
      ASSERT_TRUE(g.late_notes);
      ASSERT_EQ(g.late_notes().size(), 1u);
      EXPECT_THAT(g.late_notes()[0], HasSubstr("dropped 1 edges"));
      g = StreamedGraph();
      EXPECT_FALSE(fs::exists(scratch + ".t0"));
      ++run;
    }
  }
}

// String ids past their memory: a type's names go to disk, edges find their
// endpoints through the bucketed join, and the store is the in-memory one;
// the errors are the in-memory reader's, word for word.
TEST(BoundedPartitionTest, StringIdsPastTheirMemoryJoinOnDiskAndGiveTheSameStore) {
  TempDir tmp;
  auto cora = Load("linqs", DataDir() + "/cora");
  auto id = [](int64_t v) { return "paper-" + std::to_string(v * 7919 % 100003); };
  std::string nodes = "id,cls\n", edges = "a,b,w\n";
  for (int64_t v = 0; v < cora->num_nodes; ++v)
    nodes += id(v) + "," + std::to_string(cora->labels[v]) + "\n";
  for (int64_t e = 0; e < cora->num_edges(); ++e) {
    edges += id(cora->src[e]) + "," + id(cora->dst[e]) + "," + std::to_string(e % 5) + "\n";
    if (e % 700 == 0) edges += id(cora->src[e]) + ",ghost,1\n";
  }
  tmp.Write("s/nodes.csv", nodes);
  tmp.Write("s/edges.csv", edges);
  const std::string schema = tmp.Write("s/graph.json", R"({"dangling_edges": "drop",
      "nodes": [{"files": "nodes.csv", "id": "id", "id_type": "string", "label": "cls"}],
      "edges": [{"files": "edges.csv", "source": "a", "destination": "b", "weight": "w"}]})");
  int run = 0;
  for (bool edge_options : {false, true}) {
    EdgeOptions eo;
    eo.make_undirected = edge_options;
    LoadOptions lo;
    lo.quiet = true;
    auto ds = Load("tables", schema, lo, eo);
    lo.string_id_memory_bytes = 16 << 10;  // Cora's ids take about 190 KiB: 12 buckets
    StreamedGraph g;
    std::vector<std::string> notes;
    const std::string scratch = tmp.Sub("sf" + std::to_string(run) + ".f32");
    Status st = StreamTables(schema, lo, eo, scratch, &g, &notes);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_THAT(notes[0], HasSubstr("2708 string ids past their memory"));
    EXPECT_TRUE(fs::exists(scratch + ".ids"));
    ExpectTheStreamWritesTheLoadedStore(*ds, g, FeatureDType::kFloat32,
                                        tmp.Sub("smem" + std::to_string(run)),
                                        tmp.Sub("sbounded" + std::to_string(run)));
    EXPECT_THAT(g.late_notes()[0],
                HasSubstr("dropped " + std::to_string((cora->num_edges() + 699) / 700)));
    g = StreamedGraph();
    EXPECT_FALSE(fs::exists(scratch + ".ids"));
    ++run;
  }
  // A duplicate id, and an endpoint no node has: the in-memory reader's errors.
  auto same_error = [&](const std::string& name) {
    LoadOptions lo;
    lo.quiet = true;
    RawDataset whole;
    std::vector<std::string> notes;
    const Status want = LoadTables(tmp.Sub(name), lo, &whole, &notes);
    EXPECT_EQ(want.code(), Status::Code::kInvalidArgument);
    lo.string_id_memory_bytes = 16 << 10;
    StreamedGraph g;
    const Status got = StreamTables(tmp.Sub(name), lo, {}, tmp.Sub("e.f32"), &g, &notes);
    EXPECT_EQ(got.ToString(), want.ToString());
    EXPECT_FALSE(fs::exists(tmp.Sub("e.f32.ids")));
    return got.message();
  };
  tmp.Write("s/twice.csv", nodes + id(17) + ",1\n" + id(5) + ",2\n");
  tmp.Write("s/twice.json", R"({"nodes": [{"files": "twice.csv", "id": "id", "id_type": "string"}],
      "edges": [{"files": "edges.csv", "source": "a", "destination": "b"}]})");
  EXPECT_THAT(same_error("s/twice.json"),
              HasSubstr("twice.csv:2710: column 'id': id '" + id(17) + "' is listed twice"));
  tmp.Write("s/dangling.json",
            R"({"nodes": [{"files": "nodes.csv", "id": "id", "id_type": "string"}],
      "edges": [{"files": "edges.csv", "source": "a", "destination": "b"}]})");
  EXPECT_THAT(same_error("s/dangling.json"),
              HasSubstr("edges.csv:3: column 'b': 'ghost' names no node of type 'node'"));
  // Too little memory for even the most buckets the join takes: said, with the fix.
  LoadOptions lo;
  lo.quiet = true;
  lo.string_id_memory_bytes = 1024;
  StreamedGraph g;
  std::vector<std::string> notes;
  Status st = StreamTables(schema, lo, {}, tmp.Sub("x.f32"), &g, &notes);
  EXPECT_EQ(st.code(), Status::Code::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("raise --memory-limit"));
  EXPECT_FALSE(fs::exists(tmp.Sub("x.f32.ids")));
}

// A loaded heterogeneous temporal dataset (MovieLens) through StreamOf.
TEST(BoundedPartitionTest, MovieLensStreamedEqualsTheInMemoryStore) {
  TempDir tmp;
  EdgeOptions eo;
  eo.make_undirected = true;
  LoadOptions lo;
  lo.quiet = true;
  lo.edge_times = true;
  auto ds = Load("movielens", DataDir() + "/movielens/ml-latest-small", lo, eo);
  ASSERT_TRUE(ds->hetero() && !ds->edge_times.empty());
  PartitionOptions po = Options(2, PartitionMethod::kRandom, true);
  WriteOptions wo = Write(true, FeatureDType::kFloat16, 2000, "random");
  WriteInMemory(*ds, po, wo, tmp.Sub("mem"));
  BoundedReport r = WriteBounded(StreamOf(ds), po, wo, tmp.Sub("bounded"), 60000);
  EXPECT_GT(r.slices, 2);
  ExpectSameStore(tmp.Sub("mem"), tmp.Sub("bounded"));
}

TEST(BoundedPartitionTest, HashPartsFollowTheOriginalIdAlone) {
  PartitionOptions po = Options(5, PartitionMethod::kHash, true);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(ComputeNodePartition(
                  100000, [](int64_t v) { return v * 3; }, po, &a)
                  .ok());
  // The same original ids in another order and with more nodes around them.
  ASSERT_TRUE(ComputeNodePartition(
                  200000, [](int64_t v) { return (199999 - v) * 3; }, po, &b)
                  .ok());
  std::vector<int64_t> count(5, 0);
  for (int64_t v = 0; v < 100000; ++v) {
    EXPECT_EQ(a[v], b[199999 - v]);
    count[a[v]]++;
  }
  for (int64_t c : count) EXPECT_NEAR(c, 20000, 800);  // > 6 sigma
}

TEST(BoundedPartitionTest, ParsesMemorySizes) {
  int64_t b = 0;
  ASSERT_TRUE(ParseByteSize("4G", &b).ok());
  EXPECT_EQ(b, int64_t{4} << 30);
  ASSERT_TRUE(ParseByteSize("512MiB", &b).ok());
  EXPECT_EQ(b, int64_t{512} << 20);
  ASSERT_TRUE(ParseByteSize("1.5g", &b).ok());
  EXPECT_EQ(b, int64_t{3} << 29);
  ASSERT_TRUE(ParseByteSize("65536", &b).ok());
  EXPECT_EQ(b, 65536);
  for (const char* bad : {"", "G", "4Q", "-1G", "0", "nan", "1e30T"}) {
    Status st = ParseByteSize(bad, &b);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << bad;
  }
  std::string source;
  EXPECT_GT(UsableMemoryBytes(&source), int64_t{64} << 20);
  EXPECT_FALSE(source.empty());
}

TEST(BoundedPartitionTest, TooSmallALimitIsRefusedBeforeAnyWork) {
  TempDir tmp;
  auto ds = Load("linqs", DataDir() + "/cora");
  BoundedOptions bo;
  bo.memory_limit_bytes = int64_t{32} << 20;
  Status st = WritePartitionedStream(StreamOf(ds), Options(2, PartitionMethod::kRandom, true),
                                     Write(true, FeatureDType::kFloat32, 1000, "random"), bo,
                                     tmp.Sub("out"), nullptr, nullptr);
  EXPECT_EQ(st.code(), Status::Code::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("is too small for 2708 nodes"));
  EXPECT_THAT(st.message(), HasSubstr("give at least"));
  EXPECT_TRUE(tmp.List().empty());
}

// ---- the tool, as users run it ----

struct ToolRun {
  int exit_code = -1;
  std::string output;
  int64_t peak_rss = 0;
};

// Runs fanout-partition under bash (for ulimit), output captured, peak RSS
// of the process tree's largest child from wait4.
ToolRun RunTool(const std::string& args, const std::string& shell_prefix = "") {
  TempDir out;
  std::string log = out.Sub("log");
  std::string cmd = shell_prefix + "exec " + std::string(FANOUT_BIN_DIR) +
                    "/fanout-partition --quiet " + args + " >" + log + " 2>&1";
  ToolRun r;
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/bash", "bash", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.peak_rss = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  FILE* f = std::fopen(log.c_str(), "r");
  if (f != nullptr) {
    std::array<char, 4096> buf;
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) r.output.append(buf.data(), n);
    std::fclose(f);
  }
  return r;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// Sanitizers' shadow memory and quarantine are resident too: the limit means
// nothing there, so the tool gets room and only the store is checked.
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST(BoundedPartitionToolTest, StaysUnderItsMemoryLimitAndWritesALoadableStore) {
  TempDir tmp;
  // 4 M edges = 64 MiB of adjacency, more than the limit leaves for edges.
  const int64_t limit = int64_t{128} << 20;
  ToolRun r = RunTool(
      std::string("--format rmat --rmat-scale 18 --parts 2 --method hash --chunk-nodes 8192 ") +
      (kSanitized ? "--memory-limit 1G" : "--memory-limit 128M") + " --output " + tmp.Sub("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("partitioning in bounded memory"));
  if (!kSanitized) {
    EXPECT_LE(r.peak_rss, limit) << r.output;
    size_t at = r.output.find(" slice(s)");
    ASSERT_NE(at, std::string::npos) << r.output;
    const int64_t slices = std::stoll(r.output.substr(r.output.rfind(' ', at - 1) + 1));
    EXPECT_GT(slices, 2) << r.output;
  }
  DatasetMeta meta;
  ASSERT_TRUE(ReadDatasetMeta(tmp.Sub("out"), &meta).ok());
  EXPECT_EQ(meta.num_edges, int64_t{16} << 18);
  int64_t edges = 0;
  for (int p = 0; p < 2; ++p) {
    PartitionData d;
    Status st = OpenPartition(tmp.Sub("out"), p, {}, &d);
    ASSERT_TRUE(st.ok()) << st.ToString();
    edges += static_cast<int64_t>(d.indices.size());
  }
  EXPECT_EQ(edges, meta.num_edges);
  EXPECT_EQ(tmp.List(), std::vector<std::string>{"out"});
}

TEST(BoundedPartitionToolTest, AChunkLargerThanTheLimitNamesItself) {
  TempDir tmp;
  ToolRun r = RunTool(
      "--format rmat --rmat-scale 17 --parts 1 --method range --memory-limit 150M "
      "--chunk-nodes 1000000000 --output " +
      tmp.Sub("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("chunk 0 of partition 0 holds 2097152 edges"));
  EXPECT_THAT(r.output, HasSubstr("--chunk-nodes"));
  EXPECT_TRUE(tmp.List().empty());
}

TEST(BoundedPartitionToolTest, MetisRefusesALimitItCannotWorkInAndSaysWhatToUse) {
  TempDir tmp;
  ToolRun r =
      RunTool("--format rmat --rmat-scale 22 --parts 2 --method metis --memory-limit 2G --output " +
              tmp.Sub("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("METIS needs the whole graph in memory"));
  EXPECT_THAT(r.output, HasSubstr("--method hash, random or range"));
  EXPECT_TRUE(tmp.List().empty());
  r = RunTool("--format linqs --input " + DataDir() +
              "/cora --parts 2 --method metis --memory-limit 4Q --output " + tmp.Sub("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--memory-limit: memory size '4Q' is not a size"));
}

TEST(BoundedPartitionToolTest, AFileSizeLimitMidRunFailsCleanly) {
  TempDir tmp;
  // ulimit -f counts 1 KiB blocks: each spill file stops at 4 MiB of its 12 MiB.
  ToolRun r = RunTool(
      "--format rmat --rmat-scale 16 --parts 2 --method random --memory-limit 1G --output " +
          tmp.Sub("out"),
      "ulimit -f 4096; ");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("writing spill file"));
  EXPECT_THAT(r.output, HasSubstr("File too large"));
  EXPECT_TRUE(tmp.List().empty());
}

TEST(BoundedPartitionToolTest, AnUnusableSpillFolderFailsCleanly) {
  TempDir tmp;
  tmp.Write("file", "not a folder");
  ToolRun r = RunTool("--format rmat --rmat-scale 12 --parts 2 --method random --spill-dir " +
                      tmp.Sub("file") + " --output " + tmp.Sub("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("spill folder " + tmp.Sub("file") + " is not a folder"));
  EXPECT_EQ(tmp.List(), std::vector<std::string>{"file"});

  fs::create_directory(tmp.Sub("ro"));
  bool mounted = false;
  if (geteuid() == 0) {
    mounted = mount("tmpfs", tmp.Sub("ro").c_str(), "tmpfs", MS_RDONLY, "size=1m") == 0;
  } else {
    chmod(tmp.Sub("ro").c_str(), 0500);
  }
  if (geteuid() == 0 && !mounted) GTEST_SKIP() << "root, but cannot mount a read-only tmpfs here";
  r = RunTool("--format rmat --rmat-scale 12 --parts 2 --method random --spill-dir " +
              tmp.Sub("ro") + " --output " + tmp.Sub("out"));
  if (mounted) umount(tmp.Sub("ro").c_str());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output,
              HasSubstr("cannot create spill folder " + tmp.Sub("ro") + "/fanout-spill-"));
  std::vector<std::string> left = tmp.List();
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"file", "ro"}));
}

TEST(BoundedPartitionToolTest, AFullDiskFailsCleanlyWhereverItFills) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  TempDir tmp;
  fs::create_directory(tmp.Sub("small"));
  if (mount("tmpfs", tmp.Sub("small").c_str(), "tmpfs", 0, "size=6m") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  struct Unmount {
    std::string path;
    ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
  } unmount{tmp.Sub("small")};
  // The spill (12 MiB) fills the disk.
  ToolRun r = RunTool("--format rmat --rmat-scale 15 --parts 2 --method hash --output " +
                      tmp.Sub("small/out"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("No space left on device"));
  EXPECT_TRUE(fs::is_empty(tmp.Sub("small")));
  // The spill elsewhere; the stores (8 MiB) fill the disk.
  fs::create_directory(tmp.Sub("spill"));
  r = RunTool("--format rmat --rmat-scale 15 --parts 2 --method hash --spill-dir " +
              tmp.Sub("spill") + " --output " + tmp.Sub("small/out"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("No space left on device"));
  EXPECT_TRUE(fs::is_empty(tmp.Sub("small")));
  EXPECT_TRUE(fs::is_empty(tmp.Sub("spill")));
}

TEST(BoundedPartitionToolTest, BadSnapInputNamesTheLineAndLeavesNothing) {
  TempDir tmp;
  tmp.Write("g.txt", "# comment\n1 2\n2 3\n3 x\n");
  ToolRun r = RunTool("--format snap --input " + tmp.Sub("g.txt") +
                      " --parts 2 --method hash --output " + tmp.Sub("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("g.txt:4: expected '<src> <dst>', found '3 x'"));
  EXPECT_EQ(tmp.List(), std::vector<std::string>{"g.txt"});
}

}  // namespace
}  // namespace fanout::datasets
