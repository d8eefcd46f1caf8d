// The partition store's chunk kinds, each encoder beside its decoder (as
// leveldb keeps BlockHandle::EncodeTo/DecodeFrom together). A chunk holds up
// to meta.chunk_nodes consecutive nodes of one partition; its value is the
// payload below plus the CRC-32C trailer of chunk_codec.h.
//
//   adj    [nodes i64][edges i64][degree i64 x nodes][neighbor i64 x edges][edge id i64 x edges]
//   feat   feature_dim elements per node, FeatureDTypeSize bytes each
//   label  i64 per node (-1 = unknown)
//   split  u8 per node (0 none, 1 train, 2 val, 3 test)
//   orig   i64 per node: the node's id in the input
//   name   [length u32][bytes] per node: the node's name in the input
//   etime  i64 per stored edge of the chunk's nodes (adjacency order): its timestamp
//   etype  i64 per stored edge of the chunk's nodes (adjacency order): its edge type
//
// Decoders copy into the partition's arrays at the chunk's place and return
// "" or what is wrong with the chunk ("has the wrong size", ...). Internal to
// datasets/.
#ifndef FANOUT_DATASETS_DETAIL_CHUNKS_H_
#define FANOUT_DATASETS_DETAIL_CHUNKS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/array_view.h"
#include "datasets/partition_store.h"

namespace fanout::datasets::detail {

// adj. Decoding appends after the *edge_pos edges already read (updated), and
// writes indptr[first + 1 .. first + nodes]; neighbors must be in [0, num_nodes).
void EncodeAdjChunk(ArrayView<const int64_t> degrees, ArrayView<const int64_t> neighbors,
                    ArrayView<const int64_t> edge_ids, std::string* out);
// The neighbor ids go to d->indices32 where it is sized (compact topology),
// else d->indices; the edge ids only where d->edge_ids is sized; d->num_edges
// bounds both.
std::string DecodeAdjChunk(const char* p, size_t size, int64_t nodes, int64_t first,
                           int64_t num_nodes, int64_t* edge_pos, PartitionData* d);
// The chunk's edge ids alone, appended to dst at *edge_pos (updated), at most
// `capacity` in all.
std::string DecodeAdjEdgeIds(const char* p, size_t size, int64_t nodes, int64_t capacity,
                             int64_t* edge_pos, int64_t* dst);

// feat: one row (feature_dim floats) encoded in the store's dtype, and back
// (DecodeFeatureRow in partition_store.h).
using ::fanout::EncodeFeatureRow;  // common/feature_dtype.h
std::string DecodeFeatureChunk(const char* p, size_t size, int64_t nodes, int64_t first,
                               PartitionData* d);

// label and orig: one int64 per node.
void EncodeInt64Chunk(ArrayView<const int64_t> values, std::string* out);
std::string DecodeInt64Chunk(const char* p, size_t size, int64_t nodes, int64_t first,
                             int64_t* dst);

// split: one byte per node, at most 3.
void EncodeSplitChunk(ArrayView<const uint8_t> values, std::string* out);
std::string DecodeSplitChunk(const char* p, size_t size, int64_t nodes, int64_t first,
                             uint8_t* dst);

// etime and etype: one int64 per stored edge of the chunk (adjacency order),
// encoded as EncodeInt64Chunk does. Decoding appends at *pos (updated), at
// most `capacity` values in all; etype values must be in [0, num_types).
std::string DecodeEdgeTimeChunk(const char* p, size_t size, int64_t capacity, int64_t* pos,
                                int64_t* dst);
std::string DecodeEdgeTypeChunk(const char* p, size_t size, int64_t capacity, int64_t num_types,
                                int64_t* pos, int32_t* dst);

// eweight: one float32 per stored edge of the chunk (adjacency order), each
// finite and >= 0. Decoding appends at *pos as DecodeEdgeTimeChunk does.
void EncodeFloatChunk(ArrayView<const float> values, std::string* out);
std::string DecodeEdgeWeightChunk(const char* p, size_t size, int64_t capacity, int64_t* pos,
                                  float* dst);

// name: length-prefixed strings, appended to *names in node order.
void EncodeNameChunk(const std::vector<std::string_view>& names, std::string* out);
std::string DecodeNameChunk(const char* p, size_t size, int64_t nodes,
                            std::vector<std::string>* names);

}  // namespace fanout::datasets::detail

#endif  // FANOUT_DATASETS_DETAIL_CHUNKS_H_
