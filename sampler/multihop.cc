#include "sampler/multihop.h"

#include <algorithm>
#include <string>

#include "common/id_range.h"
#include "sampler/hetero.h"

namespace fanout::sampler {

void SampledSubgraph::Clear() {
  n_id.clear();
  row.clear();
  col.clear();
  edge_id.clear();
  batch.clear();
  edge_type.clear();
  edge_weight.clear();
  num_sampled_nodes.clear();
  num_sampled_edges.clear();
  batch_size = 0;
}

Status CheckMultiHopOptions(const MultiHopOptions& options, bool graph_has_weights) {
  for (size_t h = 0; h < options.fanouts.size(); ++h)
    FANOUT_RETURN_IF_ERROR(CheckFanout(options.fanouts[h], static_cast<int64_t>(h)));
  if (options.sampling.weighted && !graph_has_weights)
    return Status::InvalidArgument("weighted sampling requested but the graph has no edge weights");
  const auto& typed = options.edge_type_fanouts;
  if (options.sampling.labor && options.sampling.replace)
    return Status::InvalidArgument(
        "LABOR sampling draws without replacement: replace=true is not supported with it");
  if (options.sampling.labor && !typed.empty())
    return Status::InvalidArgument(
        "LABOR sampling of heterogeneous (per-edge-type) hops is not supported");
  for (size_t e = 0; e < typed.size(); ++e) {
    if (typed[e].size() != typed.front().size())
      return Status::InvalidArgument(
          "edge type " + std::to_string(e) + " has " + std::to_string(typed[e].size()) +
          " fanouts, edge type 0 has " + std::to_string(typed.front().size()) +
          ": every edge type needs one per hop");
    for (size_t h = 0; h < typed[e].size(); ++h)
      if (typed[e][h] < -1)
        return Status::InvalidArgument("fanout " + std::to_string(typed[e][h]) + " of edge type " +
                                       std::to_string(e) + " in hop " + std::to_string(h) +
                                       " is invalid: use -1, 0 or a value >= 1");
  }
  return Status::OK();
}

void SubgraphBuilder::Begin(ArrayView<const int64_t> seeds, SampledSubgraph* out) {
  out->Clear();
  const int64_t b = static_cast<int64_t>(seeds.size());
  out->batch_size = b;
  out->n_id.resize(b);
  std::copy(seeds.begin(), seeds.end(), out->n_id.begin());
  out->num_sampled_nodes.push_back(b);
  map_.Reset(b);
  for (int64_t i = 0; i < b; ++i) map_.FindOrInsert(seeds[i], i);  // first position wins
  frontier_begin_ = 0;
  frontier_end_ = b;
}

void SubgraphBuilder::AddHop(const OneHopResult& hop, bool with_edge_ids, SampledSubgraph* out) {
  const int64_t m = frontier_end_ - frontier_begin_;
  const int64_t total = hop.offsets[m];
  const int64_t* nbr = hop.neighbors.data();
  const int64_t* off = hop.offsets.data();

  int64_t e0 = static_cast<int64_t>(out->row.size());
  out->row.resize(e0 + total);
  out->col.resize(e0 + total);
  if (with_edge_ids) {
    out->edge_id.resize(e0 + total);
    std::copy(hop.edge_ids.begin(), hop.edge_ids.begin() + total, out->edge_id.begin() + e0);
  }
  if (!hop.edge_weights.empty())
    out->edge_weight.insert(out->edge_weight.end(), hop.edge_weights.begin(),
                            hop.edge_weights.begin() + total);
  if (!hop.edge_types.empty())
    out->edge_type.insert(out->edge_type.end(), hop.edge_types.begin(),
                          hop.edge_types.begin() + total);
  int64_t n0 = static_cast<int64_t>(out->n_id.size());
  map_.Reserve(map_.size() + total);
  // n_id grows by at most `total`; size it once and trim at the end.
  out->n_id.resize(n0 + total);
  int64_t* n_id = out->n_id.data();
  int64_t* row = out->row.data() + e0;
  int64_t* col = out->col.data() + e0;

  // col: each edge's frontier node (one run per node).
  for (int64_t i = 0; i < m; ++i) {
    const int64_t target = frontier_begin_ + i;
    for (int64_t e = off[i]; e < off[i + 1]; ++e) col[e] = target;
  }
  // row: each neighbor's local index, new ids numbered in order of first
  // appearance.
  const int64_t next = map_.Relabel(nbr, total, n0, row, n_id);
  out->n_id.resize(next);
  out->num_sampled_nodes.push_back(next - n0);
  out->num_sampled_edges.push_back(total);
  frontier_begin_ = n0;
  frontier_end_ = next;
}

void SubgraphBuilder::SetInducedEdges(const OneHopResult& all, bool with_edge_ids,
                                      SampledSubgraph* out) {
  constexpr int64_t kPrefetch = 16;
  const int64_t n = static_cast<int64_t>(out->n_id.size());
  const int64_t total = all.offsets[n];
  const int64_t* nbr = all.neighbors.data();
  const int64_t* off = all.offsets.data();
  out->row.resize(total);
  out->col.resize(total);
  out->edge_id.resize(with_edge_ids ? total : 0);
  out->edge_weight.clear();  // the induced edges are all of them: no estimator weights
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t e = off[i]; e < off[i + 1]; ++e) {
      if (e + kPrefetch < total) map_.Prefetch(nbr[e + kPrefetch]);
      const int64_t local = map_.Find(nbr[e]);
      if (local < 0) continue;
      out->row[kept] = local;
      out->col[kept] = i;
      if (with_edge_ids) out->edge_id[kept] = all.edge_ids[e];
      ++kept;
    }
  }
  out->row.resize(kept);
  out->col.resize(kept);
  if (with_edge_ids) out->edge_id.resize(kept);
  out->num_sampled_edges.assign(1, kept);
}

Status MultiHopSampler::Sample(ArrayView<const int64_t> seeds, uint64_t request_seed,
                               SampledSubgraph* out) {
  FANOUT_RETURN_IF_ERROR(CheckMultiHopOptions(options_, graph_.has_weights()));
  const int64_t lo = options_.sampling.node_offset;
  IdRangeCheck how;
  how.what = "seed";
  FANOUT_RETURN_IF_ERROR(CheckIdsInRange(seeds, lo, lo + graph_.num_nodes(), how));
  // Neighbors are global ids, mostly below the graph's end (the whole graph,
  // or a partition's neighbors in earlier partitions); any above it go to the
  // hash table.
  builder_.UseDenseIdRange(lo + graph_.num_nodes());
  builder_.Begin(seeds, out);
  if (!options_.edge_type_fanouts.empty()) {
    if (edge_types_ == nullptr)
      return Status::InvalidArgument(
          "per-edge-type fanouts need a heterogeneous dataset (this one has no edge types)");
    if (options_.induced)
      return Status::InvalidArgument(
          "subgraph (induced) sampling of heterogeneous graphs is not supported");
    const size_t hops = options_.edge_type_fanouts.front().size();
    std::vector<int64_t> type_fanouts;
    for (size_t h = 0; h < hops; ++h) {
      HopTypeFanouts(options_.edge_type_fanouts, h, &type_fanouts);
      FANOUT_RETURN_IF_ERROR(SampleHeteroHop(graph_, edge_types_, builder_.Frontier(*out),
                                             type_fanouts, static_cast<int64_t>(h), request_seed,
                                             options_.sampling, &hop_));
      builder_.AddHop(hop_, options_.sampling.with_edge_ids, out);
    }
    return Status::OK();
  }
  for (size_t h = 0; h < options_.fanouts.size(); ++h) {
    FANOUT_RETURN_IF_ERROR(hop_sampler_.Sample(graph_, builder_.Frontier(*out), options_.fanouts[h],
                                               static_cast<int64_t>(h), request_seed,
                                               options_.sampling, pool_, &hop_));
    builder_.AddHop(hop_, options_.sampling.with_edge_ids, out);
  }
  if (options_.induced) {
    SamplingOptions every = options_.sampling;  // every stored edge, zero weights included
    every.weighted = every.replace = every.labor = false;
    FANOUT_RETURN_IF_ERROR(hop_sampler_.Sample(graph_, builder_.Nodes(*out), -1,
                                               static_cast<int64_t>(options_.fanouts.size()),
                                               request_seed, every, pool_, &hop_));
    builder_.SetInducedEdges(hop_, options_.sampling.with_edge_ids, out);
  }
  return Status::OK();
}

}  // namespace fanout::sampler
