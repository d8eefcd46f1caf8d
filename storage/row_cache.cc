#include "storage/row_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace fanout::storage {

// ---- StaticRowSet ----

int64_t StaticRowSet::TableEntriesFor(int64_t n) {
  int64_t e = 2;
  while (e < 2 * n) e *= 2;
  return e;
}

int64_t StaticRowSet::BytesFor(int64_t n, int64_t row_bytes) {
  return n <= 0 ? 0 : n * row_bytes + TableEntriesFor(n) * 8;
}

void StaticRowSet::BuildTable(const int64_t* rows, int64_t n, int32_t* table, int64_t entries) {
  const uint64_t mask = static_cast<uint64_t>(entries) - 1;
  for (int64_t i = 0; i < entries; ++i) table[2 * i] = -1, table[2 * i + 1] = -1;
  for (int64_t s = 0; s < n; ++s) {
    const int32_t key = static_cast<int32_t>(rows[s]);
    uint64_t i = Hash(key) & mask;
    while (table[2 * i] >= 0) i = (i + 1) & mask;
    table[2 * i] = key;
    table[2 * i + 1] = static_cast<int32_t>(s);
  }
}

Status StaticRowSet::View(const int32_t* table, int64_t entries, const char* rows, int64_t held,
                          int64_t row_bytes, int64_t partition_rows, StaticRowSet* out) {
  StaticRowSet s;
  if (held == 0 && entries == 0) {
    *out = s;
    return Status::OK();
  }
  if (entries < 2 || (entries & (entries - 1)) != 0)
    return Status::Corruption("the hot-row table has " + std::to_string(entries) +
                              " entries, not a power of two");
  if (held < 0 || held >= entries || row_bytes < 0)
    return Status::Corruption("the hot-row table holds " + std::to_string(held) + " rows in " +
                              std::to_string(entries) + " entries");
  int64_t empty = 0, used = 0;
  for (int64_t i = 0; i < entries; ++i) {
    const int32_t key = table[2 * i], slot = table[2 * i + 1];
    if (key < 0) {
      ++empty;
      continue;
    }
    if (key >= partition_rows || slot < 0 || slot >= held)
      return Status::Corruption("the hot-row table names row " + std::to_string(key) + " in slot " +
                                std::to_string(slot) + ", outside the partition's " +
                                std::to_string(partition_rows) + " rows or the " +
                                std::to_string(held) + " held");
    ++used;
  }
  if (empty == 0 || used != held)
    return Status::Corruption("the hot-row table has " + std::to_string(used) + " rows for " +
                              std::to_string(held) + " held and " + std::to_string(empty) +
                              " empty entries");
  s.table_ = table;
  s.rows_ = rows;
  s.entries_ = entries;
  s.held_ = held;
  s.row_bytes_ = row_bytes;
  s.mask_ = static_cast<uint64_t>(entries) - 1;
  *out = s;
  return Status::OK();
}

// ---- SieveCache ----

struct SieveCache::Shard {
  std::mutex mu;
  int64_t n = 0, row_bytes = 0;
  std::vector<char> rows;           // n x row_bytes
  std::vector<int32_t> row_of;      // per slot: its row, -1 free
  std::vector<int32_t> prev, next;  // the queue: head (newest) .. tail (oldest) by next
  std::vector<uint8_t> visited;
  std::vector<int32_t> table;  // (row, slot) pairs, row -1 = empty
  uint64_t mask = 0;
  int32_t head = -1, tail = -1, hand = -1;
  int64_t used = 0;

  uint64_t Home(int32_t row) const { return StaticRowSet::Hash(row) & mask; }
  int32_t Find(int32_t row) const {
    for (uint64_t i = Home(row);; i = (i + 1) & mask) {
      if (table[2 * i] == row) return table[2 * i + 1];
      if (table[2 * i] < 0) return -1;
    }
  }
  void Put(int32_t row, int32_t slot) {
    uint64_t i = Home(row);
    while (table[2 * i] >= 0) i = (i + 1) & mask;
    table[2 * i] = row;
    table[2 * i + 1] = slot;
  }
  // Backward-shift deletion: no tombstones, probes stay short.
  void Erase(int32_t row) {
    uint64_t i = Home(row);
    while (table[2 * i] != row) {
      if (table[2 * i] < 0) return;
      i = (i + 1) & mask;
    }
    uint64_t j = i;
    for (;;) {
      j = (j + 1) & mask;
      if (table[2 * j] < 0) break;
      const uint64_t k = Home(table[2 * j]);
      const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
      if (stays) continue;
      table[2 * i] = table[2 * j];
      table[2 * i + 1] = table[2 * j + 1];
      i = j;
    }
    table[2 * i] = -1;
    table[2 * i + 1] = -1;
  }
  void Unlink(int32_t s) {
    if (prev[s] >= 0)
      next[prev[s]] = next[s];
    else
      head = next[s];
    if (next[s] >= 0)
      prev[next[s]] = prev[s];
    else
      tail = prev[s];
    prev[s] = next[s] = -1;
  }
  void PushHead(int32_t s) {
    prev[s] = -1;
    next[s] = head;
    if (head >= 0) prev[head] = s;
    head = s;
    if (tail < 0) tail = s;
  }
  // SIEVE: from the hand (or the tail), toward the head, clearing hit bits,
  // to the first row not hit (the victim); the hand rests on it.
  int32_t Victim() {
    int32_t o = hand >= 0 ? hand : tail;
    while (visited[o]) {
      visited[o] = 0;
      o = prev[o] >= 0 ? prev[o] : tail;
    }
    hand = o;
    return o;
  }
  // Evicts the victim; the hand moves on past it.
  int32_t Evict(int32_t o) {
    hand = prev[o];
    Unlink(o);
    Erase(row_of[o]);
    row_of[o] = -1;
    return o;
  }
};

namespace {
// How many of `slots` shard j gets.
int64_t ShardSlots(int64_t slots, int j) {
  return slots / SieveCache::kShards + (j < slots % SieveCache::kShards ? 1 : 0);
}
int64_t ShardBytes(int64_t n, int64_t row_bytes) {
  return n == 0 ? 0 : n * (row_bytes + 4 + 4 + 4 + 1) + StaticRowSet::TableEntriesFor(n) * 8;
}
}  // namespace

int64_t SieveCache::BytesFor(int64_t slots, int64_t row_bytes, int64_t rows) {
  if (slots <= 0) return 0;
  int64_t b = rows;  // the access counts
  for (int j = 0; j < kShards; ++j) b += ShardBytes(ShardSlots(slots, j), row_bytes);
  return b;
}

int64_t SieveCache::SlotsFor(int64_t bytes, int64_t row_bytes, int64_t rows) {
  if (bytes <= rows) return 0;
  int64_t lo = 0, hi = bytes / std::max<int64_t>(1, row_bytes + 13) + 1;
  while (lo < hi) {  // the largest slots with BytesFor(slots) <= bytes
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (BytesFor(mid, row_bytes, rows) <= bytes)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

SieveCache::SieveCache(int64_t slots, int64_t row_bytes, int64_t rows)
    : slots_(std::max<int64_t>(0, slots)), row_bytes_(row_bytes) {
  if (slots_ > 0) {
    rows_ = std::max<int64_t>(0, rows);
    counts_.reset(new std::atomic<uint8_t>[static_cast<size_t>(rows_)]);
    for (int64_t r = 0; r < rows_; ++r) counts_[r].store(0, std::memory_order_relaxed);
    bytes_ += rows_;
  }
  for (int j = 0; j < kShards; ++j) {
    auto s = std::make_unique<Shard>();
    s->n = ShardSlots(slots_, j);
    s->row_bytes = row_bytes;
    if (s->n > 0) {
      s->rows.resize(static_cast<size_t>(s->n * row_bytes));
      s->row_of.assign(static_cast<size_t>(s->n), -1);
      s->prev.assign(static_cast<size_t>(s->n), -1);
      s->next.assign(static_cast<size_t>(s->n), -1);
      s->visited.assign(static_cast<size_t>(s->n), 0);
      const int64_t entries = StaticRowSet::TableEntriesFor(s->n);
      s->table.assign(static_cast<size_t>(2 * entries), -1);
      s->mask = static_cast<uint64_t>(entries) - 1;
    }
    bytes_ += ShardBytes(s->n, row_bytes);
    shards_.push_back(std::move(s));
  }
}

SieveCache::~SieveCache() = default;

int64_t SieveCache::held() const {
  int64_t n = 0;
  for (const auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s->mu);
    n += s->used;
  }
  return n;
}

uint8_t SieveCache::Count(int64_t row) {
  if (row >= rows_) return 0;
  // Aging: every 8 lookups per row, every count halves (whoever crosses the
  // mark does it; counts moving meanwhile are counted a little differently).
  if (accesses_.fetch_add(1, std::memory_order_relaxed) + 1 == 8 * rows_) {
    accesses_.store(0, std::memory_order_relaxed);
    for (int64_t r = 0; r < rows_; ++r)
      counts_[r].store(counts_[r].load(std::memory_order_relaxed) / 2, std::memory_order_relaxed);
  }
  std::atomic<uint8_t>& c = counts_[row];
  uint8_t v = c.load(std::memory_order_relaxed);
  if (v < 255) c.store(++v, std::memory_order_relaxed);
  return v;
}

bool SieveCache::Lookup(int64_t row, char* dst) {
  if (slots_ == 0 || row < 0 || row > INT32_MAX) return false;
  Count(row);
  Shard& s = ShardOf(row);
  if (s.n == 0) return false;
  std::lock_guard<std::mutex> lock(s.mu);
  const int32_t slot = s.Find(static_cast<int32_t>(row));
  if (slot < 0) return false;
  s.visited[slot] = 1;
  std::memcpy(dst, s.rows.data() + static_cast<int64_t>(slot) * row_bytes_,
              static_cast<size_t>(row_bytes_));
  return true;
}

void SieveCache::Insert(int64_t row, const char* src) {
  if (slots_ == 0 || row < 0 || row > INT32_MAX) return;
  Shard& s = ShardOf(row);
  if (s.n == 0) return;
  const int32_t key = static_cast<int32_t>(row);
  const uint8_t want = row < rows_ ? counts_[row].load(std::memory_order_relaxed) : 0;
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.Find(key) >= 0) return;
  int32_t slot;
  if (s.used < s.n) {
    slot = static_cast<int32_t>(s.used++);
  } else {
    // SIEVE's victim stays where it was asked for at least as often.
    const int32_t victim = s.Victim();
    const int32_t vrow = s.row_of[victim];
    if (vrow < rows_ && counts_[vrow].load(std::memory_order_relaxed) >= want) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    slot = s.Evict(victim);
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
  std::memcpy(s.rows.data() + static_cast<int64_t>(slot) * row_bytes_, src,
              static_cast<size_t>(row_bytes_));
  s.row_of[slot] = key;
  s.visited[slot] = 0;
  s.PushHead(slot);
  s.Put(key, slot);
}

}  // namespace fanout::storage
