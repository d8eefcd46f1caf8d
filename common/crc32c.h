// CRC-32C (Castagnoli), hardware-accelerated with SSE4.2 where the CPU has it
// (about 8 GB/s per core), table-driven otherwise. Used for the partition
// store's per-chunk checksums.
#ifndef FANOUT_COMMON_CRC32C_H_
#define FANOUT_COMMON_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace fanout {

// Extends `crc` (0 to start) over n bytes.
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);

}  // namespace fanout

#endif  // FANOUT_COMMON_CRC32C_H_
