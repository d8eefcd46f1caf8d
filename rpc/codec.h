// Packing of id, count and value arrays into Thrift `binary` payloads:
// little-endian, contiguous, one memcpy each way.
#ifndef FANOUT_RPC_CODEC_H_
#define FANOUT_RPC_CODEC_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/array_view.h"
#include "common/status.h"

namespace fanout::rpc {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the wire format is little-endian");

template <typename T>
void Pack(ArrayView<const T> values, std::string* out) {
  out->resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(out->data(), values.data(), out->size());
}

template <typename T>
std::string Pack(ArrayView<const T> values) {
  std::string s;
  Pack(values, &s);
  return s;
}

// A typed view of a packed payload; InvalidArgument when its length is not a
// multiple of sizeof(T). The string must outlive the view. Thrift's strings
// come from new[], aligned for any T.
template <typename T>
Status View(const std::string& payload, const char* what, ArrayView<const T>* out) {
  if (payload.size() % sizeof(T) != 0)
    return Status::InvalidArgument(
        std::string(what) + ": payload of " + std::to_string(payload.size()) +
        " bytes is not a whole number of " + std::to_string(sizeof(T)) + "-byte values");
  *out = ArrayView<const T>(reinterpret_cast<const T*>(payload.data()), payload.size() / sizeof(T));
  return Status::OK();
}

// The one-hop sample reply as one packed buffer (the data plane's kSample
// payload): counts (int32 per node, padded to a multiple of 8 bytes), then
// the neighbors (int64), then the edge ids (int64, when asked for), then the
// edge weights (float32, LABOR hops only). The server encodes it, the client
// decodes it; nothing else knows the layout.
inline size_t SampleCountsBytes(size_t nodes) { return (nodes * 4 + 7) & ~size_t{7}; }
inline size_t SampleReplyBytes(size_t nodes, int64_t edges, bool with_edge_ids,
                               bool with_edge_weights = false) {
  return SampleCountsBytes(nodes) +
         static_cast<size_t>(edges) * (8 + (with_edge_ids ? 8 : 0) + (with_edge_weights ? 4 : 0));
}
// Encodes n nodes' samples given as CSR: node i's neighbors are
// neighbors[offsets[i] .. offsets[i + 1]) (edge ids and weights likewise, or
// null without). dst holds SampleReplyBytes(n, offsets[n], edge_ids != null,
// edge_weights != null).
void EncodeSampleReply(const int64_t* offsets, size_t n, const int64_t* neighbors,
                       const int64_t* edge_ids, char* dst, const float* edge_weights = nullptr);
// A decoded reply: views into the buffer, which must outlive them.
struct SampleReplyView {
  const int32_t* counts = nullptr;      // one per node
  const int64_t* neighbors = nullptr;   // total of them, node by node
  const int64_t* edge_ids = nullptr;    // total of them, or null without
  const float* edge_weights = nullptr;  // total of them, or null without
  int64_t total = 0;
};
// Checks one hop's per-node counts, whichever path they came by: none
// negative, none above `max_per_node` (where that is >= 0: the request's
// fanout), their sum into *total. Corruption naming the node and count.
Status CheckSampleCounts(const int32_t* counts, size_t nodes, int64_t max_per_node, int64_t* total);
// Every id in [0, num_nodes): Corruption naming the first one that is not.
Status CheckNeighborIds(const int64_t* ids, int64_t n, int64_t num_nodes);
// Decodes a reply for `nodes` nodes. Corruption, saying what is wrong, when
// the buffer is shorter than the counts, a count is negative or the sizes do
// not add up (a reply from a rogue or broken server); never reads past size.
Status DecodeSampleReply(const char* data, size_t size, size_t nodes, bool with_edge_ids,
                         SampleReplyView* out, bool with_edge_weights = false);

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_CODEC_H_
