// A partition's arrays and the same-host export (rpc/local_export.h): which
// array goes under which kind, both ways. Header-only, used by the server
// (exporting) and the client (mapping), so the two cannot disagree.
#ifndef FANOUT_RPC_PARTITION_EXPORT_H_
#define FANOUT_RPC_PARTITION_EXPORT_H_

#include <type_traits>
#include <vector>

#include "rpc/local_export.h"
#include "sampler/partition_view.h"

namespace fanout::rpc {

// Calls fn(kind, field) for each array field of a PartitionView.
template <typename View, typename Fn>
void ForEachExportedArray(View& v, Fn&& fn) {
  fn(ExportArray::kIndptr, v.indptr);
  fn(ExportArray::kIndices, v.indices);
  fn(ExportArray::kIndices32, v.indices32);
  fn(ExportArray::kEdgeIds, v.edge_ids);
  fn(ExportArray::kEdgeTimes, v.edge_times);
  fn(ExportArray::kEdgeTypes, v.edge_types);
  fn(ExportArray::kEdgeWeights, v.edge_weights);
  fn(ExportArray::kFeatures, v.features);
  fn(ExportArray::kLabels, v.labels);
  fn(ExportArray::kSplit, v.split);
  fn(ExportArray::kOriginalIds, v.original_ids);
  fn(ExportArray::kHotTable, v.hot_table);
  fn(ExportArray::kHotRows, v.hot_rows);
}

// What LocalExport::Create copies from a view.
inline std::vector<LocalExport::Source> ExportSources(const sampler::PartitionView& v) {
  std::vector<LocalExport::Source> out;
  ForEachExportedArray(v, [&](ExportArray kind, const auto& a) {
    out.push_back({kind, a.data(), a.size()});
  });
  return out;
}

// The view of exported memory (the server's own mapping or a client's).
// REQUIRES: each array's element size is its kind's (DecodeLayout checks
// bounds; the client checks the contents).
inline sampler::PartitionView ViewOfExport(const ExportedMemory& m) {
  sampler::PartitionView v;
  v.part = m.layout().partition;
  v.node_begin = m.layout().node_begin;
  v.node_end = m.layout().node_end;
  ForEachExportedArray(v, [&](ExportArray kind, auto& field) {
    using T = std::remove_const_t<std::remove_reference_t<decltype(field[0])>>;
    static_assert(sizeof(T) == 1 || sizeof(T) == 4 || sizeof(T) == 8, "exported element size");
    uint64_t n = 0;
    const void* p = m.Data(kind, &n);
    field = ArrayView<const T>(static_cast<const T*>(p), static_cast<size_t>(n));
  });
  return v;
}

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_PARTITION_EXPORT_H_
