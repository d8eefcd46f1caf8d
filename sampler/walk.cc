#include "sampler/walk.h"

#include <algorithm>
#include <string>

#include "common/id_range.h"
#include "common/random.h"

namespace fanout::sampler {

Status SampleWalkStep(const CsrGraph& graph, ArrayView<const int64_t> nodes,
                      ArrayView<const uint64_t> keys, const SamplingOptions& options,
                      OneHopResult* out, const int32_t* edge_types, int edge_type) {
  if (edge_type >= 0 && edge_types == nullptr)
    return Status::InvalidArgument(
        "a metapath walk step needs a heterogeneous dataset (this one has no edge types)");
  if (keys.size() != nodes.size())
    return Status::InvalidArgument("walk step: " + std::to_string(nodes.size()) + " nodes but " +
                                   std::to_string(keys.size()) + " walk keys");
  if (options.labor || options.replace)
    return Status::InvalidArgument("a walk step is one draw: no LABOR or replace options");
  if (options.weighted && !graph.has_weights())
    return Status::InvalidArgument("weighted walks requested but the graph has no edge weights");
  const int64_t lo = options.node_offset, hi = lo + graph.num_nodes();
  FANOUT_RETURN_IF_ERROR(CheckIdsInRange(nodes, lo, hi));
  const size_t m = nodes.size();
  const int64_t* indptr = graph.indptr();
  const int64_t* eids = graph.edge_ids();
  const float* w = graph.weights();
  out->offsets.resize(m + 1);
  out->neighbors.resize(m);
  out->edge_ids.resize(options.with_edge_ids ? m : 0);
  out->edge_types.clear();
  out->edge_weights.clear();
  out->offsets[0] = 0;
  int64_t n = 0;
  for (size_t i = 0; i < m; ++i) {
    int64_t s = indptr[nodes[i] - lo], d = indptr[nodes[i] - lo + 1] - s;
    if (edge_type >= 0) {  // the row's run of that type
      const int32_t* first = std::lower_bound(edge_types + s, edge_types + s + d, edge_type);
      const int32_t* last = std::upper_bound(first, edge_types + s + d, edge_type);
      s = first - edge_types;
      d = last - first;
    }
    const uint64_t draw = Draw(keys[i], 0);
    int64_t p = -1;
    if (!options.weighted) {
      if (d > 0) p = s + static_cast<int64_t>(DrawBelow(draw, static_cast<uint64_t>(d)));
    } else {
      double total = 0;
      for (int64_t e = s; e < s + d; ++e)
        if (w[e] > 0.0f) total += w[e];
      if (total > 0) {
        const double x = static_cast<double>(draw >> 11) * 0x1.0p-53 * total;
        double acc = 0;
        for (int64_t e = s; e < s + d; ++e) {
          if (!(w[e] > 0.0f)) continue;
          p = e;  // the last positive edge also takes rounding at the top end
          acc += w[e];
          if (x < acc) break;
        }
      }
    }
    if (p >= 0) {
      out->neighbors[n] = graph.neighbor(p);
      if (options.with_edge_ids) out->edge_ids[n] = eids ? eids[p] : p;
      ++n;
    }
    out->offsets[i + 1] = n;
  }
  out->neighbors.resize(n);
  if (options.with_edge_ids) out->edge_ids.resize(n);
  if (edge_type >= 0) out->edge_types.assign(static_cast<size_t>(n), edge_type);
  return Status::OK();
}

}  // namespace fanout::sampler
