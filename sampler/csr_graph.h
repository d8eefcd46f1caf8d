// CsrGraph: a read-only compressed-sparse-row view over flat arrays that the
// caller owns (int64 indptr; int64 indices, or int32 ones where every
// neighbor id fits 31 bits: the compact topology of big graphs; optional
// int64 edge ids and float weights). It never copies or frees them; the
// arrays must outlive the view.
//
// Row v holds the neighbors of node v along the graph's stored direction
// (incoming edges for GNN message passing, or outgoing; the view does not
// care). Edge e of the CSR is indices[e]; its id is edge_ids[e] when edge ids
// are present and e otherwise.
//
// Thread safety: immutable; any number of threads may read concurrently.
#ifndef FANOUT_SAMPLER_CSR_GRAPH_H_
#define FANOUT_SAMPLER_CSR_GRAPH_H_

#include <cstdint>
#include <vector>

#include "common/array_view.h"
#include "common/status.h"

namespace fanout::sampler {

class CsrGraph {
 public:
  CsrGraph() = default;

  // Checks the array lengths (indptr has num_nodes + 1 entries, starts at 0
  // and ends at indices.size(); edge_ids and weights are empty or as long as
  // indices) and builds the view. O(1): row contents are checked by Validate().
  static Status Create(ArrayView<const int64_t> indptr, ArrayView<const int64_t> indices,
                       ArrayView<const int64_t> edge_ids, ArrayView<const float> weights,
                       CsrGraph* out);
  // The same over 32-bit neighbor ids (values in [0, 2^31)).
  static Status Create32(ArrayView<const int64_t> indptr, ArrayView<const int32_t> indices,
                         ArrayView<const int64_t> edge_ids, ArrayView<const float> weights,
                         CsrGraph* out);

  // Full O(N + E) structural check: indptr non-decreasing, every neighbor id
  // in [0, num_nodes_total) (num_nodes_total defaults to num_nodes(); a
  // partition's rows point at global ids), weights finite and non-negative.
  Status Validate(int64_t num_nodes_total = -1) const;

  int64_t num_nodes() const { return num_nodes_; }
  int64_t num_edges() const { return num_edges_; }
  bool has_weights() const { return weights_ != nullptr; }

  const int64_t* indptr() const { return indptr_; }
  // Exactly one of these is non-null (for a graph with edges): the width the
  // neighbor ids are held in. Kernels read them through neighbor(e), or
  // dispatch once on the width for their inner loops.
  const int64_t* indices() const { return indices_; }
  const int32_t* indices32() const { return indices32_; }
  int index_bytes() const { return indices32_ != nullptr ? 4 : 8; }
  int64_t neighbor(int64_t e) const {
    return indices32_ != nullptr ? int64_t{indices32_[e]} : indices_[e];
  }
  // Where neighbor(e) is held (for prefetching).
  const void* neighbor_address(int64_t e) const {
    return indices32_ != nullptr ? static_cast<const void*>(indices32_ + e)
                                 : static_cast<const void*>(indices_ + e);
  }
  const int64_t* edge_ids() const { return edge_ids_; }  // null when absent
  const float* weights() const { return weights_; }      // null when absent

  int64_t degree(int64_t v) const { return indptr_[v + 1] - indptr_[v]; }
  int64_t edge_id(int64_t e) const { return edge_ids_ ? edge_ids_[e] : e; }

 private:
  const int64_t* indptr_ = nullptr;
  const int64_t* indices_ = nullptr;
  const int32_t* indices32_ = nullptr;
  const int64_t* edge_ids_ = nullptr;
  const float* weights_ = nullptr;
  int64_t num_nodes_ = 0;
  int64_t num_edges_ = 0;
};

// Owned CSR arrays, for generators, loaders and tests.
struct CsrArrays {
  std::vector<int64_t> indptr{0};
  std::vector<int64_t> indices;
  std::vector<int64_t> edge_ids;  // empty: edge id = CSR position
  std::vector<float> weights;     // empty: unweighted

  // REQUIRES: the arrays are consistent (as Create() checks).
  CsrGraph View() const;
  int64_t num_nodes() const { return static_cast<int64_t>(indptr.size()) - 1; }
  int64_t num_edges() const { return static_cast<int64_t>(indices.size()); }
  // Builds CSR arrays from an edge list (row[i] -> col[i] stored in row
  // row[i]), keeping each row's edges in input order.
  static CsrArrays FromEdges(int64_t num_nodes, const std::vector<int64_t>& rows,
                             const std::vector<int64_t>& cols);
};

}  // namespace fanout::sampler

#endif  // FANOUT_SAMPLER_CSR_GRAPH_H_
