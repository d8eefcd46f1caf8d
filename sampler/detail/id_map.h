// IdMap: global node id -> local index, used to dedupe and relabel sampled
// nodes. Ids in an optional dense range [0, dense_end) live in a direct-mapped
// array of 4-byte slots (a batch epoch in the top bits, the local index below:
// one cache line per lookup, no probing, 4 MiB per million ids); others in a
// flat open-addressing hash table (linear probing, Fibonacci hashing). Reset()
// starts a new batch in O(1) by bumping the epochs, so neither is cleared
// between batches (the dense array once per 2^kDenseEpochBits - 1 batches).
// A local index too large for a dense slot (a batch of more than 2^24 nodes)
// goes to the hash table instead, so results never depend on the slot width.
//
// Thread safety: none; one IdMap per sampling thread.
#ifndef FANOUT_SAMPLER_DETAIL_ID_MAP_H_
#define FANOUT_SAMPLER_DETAIL_ID_MAP_H_

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <vector>

#include "common/cpu.h"

namespace fanout::sampler::detail {

class IdMap {
 public:
  static constexpr int kDenseEpochBits = 8;

  // `dense_value_bits` (tests only) narrows the dense slots' local index to
  // exercise the hash-table fallback.
  explicit IdMap(int dense_value_bits = 32 - kDenseEpochBits)
      : value_bits_(dense_value_bits), value_mask_((uint32_t{1} << dense_value_bits) - 1) {
    assert(dense_value_bits >= 1 && dense_value_bits <= 32 - kDenseEpochBits);
    Rehash(1 << 10);
  }

  // Ids in [0, end) are then mapped directly (4 bytes per id of the range,
  // allocated here); a smaller or zero `end` removes the dense range.
  void SetDenseRange(int64_t end) {
    dense_.clear();
    if (end > 0) {
      ReserveHuge(&dense_, static_cast<size_t>(end));
      dense_.assign(static_cast<size_t>(end), 0);
    }
    dense_end_ = static_cast<uint64_t>(std::max<int64_t>(end, 0));
    dense_epoch_ = 0;
  }
  int64_t dense_end() const { return static_cast<int64_t>(dense_end_); }

  // Starts an empty map able to hold `expected` ids without growing.
  void Reset(int64_t expected) {
    if (++epoch_ == 0) {  // wrapped: stale slots could match again
      for (Slot& s : slots_) s.epoch = 0;
      epoch_ = 1;
    }
    if (++dense_epoch_ >= (uint32_t{1} << kDenseEpochBits)) {
      std::fill(dense_.begin(), dense_.end(), 0);
      dense_epoch_ = 1;
    }
    dense_live_ = dense_epoch_ << value_bits_;
    dense_overflow_ = false;
    hash_size_ = dense_size_ = 0;
    Reserve(expected);
  }

  // Makes room for `total` ids without rehashing during inserts (with a
  // dense range, ids outside it are expected to be few: the table then grows
  // on demand instead).
  void Reserve(int64_t total) {
    if (dense_end_ > 0) return;
    if (total * 2 > static_cast<int64_t>(slots_.size())) {
      uint64_t cap = slots_.size();
      while (static_cast<int64_t>(cap) < total * 2) cap *= 2;
      Rehash(cap);
    }
  }

  void Prefetch(int64_t key) const {
    if (static_cast<uint64_t>(key) < dense_end_) __builtin_prefetch(&dense_[key], 1, 1);
    else __builtin_prefetch(&slots_[SlotOf(key)], 1, 1);
  }

  // Returns the index stored for `key`; when absent, stores `value_if_new`
  // and returns it. REQUIRES: Reserve() made room for this insert.
  int64_t FindOrInsert(int64_t key, int64_t value_if_new) {
    if (static_cast<uint64_t>(key) < dense_end_) {
      uint32_t& d = dense_[key];
      if ((d & ~value_mask_) == dense_live_) return d & value_mask_;
      if (dense_overflow_) {
        const int64_t found = FindInTable(key);
        if (found >= 0) return found;
      }
      if (static_cast<uint64_t>(value_if_new) <= value_mask_) {
        d = dense_live_ | static_cast<uint32_t>(value_if_new);
        ++dense_size_;
        return value_if_new;
      }
      dense_overflow_ = true;  // a batch past 2^value_bits nodes: the table holds the rest
    }
    return FindOrInsertInTable(key, value_if_new);
  }

  // Returns the index of `key`, or -1.
  int64_t Find(int64_t key) const {
    if (static_cast<uint64_t>(key) < dense_end_) {
      const uint32_t d = dense_[key];
      if ((d & ~value_mask_) == dense_live_) return d & value_mask_;
      if (!dense_overflow_) return -1;
    }
    return FindInTable(key);
  }

  int64_t size() const { return hash_size_ + dense_size_; }
  int64_t capacity() const { return static_cast<int64_t>(slots_.size()); }

 private:
  struct Slot {
    int64_t key;
    uint32_t value;
    uint32_t epoch;  // the slot is live when epoch == epoch_
  };

  uint64_t SlotOf(int64_t key) const {
    return (static_cast<uint64_t>(key) * 0x9e3779b97f4a7c15ULL) >> shift_;
  }

  int64_t FindOrInsertInTable(int64_t key, int64_t value_if_new) {
    if (dense_end_ > 0 && static_cast<uint64_t>(hash_size_ + 1) * 2 > slots_.size()) Rehash(slots_.size() * 2);
    assert(static_cast<uint64_t>(hash_size_ + 1) * 2 <= slots_.size());  // REQUIRES: Reserve()
    uint64_t i = SlotOf(key);
    for (;;) {
      Slot& s = slots_[i];
      if (s.epoch != epoch_) {
        s.key = key;
        s.value = static_cast<uint32_t>(value_if_new);
        s.epoch = epoch_;
        ++hash_size_;
        return value_if_new;
      }
      if (s.key == key) return s.value;
      i = (i + 1) & mask_;
    }
  }

  int64_t FindInTable(int64_t key) const {
    uint64_t i = SlotOf(key);
    for (;;) {
      const Slot& s = slots_[i];
      if (s.epoch != epoch_) return -1;
      if (s.key == key) return s.value;
      i = (i + 1) & mask_;
    }
  }

  void Rehash(uint64_t capacity) {
    std::vector<Slot> old;
    old.swap(slots_);
    uint32_t old_epoch = epoch_;
    ReserveHuge(&slots_, capacity);
    slots_.assign(capacity, Slot{0, 0, 0});
    mask_ = capacity - 1;
    shift_ = 64 - __builtin_ctzll(capacity);
    epoch_ = 1;
    hash_size_ = 0;
    for (const Slot& s : old)
      if (s.epoch == old_epoch && old_epoch != 0) FindOrInsertInTable(s.key, s.value);
  }

  const int value_bits_;
  const uint32_t value_mask_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> dense_;  // (epoch << value_bits_) | local index
  uint64_t dense_end_ = 0;
  uint32_t dense_epoch_ = 0;
  uint32_t dense_live_ = 0;  // dense_epoch_ << value_bits_
  bool dense_overflow_ = false;  // some dense-range ids of this batch are in the table
  uint64_t mask_ = 0;
  int shift_ = 64;
  uint32_t epoch_ = 0;
  int64_t hash_size_ = 0, dense_size_ = 0;
};

}  // namespace fanout::sampler::detail

#endif  // FANOUT_SAMPLER_DETAIL_ID_MAP_H_
