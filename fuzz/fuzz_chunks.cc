// libFuzzer target: the partition store's chunk decoders (adj, feat in each
// dtype, label/orig, split, name) and the CRC trailer check, on bytes as a
// damaged or hostile store would hold them. The first byte picks the kind,
// the second the chunk's node count.
#include <cstdint>
#include <cstring>
#include <string>

#include "datasets/detail/chunk_codec.h"
#include "datasets/detail/chunks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fanout::datasets;
  if (size < 2) return 0;
  const int kind = data[0] % 8;
  const int64_t nodes = data[1] % 9;  // a chunk of 0..8 nodes
  const char* p = reinterpret_cast<const char*>(data + 2);
  size_t n = size - 2;
  size_t payload = 0;
  if (kind == 7) {  // the trailer, verified
    (void)detail::CheckChunk(p, n, true, &payload);
    return 0;
  }
  // A partition of 16 nodes with room for 64 edges; the chunk sits at node 4.
  PartitionData d;
  d.node_begin = 0;
  d.node_end = 16;
  d.indptr.assign(17, 0);
  d.indices.assign(64, 0);
  d.edge_ids.assign(64, 0);
  d.meta.feature_dim = 3;
  const int64_t first = 4;
  std::string err;
  switch (kind) {
    case 0: {
      int64_t edge_pos = 8;
      err = detail::DecodeAdjChunk(p, n, nodes, first, 16, &edge_pos, &d);
      break;
    }
    case 1:
    case 2:
    case 3: {
      d.meta.feature_dtype = kind == 1   ? FeatureDType::kFloat32
                             : kind == 2 ? FeatureDType::kFloat16
                                         : FeatureDType::kInt8;
      d.features.assign(16 * 3 * FeatureDTypeSize(d.meta.feature_dtype), 0);
      err = detail::DecodeFeatureChunk(p, n, nodes, first, &d);
      break;
    }
    case 4: {
      int64_t dst[16];
      err = detail::DecodeInt64Chunk(p, n, nodes, first, dst);
      break;
    }
    case 5: {
      uint8_t dst[16];
      err = detail::DecodeSplitChunk(p, n, nodes, first, dst);
      break;
    }
    case 6: {
      std::vector<std::string> names;
      err = detail::DecodeNameChunk(p, n, nodes, &names);
      break;
    }
  }
  return 0;
}
