// FeatureCache: feature rows of hot nodes held in host memory, keyed by global
// node id, consulted before any request so that only misses cross the network.
//
// The contents start from a hot set chosen by the caller (by degree, or by
// pre-sampling: see client/cached_source.h). With the SIEVE policy the cache
// also adapts: every fetched miss is admitted and SIEVE (Zhang et al., NSDI
// 2024) picks what to evict; with the static policy the hot set never changes
// and lookups only share a reader lock.
//
// Capacity is given in rows (RowsFromBytes()/RowsFromFraction() convert); memory_bytes()
// accounts for the rows, the id index (4 bytes per node of the graph) and the
// policy's per-slot state.
//
// Thread safety: all methods may be called concurrently. Lookups share a
// reader lock (SIEVE hits set an atomic bit); Insert and admits take it
// exclusively.
#ifndef FANOUT_CACHE_FEATURE_CACHE_H_
#define FANOUT_CACHE_FEATURE_CACHE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/array_view.h"
#include "common/status.h"

namespace fanout::cache {

enum class Policy { kStatic, kSieve };
const char* PolicyName(Policy p);

struct CacheOptions {
  int64_t num_nodes = 0;      // global ids are in [0, num_nodes)
  int64_t feature_dim = 0;    // float32 values per row
  int64_t capacity_rows = 0;  // rows the cache holds
  Policy policy = Policy::kStatic;

  // Capacity helpers.
  static int64_t RowsFromBytes(int64_t bytes, int64_t feature_dim);
  static int64_t RowsFromFraction(double fraction, int64_t num_nodes);
};

struct CacheStats {
  int64_t lookups = 0, hits = 0;  // rows
  int64_t bytes_from_cache = 0;
  int64_t admitted = 0, evicted = 0;
  double hit_rate() const { return lookups ? static_cast<double>(hits) / lookups : 0; }
};

class FeatureCache {
 public:
  static Status Create(const CacheOptions& options, std::unique_ptr<FeatureCache>* out);
  ~FeatureCache();
  FeatureCache(const FeatureCache&) = delete;
  FeatureCache& operator=(const FeatureCache&) = delete;

  // Loads rows (rows[i] is ids[i]'s row, feature_dim floats) until the cache
  // is full; ids already present are skipped. Returns how many were stored.
  int64_t Insert(ArrayView<const int64_t> ids, const float* rows);

  // Copies the rows of cached ids to out + i * feature_dim and appends the
  // positions i of the misses to *misses (in order). InvalidArgument on an
  // id outside [0, num_nodes).
  Status Lookup(ArrayView<const int64_t> ids, float* out, std::vector<int64_t>* misses);

  // After a fetch: offers the rows of missed ids (rows[i] for ids[i]). SIEVE
  // admits them, evicting as needed; static ignores them.
  void Admit(ArrayView<const int64_t> ids, const float* rows);

  int64_t size() const;
  int64_t capacity() const { return options_.capacity_rows; }
  int64_t memory_bytes() const;
  const CacheOptions& options() const { return options_; }
  CacheStats stats() const;
  // The cached ids, in slot order (tests, reports).
  std::vector<int64_t> Ids() const;

 private:
  explicit FeatureCache(const CacheOptions& o) : options_(o) {}
  // Stores one row in a free slot or, for SIEVE, an evicted one. REQUIRES: exclusive.
  bool Place(int64_t id, const float* row, bool evict);
  int32_t EvictOne();  // SIEVE: returns the freed slot. REQUIRES: exclusive, full.

  CacheOptions options_;
  std::vector<float> rows_;       // capacity x feature_dim
  std::vector<int32_t> slot_of_;  // per node: slot or -1
  std::vector<int64_t> id_of_;    // per slot: node or -1
  int64_t used_ = 0;
  // SIEVE queue: a doubly linked list of slots, newest at head; the hand moves
  // from the tail toward the head.
  std::unique_ptr<std::atomic<uint8_t>[]> visited_;
  std::vector<int32_t> prev_, next_;
  int32_t head_ = -1, tail_ = -1, hand_ = -1;
  mutable std::shared_mutex mu_;
  std::atomic<int64_t> lookups_{0}, hits_{0}, admitted_{0}, evicted_{0};
};

}  // namespace fanout::cache

#endif  // FANOUT_CACHE_FEATURE_CACHE_H_
