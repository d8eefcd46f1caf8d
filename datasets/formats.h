// Loaders for the raw graph formats fanout-partition reads. Each fills a
// RawDataset, streams its files (no per-line iostream, no per-edge
// allocation), reports progress on stderr, and returns an error naming the
// file and line of the first bad input.
#ifndef FANOUT_DATASETS_FORMATS_H_
#define FANOUT_DATASETS_FORMATS_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/rmat.h"

namespace fanout::datasets {

struct LoadOptions {
  // ogb: the split folder under split/ (default: the only one, or the first
  // in name order).
  std::string ogb_split;
  // snap: optional "node label" file (e.g. email-Eu-core department labels).
  std::string labels_path;
  // snap: the third column of each edge line is its timestamp (SNAP temporal
  // networks: SRC DST UNIXTS), kept in RawDataset::edge_times; ogb:
  // raw/edge_time.csv[.gz] (or edge_year.csv, ogbl-collab's), one integer per
  // edge.csv line; rmat:
  // synthetic timestamps, uniform in [0, 2^30) (a seeded hash of the edge's
  // index). Whole-graph loading only (the streams refuse it).
  bool edge_times = false;
  // rmat: generator parameters, synthetic float32 features of this dimension
  // (0 = none) and labels in [0, num_classes) (0 = none).
  RmatOptions rmat;
  int64_t feature_dim = 0;
  int64_t num_classes = 0;
  // rmat: a heterogeneous graph with this many node types (0 = homogeneous):
  // node v has type v % n ("t0", "t1", ...), edge u -> v type
  // (type(u), links, type(v)); features, when asked, belong to every type.
  int rmat_node_types = 0;
  // rmat, snap: train/val/test fractions for a seeded random split (empty =
  // no split).
  std::vector<double> split_fractions;
  uint64_t seed = 1;
  // The most memory an array sized from a count the input declares may take
  // (0 = this machine's physical memory); see CheckFitsInMemory.
  int64_t memory_limit_bytes = 0;
  // tables, streamed: the memory string ids may take (0: a quarter of
  // memory_limit_bytes, or no bound where that is 0). Past it a node type's
  // ids go to disk and edges find their endpoints through a bucketed join
  // (datasets/tables.cc, NameSpill).
  int64_t string_id_memory_bytes = 0;
  bool quiet = false;  // no progress output
};

// Each row divided by the sum of its absolute values (rows that sum to 0
// stay as they are): PyG's NormalizeFeatures, as GCN-style models train on
// bag-of-words features (fanout-partition --normalize-features).
void NormalizeFeatureRow(float* row, int64_t d);

// Known format names: linqs, planetoid, ogb, ogb-hetero, movielens, snap, rmat, tables.
const std::vector<std::string>& FormatNames();

// Loads `input` (a file or folder, as the format needs; ignored for rmat).
// Warnings about skipped input (unknown ids, ...) are appended to `notes`.
Status LoadDataset(const std::string& format, const std::string& input, const LoadOptions& options,
                   RawDataset* out, std::vector<std::string>* notes);

// The individual loaders.
// LINQS (Cora, CiteSeer): `input` is a folder holding one *.content[.gz] and
// one *.cites, or the common path prefix (".../cora").
Status LoadLinqs(const std::string& input, const LoadOptions& options, RawDataset* out,
                 std::vector<std::string>* notes);
// Planetoid plain split folder: edges.txt, labels.txt, [features.txt], split_{train,val,test}.txt.
Status LoadPlanetoid(const std::string& input, const LoadOptions& options, RawDataset* out,
                     std::vector<std::string>* notes);
// What an OGB folder must and may hold (--help, and the error naming a
// missing file): for "ogb" and "ogb-hetero".
const char* OgbFilesHelp();
const char* OgbHeteroFilesHelp();
// OGB node-property folder: raw/{edge,node-feat,node-label,num-node-list}.csv[.gz],
// split/<name>/{train,valid,test}.csv[.gz].
Status LoadOgb(const std::string& input, const LoadOptions& options, RawDataset* out,
               std::vector<std::string>* notes);
// OGB heterogeneous node-property folder (ogbn-mag's layout):
// raw/num-node-dict.csv[.gz] (type names, then counts),
// raw/relations/<src>___<rel>___<dst>/edge.csv[.gz] (per-type indices), and
// where present raw/node-feat/<type>/node-feat.csv[.gz],
// raw/node-label/<type>/node-label.csv[.gz] and
// split/<name>/<type>/{train,valid,test}.csv[.gz]. Global ids: type by type
// in num-node-dict order; the original id is the per-type index.
Status LoadOgbHetero(const std::string& input, const LoadOptions& options, RawDataset* out,
                     std::vector<std::string>* notes);
// MovieLens folder (ml-latest-small): movies.csv, ratings.csv, [tags.csv] as
// node types user, movie, genre and edge types (user, rates, movie),
// (user, tags, movie), (movie, has_genre, genre); movie features are the
// genre multi-hot vector (datasets/movielens.cc).
Status LoadMovieLens(const std::string& input, const LoadOptions& options, RawDataset* out,
                     std::vector<std::string>* notes);
// One CSV line into fields (RFC 4180 quotes: "a,b" and "" inside quotes).
Status SplitCsvLine(std::string_view line, std::vector<std::string>* fields);
// SNAP edge list: '#' comments, tab- or space-separated, LF or CRLF.
Status LoadSnap(const std::string& input, const LoadOptions& options, RawDataset* out,
                std::vector<std::string>* notes);
// The R-MAT benchmark graph with optional synthetic features, labels, split.
Status LoadRmat(const LoadOptions& options, RawDataset* out, std::vector<std::string>* notes);

// Shared helpers (also used by tests).
// Path of `base` or `base.gz`, whichever exists (base if neither).
std::string WithOptionalGz(const std::string& base);
// Reads one node id per line into (*split)[id] = value; a node already in
// another split is an error naming file and line.
Status ReadSplitFile(const std::string& path, int64_t num_nodes, Split value,
                     std::vector<uint8_t>* split);

// OK when `count` values of `bytes_each` bytes fit in `limit_bytes` (0 = this
// machine's physical memory); else ResourceExhausted naming `what` (a file
// and line, or a value) and the sizes. Readers call it before sizing an array
// from a count the input declares (a damaged header must not become a huge
// allocation).
// Tables with a schema (docs/DATA.md): `schema_path` is a JSON file naming
// node tables (a type, files or globs relative to the schema's folder, the id
// column as int64 or string, features as scalar columns or one list column,
// label, split or masks) and edge tables (a type, files, source and
// destination columns with their node types, an optional time column, an
// optional reverse type), CSV with a header (optionally gzip). Nodes get dense
// ids in table order; int64 ids are kept as original ids, string ids as
// original names. One node and one edge table make a homogeneous graph, more
// a heterogeneous one. Errors name the file, line and column; an edge whose
// endpoint no node table has is refused, or dropped and counted where the
// schema says "dangling_edges": "drop". Read whole (in memory).
Status LoadTables(const std::string& schema_path, const LoadOptions& options, RawDataset* out,
                  std::vector<std::string>* notes);

Status CheckFitsInMemory(const std::string& what, double count, double bytes_each,
                         int64_t limit_bytes = 0);
// Checks train,val,test fractions (3 values in [0, 1], summing to at most 1;
// empty = no split).
Status CheckSplitFractions(const std::vector<double>& fractions);
// Node v's Split value under checked, non-empty fractions: a pure function of
// (seed, v).
uint8_t RandomSplitOf(const std::vector<double>& fractions, uint64_t seed, int64_t v);
// Assigns a seeded random train/val/test split by fractions.
Status AssignRandomSplit(const std::vector<double>& fractions, uint64_t seed, RawDataset* ds);

}  // namespace fanout::datasets

#endif  // FANOUT_DATASETS_FORMATS_H_
