// A partition's arrays as read-only views: what servers serve from (their
// sealed export, or a datasets::PartitionData) and what same-host clients map
// (rpc/local_export.h). Apart from the store (datasets/partition_store.h), so
// that rpc/ and client/ see the view without the store's headers. The viewed
// memory must outlive the view.
#ifndef FANOUT_SAMPLER_PARTITION_VIEW_H_
#define FANOUT_SAMPLER_PARTITION_VIEW_H_

#include <cstdint>

#include "common/array_view.h"
#include "common/status.h"
#include "sampler/csr_graph.h"

namespace fanout::sampler {

struct PartitionView {
  int part = 0;
  int64_t node_begin = 0, node_end = 0;  // global ids [node_begin, node_end)
  ArrayView<const int64_t> indptr, indices, edge_ids, edge_times, labels, original_ids;
  // Neighbor ids held as int32 instead of `indices` (compact topology:
  // every id below 2^31); one of the two is empty.
  ArrayView<const int32_t> indices32;
  ArrayView<const int32_t> edge_types;
  ArrayView<const float> edge_weights;  // per stored edge, where the dataset has weights
  ArrayView<const uint8_t> features, split;
  // The disk tier's hot set (storage/row_cache.h StaticRowSet), where the
  // features are on disk: (row, slot) pairs and the rows themselves.
  ArrayView<const int32_t> hot_table;
  ArrayView<const uint8_t> hot_rows;

  int64_t num_nodes() const { return node_end - node_begin; }
  int64_t num_edges() const { return static_cast<int64_t>(indices.size() + indices32.size()); }
  // The CSR over whichever neighbor array is held (and the edge ids and
  // weights, where they are); Create's checks as a Status.
  Status MakeGraph(sampler::CsrGraph* g) const {
    if (!indices32.empty())
      return sampler::CsrGraph::Create32(indptr, indices32, edge_ids, edge_weights, g);
    return sampler::CsrGraph::Create(indptr, indices, edge_ids, edge_weights, g);
  }
  // A view for the sampler. REQUIRES: consistent arrays (OpenPartition and
  // the client's mapping check them).
  sampler::CsrGraph Graph() const {
    sampler::CsrGraph g;
    Status st = MakeGraph(&g);
    (void)st;
    return g;
  }
  // Bytes of the arrays.
  int64_t RawBytes() const {
    return static_cast<int64_t>(
        (indptr.size() + indices.size() + edge_ids.size() + edge_times.size() + labels.size() +
         original_ids.size()) *
            8 +
        (indices32.size() + edge_types.size() + edge_weights.size() + hot_table.size()) * 4 +
        features.size() + split.size() + hot_rows.size());
  }
};

}  // namespace fanout::sampler

#endif  // FANOUT_SAMPLER_PARTITION_VIEW_H_
