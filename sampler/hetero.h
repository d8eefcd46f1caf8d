// Heterogeneous graphs: node types, edge types (src_type, relation,
// dst_type) and per-edge-type fanouts, following PyG's HeteroData and
// NeighborLoader(num_neighbors={edge_type: [...]}).
//
// A heterogeneous dataset is stored as one graph with global ids (as DistDGL
// and GraphLearn-for-PyTorch store theirs):
// - Node types take contiguous id ranges inside each partition: partition p's
//   nodes are ordered by type, so HeteroSchema::type_bounds (num_parts *
//   num_types + 1 ascending ids) gives every node's type by binary search,
//   with no per-node array.
// - Every stored edge has an edge type (PartitionData::edge_types), and each
//   row keeps its edges ordered by type (stable), so one type's edges of a
//   node are one contiguous run of its row.
// - With the default "in" storage, row v holds the sources u of edges u -> v:
//   an edge type (s, r, d) lives in the rows of type-d nodes and sampling it
//   from a frontier node of type d reaches type-s nodes, as PyG's
//   NeighborLoader samples (messages flow s -> d). With "out" storage the row
//   type is s.
//
// Hetero sampling (SampleHeteroHop): in hop h, a frontier node draws, for each
// edge type of its row with fanout[e][h] != 0, up to that many of its edges of
// that type (uniform without replacement, or as SamplingOptions say), under a
// key that is a pure function of (request seed, hop, node, edge type). Nodes
// dedupe globally (ids are unique across types), so the multi-hop result is
// MultiHopSampler's with one edge type per sampled edge.
#ifndef FANOUT_SAMPLER_HETERO_H_
#define FANOUT_SAMPLER_HETERO_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/array_view.h"
#include "common/status.h"
#include "sampler/csr_graph.h"
#include "sampler/neighbor_sampler.h"

namespace fanout::sampler {

// Node ids as ascending, disjoint ranges [begin, end): the nodes of one type
// (or every node), with index i in [0, count()) mapped to the i-th id.
class NodeRanges {
 public:
  NodeRanges() = default;
  static NodeRanges All(int64_t num_nodes) { return NodeRanges({{0, num_nodes}}); }
  // REQUIRES: ranges ascending and disjoint (empty ones are dropped).
  explicit NodeRanges(const std::vector<std::pair<int64_t, int64_t>>& ranges);
  int64_t count() const { return cum_.empty() ? 0 : cum_.back(); }
  // The i-th id. REQUIRES: 0 <= i < count().
  int64_t Id(int64_t i) const;
  // Position of id v among the ranges' ids, or -1 when v is in none.
  int64_t IndexOf(int64_t v) const;
  const std::vector<std::pair<int64_t, int64_t>>& ranges() const { return ranges_; }

 private:
  std::vector<std::pair<int64_t, int64_t>> ranges_;
  std::vector<int64_t> cum_;  // cum_[k] = ids in ranges 0..k
};

struct EdgeType {
  int32_t src = 0;  // node type index
  std::string rel;  // relation name
  int32_t dst = 0;
};

struct HeteroSchema {
  std::vector<std::string> node_types;
  std::vector<EdgeType> edge_types;
  // num_parts * num_node_types + 1 ascending global ids: partition p's nodes
  // of type t are [type_bounds[p*T + t], type_bounds[p*T + t + 1]).
  std::vector<int64_t> type_bounds;
  // Feature columns of each node type (rows are stored at the widest type's
  // width; a type's x is its first feature_dims[t] columns). 0 = none.
  std::vector<int64_t> feature_dims;
  bool incoming = true;  // the store's direction ("in")

  bool empty() const { return node_types.empty(); }
  int num_node_types() const { return static_cast<int>(node_types.size()); }
  int num_edge_types() const { return static_cast<int>(edge_types.size()); }
  // The type of node v. REQUIRES: type_bounds.front() <= v < type_bounds.back().
  int32_t NodeTypeOf(int64_t v) const;
  // Every node of type t, ascending.
  NodeRanges NodesOfType(int32_t t) const;
  // The node type whose nodes hold edge type e in their rows (dst for "in").
  int32_t RowType(int e) const { return incoming ? edge_types[e].dst : edge_types[e].src; }
  // "src,rel,dst".
  std::string EdgeTypeName(int e) const;
  // Appends the edge type named "src,rel,dst" (EdgeTypeName's form; node types
  // from node_types); InvalidArgument naming the text otherwise.
  Status AddEdgeTypeNamed(const std::string& name);
  // Index of a node type, or -1.
  int FindNodeType(const std::string& name) const;
  // Index of the edge type named "src,rel,dst", or "rel" when that names one;
  // InvalidArgument naming the text and the known types otherwise ("is not
  // one of the dataset's edge types (...)" / "names several ...").
  Status FindEdgeType(const std::string& text, int* out) const;
  // Checks names (non-empty, unique, no ',' in any), edge type endpoints,
  // bounds (ascending, num_parts*T + 1 entries, from 0 to num_nodes) and
  // feature dims (one per node type, each in [0, feature_dim]).
  Status Check(int num_parts, int64_t num_nodes, int64_t feature_dim) const;
};

// The one hop fanout per edge type (fanouts[e][h]; -1 = all, 0 = none) as the
// plain per-hop list MultiHopOptions::fanouts holds for it: the largest of
// hop h (-1 where any is -1). Checks that every list has the same length and
// valid values; InvalidArgument names the edge type and hop.
Status HeteroHopFanouts(const HeteroSchema& schema,
                        const std::vector<std::vector<int64_t>>& fanouts,
                        std::vector<int64_t>* per_hop);

// Hop h's fanout of every edge type (fanouts[e][h]) into *out, one per type.
void HopTypeFanouts(const std::vector<std::vector<int64_t>>& fanouts, size_t hop,
                    std::vector<int64_t>* out);

// Node v's key for edge type e in one hop of one request.
uint64_t EdgeTypeKey(uint64_t request_seed, int64_t hop, int64_t node, int edge_type);

// One hop over a graph whose rows are ordered by edge type (edge_types[e] per
// CSR position): node nodes[i] draws, for each edge type e of its row with
// fanouts[e] != 0, a sample of its type-e edges (SamplingOptions apply per
// type). Out: node i's edges at offsets[i]..offsets[i+1], type ascending,
// with out->edge_types filled. Nodes must be in [node_offset, node_offset +
// num_nodes) (InvalidArgument otherwise); fanouts has one entry per edge type.
Status SampleHeteroHop(const CsrGraph& graph, const int32_t* edge_types,
                       ArrayView<const int64_t> nodes, ArrayView<const int64_t> fanouts,
                       int64_t hop, uint64_t request_seed, const SamplingOptions& options,
                       OneHopResult* out);

}  // namespace fanout::sampler

#endif  // FANOUT_SAMPLER_HETERO_H_
