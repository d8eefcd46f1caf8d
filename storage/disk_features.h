// DiskFeatures: a partition's feature rows served from its feature file
// (storage/feature_file.h) through a host cache inside a byte budget:
//
//   lookup: the hot set (StaticRowSet: the hottest rows by degree, read
//           once at start; no lock), then the SIEVE cache (rows read since),
//           then the file: the missing rows' blocks, each once, read
//           together by the calling thread's BlockReader (io_uring, O_DIRECT,
//           queue depth many in flight), checked against their checksums,
//           and admitted to the SIEVE cache.
//
// The server builds one (Create) and may move its hot set into its sealed
// export (UseHotMemory); a same-host client attaches to the exported hot set
// with its own SIEVE cache and its own reads of the same file (Attach), so
// it sends no request for features at all.
//
// Bytes: the budget covers the hot set's rows and table and the SIEVE
// cache's rows, tables and queues; all of it is allocated up front
// (cache_bytes() never grows).
//
// Thread safety: Gather and stats from any thread, each with its own
// BlockReader (NewReader); UseHotMemory before any Gather.
#ifndef FANOUT_STORAGE_DISK_FEATURES_H_
#define FANOUT_STORAGE_DISK_FEATURES_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "storage/block_reader.h"
#include "storage/feature_file.h"
#include "storage/row_cache.h"

namespace fanout::storage {

struct DiskCacheOptions {
  // The cache's bytes: hot set and SIEVE cache together (0: no cache; every
  // row is read from the file).
  int64_t budget_bytes = int64_t{1} << 30;
  // The share of the budget for the hot set (the rest is the SIEVE cache's).
  double hot_fraction = 0.9;
  // Reads in flight at once per reading thread.
  int queue_depth = 32;
};

struct DiskFeatureStats {
  int64_t lookups = 0;      // rows asked for
  int64_t hot_hits = 0;     // ... found in the hot set
  int64_t cache_hits = 0;   // ... found in the SIEVE cache
  int64_t misses = 0;       // ... read from the file
  int64_t block_reads = 0;  // blocks read (a block holds rows_per_block rows)
  int64_t bytes_read = 0;
  int64_t read_errors = 0;  // reads refused: a damaged block, an I/O error
  int64_t evictions = 0;
  int64_t cache_bytes = 0, budget_bytes = 0;  // allocated, and allowed
  int64_t hot_rows = 0, cache_slots = 0;
  int queue_depth = 0;
  int64_t max_in_flight = 0;  // most reads one thread had outstanding
  double hit_rate() const {
    return lookups > 0 ? static_cast<double>(hot_hits + cache_hits) / lookups : 0;
  }
};

class DiskFeatures {
 public:
  // Opens the tier over `file`: the hot set from `hot_order` (local rows,
  // hottest first; as many as the hot share of the budget holds) read now,
  // and an empty SIEVE cache in the rest.
  static Status Create(std::shared_ptr<const FeatureFile> file, const DiskCacheOptions& options,
                       const std::vector<int64_t>& hot_order, std::unique_ptr<DiskFeatures>* out);
  // A same-host client's tier: the server's hot set (memory the caller keeps
  // alive, checked by StaticRowSet::View), and a SIEVE cache of
  // `cache_bytes` of its own.
  static Status Attach(std::shared_ptr<const FeatureFile> file, const StaticRowSet& hot,
                       int64_t cache_bytes, int queue_depth, std::unique_ptr<DiskFeatures>* out);
  ~DiskFeatures();

  // A reader for one thread's Gather calls.
  Status NewReader(std::unique_ptr<BlockReader>* out) const;
  // Rows rows[0 .. n) (local row ids, checked by the caller) into dst
  // (n x row_bytes, in the file's dtype): from the caches, the rest read.
  // Corruption naming the file and block where one is damaged.
  // `options`: the reads' class and gate (storage/io_gate.h).
  Status Gather(const int64_t* rows, int64_t n, char* dst, BlockReader* reader,
                const ReadOptions& options = {});

  // The hot set's arrays (to export: table pairs and rows), and the switch
  // to a copy of them elsewhere (the sealed export): the owned ones are
  // freed. REQUIRES: the same contents; before any Gather.
  const std::vector<int32_t>& hot_table() const { return hot_table_; }
  const std::vector<char>& hot_rows() const { return hot_rows_; }
  Status UseHotMemory(const int32_t* table, const char* rows);

  const FeatureFile& file() const { return *file_; }
  const StaticRowSet& hot() const { return hot_; }
  int64_t row_bytes() const { return file_->geometry().row_bytes; }
  int64_t cache_bytes() const { return hot_.bytes() + (cache_ ? cache_->bytes() : 0); }
  int64_t sieve_bytes() const { return cache_ ? cache_->bytes() : 0; }
  int queue_depth() const { return queue_depth_; }
  double hot_seconds() const { return hot_seconds_; }  // reading the hot set at start
  DiskFeatureStats stats() const;

 private:
  DiskFeatures() = default;
  std::shared_ptr<const FeatureFile> file_;
  int queue_depth_ = 32;
  int64_t budget_ = 0;
  std::vector<int32_t> hot_table_;
  std::vector<char> hot_rows_;
  StaticRowSet hot_;
  std::unique_ptr<SieveCache> cache_;
  double hot_seconds_ = 0;
  mutable std::atomic<int64_t> lookups_{0}, hot_hits_{0}, cache_hits_{0}, misses_{0},
      block_reads_{0}, bytes_read_{0}, read_errors_{0}, max_in_flight_{0};
};

}  // namespace fanout::storage

#endif  // FANOUT_STORAGE_DISK_FEATURES_H_
