// Chunk values of the partition store: a little-endian payload followed by
// the CRC-32C of the payload. Internal to datasets/.
#ifndef FANOUT_DATASETS_DETAIL_CHUNK_CODEC_H_
#define FANOUT_DATASETS_DETAIL_CHUNK_CODEC_H_

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/crc32c.h"

namespace fanout::datasets::detail {

inline uint32_t Crc32(const void* data, size_t n) { return Crc32c(data, n); }

// Appends the trailer to a finished payload.
inline void SealChunk(std::string* value) {
  uint32_t crc = Crc32(value->data(), value->size());
  value->append(reinterpret_cast<const char*>(&crc), sizeof crc);
}

// Checks the trailer; on success *payload_size is the payload's length.
inline bool CheckChunk(const char* data, size_t size, bool verify, size_t* payload_size) {
  if (size < 4) return false;
  *payload_size = size - 4;
  if (!verify) return true;
  uint32_t stored;
  std::memcpy(&stored, data + size - 4, 4);
  return stored == Crc32(data, size - 4);
}

inline void AppendRaw(std::string* out, const void* data, size_t n) {
  out->append(static_cast<const char*>(data), n);
}

inline std::string ChunkKey(const char* prefix, int64_t chunk) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s/%010lld", prefix, static_cast<long long>(chunk));
  return buf;
}

}  // namespace fanout::datasets::detail

#endif  // FANOUT_DATASETS_DETAIL_CHUNK_CODEC_H_
