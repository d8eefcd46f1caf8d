// The partitioned dataset folder that fanout-partition writes and sampling
// servers open:
//
//   DIR/meta.json   format version, counts, partition offsets, feature dim and
//                   dtype, classes, direction, source and options, per-part stats
//   DIR/part-<k>/   a RocksDB database with partition k's data in chunks of
//                   `chunk_nodes` nodes, each value ending in a CRC-32:
//                     info            JSON: part, node range, edge count, dataset id
//                     adj/<chunk>     degrees, neighbor ids (global), edge ids
//                     feat/<chunk>    feature rows in the stored dtype
//                     label/<chunk>   int64 labels (-1 = unknown)
//                     split/<chunk>   uint8 Split values
//                     orig/<chunk>    original ids (int64)
//                     name/<chunk>    original string ids, when the source had them
//                     etime/<chunk>   int64 timestamp per stored edge (adj order), when
//                                     the source had them (temporal sampling); such
//                                     stores keep each row in time order (stable)
//                     eweight/<chunk> float32 weight per stored edge (adj order), when
//                                     the source had them (weighted sampling and walks)
//                     heat/<chunk>    int64 per node: stored edges naming it as their
//                                     neighbor (with feature files: the disk tier's order)
//                     etype/<chunk>   int64 edge type per stored edge (adj order), in
//                                     heterogeneous datasets; each row is ordered by
//                                     type (stable), and each partition's nodes by
//                                     node type (meta.json node_type_bounds)
//
// Partition p owns global ids [offsets[p], offsets[p+1]). Its rows hold the
// complete adjacency of its nodes along `direction` ("in": row v lists the
// sources of edges u -> v, for message passing; "out": the targets).
//
// Writing is atomic: everything goes to a temporary sibling folder that is
// renamed to DIR at the end, so no folder named DIR exists unless complete.
#ifndef FANOUT_DATASETS_PARTITION_STORE_H_
#define FANOUT_DATASETS_PARTITION_STORE_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/array_view.h"
#include "common/feature_dtype.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/partitioner.h"
#include "sampler/csr_graph.h"
#include "sampler/partition_view.h"
#include "storage/feature_file.h"

namespace fanout::datasets {

// Version 2: per-column int8 scales, bfloat16, feature files. Readers take 1 and 2.
inline constexpr int kStoreFormatVersion = 2;

// Feature element types and their codec (common/feature_dtype.h).
using ::fanout::BFloat16ToFloat;
using ::fanout::DecodeFeature;
using ::fanout::DecodeFeatureRow;
using ::fanout::FeatureDType;
using ::fanout::FeatureDTypeName;
using ::fanout::FeatureDTypeSize;
using ::fanout::FloatToBFloat16;
using ::fanout::FloatToHalf;
using ::fanout::HalfToFloat;
using ::fanout::ParseFeatureDType;

// The contents of meta.json.
struct DatasetMeta {
  int format_version = kStoreFormatVersion;
  std::string dataset_id;  // random id shared by meta.json and every part
  std::string name, source_format, source_path;
  int64_t num_nodes = 0, num_edges = 0;
  int num_parts = 0;
  std::vector<int64_t> offsets;  // num_parts + 1
  int64_t feature_dim = 0;
  FeatureDType feature_dtype = FeatureDType::kFloat32;
  double feature_scale = 1.0;  // int8, version 1 stores: one scale for every column
  // int8: value = q * feature_scales[j], one per column (feature_dim of
  // them; version 1 stores: feature_scale repeated). Empty for other dtypes.
  std::vector<double> feature_scales;
  // Feature rows in one flat file per partition beside its store
  // (storage/feature_file.h: "part-<k>.features", checksummed per block)
  // instead of feat/<chunk> values: the disk tier serves from it, the
  // memory tier loads it. Per partition: the file's name and size.
  struct FeatureFileEntry {
    std::string file;
    int64_t bytes = 0;
  };
  std::vector<FeatureFileEntry> feature_files;  // empty: features in the store's chunks
  bool has_feature_files() const { return !feature_files.empty(); }
  int64_t num_classes = 0;
  std::vector<std::string> class_names;
  std::string direction = "in";
  bool has_labels = false, has_split = false, has_names = false;
  // heat/<chunk>: per node, how many stored edges name it as their neighbor
  // (how often sampling can reach it): the disk tier's hot set order.
  // Written with feature files.
  bool has_heat = false;
  bool has_edge_times = false;    // etime/<chunk>: a timestamp per stored edge
  bool has_edge_weights = false;  // eweight/<chunk>: a float32 weight per stored edge
  // Heterogeneous datasets: node and edge types, per-partition type ranges
  // and per-type feature dims (sampler/hetero.h; etype/<chunk> holds each
  // stored edge's type). Empty (hetero.empty()) for homogeneous ones.
  sampler::HeteroSchema hetero;
  int64_t chunk_nodes = 65536;
  std::string method;
  std::string options_json;  // options used, as JSON text
  PartitionStats stats;

  std::string ToJson() const;
  // Parses meta.json text; Corruption/InvalidArgument name what is wrong.
  static Status FromJson(const std::string& text, const std::string& path, DatasetMeta* out);
};

struct WriteOptions {
  bool incoming = true;  // direction "in" (default) or "out"
  FeatureDType feature_dtype = FeatureDType::kFloat32;
  // Feature rows to one flat file per partition (DatasetMeta::feature_files:
  // what the servers' disk tier reads) instead of the store's chunks.
  bool feature_files = false;
  int64_t chunk_nodes = 65536;      // nodes per chunk, default 64K
  bool overwrite = false;           // replace an existing DIR
  std::string method = "metis";     // recorded in meta.json
  std::string source_path;          // recorded in meta.json
  std::string options_json = "{}";  // recorded in meta.json
  bool quiet = false;
};

// Renumbers nodes so part p owns a contiguous id range (ordered by part, then
// by input id), builds each part's adjacency and writes DIR atomically.
// `meta_out` (optional) receives what was written to meta.json.
Status WritePartitionedDataset(const RawDataset& ds, const std::vector<int32_t>& part,
                               int num_parts, const WriteOptions& options, const std::string& dir,
                               DatasetMeta* meta_out);

// A partition's arrays as read-only views: sampler/partition_view.h (kept
// apart so that rpc/ and client/ need not include the store).
using PartitionView = sampler::PartitionView;

// One partition loaded into flat arrays, ready for the sampler.
struct PartitionData {
  DatasetMeta meta;
  int part = 0;
  int64_t node_begin = 0, node_end = 0;  // global ids [node_begin, node_end)
  std::vector<int64_t> indptr;           // local rows, node_end - node_begin + 1
  std::vector<int64_t> indices;          // global neighbor ids (empty when indices32 holds them)
  std::vector<int32_t> indices32;        // ... as int32 (compact topology; OpenOptions::index_bits)
  std::vector<int64_t> edge_ids;         // global edge ids (empty unless OpenOptions::edge_ids)
  int64_t num_edges = 0;                 // stored edges (as 'info' says; whichever array)
  std::vector<int64_t> edge_times;       // per stored edge; empty unless meta.has_edge_times
  std::vector<int32_t> edge_types;       // per stored edge; empty unless heterogeneous
  std::vector<float> edge_weights;       // per stored edge; empty unless meta.has_edge_weights
  std::vector<uint8_t> features;         // rows x feature_dim values of meta.feature_dtype
  std::vector<int64_t> labels;           // empty when the dataset has none
  std::vector<uint8_t> split;            // empty when the dataset has none
  std::vector<int64_t> original_ids;
  std::vector<std::string> original_names;  // only when meta.has_names
  std::vector<int64_t> heat;                // only with OpenOptions::heat and meta.has_heat

  int64_t num_nodes() const { return node_end - node_begin; }
  PartitionView View() const {
    PartitionView v;
    v.part = part;
    v.node_begin = node_begin;
    v.node_end = node_end;
    v.indptr = indptr;
    v.indices = indices;
    v.indices32 = indices32;
    v.edge_ids = edge_ids;
    v.edge_times = edge_times;
    v.labels = labels;
    v.original_ids = original_ids;
    v.edge_types = edge_types;
    v.edge_weights = edge_weights;
    v.features = features;
    v.split = split;
    return v;
  }
  // A view for the sampler (node_offset = node_begin).
  sampler::CsrGraph Graph() const;
  // Bytes of the arrays above (indptr, indices, edge ids, features, labels, split, ids).
  int64_t RawBytes() const;
  // Feature value (row local to the partition, column j) as float.
  float Feature(int64_t local_row, int64_t j) const;
};

struct OpenOptions {
  int expected_num_parts = -1;  // when >= 0, a dataset with another count is an error
  bool verify_checksums = true;
  // Width of the neighbor ids held: 64 (default: PartitionData::indices),
  // 32 (indices32; InvalidArgument where the dataset has 2^31 nodes or
  // more), or 0: 32 where they fit.
  int index_bits = 64;
  // Read the edge ids (default true); false leaves edge_ids empty
  // (ReadPartitionEdgeIds reads them later, where a request needs them).
  bool edge_ids = true;
  // Read the feature rows (default true); false leaves features empty (a
  // server whose features come from the disk tier).
  bool features = true;
  // Read heat/<chunk> where the store has it (default false).
  bool heat = false;
};

// Loads partition `part` of the dataset in `dir`.
Status OpenPartition(const std::string& dir, int part, const OpenOptions& options,
                     PartitionData* out);

// Partition `part`'s edge ids alone, in its CSR order (what OpenPartition
// with edge_ids reads), checksummed; `expected_edges` as 'info' says.
Status ReadPartitionEdgeIds(const std::string& dir, int part, int64_t expected_edges,
                            bool verify_checksums, std::vector<int64_t>* out);

// Partition `part`'s feature file (meta.has_feature_files()), opened and
// checked against meta.json (identity, size, checksum table).
Status OpenPartitionFeatureFile(const std::string& dir, const DatasetMeta& meta, int part,
                                std::shared_ptr<const storage::FeatureFile>* out);

// Reads and checks DIR/meta.json only.
Status ReadDatasetMeta(const std::string& dir, DatasetMeta* out);

// PartitionData::RawBytes() of partition `part` once loaded, from meta.json
// alone (original names, when the dataset keeps them, are not counted: their
// lengths are not in meta.json). InvalidArgument when `part` is out of range
// or meta.json does not record each partition's edge count.
Status PartitionArrayBytes(const DatasetMeta& meta, int part, int64_t* bytes);

}  // namespace fanout::datasets

#endif  // FANOUT_DATASETS_PARTITION_STORE_H_
