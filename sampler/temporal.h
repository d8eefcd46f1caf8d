// Temporal neighbor sampling, following PyG's NeighborLoader with edge
// timestamps (time_attr on edges, temporal_strategy), which samples disjoint
// subgraphs: every seed position grows its own tree.
//
// - Each seed i has a time t_i. In every hop, a node of tree i draws only
//   among its stored edges with timestamp <= t_i: so no sampled edge is later
//   than its seed's time.
// - uniform: `fanout` of those edges uniformly without replacement (all when
//   fewer, or fanout -1); last: the `fanout` most recent of them (equal times:
//   the later stored edge counts as more recent). Either way a node's chosen
//   edges are listed in stored (CSR) order.
// - Disjoint: a node reached in two trees appears twice in n_id, once per
//   tree; SampledSubgraph::batch[k] names the tree (seed position) of n_id[k].
//   Inside one tree, nodes dedupe as in MultiHopSampler (first position wins).
// - A node's draws are a pure function of (request seed, hop, node, time), so
//   local and distributed sampling agree value for value.
#ifndef FANOUT_SAMPLER_TEMPORAL_H_
#define FANOUT_SAMPLER_TEMPORAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/array_view.h"
#include "common/status.h"
#include "sampler/csr_graph.h"
#include "sampler/detail/id_map.h"
#include "sampler/multihop.h"
#include "sampler/neighbor_sampler.h"

namespace fanout::sampler {

// "uniform", "last"; InvalidArgument names the text otherwise.
Status ParseTemporalStrategy(const std::string& text, TemporalStrategy* out);
const char* TemporalStrategyName(TemporalStrategy strategy);

// Checks options for temporal sampling: fanouts; no replacement, weights or
// induced mode (not defined for temporal sampling here).
Status CheckTemporalOptions(const MultiHopOptions& options);

// The time index of a graph with edge timestamps: for each row, the offsets
// of its edges within the row, ordered by (time, offset). With it a hop finds
// a node's edges not later than t by binary search and draws among them in
// O(fanout) (8 bytes per edge; built in O(E log degree)).
// With edge_types (a heterogeneous graph, rows ordered by type): ordered by
// (type, time, offset), so each type's run of a row keeps its place and is
// in time order on its own, which is what SampleHeteroTemporalHop reads.
void BuildTimeOrder(const CsrGraph& graph, const int64_t* edge_times,
                    std::vector<int64_t>* time_order, const int32_t* edge_types = nullptr);
// Whether every row's edges are already in time order (as fanout-partition
// writes stores with timestamps): then no index is needed (time_order null).
// With edge_types: whether each type's run of every row is.
bool RowsSortedByTime(const CsrGraph& graph, const int64_t* edge_times,
                      const int32_t* edge_types = nullptr);
// The time index to sample with: null where the rows are already in time
// order, else BuildTimeOrder's, kept in *storage. A heterogeneous graph
// passes its edge types (then only per-edge-type temporal hops may use it).
const int64_t* PrepareTimeOrder(const CsrGraph& graph, const int64_t* edge_times,
                                std::vector<int64_t>* storage, const int32_t* edge_types = nullptr);

// One temporal hop: node nodes[i] (a global id; row nodes[i] - node_offset)
// draws among its edges with edge_times[e] <= times[i] (time_order from
// BuildTimeOrder, or null where RowsSortedByTime). Uniform draws pick ranks in the row's time order
// (Floyd's algorithm under the node's key); the chosen edges come in stored order. Edge ids as for
// SampleOneHop. REQUIRES: nodes in the graph's rows, times.size() == nodes.size().
void SampleTemporalHop(const CsrGraph& graph, const int64_t* edge_times, const int64_t* time_order,
                       int64_t node_offset, ArrayView<const int64_t> nodes,
                       ArrayView<const int64_t> times, int64_t fanout, int64_t hop,
                       uint64_t request_seed, TemporalStrategy strategy, bool with_edge_ids,
                       OneHopResult* out);

// One heterogeneous temporal hop (PyG's NeighborLoader over a HeteroData
// with edge times): node nodes[i] draws, for each edge type e of its row with
// fanouts[e] != 0, among its type-e edges with edge_times <= times[i]: all of
// them (fanout -1 or fewer than the fanout), the fanouts[e] latest ("last":
// equal times, the later stored edge is more recent) or fanouts[e] uniformly
// without replacement under a key of (request seed, hop, node, edge type,
// time). Out: node i's edges at offsets[i]..offsets[i+1], by type ascending
// and in stored order within a type, with out->edge_types filled. Rows must
// be ordered by type (edge_types per CSR position) and time_order be
// PrepareTimeOrder's with those types (null: each run in time order).
// InvalidArgument where a node is outside [node_offset, node_offset +
// num_nodes) or times and nodes differ in size.
Status SampleHeteroTemporalHop(const CsrGraph& graph, const int32_t* edge_types,
                               const int64_t* edge_times, const int64_t* time_order,
                               int64_t node_offset, ArrayView<const int64_t> nodes,
                               ArrayView<const int64_t> times, ArrayView<const int64_t> fanouts,
                               int64_t hop, uint64_t request_seed, TemporalStrategy strategy,
                               bool with_edge_ids, OneHopResult* out);

// Assembles a disjoint temporal subgraph hop by hop (local and distributed
// sampling share it). Not thread-safe: one per thread.
class TemporalBuilder {
 public:
  // Starts a batch: n_id = seeds, batch = 0 .. seeds.size() - 1. Ids must be
  // below num_nodes_total (checked by the caller).
  Status Begin(ArrayView<const int64_t> seeds, ArrayView<const int64_t> seed_times,
               int64_t num_nodes_total, SampledSubgraph* out);
  // The nodes the next hop samples, and the seed time of each one's tree.
  ArrayView<const int64_t> Frontier(const SampledSubgraph& out) const {
    return {out.n_id.data() + begin_, static_cast<size_t>(end_ - begin_)};
  }
  ArrayView<const int64_t> FrontierTimes() const {
    return {times_.data() + begin_, static_cast<size_t>(end_ - begin_)};
  }
  // Appends one hop (hop.offsets: Frontier().size() + 1 entries; its edge
  // types, where it has them, go to out->edge_type).
  void AddHop(const OneHopResult& hop, bool with_edge_ids, SampledSubgraph* out);

 private:
  detail::IdMap map_;           // key (tree << kTreeShift) | node
  std::vector<int64_t> times_;  // per n_id entry: its tree's seed time
  std::vector<int64_t> seed_times_;
  int64_t begin_ = 0, end_ = 0;
};

// Samples temporal subgraphs from a local graph with edge timestamps. Not
// thread-safe: one per thread. The arrays must outlive it.
class TemporalSampler {
 public:
  // Prepares its own time index (PrepareTimeOrder).
  TemporalSampler(CsrGraph graph, const int64_t* edge_times, MultiHopOptions options);
  // Heterogeneous: rows ordered by edge type (edge_types per CSR position)
  // and options.edge_type_fanouts set (each hop a SampleHeteroTemporalHop).
  // Prepares its own typed time index.
  TemporalSampler(CsrGraph graph, const int64_t* edge_times, const int32_t* edge_types,
                  MultiHopOptions options);
  // With a time index the caller prepared (PrepareTimeOrder, with the edge
  // types where edge_types is given; null = rows in time order), shared by
  // several samplers; it must outlive this one.
  TemporalSampler(CsrGraph graph, const int64_t* edge_times, MultiHopOptions options,
                  const int64_t* time_order, const int32_t* edge_types = nullptr)
      : graph_(graph),
        edge_times_(edge_times),
        time_order_(time_order),
        edge_types_(edge_types),
        options_(std::move(options)) {}
  // Seeds in [node_offset, node_offset + num_nodes); one time per seed.
  Status Sample(ArrayView<const int64_t> seeds, ArrayView<const int64_t> seed_times,
                uint64_t request_seed, SampledSubgraph* out);
  const MultiHopOptions& options() const { return options_; }

 private:
  CsrGraph graph_;
  const int64_t* edge_times_;
  const int64_t* time_order_;
  const int32_t* edge_types_ = nullptr;
  std::vector<int64_t> own_order_;
  MultiHopOptions options_;
  TemporalBuilder builder_;
  OneHopResult hop_;
};

}  // namespace fanout::sampler

#endif  // FANOUT_SAMPLER_TEMPORAL_H_
