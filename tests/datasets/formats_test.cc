// Raw format loaders: fixtures for each format's features and quirks, and
// every bad-input case naming file and line.
#include "datasets/formats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>

#include "datasets/line_reader.h"
#include "datasets/partition_store.h"
#include "tests/datasets/test_util.h"

namespace fanout::datasets {
namespace {

using testing::DataDir;
using ::testing::HasSubstr;
using testing::TempDir;

Status LoadQuiet(const std::string& format, const std::string& input, RawDataset* ds,
                 std::vector<std::string>* notes = nullptr, LoadOptions lo = {}) {
  lo.quiet = true;
  std::vector<std::string> sink;
  return LoadDataset(format, input, lo, ds, notes ? notes : &sink);
}

void WriteGz(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
}

TEST(LineReaderTest, HandlesCrlfMissingFinalNewlineAndGzip) {
  TempDir tmp;
  std::string plain = tmp.Write("a.txt", "x 1\r\n\r\ny 2\nlast");
  std::unique_ptr<LineReader> r;
  ASSERT_TRUE(LineReader::Open(plain, &r).ok());
  std::vector<std::string> lines;
  std::string_view line;
  while (r->Next(&line)) lines.emplace_back(line);
  EXPECT_EQ(lines, (std::vector<std::string>{"x 1", "", "y 2", "last"}));
  EXPECT_EQ(r->line_number(), 4);
  WriteGz(tmp.Sub("b.gz"), "p\nq\n");
  ASSERT_TRUE(LineReader::Open(tmp.Sub("b.gz"), &r).ok());
  lines.clear();
  while (r->Next(&line)) lines.emplace_back(line);
  EXPECT_EQ(lines, (std::vector<std::string>{"p", "q"}));
  EXPECT_TRUE(LineReader::Open(tmp.Sub("missing"), &r).IsNotFound());
}

TEST(LineReaderTest, ReadsLinesLongerThanTheBlock) {
  TempDir tmp;
  std::string big(9 << 20, 'a');
  std::string p = tmp.Write("big.txt", "s\n" + big + "\nt\n");
  std::unique_ptr<LineReader> r;
  ASSERT_TRUE(LineReader::Open(p, &r).ok());
  std::string_view line;
  ASSERT_TRUE(r->Next(&line));
  ASSERT_TRUE(r->Next(&line));
  EXPECT_EQ(line.size(), big.size());
  ASSERT_TRUE(r->Next(&line));
  EXPECT_EQ(line, "t");
}

TEST(FormatsTest, CoraLinqsMatchesItsPublishedCounts) {
  RawDataset ds;
  ASSERT_TRUE(LoadQuiet("linqs", DataDir() + "/cora", &ds).ok());
  EXPECT_EQ(ds.num_nodes, 2708);
  EXPECT_EQ(ds.num_edges(), 5429);
  EXPECT_EQ(ds.feature_dim, 1433);
  EXPECT_EQ(ds.num_classes, 7);
  double ones = 0;
  for (float f : ds.features) ones += f;
  EXPECT_EQ(ones, 49216);
  EXPECT_EQ(std::count(ds.labels.begin(), ds.labels.end(), 2),
            818);  // Neural_Networks (3rd by name)
  EXPECT_EQ(ds.class_names[2], "Neural_Networks");
}

TEST(FormatsTest, LinqsSkipsEdgesToUnknownIdsAndReportsThem) {
  TempDir tmp;
  tmp.Write("g/t.content", "a 1 0 X\nb 0 1 Y\nc 1 1 X\n");
  tmp.Write("g/t.cites", "a b\nb c\nzz a\nc c\n");
  RawDataset ds;
  std::vector<std::string> notes;
  ASSERT_TRUE(LoadQuiet("linqs", tmp.Sub("g"), &ds, &notes).ok());
  EXPECT_EQ(ds.num_edges(), 3);  // the self-loop c c is kept unless dropped
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("skipped 1 edge(s)"));
  EXPECT_THAT(notes[0], HasSubstr("line 3 ('zz')"));
  EXPECT_EQ(ds.src[0], 1);  // citing b -> cited a
  EXPECT_EQ(ds.dst[0], 0);
  EdgeOptions eo;
  eo.drop_self_loops = true;
  EXPECT_EQ(ApplyEdgeOptions(eo, &ds), "dropped 1 self-loops");
  EXPECT_EQ(ds.num_edges(), 2);
}

TEST(FormatsTest, SnapHandlesCommentsTabsSpacesAndCrlf) {
  TempDir tmp;
  std::string p = tmp.Write("g.txt", "# comment\r\n10\t20\r\n20 30\r\n\r\n30\t10\r\n10 20");
  RawDataset ds;
  ASSERT_TRUE(LoadQuiet("snap", p, &ds).ok());
  EXPECT_EQ(ds.num_nodes, 3);
  EXPECT_EQ(ds.num_edges(), 4);
  EXPECT_EQ(ds.original_ids, (std::vector<int64_t>{10, 20, 30}));
  EdgeOptions eo;
  eo.make_undirected = eo.drop_duplicates = true;
  ApplyEdgeOptions(eo, &ds);
  EXPECT_EQ(ds.num_edges(), 6);  // 3 undirected pairs, both directions
}

// SNAP temporal edge lists: the third column is each edge's time; it follows
// the edges through the edge options and into the store (etime chunks), and
// a missing or non-integer time is named by file and line.
TEST(FormatsTest, SnapEdgeTimesFollowTheEdgesIntoTheStore) {
  TempDir tmp;
  std::string p = tmp.Write("t.txt", "# src dst time\n10 20 100\n20 30 7\n30 30 5\n30 10 -3\n");
  RawDataset ds;
  LoadOptions lo;
  lo.quiet = true;
  lo.edge_times = true;
  std::vector<std::string> notes;
  ASSERT_TRUE(LoadDataset("snap", p, lo, &ds, &notes).ok());
  EXPECT_EQ(ds.edge_times, (std::vector<int64_t>{100, 7, 5, -3}));
  EdgeOptions eo;
  eo.drop_self_loops = eo.make_undirected = true;
  ApplyEdgeOptions(eo, &ds);
  ASSERT_EQ(ds.num_edges(), 6);
  EXPECT_EQ(ds.edge_times, (std::vector<int64_t>{100, 7, -3, 100, 7, -3}));
  EXPECT_EQ(ds.src[3], ds.dst[0]);
  // Through the store: each stored edge keeps its time (edge ids are input positions).
  std::vector<int32_t> part = {0, 1, 0};
  WriteOptions wo;
  wo.quiet = true;
  wo.chunk_nodes = 1;
  DatasetMeta meta;
  ASSERT_TRUE(WritePartitionedDataset(ds, part, 2, wo, tmp.Sub("store"), &meta).ok());
  EXPECT_TRUE(meta.has_edge_times);
  int64_t seen = 0;
  for (int k = 0; k < 2; ++k) {
    PartitionData d;
    Status st = OpenPartition(tmp.Sub("store"), k, {}, &d);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(d.edge_times.size(), d.indices.size());
    for (size_t e = 0; e < d.indices.size(); ++e, ++seen)
      EXPECT_EQ(d.edge_times[e], ds.edge_times[d.edge_ids[e]]);
    for (int64_t r = 0; r < d.num_nodes(); ++r)  // rows in time order
      EXPECT_TRUE(std::is_sorted(d.edge_times.begin() + d.indptr[r],
                                 d.edge_times.begin() + d.indptr[r + 1]));
  }
  EXPECT_EQ(seen, 6);
  // Without --edge-times the third column is ignored and nothing is stored.
  RawDataset plain;
  ASSERT_TRUE(LoadQuiet("snap", p, &plain).ok());
  EXPECT_TRUE(plain.edge_times.empty());
  // A line without a time, or with a word for one: file and line.
  std::string bad = tmp.Write("bad.txt", "1 2 3\n2 3\n");
  Status st = LoadDataset("snap", bad, lo, &ds, &notes);
  EXPECT_THAT(st.message(), HasSubstr("bad.txt:2"));
  EXPECT_THAT(st.message(), HasSubstr("<time>"));
  bad = tmp.Write("bad2.txt", "1 2 noon\n");
  EXPECT_THAT(LoadDataset("snap", bad, lo, &ds, &notes).message(), HasSubstr("bad2.txt:1"));
}

// An OGB folder's edge_time.csv: one time per edge line; a count that does
// not match, or a word, is named.
TEST(FormatsTest, OgbEdgeTimeColumn) {
  TempDir tmp;
  tmp.Write("d/raw/num-node-list.csv", "3\n");
  tmp.Write("d/raw/edge.csv", "0,1\n1,2\n2,0\n");
  WriteGz(tmp.Sub("d/raw/edge_time.csv.gz"), "2004\n2010\n1999\n");
  RawDataset ds;
  LoadOptions lo;
  lo.quiet = true;
  lo.edge_times = true;
  std::vector<std::string> notes;
  Status st = LoadDataset("ogb", tmp.Sub("d"), lo, &ds, &notes);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ds.edge_times, (std::vector<int64_t>{2004, 2010, 1999}));
  tmp.Write("e/raw/num-node-list.csv", "3\n");
  tmp.Write("e/raw/edge.csv", "0,1\n1,2\n");
  tmp.Write("e/raw/edge_year.csv", "2004\n");  // ogbl-collab's name; one short
  EXPECT_THAT(LoadDataset("ogb", tmp.Sub("e"), lo, &ds, &notes).message(),
              HasSubstr("1 edge times for 2 edges"));
  tmp.Write("e/raw/edge_year.csv", "2004\nlater\n");
  EXPECT_THAT(LoadDataset("ogb", tmp.Sub("e"), lo, &ds, &notes).message(),
              HasSubstr("edge_year.csv:2"));
  tmp.Write("f/raw/num-node-list.csv", "3\n");
  tmp.Write("f/raw/edge.csv", "0,1\n");
  EXPECT_THAT(LoadDataset("ogb", tmp.Sub("f"), lo, &ds, &notes).message(),
              HasSubstr("edge_time.csv"));
}

TEST(FormatsTest, OgbFolderWithGzipAndPlainFiles) {
  TempDir tmp;
  WriteGz(tmp.Sub("d") + "/raw/edge.csv.gz", "");  // created below after folders exist
  tmp.Write("d/raw/num-node-list.csv", "4\n");
  WriteGz(tmp.Sub("d/raw/edge.csv.gz"), "0,1\n1,2\n3,0\n");
  tmp.Write("d/raw/node-feat.csv", "0.5,1\n-1,2e-1\n3,4\n5,6\n");
  WriteGz(tmp.Sub("d/raw/node-label.csv.gz"), "0\n2\n1\n2\n");
  tmp.Write("d/split/time/train.csv", "0\n1\n");
  tmp.Write("d/split/time/valid.csv", "2\n");
  WriteGz(tmp.Sub("d/split/time/test.csv.gz"), "3\n");
  RawDataset ds;
  Status st = LoadQuiet("ogb", tmp.Sub("d"), &ds);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ds.num_nodes, 4);
  EXPECT_EQ(ds.num_edges(), 3);
  EXPECT_EQ(ds.feature_dim, 2);
  EXPECT_FLOAT_EQ(ds.features[3], 0.2f);
  EXPECT_EQ(ds.num_classes, 3);
  EXPECT_EQ(ds.split, (std::vector<uint8_t>{1, 1, 2, 3}));
}

// MovieLens ml-latest-small as shipped: the counts its README publishes (and
// the staging README verified), typed; movie features are the genre multi-hot.
TEST(FormatsTest, MovieLensMatchesItsPublishedCountsAsAHeterogeneousGraph) {
  RawDataset ds;
  ASSERT_TRUE(LoadQuiet("movielens", DataDir() + "/movielens/ml-latest-small", &ds).ok());
  ASSERT_EQ(ds.node_types, (std::vector<std::string>{"user", "movie", "genre"}));
  std::vector<int64_t> nodes(3, 0), edges(3, 0);
  for (int32_t t : ds.node_type) nodes[t]++;
  for (int32_t e : ds.edge_type) edges[e]++;
  EXPECT_EQ(nodes, (std::vector<int64_t>{610, 9742, 20}));
  ASSERT_EQ(ds.edge_types.size(), 3u);
  EXPECT_EQ(ds.edge_types[0].rel, "rates");
  EXPECT_EQ(ds.edge_types[1].rel, "tags");
  EXPECT_EQ(ds.edge_types[2].rel, "has_genre");
  EXPECT_EQ(edges, (std::vector<int64_t>{100836, 3683, 22084}));
  EXPECT_EQ(ds.type_feature_dims, (std::vector<int64_t>{0, 20, 0}));
  EXPECT_EQ(ds.feature_dim, 20);
  // Toy Story (movieId 1, the first movie): Adventure|Animation|Children|Comedy|Fantasy.
  const int64_t toy_story = 610;
  EXPECT_EQ(ds.original_ids[toy_story], 1);
  float genres = 0;
  for (int64_t j = 0; j < 20; ++j) genres += ds.features[toy_story * 20 + j];
  EXPECT_EQ(genres, 5.0f);
  for (int64_t j = 0; j < 20; ++j) EXPECT_EQ(ds.features[0 * 20 + j], 0.0f);  // users have none
  // A quoted title with a comma parses: every movie has its genre edges.
  EXPECT_EQ(ds.original_ids[609], 610);  // users 1..610 ascending
  // Undirected: a reverse type per relation, PyG's ToUndirected names.
  EdgeOptions eo;
  eo.make_undirected = true;
  ApplyEdgeOptions(eo, &ds);
  ASSERT_EQ(ds.edge_types.size(), 6u);
  EXPECT_EQ(ds.edge_types[3].rel, "rev_rates");
  EXPECT_EQ(ds.edge_types[3].src, 1);
  EXPECT_EQ(ds.edge_types[3].dst, 0);
  EXPECT_TRUE(ds.Validate().ok());
}

TEST(FormatsTest, CsvLinesFollowRfc4180Quotes) {
  std::vector<std::string> f;
  ASSERT_TRUE(SplitCsvLine(
                  "1,\"City of Lost Children, The (Cité des enfants perdus, La) (1995)\",Drama", &f)
                  .ok());
  EXPECT_EQ(f,
            (std::vector<std::string>{
                "1", "City of Lost Children, The (Cité des enfants perdus, La) (1995)", "Drama"}));
  ASSERT_TRUE(SplitCsvLine("2,\"say \"\"hi\"\"\",,x", &f).ok());
  EXPECT_EQ(f, (std::vector<std::string>{"2", "say \"hi\"", "", "x"}));
  EXPECT_FALSE(SplitCsvLine("3,\"open", &f).ok());
}

// An OGB heterogeneous folder (ogbn-mag's raw layout): per-type counts,
// relation folders, per-type features (zero-padded to the widest), labels
// and split; global ids type by type.
TEST(FormatsTest, OgbHeteroFolderReadsTypesRelationsFeaturesLabelsAndSplit) {
  TempDir tmp;
  tmp.Write("mag/raw/num-node-dict.csv", "author,paper\n2,3\n");
  tmp.Write("mag/raw/relations/author___writes___paper/edge.csv", "0,0\n0,1\n1,2\n");
  WriteGz(tmp.Write("mag/raw/relations/paper___cites___paper/edge.csv", "") + ".gz", "0,1\n2,0\n");
  std::filesystem::remove(tmp.Sub("mag/raw/relations/paper___cites___paper/edge.csv"));
  tmp.Write("mag/raw/node-feat/paper/node-feat.csv", "1,2\n3,4\n5,6\n");
  tmp.Write("mag/raw/node-label/paper/node-label.csv", "2\n0\n1\n");
  tmp.Write("mag/split/time/paper/train.csv", "0\n1\n");
  tmp.Write("mag/split/time/paper/valid.csv", "2\n");
  tmp.Write("mag/split/time/paper/test.csv", "");
  RawDataset ds;
  Status st = LoadQuiet("ogb-hetero", tmp.Sub("mag"), &ds);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ds.node_types, (std::vector<std::string>{"author", "paper"}));
  EXPECT_EQ(ds.node_type, (std::vector<int32_t>{0, 0, 1, 1, 1}));
  EXPECT_EQ(ds.original_ids, (std::vector<int64_t>{0, 1, 0, 1, 2}));
  ASSERT_EQ(ds.edge_types.size(), 2u);
  EXPECT_EQ(ds.edge_types[0].rel, "writes");
  EXPECT_EQ(ds.edge_types[1].rel, "cites");
  EXPECT_EQ(ds.src, (std::vector<int64_t>{0, 0, 1, 2, 4}));
  EXPECT_EQ(ds.dst, (std::vector<int64_t>{2, 3, 4, 3, 2}));
  EXPECT_EQ(ds.edge_type, (std::vector<int32_t>{0, 0, 0, 1, 1}));
  EXPECT_EQ(ds.type_feature_dims, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(ds.features, (std::vector<float>{0, 0, 0, 0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ds.labels, (std::vector<int64_t>{-1, -1, 2, 0, 1}));
  EXPECT_EQ(ds.num_classes, 3);
  EXPECT_EQ(ds.split, (std::vector<uint8_t>{0, 0, 1, 1, 2}));
}

TEST(FormatsTest, RmatDatasetHasTheBenchmarkEdgesAndSyntheticData) {
  LoadOptions lo;
  lo.rmat.scale = 8;
  lo.feature_dim = 16;
  lo.num_classes = 4;
  lo.split_fractions = {0.5, 0.25, 0.25};
  RawDataset ds;
  ASSERT_TRUE(LoadQuiet("rmat", "", &ds, nullptr, lo).ok());
  EXPECT_EQ(ds.num_nodes, 256);
  EXPECT_EQ(ds.num_edges(), 256 * 16);
  std::vector<std::pair<int64_t, int64_t>> edges;
  ASSERT_TRUE(
      ForEachRmatEdge(lo.rmat, [&](int64_t s, int64_t d) { edges.emplace_back(s, d); }).ok());
  for (size_t i = 0; i < edges.size(); ++i) ASSERT_EQ(std::pair(ds.src[i], ds.dst[i]), edges[i]);
  for (int64_t v = 0; v < ds.num_nodes; ++v) {
    const float* row = ds.features.data() + v * 16;
    EXPECT_EQ(ds.labels[v], std::max_element(row, row + 4) - row);
    for (int j = 0; j < 16; ++j) ASSERT_TRUE(row[j] >= -1 && row[j] < 1);
  }
  EXPECT_GT(std::count(ds.split.begin(), ds.split.end(), 1), 80);
}

// ---- bad input: each error names the file and line (or the value) ----

struct BadCase {
  const char* name;
  const char* format;
  std::vector<std::pair<std::string, std::string>> files;  // relative path -> content
  const char* input;                                       // relative to the temp dir
  std::vector<std::string> expect;                         // substrings of the message
};

class BadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInputTest, FailsWithAMessageNamingTheProblem) {
  const BadCase& c = GetParam();
  TempDir tmp;
  for (const auto& [path, text] : c.files) tmp.Write(path, text);
  RawDataset ds;
  Status st = LoadQuiet(c.format, tmp.Sub(c.input), &ds);
  ASSERT_FALSE(st.ok());
  for (const auto& e : c.expect) EXPECT_THAT(st.ToString(), HasSubstr(e));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadInputTest,
    ::testing::Values(
        BadCase{"LinqsFeatureRowOfWrongWidth",
                "linqs",
                {{"t.content", "a 1 0 X\nb 0 1 1 Y\n"}, {"t.cites", ""}},
                "t",
                {"t.content:2:", "feature row has 3 values, expected 2"}},
        BadCase{"LinqsMalformedFeature",
                "linqs",
                {{"t.content", "a 1 0 X\nb 0 q Y\n"}, {"t.cites", ""}},
                "t",
                {"t.content:2:", "feature 1 'q' is not a number"}},
        BadCase{"LinqsDuplicateId",
                "linqs",
                {{"t.content", "a 1 X\na 0 Y\n"}, {"t.cites", ""}},
                "t",
                {"t.content:2:", "'a' appears twice"}},
        BadCase{"LinqsMissingCites",
                "linqs",
                {{"t.content", "a 1 X\n"}},
                "t",
                {"t.cites", "no such file"}},
        BadCase{"LinqsMalformedCitesLine",
                "linqs",
                {{"t.content", "a 1 X\nb 1 X\n"}, {"t.cites", "a b\na\n"}},
                "t",
                {"t.cites:2:", "found 1 field"}},
        BadCase{"LinqsNoContentInFolder", "linqs", {{"g/readme", "x"}}, "g", {"no *.content"}},
        BadCase{"PlanetoidMissingLabels",
                "planetoid",
                {{"p/edges.txt", "0 1\n"}},
                "p",
                {"labels.txt", "no such file"}},
        BadCase{"PlanetoidEdgeIdOutOfRange",
                "planetoid",
                {{"p/labels.txt", "0 0\n1 1\n"}, {"p/edges.txt", "0 1\n1 7\n"}},
                "p",
                {"edges.txt:2:", "edge 1 7 has an id outside [0, 2)"}},
        BadCase{"PlanetoidSplitIdOutOfRange",
                "planetoid",
                {{"p/labels.txt", "0 0\n1 1\n"},
                 {"p/edges.txt", "0 1\n"},
                 {"p/split_train.txt", "0\n5\n"},
                 {"p/split_val.txt", ""},
                 {"p/split_test.txt", ""}},
                "p",
                {"split_train.txt:2:", "node 5 is outside [0, 2)"}},
        BadCase{"PlanetoidNodeInTwoSplits",
                "planetoid",
                {{"p/labels.txt", "0 0\n1 1\n"},
                 {"p/edges.txt", "0 1\n"},
                 {"p/split_train.txt", "0\n"},
                 {"p/split_val.txt", "1\n0\n"},
                 {"p/split_test.txt", ""}},
                "p",
                {"split_val.txt:2:", "node 0 is already in another split"}},
        BadCase{"OgbEdgeIdOutOfRange",
                "ogb",
                {{"o/raw/num-node-list.csv", "3\n"}, {"o/raw/edge.csv", "0,1\n2,3\n"}},
                "o",
                {"edge.csv:2:", "edge 2,3 has an id outside [0, 3)"}},
        BadCase{"OgbFeatureRowOfWrongWidth",
                "ogb",
                {{"o/raw/num-node-list.csv", "2\n"},
                 {"o/raw/edge.csv", "0,1\n"},
                 {"o/raw/node-feat.csv", "1,2\n3\n"}},
                "o",
                {"node-feat.csv:2:", "feature row has 1 values, expected 2"}},
        BadCase{"OgbTooFewLabels",
                "ogb",
                {{"o/raw/num-node-list.csv", "3\n"},
                 {"o/raw/edge.csv", "0,1\n"},
                 {"o/raw/node-label.csv", "1\n0\n"}},
                "o",
                {"node-label.csv", "2 labels for 3 nodes"}},
        BadCase{"OgbMissingRaw", "ogb", {{"o/readme", ""}}, "o", {"no raw/ folder"}},
        BadCase{"SnapMalformedLine",
                "snap",
                {{"s.txt", "# x\n1 2\n3\n"}},
                "s.txt",
                {"s.txt:3:", "expected '<src> <dst>'"}},
        BadCase{"SnapNotANumber", "snap", {{"s.txt", "1 2\n3 x4\n"}}, "s.txt", {"s.txt:2:"}},
        BadCase{"SnapMissingFile", "snap", {}, "nope.txt", {"nope.txt", "no such file"}},
        BadCase{"OgbHeteroEdgeOutOfTypeRange",
                "ogb-hetero",
                {{"h/raw/num-node-dict.csv", "a,b\n2,3\n"},
                 {"h/raw/relations/a___r___b/edge.csv", "0,2\n1,3\n"}},
                "h",
                {"edge.csv:2:", "edge 1,3 is outside the a ids [0, 2) or b ids [0, 3)"}},
        BadCase{"OgbHeteroUnknownTypeInRelation",
                "ogb-hetero",
                {{"h/raw/num-node-dict.csv", "a,b\n2,3\n"},
                 {"h/raw/relations/a___r___c/edge.csv", "0,1\n"}},
                "h",
                {"relations/a___r___c", "node types from num-node-dict.csv"}},
        BadCase{"OgbHeteroCountsMismatch",
                "ogb-hetero",
                {{"h/raw/num-node-dict.csv", "a,b\n2\n"}},
                "h",
                {"num-node-dict.csv:2:", "1 counts for 2 node types"}},
        BadCase{"OgbHeteroFeatureRowsOfAType",
                "ogb-hetero",
                {{"h/raw/num-node-dict.csv", "a,b\n2,3\n"},
                 {"h/raw/relations/a___r___b/edge.csv", "0,1\n"},
                 {"h/raw/node-feat/b/node-feat.csv", "1,2\n3,4\n"}},
                "h",
                {"node-feat.csv", "2 feature rows for 3 nodes"}},
        BadCase{"MovieLensUnknownMovie",
                "movielens",
                {{"m/movies.csv", "movieId,title,genres\n1,\"A, the (1990)\",Drama|Comedy\n"},
                 {"m/ratings.csv", "userId,movieId,rating,timestamp\n1,1,4.0,5\n1,9,3.0,6\n"}},
                "m",
                {"ratings.csv:3:", "movieId 9 is not in"}},
        BadCase{"MovieLensBadHeader",
                "movielens",
                {{"m/movies.csv", "id,title,genres\n"},
                 {"m/ratings.csv", "userId,movieId,rating,timestamp\n"}},
                "m",
                {"movies.csv:1:", "expected a header starting 'movieId,title"}},
        BadCase{"MovieLensUnclosedQuote",
                "movielens",
                {{"m/movies.csv", "movieId,title,genres\n1,\"A (1990),Drama\n"},
                 {"m/ratings.csv", "userId,movieId,rating,timestamp\n"}},
                "m",
                {"movies.csv:2:", "quoted field is not closed"}},
        BadCase{"MovieLensMissingRatings",
                "movielens",
                {{"m/movies.csv", "movieId,title,genres\n"}},
                "m",
                {"movies.csv and ratings.csv"}}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace fanout::datasets

namespace fanout::datasets {
namespace {

// Counts a file declares (a features.txt width, a column index, OGB's node
// count) are checked against memory before an array is sized from them
// (found by fuzzing: fuzz/corpus/fuzz_planetoid/regress-huge-feature-width).
TEST(FormatsTest, DeclaredSizesLargerThanMemoryAreErrorsNamingTheFile) {
  TempDir tmp;
  tmp.Write("p/labels.txt", "0 1\n1 0\n");
  tmp.Write("p/edges.txt", "0 1\n");
  tmp.Write("p/features.txt", "# 2 nodes, 99999999999999 binary features\n0 1\n");
  for (const char* s : {"p/split_train.txt", "p/split_val.txt", "p/split_test.txt"})
    tmp.Write(s, "0\n");
  RawDataset ds;
  LoadOptions lo;
  lo.quiet = true;
  std::vector<std::string> notes;
  Status st = LoadDataset("planetoid", tmp.Sub("p"), lo, &ds, &notes);
  EXPECT_EQ(st.code(), Status::Code::kResourceExhausted) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("features.txt"));
  EXPECT_THAT(st.message(), HasSubstr("99999999999999 features"));
  tmp.Write("p/features.txt", "0 1 123456789012345\n");  // a column index instead
  st = LoadDataset("planetoid", tmp.Sub("p"), lo, &ds, &notes);
  EXPECT_EQ(st.code(), Status::Code::kResourceExhausted) << st.ToString();
  tmp.Write("o/raw/num-node-list.csv", "5000000000000000\n");
  tmp.Write("o/raw/edge.csv", "0,1\n");
  st = LoadDataset("ogb", tmp.Sub("o"), lo, &ds, &notes);
  EXPECT_EQ(st.code(), Status::Code::kResourceExhausted) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("num-node-list.csv"));
}

}  // namespace
}  // namespace fanout::datasets
