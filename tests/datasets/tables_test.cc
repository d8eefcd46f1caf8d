// Tables with a schema (datasets/tables.cc): node and edge tables read into
// a graph with the ids, features, labels, splits, types and times they name;
// every mistake refused naming the schema key, or the file, line and column.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cstdlib>

#include "datasets/detail/string_id_map.h"
#include "datasets/formats.h"
#include "tests/datasets/test_util.h"

namespace fanout::datasets {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class TablesTest : public ::testing::Test {
 protected:
  Status Load(const std::string& schema, RawDataset* out) {
    const std::string path = tmp_.Write("graph.json", schema);
    LoadOptions o;
    o.quiet = true;
    notes_.clear();
    *out = RawDataset();
    Status st = LoadTables(path, o, out, &notes_);
    if (st.ok()) st = out->Validate();
    return st;
  }
  std::string Refused(const std::string& schema) {
    RawDataset ds;
    Status st = Load(schema, &ds);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
    return st.message();
  }
  void WriteGz(const std::string& name, const std::string& text) {
    gzFile f = gzopen(tmp_.Sub(name).c_str(), "wb");
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
  }
  testing::TempDir tmp_;
  std::vector<std::string> notes_;
};

TEST_F(TablesTest, AHeterogeneousTemporalGraphWithStringIdsListAndScalarFeatures) {
  tmp_.Write("users.csv",
             "uid,age,score,cls,split\n"
             "alice,30,0.5,1,train\n"
             "\"bob, jr\",41,0.25,,test\n"
             "carol,22,1.0,0,\n");
  WriteGz("items-1.csv.gz", "iid,emb\n10,\"[1, 2, 3]\"\n11,4 5 6\n");
  WriteGz("items-2.csv.gz", "iid,emb\n12,7;8;9\n");
  tmp_.Write("buys.csv", "u,i,ts\nalice,10,100\n\"bob, jr\",12,50\ncarol,11,75\nalice,12,60\n");
  RawDataset ds;
  Status st = Load(R"({"name": "shop",
    "nodes": [{"type": "user", "files": "users.csv", "id": "uid", "id_type": "string",
               "features": ["age", "score"], "label": "cls", "split": "split"},
              {"type": "item", "files": "items-*.csv.gz", "id": "iid", "features": "emb"}],
    "edges": [{"type": "buys", "files": ["buys.csv"], "source": "u", "source_type": "user",
               "destination": "i", "destination_type": "item", "time": "ts", "reverse": "bought_by"}]})",
                   &ds);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ds.name, "shop");
  ASSERT_EQ(ds.num_nodes, 6);
  EXPECT_EQ(ds.node_types, (std::vector<std::string>{"user", "item"}));
  EXPECT_EQ(ds.node_type, (std::vector<int32_t>{0, 0, 0, 1, 1, 1}));
  // String ids: names kept, original ids the row within the type; int64 ids kept as they are.
  EXPECT_EQ(ds.original_names[1], "bob, jr");
  EXPECT_EQ(ds.original_ids, (std::vector<int64_t>{0, 1, 2, 10, 11, 12}));
  // Features: the widest type's width (3), the users' 2 columns zero-padded.
  ASSERT_EQ(ds.feature_dim, 3);
  EXPECT_EQ(ds.type_feature_dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::vector<float>(ds.features.begin() + 3, ds.features.begin() + 6),
            (std::vector<float>{41, 0.25f, 0}));
  EXPECT_EQ(std::vector<float>(ds.features.begin() + 15, ds.features.end()),
            (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(ds.labels, (std::vector<int64_t>{1, -1, 0, -1, -1, -1}));
  EXPECT_EQ(ds.num_classes, 2);
  EXPECT_EQ(ds.split[0], static_cast<uint8_t>(Split::kTrain));
  EXPECT_EQ(ds.split[1], static_cast<uint8_t>(Split::kTest));
  EXPECT_EQ(ds.split[2], static_cast<uint8_t>(Split::kNone));
  // Edges: buys, then its reverse type, with their times.
  ASSERT_EQ(ds.edge_types.size(), 2u);
  EXPECT_EQ(ds.edge_types[1].rel, "bought_by");
  EXPECT_EQ(ds.src, (std::vector<int64_t>{0, 1, 2, 0, 3, 5, 4, 5}));
  EXPECT_EQ(ds.dst, (std::vector<int64_t>{3, 5, 4, 5, 0, 1, 2, 0}));
  EXPECT_EQ(ds.edge_times, (std::vector<int64_t>{100, 50, 75, 60, 100, 50, 75, 60}));
  EXPECT_EQ(ds.edge_type, (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST_F(TablesTest, OneNodeAndOneEdgeTableMakeAHomogeneousGraphWithMasks) {
  tmp_.Write("n.csv", "id,tr,te\n5,1,0\n7,0,true\n9,0,0\n");
  tmp_.Write("e.tsv", "s\td\n5\t7\n9\t5\n");
  RawDataset ds;
  Status st = Load(R"({"delimiter": "\t",
    "nodes": [{"files": "n.csv", "id": "id", "train_mask": "tr", "test_mask": "te"}],
    "edges": [{"files": "e.tsv", "source": "s", "destination": "d"}]})",
                   &ds);
  // The delimiter applies to every table: n.csv's commas are one field.
  EXPECT_THAT(st.message(), HasSubstr("n.csv: no column 'id'"));
  tmp_.Write("n.csv", "id\ttr\tte\n5\t1\t0\n7\t0\ttrue\n9\t0\t0\n");
  ASSERT_TRUE(Load(R"({"delimiter": "\t",
    "nodes": [{"files": "n.csv", "id": "id", "train_mask": "tr", "test_mask": "te"}],
    "edges": [{"files": "e.tsv", "source": "s", "destination": "d"}]})",
                   &ds)
                  .ok());
  EXPECT_FALSE(ds.hetero());
  EXPECT_EQ(ds.original_ids, (std::vector<int64_t>{5, 7, 9}));
  EXPECT_TRUE(ds.original_names.empty());
  EXPECT_EQ(ds.split, (std::vector<uint8_t>{1, 3, 0}));
  EXPECT_EQ(ds.src, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(ds.dst, (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(ds.features.empty());
  EXPECT_TRUE(ds.labels.empty());
}

TEST_F(TablesTest, EdgeWeightsLoadFollowReverseEdgesAndDefaultToOneWhereATableHasNone) {
  tmp_.Write("u.csv", "id\n1\n2\n");
  tmp_.Write("i.csv", "id\n7\n8\n");
  tmp_.Write("rated.csv", "u,i,w\n1,7,4.5\n2,8,0\n2,7,1e-3\n");
  tmp_.Write("viewed.csv", "u,i\n1,8\n");
  RawDataset ds;
  Status st = Load(R"({"nodes": [{"type": "user", "files": "u.csv", "id": "id"},
                                 {"type": "item", "files": "i.csv", "id": "id"}],
    "edges": [{"type": "rated", "files": "rated.csv", "source": "u", "source_type": "user",
               "destination": "i", "destination_type": "item", "weight": "w", "reverse": "rev"},
              {"type": "viewed", "files": "viewed.csv", "source": "u", "source_type": "user",
               "destination": "i", "destination_type": "item"}]})",
                   &ds);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ds.src, (std::vector<int64_t>{0, 1, 1, 2, 3, 2, 0}));
  EXPECT_EQ(ds.edge_weights, (std::vector<float>{4.5f, 0, 1e-3f, 4.5f, 0, 1e-3f, 1}));
  // Each bad weight named by file, line and column.
  for (auto [cell, why] : {std::pair<std::string, std::string>{"-2", "edge weight -2"},
                           {"abc", "'abc' is not a finite number"},
                           {"inf", "is not a finite number"},
                           {"", "rated.csv:3: column 'w'"}}) {
    tmp_.Write("rated.csv", "u,i,w\n1,7,1\n2,8," + cell + "\n");
    EXPECT_THAT(Refused(R"({"nodes": [{"type": "user", "files": "u.csv", "id": "id"},
                                 {"type": "item", "files": "i.csv", "id": "id"}],
    "edges": [{"type": "rated", "files": "rated.csv", "source": "u", "source_type": "user",
               "destination": "i", "destination_type": "item", "weight": "w"}]})"),
                AllOf(HasSubstr("rated.csv:3: column 'w'"), HasSubstr(why)))
        << cell;
  }
}

TEST_F(TablesTest, EveryMistakeIsNamed) {
  tmp_.Write("n.csv", "id,f,lab,sp\n1,0.5,2,train\n2,x,1,val\n");
  tmp_.Write("ok.csv", "id,f\n1,0.5\n2,1.5\n");
  tmp_.Write("e.csv", "s,d\n1,2\n2,3\n");
  const std::string edges = R"("edges": [{"files": "e.csv", "source": "s", "destination": "d"}])";
  EXPECT_THAT(
      Refused(R"({"nodes": [{"files": "n.csv", "id": "id", "features": ["f"]}], )" + edges + "}"),
      HasSubstr("n.csv:3: column 'f': 'x' is not a finite number"));
  EXPECT_THAT(Refused(R"({"nodes": [{"files": "ok.csv", "id": "id"}], )" + edges + "}"),
              HasSubstr("e.csv:3: column 'd': '3' names no node of type 'node'"));
  EXPECT_THAT(
      Refused(R"({"nodes": [{"files": "ok.csv", "id": "id", "label": "lab"}], )" + edges + "}"),
      HasSubstr("ok.csv: no column 'lab' (the node type 'node''s label)"));
  {
    RawDataset none;
    Status st =
        Load(R"({"nodes": [{"files": "missing-*.csv", "id": "id"}], )" + edges + "}", &none);
    EXPECT_EQ(st.code(), Status::Code::kNotFound);
    EXPECT_THAT(st.message(), HasSubstr("no file matches"));
  }
  EXPECT_THAT(
      Refused(R"({"nodes": [{"files": "ok.csv", "id": "id", "colour": "red"}], )" + edges + "}"),
      HasSubstr("unknown key \"colour\""));
  EXPECT_THAT(Refused(R"({"nodes": [{"files": "ok.csv", "id": "id"}], "edges": [{"files": "e.csv",
              "source": "s", "destination": "d", "weight": "w"}]})"),
              HasSubstr("e.csv: no column 'w' (the edge type 'to''s weight)"));
  EXPECT_THAT(Refused(R"({"nodes": [{"files": "ok.csv", "id": "id"}], "edges": [{"files": "e.csv",
              "source": "s", "destination": "d", "source_type": "user"}]})"),
              HasSubstr("node type 'user' has no node table"));
  tmp_.Write("sp.csv", "id,sp\n1,train\n2,later\n");
  EXPECT_THAT(
      Refused(R"({"nodes": [{"files": "sp.csv", "id": "id", "split": "sp"}], )" + edges + "}"),
      HasSubstr("sp.csv:3: column 'sp': 'later' (train, val, test, or empty)"));
  tmp_.Write("w.csv", "id,emb\n1,1 2\n2,1 2 3\n");
  EXPECT_THAT(
      Refused(R"({"nodes": [{"files": "w.csv", "id": "id", "features": "emb"}], )" + edges + "}"),
      HasSubstr("w.csv:3: column 'emb': a feature row of 3 values; earlier rows"));
  EXPECT_THAT(Refused(R"({"heterogeneous": false, "nodes": [{"files": "ok.csv", "id": "id"}],
              "edges": [{"files": "e.csv", "source": "s", "destination": "d", "reverse": "r"}]})"),
              HasSubstr("more than one node or edge type"));
  EXPECT_THAT(Refused("{not json"), HasSubstr("is not JSON"));
  // Dropped and counted where the schema says so.
  RawDataset ds;
  ASSERT_TRUE(Load(R"({"dangling_edges": "drop", "nodes": [{"files": "ok.csv", "id": "id"}], )" +
                       edges + "}",
                   &ds)
                  .ok());
  EXPECT_EQ(ds.num_edges(), 1);
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_THAT(notes_[0], HasSubstr("dropped 1 edges"));
}

TEST(StringIdMapTest, IndexesKeysInInsertionOrderThroughGrowthAndCollisions) {
  // Seed 0 and a tiny table first: many keys share slots, then grow.
  for (uint64_t seed : {uint64_t{0}, uint64_t{12345}}) {
    detail::StringIdMap m(seed);
    EXPECT_EQ(m.Find("a"), -1);
    std::vector<std::string> keys = {"", "a", "ab", "abcdefgh", "abcdefghi", std::string(40, 'x')};
    for (int i = 0; i < 5000; ++i) keys.push_back("user_" + std::to_string(i * 7919));
    for (size_t k = 0; k < keys.size(); ++k) {
      ASSERT_TRUE(m.Insert(keys[k])) << keys[k];
      EXPECT_EQ(m.size(), static_cast<int64_t>(k + 1));
    }
    for (size_t k = 0; k < keys.size(); ++k) {
      EXPECT_EQ(m.Find(keys[k]), static_cast<int64_t>(k)) << keys[k];
      EXPECT_EQ(m.Key(static_cast<int64_t>(k)), keys[k]);
      EXPECT_FALSE(m.Insert(keys[k]));  // already there: nothing added
    }
    EXPECT_EQ(m.size(), static_cast<int64_t>(keys.size()));
    EXPECT_EQ(m.Find("user_1"), -1);
    EXPECT_EQ(m.Find(std::string(41, 'x')), -1);
    EXPECT_EQ(m.Find(std::string_view("a\0", 2)), -1);  // bytes, not C strings
  }
}

// The Parquet reader's stream, as a child that lies or dies would send it:
// every defect is an error naming the file, never a crash or a hang. The
// "interpreter" ($FANOUT_PYTHON) is a shell script replaying bytes.
class ParquetStreamTest : public TablesTest {
 protected:
  struct Bytes {
    std::string b;
    template <typename T>
    Bytes& Put(T v) {
      b.append(reinterpret_cast<const char*>(&v), sizeof(v));
      return *this;
    }
    Bytes& Raw(const std::string& s) {
      b += s;
      return *this;
    }
  };
  // A header for the id column "id" (int) and, for edges, "s" and "d".
  static Bytes Header(const std::vector<std::pair<std::string, uint8_t>>& cols) {
    Bytes h;
    h.Raw("FNPQ0001")
        .Put<uint32_t>(static_cast<uint32_t>(cols.size()))
        .Put<uint32_t>(1)
        .Put<uint64_t>(2);
    for (const auto& [name, kind] : cols)
      h.Put<uint8_t>(kind).Put<uint32_t>(static_cast<uint32_t>(name.size())).Raw(name);
    return h;
  }
  // Loads nodes.parquet (replayed from `stream`, the child then writing
  // `err` to stderr and exiting `code`) with edges from a CSV.
  Status LoadWith(const std::string& stream, const std::string& err = "", int code = 0) {
    tmp_.Write("stream.bin", stream);
    tmp_.Write("err.txt", err);
    tmp_.Write("nodes.parquet", "PAR1");
    tmp_.Write("e.csv", "s,d\n1,2\n");
    const std::string py = tmp_.Write(
        "fake-python", "#!/bin/sh\ncat '" + tmp_.Sub("stream.bin") + "'\ncat '" +
                           tmp_.Sub("err.txt") + "' >&2\nexit " + std::to_string(code) + "\n");
    ::chmod(py.c_str(), 0755);
    ::setenv("FANOUT_PYTHON", py.c_str(), 1);
    RawDataset ds;
    Status st = Load(R"({"nodes": [{"files": "nodes.parquet", "id": "id"}],
      "edges": [{"files": "e.csv", "source": "s", "destination": "d"}]})",
                     &ds);
    ::unsetenv("FANOUT_PYTHON");
    return st;
  }
  static Bytes Ids(Bytes b, const std::vector<int64_t>& ids) {
    b.Put<uint32_t>(1).Put<uint32_t>(0).Put<uint64_t>(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) b.Put<uint8_t>(1);
    for (int64_t v : ids) b.Put<int64_t>(v);
    return b;
  }
};

TEST_F(ParquetStreamTest, AWellFormedStreamLoads) {
  Bytes b = Ids(Header({{"id", 1}}), {1, 2});
  b.Put<uint32_t>(2).Put<uint32_t>(0).Put<uint64_t>(0);
  const Status st = LoadWith(b.b);
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST_F(ParquetStreamTest, EveryDefectIsAnErrorNamingTheFile) {
  auto refused = [&](const Status& st, const std::string& what) {
    EXPECT_FALSE(st.ok());
    EXPECT_THAT(st.ToString(), HasSubstr("nodes.parquet"));
    EXPECT_THAT(st.ToString(), HasSubstr(what));
  };
  refused(LoadWith("not a stream at all"), "no header");
  refused(LoadWith(""), "no header");
  refused(LoadWith(Header({{"other", 1}}).b), "a header naming other columns");
  refused(LoadWith(Header({{"id", 9}}).b), "a header naming other columns");
  {  // a batch of 2^40 rows
    Bytes b = Header({{"id", 1}});
    b.Put<uint32_t>(1).Put<uint32_t>(0).Put<uint64_t>(uint64_t{1} << 40);
    refused(LoadWith(b.b), "a damaged batch header");
  }
  refused(LoadWith(Ids(Header({{"id", 1}}), {1, 2}).b.substr(0, 60)), "a cut");
  refused(LoadWith(Ids(Header({{"id", 1}}), {1, 2}).b), "a cut stream");  // no end
  {  // a string column whose offsets go back, or past 2^31 bytes
    for (int64_t second : {int64_t{-5}, int64_t{1} << 40}) {
      Bytes b = Header({{"id", 4}});
      b.Put<uint32_t>(1).Put<uint32_t>(0).Put<uint64_t>(2).Put<uint8_t>(1).Put<uint8_t>(1);
      b.Put<int64_t>(0).Put<int64_t>(3).Put<int64_t>(second).Raw("abc");
      refused(LoadWith(b.b), second < 0 ? "decreasing offsets" : "bytes");
    }
  }
  {  // a clean stream from a child that then fails
    Bytes b = Ids(Header({{"id", 1}}), {1, 2});
    b.Put<uint32_t>(2).Put<uint32_t>(0).Put<uint64_t>(0);
    refused(LoadWith(b.b, "", 1), "an unclean exit");
  }
  // The reader's own verdicts, by tag.
  const Status missing = LoadWith("", "MISSING\tid\tuser, item\n", 3);
  EXPECT_EQ(missing.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(missing.message(),
              HasSubstr("no column 'id' (the node type 'node''s id); its columns: user, item"));
  EXPECT_THAT(LoadWith("", "BADFILE\tParquet magic bytes not found\n", 7).message(),
              HasSubstr("not a Parquet file pyarrow can read: Parquet magic bytes not found"));
  // A null id, and a float that is not an integer.
  {
    Bytes b = Header({{"id", 1}});
    b.Put<uint32_t>(1).Put<uint32_t>(0).Put<uint64_t>(1).Put<uint8_t>(0).Put<int64_t>(0);
    b.Put<uint32_t>(2).Put<uint32_t>(0).Put<uint64_t>(0);
    EXPECT_THAT(LoadWith(b.b).message(),
                HasSubstr("nodes.parquet: row 1 (row group 0): column 'id': a null value"));
  }
  {
    Bytes b = Header({{"id", 2}});
    b.Put<uint32_t>(1).Put<uint32_t>(0).Put<uint64_t>(1).Put<uint8_t>(1).Put<double>(1.5);
    b.Put<uint32_t>(2).Put<uint32_t>(0).Put<uint64_t>(0);
    EXPECT_THAT(LoadWith(b.b).message(), HasSubstr("is not an integer"));
  }
}

}  // namespace
}  // namespace fanout::datasets
