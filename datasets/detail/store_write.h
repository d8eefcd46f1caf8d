// What the two dataset writers share: the in-memory one
// (WritePartitionedDataset, store_writer.cc) and the bounded-memory one
// (WritePartitionedStream, bounded_writer.cc). Both write the same chunks of
// the same nodes through PartStoreWriter and publish the folder with
// CommitTemporary, so on the same input their stores are identical except for
// the random dataset id. Internal to datasets/.
#ifndef FANOUT_DATASETS_DETAIL_STORE_WRITE_H_
#define FANOUT_DATASETS_DETAIL_STORE_WRITE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/array_view.h"
#include "common/status.h"
#include "datasets/partition_store.h"
#include "storage/feature_file.h"

namespace rocksdb {
class DB;
}

namespace fanout::datasets::detail {

// A random 32-hex-digit dataset id.
std::string RandomId();

// Removes a temporary folder on every exit path unless released.
class TempDirGuard {
 public:
  explicit TempDirGuard(std::string path = "") : path_(std::move(path)) {}
  ~TempDirGuard();
  TempDirGuard(const TempDirGuard&) = delete;
  TempDirGuard& operator=(const TempDirGuard&) = delete;
  void Reset(std::string path) { path_ = std::move(path); }
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

// Checks the output folder before any work: strips trailing slashes into
// *dir, refuses an existing folder unless `overwrite`, creates the parent.
Status PrepareOutput(const std::string& dir_in, bool overwrite, std::string* dir);

// Creates "<dir>.tmp-<pid>-<id>" beside `dir` (after removing what killed runs
// left there: temporaries whose pid is gone) and arms `guard` with it.
// `owner_pid`: the process whose life keeps it (0: this one; the Spark job's
// driver, which outlives the tool that creates it).
Status CreateTemporary(const std::string& dir, const std::string& dataset_id, std::string* tmp,
                       TempDirGuard* guard, long owner_pid = 0);

// Writes tmp/meta.json, syncs the whole folder, then renames it to `dir`
// (replacing an existing one atomically where the kernel can) and releases
// the guard.
Status CommitTemporary(const std::string& tmp, const std::string& dir, const DatasetMeta& meta,
                       TempDirGuard* guard);

// The fields of meta.json that do not depend on how the nodes are laid out
// (everything but offsets, stats and the int8 feature scale).
// An edge placed in its row by a writer that gets edges in any order (the
// bounded writer, the Spark job's): a row's edges are ordered by type, then
// time (0 without), then edge id: the in-memory writer's order (input order,
// stably sorted by time, then by type).
struct PlacedEdge {
  int64_t time, eid, nbr;
  float weight;
  int32_t type;
  bool operator<(const PlacedEdge& o) const {
    if (type != o.type) return type < o.type;
    return time != o.time ? time < o.time : eid < o.eid;
  }
};

struct MetaInputs {
  std::string name, format;
  int64_t num_nodes = 0, num_edges = 0, feature_dim = 0, num_classes = 0;
  std::vector<std::string> class_names;
  bool has_labels = false, has_split = false, has_names = false, has_edge_times = false;
  bool has_edge_weights = false;
};
DatasetMeta BaseMeta(const MetaInputs& in, int num_parts, const WriteOptions& o);
// Names and sizes meta->feature_files from its offsets (where BaseMeta
// asked for feature files; a dataset without feature values gets none).
void SizeFeatureFiles(DatasetMeta* meta);
// What a partition's feature file holds, from meta.json.
storage::FeatureFileIdentity FeatureFileIdentityOf(const DatasetMeta& meta, int part);
// A loaded dataset's (feature_dim 0 when it has no feature values).
MetaInputs MetaInputsOf(const RawDataset& ds);
// An int8 store's per-column scales (feature_scales) from each column's
// largest |value|; feature_scale (what version 1 readers used) their largest.
void SetInt8Scales(const std::vector<float>& max_abs, DatasetMeta* meta);

// The stored ids: partition by partition, input order inside each. Fills
// offsets (k + 1: partition p owns [offsets[p], offsets[p+1])) and the new id
// of every input id.
// Heterogeneous datasets (node_type non-empty, num_types node types): by
// partition, then node type, then input order; *type_bounds gets
// HeteroSchema::type_bounds (k * num_types + 1).
void RenumberByPart(const std::vector<int32_t>& part, int k, std::vector<int64_t>* offsets,
                    std::vector<int64_t>* new_of_old, const std::vector<int32_t>& node_type = {},
                    int num_types = 1, std::vector<int64_t>* type_bounds = nullptr);

// Sum of every chunk's payload bytes (chunks.h), for progress lines.
// `name_bytes`: sum of the original names' lengths (0 without names).
int64_t StorePayloadBytes(const DatasetMeta& meta, int64_t name_bytes);

// Where a node's data comes from (indexed by input id, not the stored id).
class NodeSource {
 public:
  virtual ~NodeSource() = default;
  // feature_dim floats; only called when the dataset has features.
  virtual void FeatureRow(int64_t v, float* out) const = 0;
  virtual int64_t Label(int64_t v) const = 0;    // when has_labels
  virtual uint8_t SplitOf(int64_t v) const = 0;  // when has_split
  virtual int64_t OriginalId(int64_t v) const = 0;
  virtual std::string_view Name(int64_t v) const = 0;  // when has_names
  // Stored edges naming v as their neighbor; when has_heat.
  virtual int64_t Heat(int64_t v) const { return heat_ ? heat_[v] : 0; }
  // The heat per input id (owned by the writer), or null.
  void SetHeat(const uint32_t* heat) { heat_ = heat; }

 private:
  const uint32_t* heat_ = nullptr;
};

// One partition's RocksDB store while it is written.
class PartStoreWriter {
 public:
  // write_buffer_bytes: RocksDB's memtable size (two may exist at once). A
  // value larger than half of it is flushed at once, alone, with this
  // writer's copy given back first: at most two copies of the largest value
  // (the memtable's and the table builder's) and the caller's arrays are
  // ever held, which the bounded writer's memory plan counts on.
  static Status Open(const std::string& path, int64_t write_buffer_bytes,
                     std::unique_ptr<PartStoreWriter>* out);
  ~PartStoreWriter();

  // Also starts the partition's feature file where meta has them.
  Status PutInfo(const DatasetMeta& meta, int part, int64_t num_edges);
  // Chunk c's adjacency: degrees of its nodes, their neighbors and edge ids.
  Status PutAdjChunk(int64_t c, ArrayView<const int64_t> degrees,
                     ArrayView<const int64_t> neighbors, ArrayView<const int64_t> edge_ids);
  // Chunk c's edge timestamps (etime) or edge types (etype), adj order.
  Status PutEdgeTimeChunk(int64_t c, ArrayView<const int64_t> times);
  Status PutEdgeTypeChunk(int64_t c, ArrayView<const int64_t> types);
  // Chunk c's edge weights (eweight), adj order.
  Status PutEdgeWeightChunk(int64_t c, ArrayView<const float> weights);
  // Chunk c's feat, label, split, orig and name values of the nodes whose
  // input ids are old_ids[0 .. n), in stored order (the feature rows to the
  // feature file instead, where meta has them: chunks in order).
  Status PutNodeChunks(const DatasetMeta& meta, int64_t c, const int64_t* old_ids, int64_t n,
                       const NodeSource& src);
  // Flushes and closes (and finishes the feature file); the store is
  // complete only after this.
  Status Close();
  int64_t bytes_written() const { return bytes_; }

 private:
  PartStoreWriter() = default;
  Status Put(const char* kind, int64_t c);

  std::string path_;
  std::unique_ptr<rocksdb::DB> db_;
  int64_t write_buffer_ = 0;
  std::string value_;
  std::vector<int64_t> values_;
  std::vector<uint8_t> split_;
  std::vector<float> row_;
  std::unique_ptr<storage::FeatureFileWriter> features_;  // where meta has feature files
  int64_t bytes_ = 0;
};

}  // namespace fanout::datasets::detail

#endif  // FANOUT_DATASETS_DETAIL_STORE_WRITE_H_
