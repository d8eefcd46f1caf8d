// Multi-hop neighbor sampling with dedupe and relabel, following PyG's
// NeighborLoader semantics.
//
// Output of one batch (SampledSubgraph):
// - n_id: global ids of the subgraph's nodes. The first batch_size entries are
//   the seeds exactly as given (a repeated seed keeps every position, so
//   outputs line up with the caller's seeds); then each node first reached in
//   hop 1, hop 2, ... in order of discovery (every global id once).
// - For hop h, the frontier is the nodes added by hop h-1 (hop 0: every seed
//   position). Each frontier node draws its neighbors; an edge is recorded as
//   row = local index of the neighbor (message source), col = local index of
//   the frontier node (message target). Local indices point into n_id; a
//   global id seen before maps to its first position.
// - row/col/edge_id are flat over all hops; num_sampled_edges[h] edges belong
//   to hop h, in frontier order. num_sampled_nodes[0] = batch_size, then the
//   number of new nodes of each hop.
// - Induced mode (MultiHopOptions::induced, GraphLearn-for-PyTorch's subgraph
//   loader): the nodes are sampled as above, then row/col/edge_id hold every
//   edge among them instead of the sampled ones: for each node of n_id in
//   order, its stored adjacency in CSR order, keeping the neighbors that are in
//   n_id (row = the neighbor, col = the node). num_sampled_edges then has one
//   entry, their count.
#ifndef FANOUT_SAMPLER_MULTIHOP_H_
#define FANOUT_SAMPLER_MULTIHOP_H_

#include <cstdint>
#include <vector>

#include "common/array_view.h"
#include "common/pod_vector.h"
#include "common/status.h"
#include "common/thread_pool.h"
#include "sampler/csr_graph.h"
#include "sampler/detail/id_map.h"
#include "sampler/neighbor_sampler.h"

namespace fanout::sampler {

struct SampledSubgraph {
  PodVector<int64_t> n_id;
  PodVector<int64_t> row;      // local index of the sampled neighbor (source)
  PodVector<int64_t> col;      // local index of the frontier node (target)
  PodVector<int64_t> edge_id;  // global edge ids; empty unless requested
  PodVector<int64_t>
      batch;  // temporal (disjoint) sampling: the seed position of each n_id entry; else empty
  PodVector<int32_t>
      edge_type;  // heterogeneous sampling (sampler/hetero.h): each edge's type; else empty
  PodVector<float> edge_weight;  // LABOR (sampler/labor.h): each sampled edge's importance
                                 // weight; else empty
  std::vector<int64_t> num_sampled_nodes;  // hops + 1 entries
  std::vector<int64_t> num_sampled_edges;  // hops entries
  int64_t batch_size = 0;

  int64_t num_hops() const { return static_cast<int64_t>(num_sampled_edges.size()); }
  // Empties the subgraph, keeping the buffers' capacity.
  void Clear();
};

// Temporal sampling's choice among a node's edges that are not later than
// its seed's time (sampler/temporal.h).
enum class TemporalStrategy { kUniform, kLast };

struct MultiHopOptions {
  // Fanout per hop; -1 takes every neighbor. Default [15, 10, 5].
  std::vector<int64_t> fanouts{15, 10, 5};
  // Replacement, weights, edge ids and the node offset, as for one hop.
  SamplingOptions sampling;
  // Every edge among the sampled nodes instead of the sampled edges.
  bool induced = false;
  // Temporal sampling (sampler/temporal.h): used by the temporal samplers only.
  TemporalStrategy temporal_strategy = TemporalStrategy::kUniform;
  // Heterogeneous sampling (sampler/hetero.h): fanout per edge type and hop,
  // edge_type_fanouts[e][h] (0 = that type is not sampled in hop h); `fanouts`
  // then holds HeteroHopFanouts' per-hop largest values. Empty = homogeneous.
  std::vector<std::vector<int64_t>> edge_type_fanouts;
};

inline bool operator==(const MultiHopOptions& a, const MultiHopOptions& b) {
  return a.fanouts == b.fanouts && a.sampling == b.sampling && a.induced == b.induced &&
         a.temporal_strategy == b.temporal_strategy && a.edge_type_fanouts == b.edge_type_fanouts;
}
inline bool operator!=(const MultiHopOptions& a, const MultiHopOptions& b) { return !(a == b); }

// Checks the fanouts and that weighted sampling has weights to use.
Status CheckMultiHopOptions(const MultiHopOptions& options, bool graph_has_weights);

// Largest id range a SubgraphBuilder dedupes through a direct-mapped array
// (4 bytes per id: 64 MiB per builder at most); larger ranges use the hash
// table alone.
inline constexpr int64_t kMaxDenseIdRange = int64_t{16} << 20;

// Assembles a SampledSubgraph hop by hop from one-hop results: dedupes and
// relabels. Shared by the local sampler and the distributed client, which gets
// its one-hop results from the servers. Not thread-safe: one per thread.
class SubgraphBuilder {
 public:
  // Starts a batch: n_id = seeds.
  void Begin(ArrayView<const int64_t> seeds, SampledSubgraph* out);
  // The current frontier: the global ids whose neighbors the next hop samples.
  ArrayView<const int64_t> Frontier(const SampledSubgraph& out) const {
    return ArrayView<const int64_t>(out.n_id.data() + frontier_begin_,
                                    static_cast<size_t>(frontier_end_ - frontier_begin_));
  }
  // Appends one hop. `hop` holds the frontier's samples in frontier order
  // (hop.offsets has Frontier().size() + 1 entries); its edge ids are copied
  // when with_edge_ids, its edge types when it has them.
  void AddHop(const OneHopResult& hop, bool with_edge_ids, SampledSubgraph* out);
  // Replaces the edges with every edge among n_id. `all` holds the whole
  // adjacency of every node of out->n_id, in n_id order (a hop with fanout -1
  // over n_id).
  void SetInducedEdges(const OneHopResult& all, bool with_edge_ids, SampledSubgraph* out);
  // All nodes so far (the frontier of the induced pass).
  ArrayView<const int64_t> Nodes(const SampledSubgraph& out) const {
    return ArrayView<const int64_t>(out.n_id.data(), out.n_id.size());
  }
  // Ids in [0, end) are deduped through a direct-mapped array (4 bytes per
  // id, allocated on the first call) instead of the hash table: one cache
  // line per lookup. Ranges beyond kMaxDenseIdRange keep the hash table
  // alone. Cheap to call again with the same end (callers do, per batch).
  // Results are the same either way.
  void UseDenseIdRange(int64_t end) {
    if (end > kMaxDenseIdRange) end = 0;
    if (end != map_.dense_end()) map_.SetDenseRange(end);
  }

 private:
  detail::IdMap map_;
  int64_t frontier_begin_ = 0;
  int64_t frontier_end_ = 0;
};

// Samples multi-hop subgraphs from a local graph. Not thread-safe (it reuses
// buffers between calls): use one per thread. The graph and the pool (may be
// null) must outlive it.
class MultiHopSampler {
 public:
  MultiHopSampler(CsrGraph graph, MultiHopOptions options, ThreadPool* pool = nullptr)
      : graph_(graph), options_(std::move(options)), pool_(pool) {}

  // Samples the subgraph of `seeds` for the request seed `request_seed`.
  // Seeds must be in [node_offset, node_offset + num_nodes).
  Status Sample(ArrayView<const int64_t> seeds, uint64_t request_seed, SampledSubgraph* out);

  const MultiHopOptions& options() const { return options_; }
  // A heterogeneous graph's edge type per CSR position (rows ordered by type),
  // needed for options().edge_type_fanouts; must outlive the sampler.
  void SetEdgeTypes(const int32_t* edge_types) { edge_types_ = edge_types; }

 private:
  CsrGraph graph_;  // a view: the arrays must outlive the sampler
  const int32_t* edge_types_ = nullptr;
  MultiHopOptions options_;
  ThreadPool* pool_;
  HopSampler hop_sampler_;
  OneHopResult hop_;
  SubgraphBuilder builder_;
};

}  // namespace fanout::sampler

#endif  // FANOUT_SAMPLER_MULTIHOP_H_
