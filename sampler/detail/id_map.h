// IdMap: global node id -> local index, used to dedupe and relabel sampled
// nodes. Ids in an optional dense range [0, dense_end) live in a direct-mapped
// array (one 8-byte slot per id: one cache line touched per lookup, no
// probing); others in a flat open-addressing hash table (linear probing,
// Fibonacci hashing). Reset() starts a new batch in O(1) by bumping an epoch,
// so neither is cleared between batches.
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
  IdMap() { Rehash(1 << 10); }

  // Ids in [0, end) are then mapped directly (8 bytes per id of the range,
  // allocated here); a smaller or zero `end` removes the dense range.
  void SetDenseRange(int64_t end) {
    dense_.clear();
    if (end > 0) {
      ReserveHuge(&dense_, static_cast<size_t>(end));
      dense_.assign(static_cast<size_t>(end), DenseSlot{0, 0});
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
    if (++dense_epoch_ == 0) {
      for (DenseSlot& s : dense_) s.epoch = 0;
      dense_epoch_ = 1;
    }
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
      DenseSlot& d = dense_[key];
      if (d.epoch == dense_epoch_) return d.value;
      d.epoch = dense_epoch_;
      d.value = static_cast<uint32_t>(value_if_new);
      ++dense_size_;
      return value_if_new;
    }
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

  // Returns the index of `key`, or -1.
  int64_t Find(int64_t key) const {
    if (static_cast<uint64_t>(key) < dense_end_) {
      const DenseSlot& d = dense_[key];
      return d.epoch == dense_epoch_ ? static_cast<int64_t>(d.value) : -1;
    }
    uint64_t i = SlotOf(key);
    for (;;) {
      const Slot& s = slots_[i];
      if (s.epoch != epoch_) return -1;
      if (s.key == key) return s.value;
      i = (i + 1) & mask_;
    }
  }

  int64_t size() const { return hash_size_ + dense_size_; }
  int64_t capacity() const { return static_cast<int64_t>(slots_.size()); }

 private:
  struct Slot {
    int64_t key;
    uint32_t value;
    uint32_t epoch;  // the slot is live when epoch == epoch_
  };
  struct DenseSlot {
    uint32_t value;
    uint32_t epoch;  // live when epoch == dense_epoch_
  };

  uint64_t SlotOf(int64_t key) const {
    return (static_cast<uint64_t>(key) * 0x9e3779b97f4a7c15ULL) >> shift_;
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
      if (s.epoch == old_epoch && old_epoch != 0) FindOrInsert(s.key, s.value);
  }

  std::vector<Slot> slots_;
  std::vector<DenseSlot> dense_;
  uint64_t dense_end_ = 0;
  uint32_t dense_epoch_ = 0;
  uint64_t mask_ = 0;
  int shift_ = 64;
  uint32_t epoch_ = 0;
  int64_t hash_size_ = 0, dense_size_ = 0;
};

}  // namespace fanout::sampler::detail

#endif  // FANOUT_SAMPLER_DETAIL_ID_MAP_H_
