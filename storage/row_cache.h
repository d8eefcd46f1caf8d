// The disk tier's host cache of feature rows, in two parts that share a
// byte budget (storage/disk_features.h):
//
//  - StaticRowSet: the hot set, chosen once (by degree, hottest first) and
//    never changed: a table of (row, slot) pairs (open addressing, linear
//    probing, a power-of-two number of entries) and the rows themselves.
//    Immutable, so lookups take no lock; its two arrays may live in the
//    server's sealed export, where same-host clients read the same memory.
//  - SieveCache: the rows read since, under SIEVE (Zhang et al., NSDI '24):
//    a FIFO queue whose hand evicts the oldest row not hit since the hand
//    last passed it; a hit only sets a bit. Admission is frequency-aware
//    (TinyLFU's rule, Einziger et al.): every lookup counts its row in a
//    saturating byte per partition row, halved every 8 lookups per row; a
//    row read while the cache is full replaces SIEVE's victim only if it
//    was asked for more often, so one-off rows do not push out repeated ones
//    (on GNN traces, whose popularity is stable, SIEVE alone kept fewer hits
//    than a static set of the same size). Sharded by row (a mutex, table,
//    queue and slots per shard); every byte allocated up front, so its
//    memory never grows.
//
// Thread safety: StaticRowSet is immutable; SieveCache's Lookup and Insert
// are safe from any thread.
#ifndef FANOUT_STORAGE_ROW_CACHE_H_
#define FANOUT_STORAGE_ROW_CACHE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status.h"

namespace fanout::storage {

class StaticRowSet {
 public:
  StaticRowSet() = default;
  // Table entries for n rows: a power of two of at least 2n (at least 2).
  static int64_t TableEntriesFor(int64_t n);
  // Bytes of a set of n rows of row_bytes (rows and table).
  static int64_t BytesFor(int64_t n, int64_t row_bytes);
  // Fills `table` (TableEntriesFor(n) pairs: 2 int32 each) so that row
  // rows[i] is found in slot i. REQUIRES: distinct rows in [0, 2^31).
  static void BuildTable(const int64_t* rows, int64_t n, int32_t* table, int64_t entries);
  // A set over memory the caller keeps alive (built here, or mapped from an
  // export: then every entry is checked: a power-of-two table, slots in
  // [0, held), rows in [0, partition_rows), at least one empty entry).
  static Status View(const int32_t* table, int64_t entries, const char* rows, int64_t held,
                     int64_t row_bytes, int64_t partition_rows, StaticRowSet* out);

  // Row `row`'s bytes, or null where the set does not hold it.
  const char* Find(int64_t row) const {
    if (entries_ == 0 || row < 0 || row > INT32_MAX) return nullptr;
    const int32_t key = static_cast<int32_t>(row);
    uint64_t i = Hash(key) & mask_;
    for (int64_t probes = 0; probes < entries_; ++probes) {
      const int32_t k = table_[2 * i];
      if (k == key) return rows_ + static_cast<int64_t>(table_[2 * i + 1]) * row_bytes_;
      if (k < 0) return nullptr;
      i = (i + 1) & mask_;
    }
    return nullptr;
  }
  int64_t size() const { return held_; }
  int64_t bytes() const { return held_ * row_bytes_ + entries_ * 8; }
  int64_t entries() const { return entries_; }

  static uint64_t Hash(int32_t key) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(key)) * 0x9e3779b97f4a7c15ULL) >> 17;
  }

 private:
  const int32_t* table_ = nullptr;
  const char* rows_ = nullptr;
  int64_t entries_ = 0, held_ = 0, row_bytes_ = 0;
  uint64_t mask_ = 0;
};

class SieveCache {
 public:
  static constexpr int kShards = 64;
  // A cache of `slots` rows of row_bytes (0 slots: holds nothing) over a
  // partition of `rows` rows (their access counts).
  SieveCache(int64_t slots, int64_t row_bytes, int64_t rows);
  ~SieveCache();
  SieveCache(const SieveCache&) = delete;
  SieveCache& operator=(const SieveCache&) = delete;
  // Bytes such a cache allocates (rows, tables, queues, access counts).
  static int64_t BytesFor(int64_t slots, int64_t row_bytes, int64_t rows);
  // The most slots whose BytesFor fits `bytes` (0 where not even the counts fit).
  static int64_t SlotsFor(int64_t bytes, int64_t row_bytes, int64_t rows);

  // Copies row `row` into dst and marks it hit; false where not held.
  bool Lookup(int64_t row, char* dst);
  // Admits row `row` (row_bytes at src), evicting by SIEVE where full; a row
  // already held is left as it is.
  void Insert(int64_t row, const char* src);

  int64_t slots() const { return slots_; }
  int64_t bytes() const { return bytes_; }
  int64_t held() const;
  int64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
  int64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  struct Shard;
  Shard& ShardOf(int64_t row) { return *shards_[static_cast<uint64_t>(row) % kShards]; }
  uint8_t Count(int64_t row);  // counts an access; the row's count
  std::vector<std::unique_ptr<Shard>> shards_;
  int64_t slots_ = 0, row_bytes_ = 0, bytes_ = 0, rows_ = 0;
  // Access counts per partition row (relaxed: a lost count is harmless).
  std::unique_ptr<std::atomic<uint8_t>[]> counts_;
  std::atomic<int64_t> accesses_{0};
  std::atomic<int64_t> evictions_{0}, refused_{0};
};

}  // namespace fanout::storage

#endif  // FANOUT_STORAGE_ROW_CACHE_H_
