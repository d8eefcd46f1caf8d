// RawDataset: a whole graph in memory as loaded from a raw format, before
// partitioning. Node ids are dense [0, num_nodes); the original ids are kept.
#ifndef FANOUT_DATASETS_DATASET_H_
#define FANOUT_DATASETS_DATASET_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "sampler/hetero.h"

namespace fanout::datasets {

// Train/val/test membership of a node.
enum class Split : uint8_t { kNone = 0, kTrain = 1, kVal = 2, kTest = 3 };

struct RawDataset {
  std::string name;    // e.g. "cora"
  std::string format;  // linqs, planetoid, ogb, snap, rmat
  int64_t num_nodes = 0;
  // Directed edges src[i] -> dst[i], in input order.
  std::vector<int64_t> src, dst;
  // Optional: a timestamp per edge (same positions), for temporal sampling.
  std::vector<int64_t> edge_times;
  // Optional: a weight per edge (same positions; finite, >= 0), for weighted
  // sampling and walks.
  std::vector<float> edge_weights;
  int64_t feature_dim = 0;
  std::vector<float> features;  // num_nodes * feature_dim, row-major; may be empty
  std::vector<int64_t> labels;  // num_nodes; -1 = unknown; empty when unlabeled
  int64_t num_classes = 0;
  std::vector<std::string> class_names;     // optional, index = class
  std::vector<uint8_t> split;               // num_nodes Split values; empty when no split
  std::vector<int64_t> original_ids;        // num_nodes; the id in the source files
  std::vector<std::string> original_names;  // optional: source ids that are not integers
  // Heterogeneous graphs (sampler/hetero.h); all empty for a homogeneous one.
  // Node ids are dense over all types; node_type[v] / edge_type[i] index
  // node_types / edge_types. Features are num_nodes x feature_dim (the widest
  // type's width, zero-padded); type t's own columns are type_feature_dims[t].
  std::vector<std::string> node_types;
  std::vector<sampler::EdgeType> edge_types;
  std::vector<int32_t> node_type;          // num_nodes
  std::vector<int32_t> edge_type;          // one per edge
  std::vector<int64_t> type_feature_dims;  // one per node type

  bool hetero() const { return !node_types.empty(); }
  // Index of a node type name, or -1.
  int FindNodeTypeIndex(const std::string& name) const {
    for (size_t t = 0; t < node_types.size(); ++t)
      if (node_types[t] == name) return static_cast<int>(t);
    return -1;
  }

  int64_t num_edges() const { return static_cast<int64_t>(src.size()); }
  // Checks sizes and ranges (edge endpoints, labels < num_classes, split values).
  Status Validate() const;
};

// Edge-list clean-ups, applied in this order by ApplyEdgeOptions().
struct EdgeOptions {
  bool drop_self_loops = false;  // remove u -> u edges (default keep)
  bool make_undirected =
      false;  // add v -> u for every u -> v (default off); heterogeneous
              // graphs get a reverse edge type (d, rev_r, s) per (s, r, d), as PyG's ToUndirected
  bool drop_duplicates = false;  // keep the first of equal (u, v) edges (default keep)
};

// Returns a one-line summary of what was changed ("dropped 124 self-loops, ...").
std::string ApplyEdgeOptions(const EdgeOptions& options, RawDataset* ds);

// The streamed form of ApplyEdgeOptions, for inputs too large to hold.
// An EdgePlay calls fn(src, dst) for every input edge, in order, until fn
// returns false; an input error ends it with that error.
using EdgeFn = std::function<bool(int64_t, int64_t)>;
using EdgePlay = std::function<Status(const EdgeFn&)>;
// InvalidArgument when `options` need the whole edge list (drop_duplicates).
Status CheckStreamable(const EdgeOptions& options);
// Calls fn for the edges ApplyEdgeOptions would leave, in the same order:
// the input once (self-loops dropped if asked), then, undirected, once more
// reversed. REQUIRES: CheckStreamable(options).
Status PlayWithEdgeOptions(const EdgeOptions& options, const EdgePlay& input, const EdgeFn& fn);
// The same for edges that carry a time, a weight or a type: a reverse edge
// keeps its edge's time and weight, and takes reverse_type[type] (empty: the
// same type).
struct EdgeAttr {
  int64_t src = 0, dst = 0, time = 0;
  float weight = 1;
  int32_t type = 0;
};
using EdgeAttrFn = std::function<bool(const EdgeAttr&)>;
using EdgeAttrPlay = std::function<Status(const EdgeAttrFn&)>;
Status PlayAttrWithEdgeOptions(const EdgeOptions& options, const EdgeAttrPlay& input,
                               const EdgeAttrFn& fn, const std::vector<int32_t>& reverse_type = {});
// make_undirected's edge types (PyG's ToUndirected): appends (d, rev_r, s)
// to `types` for each (s, r, d) with s != d and returns each type's reverse
// (a type joining one node type to itself is its own).
std::vector<int32_t> AddReverseEdgeTypes(std::vector<sampler::EdgeType>* types);

}  // namespace fanout::datasets

#endif  // FANOUT_DATASETS_DATASET_H_
