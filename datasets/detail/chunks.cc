#include "datasets/detail/chunks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "datasets/detail/chunk_codec.h"

namespace fanout::datasets::detail {

void EncodeAdjChunk(ArrayView<const int64_t> degrees, ArrayView<const int64_t> neighbors,
                    ArrayView<const int64_t> edge_ids, std::string* out) {
  int64_t hdr[2] = {static_cast<int64_t>(degrees.size()), static_cast<int64_t>(neighbors.size())};
  AppendRaw(out, hdr, sizeof hdr);
  AppendRaw(out, degrees.data(), degrees.size() * 8);
  AppendRaw(out, neighbors.data(), neighbors.size() * 8);
  AppendRaw(out, edge_ids.data(), edge_ids.size() * 8);
}

namespace {
// The adj chunk's header and sizes: "" or what is wrong; *ce its edge count.
std::string CheckAdjChunk(const char* p, size_t size, int64_t nodes, int64_t* ce) {
  int64_t hdr[2];
  if (size < 16) return "too short";
  std::memcpy(hdr, p, 16);
  if (hdr[0] != nodes)
    return "holds " + std::to_string(hdr[0]) + " nodes, expected " + std::to_string(nodes);
  *ce = hdr[1];
  // The edge count is checked against the bytes there before any arithmetic
  // with it (a damaged count near 2^63 overflowed the size check: fuzzing).
  if (*ce < 0 || static_cast<uint64_t>(*ce) > (size - 16) / 16 ||
      size - 16 != static_cast<size_t>(nodes) * 8 + static_cast<size_t>(*ce) * 16)
    return "has the wrong size";
  return "";
}

// Copies ce neighbor ids (unaligned int64) into dst (int64 or int32) and
// checks each is in [0, num_nodes); "" or what is wrong.
template <typename T>
std::string CopyNeighbors(const char* src, int64_t ce, int64_t e0, int64_t num_nodes, T* dst) {
  if constexpr (sizeof(T) == 8) {  // straight into place, then checked
    std::memcpy(dst, src, static_cast<size_t>(ce) * 8);
    uint64_t bad = 0;
    for (int64_t e = 0; e < ce; ++e)
      bad |=
          static_cast<uint64_t>(static_cast<uint64_t>(dst[e]) >= static_cast<uint64_t>(num_nodes));
    if (bad)
      for (int64_t e = 0; e < ce; ++e)
        if (dst[e] < 0 || dst[e] >= num_nodes)
          return "has edge " + std::to_string(e0 + e) + " pointing at node " +
                 std::to_string(dst[e]) + ", outside [0, " + std::to_string(num_nodes) + ")";
    return "";
  }
  constexpr int64_t kBlock = 1024;
  int64_t buf[kBlock];
  for (int64_t at = 0; at < ce; at += kBlock) {
    const int64_t n = std::min(kBlock, ce - at);
    std::memcpy(buf, src + at * 8, static_cast<size_t>(n) * 8);
    uint64_t bad = 0;
    for (int64_t e = 0; e < n; ++e) {
      bad |=
          static_cast<uint64_t>(static_cast<uint64_t>(buf[e]) >= static_cast<uint64_t>(num_nodes));
      dst[at + e] = static_cast<T>(buf[e]);
    }
    if (bad) {
      for (int64_t e = 0; e < n; ++e)
        if (buf[e] < 0 || buf[e] >= num_nodes)
          return "has edge " + std::to_string(e0 + at + e) + " pointing at node " +
                 std::to_string(buf[e]) + ", outside [0, " + std::to_string(num_nodes) + ")";
    }
  }
  return "";
}
}  // namespace

std::string DecodeAdjChunk(const char* p, size_t size, int64_t nodes, int64_t first,
                           int64_t num_nodes, int64_t* edge_pos, PartitionData* d) {
  int64_t ce = 0;
  std::string err = CheckAdjChunk(p, size, nodes, &ce);
  if (!err.empty()) return err;
  const int64_t e0 = *edge_pos;
  if (e0 + ce > d->num_edges) return "holds more edges than the partition";
  // Values sit where RocksDB put them (often not 8-byte aligned): copy, never cast.
  int64_t acc = e0;
  for (int64_t i = 0; i < nodes; ++i) {
    int64_t deg;
    std::memcpy(&deg, p + 16 + i * 8, 8);
    if (deg < 0) return "has a negative degree";
    if (deg > e0 + ce - acc)
      return "degrees do not sum to its edge count";  // checked before adding (fuzzing)
    acc += deg;
    d->indptr[first + i + 1] = acc;
  }
  if (acc != e0 + ce) return "degrees do not sum to its edge count";
  // Neighbor ids must be global ids of this dataset (checked while cache-hot),
  // held in the partition's width.
  const char* nbrs = p + 16 + nodes * 8;
  err = d->indices32.empty() && !d->indices.empty()
            ? CopyNeighbors(nbrs, ce, e0, num_nodes, d->indices.data() + e0)
        : !d->indices32.empty() ? CopyNeighbors(nbrs, ce, e0, num_nodes, d->indices32.data() + e0)
                                : std::string();
  if (!err.empty()) return err;
  if (!d->edge_ids.empty()) std::memcpy(d->edge_ids.data() + e0, nbrs + ce * 8, ce * 8);
  *edge_pos = e0 + ce;
  return "";
}

std::string DecodeAdjEdgeIds(const char* p, size_t size, int64_t nodes, int64_t capacity,
                             int64_t* edge_pos, int64_t* dst) {
  int64_t ce = 0;
  std::string err = CheckAdjChunk(p, size, nodes, &ce);
  if (!err.empty()) return err;
  if (*edge_pos + ce > capacity) return "holds more edges than the partition";
  std::memcpy(dst + *edge_pos, p + 16 + nodes * 8 + ce * 8, ce * 8);
  *edge_pos += ce;
  return "";
}

std::string DecodeFeatureChunk(const char* p, size_t size, int64_t nodes, int64_t first,
                               PartitionData* d) {
  const size_t row =
      static_cast<size_t>(d->meta.feature_dim) * FeatureDTypeSize(d->meta.feature_dtype);
  if (size != static_cast<size_t>(nodes) * row) return "has the wrong size";
  std::memcpy(d->features.data() + static_cast<size_t>(first) * row, p, size);
  return "";
}

void EncodeInt64Chunk(ArrayView<const int64_t> values, std::string* out) {
  AppendRaw(out, values.data(), values.size() * 8);
}

std::string DecodeInt64Chunk(const char* p, size_t size, int64_t nodes, int64_t first,
                             int64_t* dst) {
  if (size != static_cast<size_t>(nodes * 8)) return "has the wrong size";
  std::memcpy(dst + first, p, size);
  return "";
}

std::string DecodeEdgeTimeChunk(const char* p, size_t size, int64_t capacity, int64_t* pos,
                                int64_t* dst) {
  if (size % 8 != 0 || *pos + static_cast<int64_t>(size / 8) > capacity)
    return "has the wrong size";
  std::memcpy(dst + *pos, p, size);
  *pos += static_cast<int64_t>(size / 8);
  return "";
}

void EncodeFloatChunk(ArrayView<const float> values, std::string* out) {
  AppendRaw(out, values.data(), values.size() * 4);
}

std::string DecodeEdgeWeightChunk(const char* p, size_t size, int64_t capacity, int64_t* pos,
                                  float* dst) {
  if (size % 4 != 0 || *pos + static_cast<int64_t>(size / 4) > capacity)
    return "has the wrong size";
  for (size_t i = 0; i < size / 4; ++i) {
    float w;
    std::memcpy(&w, p + 4 * i, 4);
    if (!(std::isfinite(w) && w >= 0))
      return "holds edge weight " + std::to_string(w) + " (weights are finite and >= 0)";
    dst[(*pos)++] = w;
  }
  return "";
}

std::string DecodeEdgeTypeChunk(const char* p, size_t size, int64_t capacity, int64_t num_types,
                                int64_t* pos, int32_t* dst) {
  if (size % 8 != 0 || *pos + static_cast<int64_t>(size / 8) > capacity)
    return "has the wrong size";
  for (size_t i = 0; i < size / 8; ++i) {
    int64_t t;
    std::memcpy(&t, p + 8 * i, 8);
    if (t < 0 || t >= num_types)
      return "holds edge type " + std::to_string(t) + ", outside [0, " + std::to_string(num_types) +
             ")";
    dst[(*pos)++] = static_cast<int32_t>(t);
  }
  return "";
}

void EncodeSplitChunk(ArrayView<const uint8_t> values, std::string* out) {
  AppendRaw(out, values.data(), values.size());
}

std::string DecodeSplitChunk(const char* p, size_t size, int64_t nodes, int64_t first,
                             uint8_t* dst) {
  if (size != static_cast<size_t>(nodes)) return "has the wrong size";
  std::memcpy(dst + first, p, size);
  for (size_t i = 0; i < size; ++i)
    if (static_cast<uint8_t>(p[i]) > 3) return "holds an invalid split value";
  return "";
}

void EncodeNameChunk(const std::vector<std::string_view>& names, std::string* out) {
  for (std::string_view s : names) {
    uint32_t len = static_cast<uint32_t>(s.size());
    AppendRaw(out, &len, 4);
    out->append(s.data(), s.size());
  }
}

std::string DecodeNameChunk(const char* p, size_t size, int64_t nodes,
                            std::vector<std::string>* names) {
  size_t at = 0;
  for (int64_t i = 0; i < nodes; ++i) {
    uint32_t len;
    if (at + 4 > size) return "is truncated";
    std::memcpy(&len, p + at, 4);
    at += 4;
    if (at + len > size) return "is truncated";
    names->emplace_back(p + at, len);
    at += len;
  }
  return at == size ? "" : "has trailing bytes";
}

}  // namespace fanout::datasets::detail
