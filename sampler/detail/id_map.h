// IdMap: global node id -> local index, a flat open-addressing hash table
// (linear probing, Fibonacci hashing) used to dedupe and relabel sampled
// nodes. Reset() starts a new batch in O(1) by bumping an epoch, so the table
// is reused across batches without clearing it.
//
// Thread safety: none; one IdMap per sampling thread.
#ifndef FANOUT_SAMPLER_DETAIL_ID_MAP_H_
#define FANOUT_SAMPLER_DETAIL_ID_MAP_H_

#include <cassert>
#include <cstdint>
#include <vector>

#include "common/cpu.h"

namespace fanout::sampler::detail {

class IdMap {
 public:
  IdMap() { Rehash(1 << 10); }

  // Starts an empty map able to hold `expected` ids without growing.
  void Reset(int64_t expected) {
    if (++epoch_ == 0) {  // wrapped: stale slots could match again
      for (Slot& s : slots_) s.epoch = 0;
      epoch_ = 1;
    }
    size_ = 0;
    Reserve(expected);
  }

  // Makes room for `total` ids without rehashing during inserts.
  void Reserve(int64_t total) {
    if (total * 2 > static_cast<int64_t>(slots_.size())) {
      uint64_t cap = slots_.size();
      while (static_cast<int64_t>(cap) < total * 2) cap *= 2;
      Rehash(cap);
    }
  }

  void Prefetch(int64_t key) const { __builtin_prefetch(&slots_[SlotOf(key)], 1, 1); }

  // Returns the index stored for `key`; when absent, stores `value_if_new`
  // and returns it. REQUIRES: Reserve() made room for this insert.
  int64_t FindOrInsert(int64_t key, int64_t value_if_new) {
    assert(static_cast<uint64_t>(size_ + 1) * 2 <= slots_.size());  // REQUIRES: Reserve()
    uint64_t i = SlotOf(key);
    for (;;) {
      Slot& s = slots_[i];
      if (s.epoch != epoch_) {
        s.key = key;
        s.value = static_cast<uint32_t>(value_if_new);
        s.epoch = epoch_;
        ++size_;
        return value_if_new;
      }
      if (s.key == key) return s.value;
      i = (i + 1) & mask_;
    }
  }

  // Returns the index of `key`, or -1.
  int64_t Find(int64_t key) const {
    uint64_t i = SlotOf(key);
    for (;;) {
      const Slot& s = slots_[i];
      if (s.epoch != epoch_) return -1;
      if (s.key == key) return s.value;
      i = (i + 1) & mask_;
    }
  }

  int64_t size() const { return size_; }
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

  void Rehash(uint64_t capacity) {
    std::vector<Slot> old;
    old.swap(slots_);
    uint32_t old_epoch = epoch_;
    ReserveHuge(&slots_, capacity);
    slots_.assign(capacity, Slot{0, 0, 0});
    mask_ = capacity - 1;
    shift_ = 64 - __builtin_ctzll(capacity);
    epoch_ = 1;
    size_ = 0;
    for (const Slot& s : old)
      if (s.epoch == old_epoch && old_epoch != 0) FindOrInsert(s.key, s.value);
  }

  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  int shift_ = 64;
  uint32_t epoch_ = 0;
  int64_t size_ = 0;
};

}  // namespace fanout::sampler::detail

#endif  // FANOUT_SAMPLER_DETAIL_ID_MAP_H_
