#include "cache/feature_cache.h"

#include <cassert>
#include <cstring>
#include <mutex>

#include "common/id_range.h"

namespace fanout::cache {

const char* PolicyName(Policy p) { return p == Policy::kStatic ? "static" : "sieve"; }

int64_t CacheOptions::RowsFromBytes(int64_t bytes, int64_t feature_dim) {
  return feature_dim > 0 ? bytes / (feature_dim * 4) : 0;
}

int64_t CacheOptions::RowsFromFraction(double fraction, int64_t num_nodes) {
  if (!(fraction > 0)) return 0;
  if (fraction >= 1) return num_nodes;
  return static_cast<int64_t>(fraction * static_cast<double>(num_nodes));
}

Status FeatureCache::Create(const CacheOptions& o, std::unique_ptr<FeatureCache>* out) {
  if (o.num_nodes < 0 || o.feature_dim < 1)
    return Status::InvalidArgument("cache needs num_nodes >= 0 and feature_dim >= 1, got " +
                                   std::to_string(o.num_nodes) + " and " +
                                   std::to_string(o.feature_dim));
  if (o.capacity_rows < 0 || o.capacity_rows > o.num_nodes)
    return Status::InvalidArgument("cache capacity of " + std::to_string(o.capacity_rows) +
                                   " rows is outside [0, " + std::to_string(o.num_nodes) +
                                   "] (the number of nodes)");
  if (o.capacity_rows >= (int64_t{1} << 31))
    return Status::InvalidArgument("cache capacity of " + std::to_string(o.capacity_rows) +
                                   " rows exceeds 2^31");
  std::unique_ptr<FeatureCache> c(new FeatureCache(o));
  try {
    c->rows_.resize(static_cast<size_t>(o.capacity_rows * o.feature_dim));
    c->slot_of_.assign(static_cast<size_t>(o.num_nodes), -1);
    c->id_of_.assign(static_cast<size_t>(o.capacity_rows), -1);
    c->prev_.assign(static_cast<size_t>(o.capacity_rows), -1);
    c->next_.assign(static_cast<size_t>(o.capacity_rows), -1);
    c->visited_.reset(new std::atomic<uint8_t>[static_cast<size_t>(o.capacity_rows)]);
    for (int64_t s = 0; s < o.capacity_rows; ++s)
      c->visited_[s].store(0, std::memory_order_relaxed);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("cannot allocate a cache of " +
                                     std::to_string(o.capacity_rows) + " rows x " +
                                     std::to_string(o.feature_dim) + " floats");
  }
  *out = std::move(c);
  return Status::OK();
}

FeatureCache::~FeatureCache() = default;

int64_t FeatureCache::memory_bytes() const {
  return static_cast<int64_t>(rows_.size() * 4 + slot_of_.size() * 4 + id_of_.size() * 8 +
                              prev_.size() * 4 + next_.size() * 4 +
                              static_cast<size_t>(options_.capacity_rows));
}

int64_t FeatureCache::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return used_;
}

std::vector<int64_t> FeatureCache::Ids() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<int64_t> out;
  for (int64_t id : id_of_)
    if (id >= 0) out.push_back(id);
  return out;
}

CacheStats FeatureCache::stats() const {
  CacheStats s;
  s.lookups = lookups_.load();
  s.hits = hits_.load();
  s.bytes_from_cache = s.hits * options_.feature_dim * 4;
  s.admitted = admitted_.load();
  s.evicted = evicted_.load();
  return s;
}

int32_t FeatureCache::EvictOne() {
  assert(used_ == options_.capacity_rows && tail_ != -1);  // REQUIRES: full
  int32_t o = hand_ != -1 ? hand_ : tail_;
  while (visited_[o].load(std::memory_order_relaxed)) {
    visited_[o].store(0, std::memory_order_relaxed);
    o = prev_[o] != -1 ? prev_[o] : tail_;
  }
  hand_ = prev_[o];
  // Unlink o.
  if (prev_[o] != -1)
    next_[prev_[o]] = next_[o];
  else
    head_ = next_[o];
  if (next_[o] != -1)
    prev_[next_[o]] = prev_[o];
  else
    tail_ = prev_[o];
  slot_of_[id_of_[o]] = -1;
  id_of_[o] = -1;
  --used_;
  evicted_.fetch_add(1, std::memory_order_relaxed);
  return o;
}

bool FeatureCache::Place(int64_t id, const float* row, bool evict) {
  if (slot_of_[id] >= 0) return false;
  int32_t s;
  if (used_ < options_.capacity_rows) {
    s = static_cast<int32_t>(used_);  // slots fill in order before any eviction
    while (id_of_[s] != -1) s = (s + 1) % static_cast<int32_t>(options_.capacity_rows);
  } else if (evict && options_.capacity_rows > 0) {
    s = EvictOne();
  } else {
    return false;
  }
  std::memcpy(rows_.data() + static_cast<size_t>(s) * options_.feature_dim, row,
              options_.feature_dim * 4);
  id_of_[s] = id;
  slot_of_[id] = s;
  visited_[s].store(0, std::memory_order_relaxed);
  // Newest at the head.
  prev_[s] = -1;
  next_[s] = head_;
  if (head_ != -1) prev_[head_] = s;
  head_ = s;
  if (tail_ == -1) tail_ = s;
  ++used_;
  return true;
}

int64_t FeatureCache::Insert(ArrayView<const int64_t> ids, const float* rows) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  int64_t stored = 0;
  for (size_t i = 0; i < ids.size() && used_ < options_.capacity_rows; ++i) {
    int64_t id = ids[i];
    if (id < 0 || id >= options_.num_nodes) continue;
    stored += Place(id, rows + i * options_.feature_dim, /*evict=*/false);
  }
  return stored;
}

Status FeatureCache::Lookup(ArrayView<const int64_t> ids, float* out,
                            std::vector<int64_t>* misses) {
  const int64_t d = options_.feature_dim;
  // Every policy reads under the shared lock: Insert() may be filling a
  // static cache while lookups run (readers do not block each other).
  std::shared_lock<std::shared_mutex> lock(mu_);
  int64_t hits = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t id = ids[i];
    if (id < 0 || id >= options_.num_nodes)
      return IdOutOfRange(id, i, 0, options_.num_nodes, kNoPosition);
    int32_t s = slot_of_[id];
    if (s < 0) {
      misses->push_back(static_cast<int64_t>(i));
      continue;
    }
    std::memcpy(out + i * d, rows_.data() + static_cast<size_t>(s) * d, d * 4);
    if (options_.policy == Policy::kSieve) visited_[s].store(1, std::memory_order_relaxed);
    ++hits;
  }
  lookups_.fetch_add(static_cast<int64_t>(ids.size()), std::memory_order_relaxed);
  hits_.fetch_add(hits, std::memory_order_relaxed);
  return Status::OK();
}

void FeatureCache::Admit(ArrayView<const int64_t> ids, const float* rows) {
  if (options_.policy != Policy::kSieve || options_.capacity_rows == 0) return;
  std::unique_lock<std::shared_mutex> lock(mu_);
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t id = ids[i];
    if (id < 0 || id >= options_.num_nodes) continue;
    if (Place(id, rows + i * options_.feature_dim, /*evict=*/true))
      admitted_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace fanout::cache
