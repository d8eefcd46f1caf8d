#include "rpc/codec.h"

// Templates only; this file keeps the library non-empty and the header compiled.
namespace fanout::rpc {
template std::string Pack<int64_t>(ArrayView<const int64_t>);
void EncodeSampleReply(const int64_t* offsets, size_t n, const int64_t* neighbors,
                       const int64_t* edge_ids, char* dst, const float* edge_weights) {
  const int64_t total = offsets[n];
  int32_t* counts = reinterpret_cast<int32_t*>(dst);
  for (size_t i = 0; i < n; ++i) counts[i] = static_cast<int32_t>(offsets[i + 1] - offsets[i]);
  const size_t cb = SampleCountsBytes(n);
  std::memset(dst + n * 4, 0, cb - n * 4);  // the padding
  char* at = dst + cb;
  if (total > 0) std::memcpy(at, neighbors, static_cast<size_t>(total) * 8);
  if (edge_ids != nullptr && total > 0)
    std::memcpy(at + total * 8, edge_ids, static_cast<size_t>(total) * 8);
  if (edge_weights != nullptr && total > 0)
    std::memcpy(at + total * (edge_ids != nullptr ? 16 : 8), edge_weights,
                static_cast<size_t>(total) * 4);
}

Status CheckSampleCounts(const int32_t* counts, size_t nodes, int64_t max_per_node,
                         int64_t* total) {
  int64_t sum = 0;
  for (size_t j = 0; j < nodes; ++j) {
    const int32_t c = counts[j];
    if (c < 0 || (max_per_node >= 0 && c > max_per_node))
      return Status::Corruption(std::string(c < 0 ? "negative count"
                                                  : "count above the request's fanout (" +
                                                        std::to_string(max_per_node) + ")") +
                                " in sample reply (node " + std::to_string(j) + ": " +
                                std::to_string(c) + ")");
    sum += c;
  }
  *total = sum;
  return Status::OK();
}

Status CheckNeighborIds(const int64_t* ids, int64_t n, int64_t num_nodes) {
  for (int64_t i = 0; i < n; ++i)
    if (static_cast<uint64_t>(ids[i]) >= static_cast<uint64_t>(num_nodes))
      return Status::Corruption("sample reply names node " + std::to_string(ids[i]) +
                                ", outside the dataset's [0, " + std::to_string(num_nodes) + ")");
  return Status::OK();
}

Status DecodeSampleReply(const char* data, size_t size, size_t nodes, bool with_edge_ids,
                         SampleReplyView* out, bool with_edge_weights) {
  if (nodes > size / 4 || size < SampleCountsBytes(nodes))
    return Status::Corruption("malformed sample reply: " + std::to_string(size) +
                              " bytes cannot hold the counts of " + std::to_string(nodes) +
                              " nodes");
  const int32_t* counts = reinterpret_cast<const int32_t*>(data);
  int64_t total = 0;
  Status st = CheckSampleCounts(counts, nodes, -1, &total);
  if (!st.ok()) return st;
  const size_t per = 8 + (with_edge_ids ? 8 : 0) + (with_edge_weights ? 4 : 0);
  if (static_cast<uint64_t>(total) > (size - SampleCountsBytes(nodes)) / per ||
      size != SampleReplyBytes(nodes, total, with_edge_ids, with_edge_weights))
    return Status::Corruption("sample reply counts (" + std::to_string(total) +
                              " neighbors) do not match its " + std::to_string(size) + " bytes");
  out->counts = counts;
  out->neighbors = reinterpret_cast<const int64_t*>(data + SampleCountsBytes(nodes));
  out->edge_ids = with_edge_ids ? out->neighbors + total : nullptr;
  out->edge_weights =
      with_edge_weights
          ? reinterpret_cast<const float*>(out->neighbors + total * (with_edge_ids ? 2 : 1))
          : nullptr;
  out->total = total;
  return Status::OK();
}

}  // namespace fanout::rpc
