#include "sampler/csr_graph.h"

#include <cmath>
#include <string>

namespace fanout::sampler {

namespace {
Status CheckShape(ArrayView<const int64_t> indptr, int64_t num_edges, size_t edge_ids,
                  size_t weights) {
  if (indptr.empty())
    return Status::InvalidArgument("indptr is empty: it needs num_nodes + 1 entries");
  if (indptr[0] != 0)
    return Status::InvalidArgument("indptr[0] is " + std::to_string(indptr[0]) + ", expected 0");
  if (indptr[indptr.size() - 1] != num_edges)
    return Status::InvalidArgument("indptr ends at " + std::to_string(indptr[indptr.size() - 1]) +
                                   " but indices has " + std::to_string(num_edges) + " entries");
  if (edge_ids != 0 && static_cast<int64_t>(edge_ids) != num_edges)
    return Status::InvalidArgument("edge_ids has " + std::to_string(edge_ids) +
                                   " entries but indices has " + std::to_string(num_edges));
  if (weights != 0 && static_cast<int64_t>(weights) != num_edges)
    return Status::InvalidArgument("weights has " + std::to_string(weights) +
                                   " entries but indices has " + std::to_string(num_edges));
  return Status::OK();
}
}  // namespace

Status CsrGraph::Create(ArrayView<const int64_t> indptr, ArrayView<const int64_t> indices,
                        ArrayView<const int64_t> edge_ids, ArrayView<const float> weights,
                        CsrGraph* out) {
  const int64_t num_edges = static_cast<int64_t>(indices.size());
  FANOUT_RETURN_IF_ERROR(CheckShape(indptr, num_edges, edge_ids.size(), weights.size()));
  CsrGraph g;
  g.indptr_ = indptr.data();
  g.indices_ = indices.data();
  g.edge_ids_ = edge_ids.empty() ? nullptr : edge_ids.data();
  g.weights_ = weights.empty() ? nullptr : weights.data();
  g.num_nodes_ = static_cast<int64_t>(indptr.size()) - 1;
  g.num_edges_ = num_edges;
  *out = g;
  return Status::OK();
}

Status CsrGraph::Create32(ArrayView<const int64_t> indptr, ArrayView<const int32_t> indices,
                          ArrayView<const int64_t> edge_ids, ArrayView<const float> weights,
                          CsrGraph* out) {
  const int64_t num_edges = static_cast<int64_t>(indices.size());
  FANOUT_RETURN_IF_ERROR(CheckShape(indptr, num_edges, edge_ids.size(), weights.size()));
  CsrGraph g;
  g.indptr_ = indptr.data();
  g.indices32_ = indices.data();
  g.edge_ids_ = edge_ids.empty() ? nullptr : edge_ids.data();
  g.weights_ = weights.empty() ? nullptr : weights.data();
  g.num_nodes_ = static_cast<int64_t>(indptr.size()) - 1;
  g.num_edges_ = num_edges;
  *out = g;
  return Status::OK();
}

Status CsrGraph::Validate(int64_t num_nodes_total) const {
  if (num_nodes_total < 0) num_nodes_total = num_nodes_;
  for (int64_t v = 0; v < num_nodes_; ++v) {
    if (indptr_[v + 1] < indptr_[v])
      return Status::InvalidArgument("indptr decreases at node " + std::to_string(v) + ": " +
                                     std::to_string(indptr_[v]) + " > " +
                                     std::to_string(indptr_[v + 1]));
  }
  for (int64_t e = 0; e < num_edges_; ++e) {
    const int64_t u = neighbor(e);
    if (u < 0 || u >= num_nodes_total)
      return Status::InvalidArgument("edge " + std::to_string(e) + " points at node " +
                                     std::to_string(u) + ", outside [0, " +
                                     std::to_string(num_nodes_total) + ")");
  }
  if (weights_ != nullptr) {
    for (int64_t e = 0; e < num_edges_; ++e) {
      if (!(weights_[e] >= 0.0f) || !std::isfinite(weights_[e]))
        return Status::InvalidArgument("edge " + std::to_string(e) + " has weight " +
                                       std::to_string(weights_[e]) +
                                       "; weights must be finite and >= 0");
    }
  }
  return Status::OK();
}

CsrGraph CsrArrays::View() const {
  CsrGraph g;
  Status st = CsrGraph::Create(indptr, indices, edge_ids, weights, &g);
  (void)st;  // REQUIRES: consistent arrays
  return g;
}

CsrArrays CsrArrays::FromEdges(int64_t num_nodes, const std::vector<int64_t>& rows,
                               const std::vector<int64_t>& cols) {
  CsrArrays a;
  a.indptr.assign(num_nodes + 1, 0);
  for (int64_t r : rows) a.indptr[r + 1]++;
  for (int64_t v = 0; v < num_nodes; ++v) a.indptr[v + 1] += a.indptr[v];
  a.indices.resize(rows.size());
  std::vector<int64_t> fill(a.indptr.begin(), a.indptr.end() - 1);
  for (size_t i = 0; i < rows.size(); ++i) a.indices[fill[rows[i]]++] = cols[i];
  return a;
}

}  // namespace fanout::sampler
