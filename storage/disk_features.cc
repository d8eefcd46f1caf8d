#include "storage/disk_features.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace fanout::storage {

namespace {
void NoteMax(std::atomic<int64_t>* at, int64_t v) {
  int64_t cur = at->load(std::memory_order_relaxed);
  while (v > cur && !at->compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}
// The cache's slots for `bytes`, never more than the rows the hot set does
// not hold: a budget (or a peer's figure) larger than the file buys nothing,
// and is not allocated.
int64_t CacheSlots(int64_t bytes, int64_t row_bytes, int64_t rows, int64_t hot_rows) {
  return std::min(SieveCache::SlotsFor(bytes, row_bytes, rows),
                  std::max<int64_t>(0, rows - hot_rows));
}

}  // namespace

Status DiskFeatures::Create(std::shared_ptr<const FeatureFile> file, const DiskCacheOptions& o,
                            const std::vector<int64_t>& hot_order,
                            std::unique_ptr<DiskFeatures>* out) {
  if (o.budget_bytes < 0) return Status::InvalidArgument("a negative feature cache budget");
  if (!(o.hot_fraction >= 0 && o.hot_fraction <= 1))
    return Status::InvalidArgument("the hot set's share of the feature cache must be in [0, 1]");
  std::unique_ptr<DiskFeatures> d(new DiskFeatures());
  d->file_ = std::move(file);
  d->queue_depth_ = o.queue_depth;
  d->budget_ = o.budget_bytes;
  const FeatureFileGeometry& g = d->file_->geometry();
  const int64_t rb = g.row_bytes;
  if (rb > 0) {
    // The hot set: as many of the hottest rows as fit their share.
    const int64_t hot_budget =
        static_cast<int64_t>(static_cast<double>(o.budget_bytes) * o.hot_fraction);
    int64_t lo = 0, hi = std::min<int64_t>(static_cast<int64_t>(hot_order.size()), g.rows);
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (StaticRowSet::BytesFor(mid, rb) <= hot_budget)
        lo = mid;
      else
        hi = mid - 1;
    }
    const int64_t n = lo;
    if (n > 0) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<int64_t> rows(hot_order.begin(), hot_order.begin() + n);
      for (int64_t r : rows)
        if (r < 0 || r >= g.rows)
          return Status::InvalidArgument("hot row " + std::to_string(r) + " is outside the " +
                                         std::to_string(g.rows) + " rows");
      const int64_t entries = StaticRowSet::TableEntriesFor(n);
      d->hot_table_.resize(static_cast<size_t>(2 * entries));
      StaticRowSet::BuildTable(rows.data(), n, d->hot_table_.data(), entries);
      d->hot_rows_.resize(static_cast<size_t>(n * rb));
      // Read in block order: each block once, many in flight.
      std::vector<std::pair<int64_t, int64_t>> by_block(static_cast<size_t>(n));  // (block, slot)
      for (int64_t s = 0; s < n; ++s) by_block[s] = {g.BlockOf(rows[s]), s};
      std::sort(by_block.begin(), by_block.end());
      std::vector<int64_t> blocks, starts;
      for (int64_t i = 0; i < n; ++i)
        if (i == 0 || by_block[i].first != by_block[i - 1].first) {
          blocks.push_back(by_block[i].first);
          starts.push_back(i);
        }
      starts.push_back(n);
      std::unique_ptr<BlockReader> reader;
      FANOUT_RETURN_IF_ERROR(
          BlockReader::Create(std::max(o.queue_depth, 64), g.block_bytes, &reader, d->file_->io()));
      FANOUT_RETURN_IF_ERROR(
          reader->Read(*d->file_, blocks.data(), static_cast<int64_t>(blocks.size()),
                       [&](int64_t k, const char* data) {
                         for (int64_t i = starts[k]; i < starts[k + 1]; ++i) {
                           const int64_t s = by_block[i].second;
                           std::memcpy(d->hot_rows_.data() + s * rb,
                                       data + g.OffsetInBlock(rows[s]), static_cast<size_t>(rb));
                         }
                       }));
      d->block_reads_ += reader->stats().reads;
      d->bytes_read_ += reader->stats().bytes;
      d->hot_seconds_ =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      FANOUT_RETURN_IF_ERROR(StaticRowSet::View(d->hot_table_.data(), entries, d->hot_rows_.data(),
                                                n, rb, g.rows, &d->hot_));
    }
    const int64_t rest = std::max<int64_t>(0, o.budget_bytes - d->hot_.bytes());
    d->cache_ =
        std::make_unique<SieveCache>(CacheSlots(rest, rb, g.rows, d->hot_.size()), rb, g.rows);
  }
  *out = std::move(d);
  return Status::OK();
}

Status DiskFeatures::Attach(std::shared_ptr<const FeatureFile> file, const StaticRowSet& hot,
                            int64_t cache_bytes, int queue_depth,
                            std::unique_ptr<DiskFeatures>* out) {
  std::unique_ptr<DiskFeatures> d(new DiskFeatures());
  d->file_ = std::move(file);
  d->queue_depth_ = queue_depth;
  d->hot_ = hot;
  const int64_t rb = d->file_->geometry().row_bytes;
  const int64_t rows = d->file_->geometry().rows;
  if (rb > 0)
    d->cache_ = std::make_unique<SieveCache>(
        CacheSlots(std::max<int64_t>(0, cache_bytes), rb, rows, hot.size()), rb, rows);
  d->budget_ = d->cache_bytes();
  *out = std::move(d);
  return Status::OK();
}

DiskFeatures::~DiskFeatures() = default;

Status DiskFeatures::UseHotMemory(const int32_t* table, const char* rows) {
  const int64_t entries = hot_.entries(), n = hot_.size();
  if (n == 0) return Status::OK();
  if (std::memcmp(table, hot_table_.data(), hot_table_.size() * 4) != 0 ||
      std::memcmp(rows, hot_rows_.data(), hot_rows_.size()) != 0)
    return Status::Internal("the exported hot set differs from the one read");
  FANOUT_RETURN_IF_ERROR(
      StaticRowSet::View(table, entries, rows, n, row_bytes(), file_->geometry().rows, &hot_));
  std::vector<int32_t>().swap(hot_table_);
  std::vector<char>().swap(hot_rows_);
  return Status::OK();
}

Status DiskFeatures::NewReader(std::unique_ptr<BlockReader>* out) const {
  return BlockReader::Create(queue_depth_,
                             std::max<int64_t>(kFeatureBlockAlign, file_->geometry().block_bytes),
                             out, file_->io());
}

Status DiskFeatures::Gather(const int64_t* rows, int64_t n, char* dst, BlockReader* reader,
                            const ReadOptions& options) {
  const FeatureFileGeometry& g = file_->geometry();
  const int64_t rb = g.row_bytes;
  if (rb == 0 || n == 0) return Status::OK();
  lookups_.fetch_add(n, std::memory_order_relaxed);
  // (block, position) of every row neither cache holds.
  std::vector<std::pair<int64_t, int64_t>> missing;
  int64_t hot = 0, cached = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = rows[i];
    if (const char* p = hot_.Find(r)) {
      std::memcpy(dst + i * rb, p, static_cast<size_t>(rb));
      ++hot;
    } else if (cache_ && cache_->Lookup(r, dst + i * rb)) {
      ++cached;
    } else {
      missing.emplace_back(g.BlockOf(r), i);
    }
  }
  hot_hits_.fetch_add(hot, std::memory_order_relaxed);
  cache_hits_.fetch_add(cached, std::memory_order_relaxed);
  if (missing.empty()) return Status::OK();
  misses_.fetch_add(static_cast<int64_t>(missing.size()), std::memory_order_relaxed);
  std::sort(missing.begin(), missing.end());
  std::vector<int64_t> blocks, starts;
  for (size_t i = 0; i < missing.size(); ++i)
    if (i == 0 || missing[i].first != missing[i - 1].first) {
      blocks.push_back(missing[i].first);
      starts.push_back(static_cast<int64_t>(i));
    }
  starts.push_back(static_cast<int64_t>(missing.size()));
  const BlockReaderStats before = reader->stats();
  Status st = reader->Read(
      *file_, blocks.data(), static_cast<int64_t>(blocks.size()),
      [&](int64_t k, const char* data) {
        int64_t last = -1;
        for (int64_t j = starts[k]; j < starts[k + 1]; ++j) {
          const int64_t i = missing[j].second, r = rows[i];
          const char* src = data + g.OffsetInBlock(r);
          std::memcpy(dst + i * rb, src, static_cast<size_t>(rb));
          if (r != last && cache_) cache_->Insert(r, src);
          last = r;
        }
      },
      options);
  const BlockReaderStats& after = reader->stats();
  block_reads_.fetch_add(after.reads - before.reads, std::memory_order_relaxed);
  bytes_read_.fetch_add(after.bytes - before.bytes, std::memory_order_relaxed);
  NoteMax(&max_in_flight_, after.max_in_flight);
  if (!st.ok()) read_errors_.fetch_add(1, std::memory_order_relaxed);
  return st;
}

DiskFeatureStats DiskFeatures::stats() const {
  DiskFeatureStats s;
  s.lookups = lookups_.load(std::memory_order_relaxed);
  s.hot_hits = hot_hits_.load(std::memory_order_relaxed);
  s.cache_hits = cache_hits_.load(std::memory_order_relaxed);
  s.misses = misses_.load(std::memory_order_relaxed);
  s.block_reads = block_reads_.load(std::memory_order_relaxed);
  s.bytes_read = bytes_read_.load(std::memory_order_relaxed);
  s.read_errors = read_errors_.load(std::memory_order_relaxed);
  s.evictions = cache_ ? cache_->evictions() : 0;
  s.cache_bytes = cache_bytes();
  s.budget_bytes = budget_;
  s.hot_rows = hot_.size();
  s.cache_slots = cache_ ? cache_->slots() : 0;
  s.queue_depth = queue_depth_;
  s.max_in_flight = max_in_flight_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace fanout::storage
