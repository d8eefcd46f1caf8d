// A live partition's compacted base on disk (docs/DESIGN.md, "Live updates":
// "A compacted base on disk"): the CSR a compaction made at version c, the
// feature rows and labels replaced at or below c, the added edges' next
// ordinal and the retry table at c. With it, a restart replays only the log's
// records above c, and the log is cut there (UpdateLog::DropThrough).
//
// File layout (little-endian), `part-<k>.base`:
//   header  = "FNLBASE1" u32 format u32 part u64 version i64 node_begin
//             i64 rows i64 edges i64 next_ordinal u32 flags u32 crc   (64 bytes)
//   then sections, each u64 bytes, the bytes, u32 CRC-32C of the bytes:
//   indptr, indices (int64, or int32 where flags say narrow), edge ids,
//   times, types, weights (empty where the dataset has none), the overlay
//   (feature rows and labels with their batches) and the retry table;
//   then "FNLBEND1".
// Written to `part-<k>.base.tmp`, synced, renamed over, the folder synced:
// a crash leaves the old file or the new one, whole. Read as a peer's bytes:
// every size, offset, id, type and weight checked before use; a damaged file
// is Corruption naming it and what was wrong, never a crash.
#ifndef FANOUT_LIVE_BASE_FILE_H_
#define FANOUT_LIVE_BASE_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/array_view.h"
#include "common/status.h"
#include "live/updates.h"
#include "live/versioned_partition.h"

namespace fanout::live {

// The feature rows and labels a base holds over the dataset's (one version
// per node: the newest at or below the base's version, with its batch).
struct BaseOverlay {
  std::vector<int64_t> feature_nodes;
  std::vector<uint64_t> feature_seqs;
  std::string feature_bytes;  // feature_nodes.size() rows of the dataset's row bytes
  std::vector<int64_t> label_nodes;
  std::vector<uint64_t> label_seqs;
  std::vector<int64_t> labels;
};

// What a base file holds besides its arrays.
struct BaseFileHeader {
  int part = 0;
  uint64_t version = 0;
  int64_t node_begin = 0, rows = 0, edges = 0;
  int64_t next_ordinal = 0;  // the added edges' ordinal after batches 1..version
  int64_t file_bytes = 0;    // the file's size (ReadBaseFile sets it)
};

// Writes `path` (through path.tmp; see above) from a generation's base view;
// *file_bytes (may be null): the file's size.
Status WriteBaseFile(const std::string& path, const BaseFileHeader& header,
                     const sampler::PartitionView& base, const BaseOverlay& overlay,
                     const RetryState& retries, int64_t* file_bytes = nullptr);

// Reads `path` for a partition of shape `shape` whose rows start at
// `node_begin` and number `rows`: NotFound where there is none; Corruption
// naming the file and what is wrong where it is damaged or another
// partition's.
Status ReadBaseFile(const std::string& path, const LiveShape& shape, int part, int64_t node_begin,
                    int64_t rows, BaseFileHeader* header, Generation::Arrays* arrays,
                    BaseOverlay* overlay, RetryState* retries);

}  // namespace fanout::live

#endif  // FANOUT_LIVE_BASE_FILE_H_
