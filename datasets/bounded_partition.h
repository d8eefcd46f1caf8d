// Partitioning in bounded memory: graphs larger than memory, for the methods
// that need no view of the whole graph (random, range, hash).
//
// The edges are streamed (never held): one pass assigns each edge its stored
// row, counts the rows' degrees and appends (row, neighbor, edge id) to spill
// files on disk, one per group of partitions, in input order. Each partition
// is then written in slices of whole chunks whose edges fit the memory left:
// a slice reads its group's spill file sequentially and places its edges by
// counting sort, so a row's neighbors stay in input order. The store is the
// one WritePartitionedDataset writes for the same input, chunk for chunk
// (only the random dataset id differs).
//
// Memory: about 20 bytes per node (the renumbering, the degrees and the
// partition of each node), plus what the input keeps per node (a SNAP file's
// id map), plus the buffers, plus one slice: 16 bytes per edge of the slice
// (32 where edges carry a time or a weight: each row is then sorted by time,
// then input order, as the in-memory writer stores it; the spill keeps 40
// bytes per edge instead of 24).
// The limit bounds all of it; what does not fit is refused before any work
// with the smallest limit that would do.
#ifndef FANOUT_DATASETS_BOUNDED_PARTITION_H_
#define FANOUT_DATASETS_BOUNDED_PARTITION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/byte_size.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/formats.h"
#include "datasets/partition_store.h"
#include "datasets/partitioner.h"

namespace fanout::datasets {

// A graph whose edges can be played (more than once) without being held.
// Nodes are dense ids [0, num_nodes); edges come in input order, as the
// in-memory loader and ApplyEdgeOptions would leave them in RawDataset.
struct StreamedGraph {
  std::string name, format;
  int64_t num_nodes = 0;
  // Edges one play yields, or -1 where that is known only after a play.
  int64_t num_edges = -1;
  int64_t feature_dim = 0, num_classes = 0;
  std::vector<std::string> class_names;
  bool has_labels = false, has_split = false, has_names = false;

  // Calls fn(src, dst) for every edge, in order, until fn returns false; an
  // input error ends the play with that error.
  EdgePlay for_each_edge;
  // Graphs whose edges carry a time, a weight or a type (the flags, or
  // hetero()): the same edges with what they carry (time 0, weight 1 where
  // the graph has none), which the writer plays instead of for_each_edge.
  bool has_edge_times = false, has_edge_weights = false;
  EdgeAttrPlay for_each_edge_attr;
  // Heterogeneous graphs (sampler/hetero.h): node and edge types, each node's
  // type, each type's own feature width (feature_dim is the widest; the
  // others' rows come zero-padded). Empty node_types: homogeneous.
  std::vector<std::string> node_types;
  std::vector<sampler::EdgeType> edge_types;
  std::vector<int64_t> type_feature_dims;
  std::function<int32_t(int64_t)> node_type;
  bool hetero() const { return !node_types.empty(); }
  // Node data by id (called only for what the flags above say exists).
  std::function<void(int64_t, float*)> feature_row;
  std::function<int64_t(int64_t)> label;
  std::function<uint8_t(int64_t)> split;
  std::function<int64_t(int64_t)> original_id;
  std::function<std::string_view(int64_t)> name_of;
  // An error the node functions above met (they cannot return one), checked
  // after the last of them is called; may be empty.
  std::function<Status()> node_status;
  // Notes known only after the edges were played (edges an input dropped),
  // for the tool to print after writing; may be empty.
  std::function<std::vector<std::string>()> late_notes;
  // Keeps whatever the functions above refer to alive.
  std::shared_ptr<const void> state;
};

// Streams a SNAP edge list (as LoadSnap reads it): one pass finds the
// distinct ids (8 bytes per node kept), later plays re-read the file.
// Labels (options.labels_path) and a random split (options.split_fractions)
// as LoadSnap gives them. `edge_options` are applied while playing
// (drop_duplicates needs the whole edge list: InvalidArgument).
Status StreamSnap(const std::string& input, const LoadOptions& options,
                  const EdgeOptions& edge_options, StreamedGraph* out,
                  std::vector<std::string>* notes);
// The R-MAT benchmark graph with the synthetic data LoadRmat gives it,
// generated again on every play.
Status StreamRmat(const LoadOptions& options, const EdgeOptions& edge_options, StreamedGraph* out);
// An OGB node-property folder (as LoadOgb reads it): labels and split kept
// (9 bytes per node), features converted once into the float32 file
// `scratch_path` (created, removed with the stream), edges re-read per play.
Status StreamOgb(const std::string& input, const LoadOptions& options,
                 const EdgeOptions& edge_options, const std::string& scratch_path,
                 StreamedGraph* out, std::vector<std::string>* notes);
// Tables with a schema (LoadTables's): nodes read once (original ids,
// labels and split kept, 17 bytes per node, plus the id index and, for
// string ids, the names), features into the float32 file `scratch_path`
// (heterogeneous: one per node type with features, `scratch_path`.t<type>;
// created, removed with the stream), edge tables re-read per play (a
// table with a "reverse" twice), with their times, weights and types: the
// graph LoadTables and ApplyEdgeOptions give, edge for edge.
Status StreamTables(const std::string& schema_path, const LoadOptions& options,
                    const EdgeOptions& edge_options, const std::string& scratch_path,
                    StreamedGraph* out, std::vector<std::string>* notes);
// A loaded dataset as a stream (formats that are read whole).
StreamedGraph StreamOf(std::shared_ptr<const RawDataset> ds);

struct BoundedOptions {
  // Peak resident memory allowed for the whole process (> 0).
  int64_t memory_limit_bytes = 0;
  // Folder for the spill files (a fresh subfolder is made in it and removed
  // on every exit); empty = inside the output's temporary folder.
  std::string spill_dir;
  // Tests: at most this many edges per slice (0 = as memory allows).
  int64_t max_slice_edges = 0;
};

// What the bounded writer did, for the tool's summary and the benchmark.
struct BoundedReport {
  int64_t spill_bytes = 0;        // written to spill files
  int64_t spill_read_bytes = 0;   // read back from them (once per slice)
  int64_t store_bytes = 0;        // chunk values written to the stores
  int64_t slices = 0;             // slices over all partitions
  int64_t slice_edge_budget = 0;  // most edges one slice could hold
};

// Partitions `g` with options.method (random, range or hash) and writes the
// dataset folder `dir` atomically, keeping the process under the memory
// limit. Errors (limit too small, input errors, a full disk) leave neither
// `dir` nor a temporary or spill folder behind.
Status WritePartitionedStream(const StreamedGraph& g, const PartitionOptions& options,
                              const WriteOptions& write, const BoundedOptions& bounded,
                              const std::string& dir, DatasetMeta* meta_out, BoundedReport* report);

// Spill files in a --spill-dir are named "fanout-spill-<pid>-..."; this
// removes those whose process is gone (a run that was killed).
void RemoveStaleSpillFiles(const std::string& spill_dir);
std::string SpillFilePrefix();  // "fanout-spill-<this pid>-"

using fanout::ParseByteSize;  // common/byte_size.h
// "3.50 GiB", "512.0 MiB", ...
std::string FormatBytes(double bytes);
// The memory this process may use: physical memory, or the cgroup's limit
// where that is lower; `source` says which.
int64_t UsableMemoryBytes(std::string* source);

}  // namespace fanout::datasets

#endif  // FANOUT_DATASETS_BOUNDED_PARTITION_H_
