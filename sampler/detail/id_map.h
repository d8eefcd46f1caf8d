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

// kValueBits: the dense slots' local index width (IdMap's 24; tests narrow it
// to exercise the hash-table fallback).
template <int kValueBits>
class BasicIdMap {
 public:
  static constexpr int kDenseEpochBits = 32 - kValueBits;
  static_assert(kValueBits >= 1 && kDenseEpochBits >= 2,
                "a dense slot holds an epoch and an index in 32 bits");

  BasicIdMap() { Rehash(1 << 10); }

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
    dense_live_ = dense_epoch_ << kValueBits;
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
    if (static_cast<uint64_t>(key) < dense_end_)
      __builtin_prefetch(&dense_[key], 1, 1);
    else
      __builtin_prefetch(&slots_[SlotOf(key)], 1, 1);
  }

  // Returns the index stored for `key`; when absent, stores `value_if_new`
  // and returns it. REQUIRES: Reserve() made room for this insert.
  int64_t FindOrInsert(int64_t key, int64_t value_if_new) {
    if (static_cast<uint64_t>(key) < dense_end_) {
      uint32_t& d = dense_[key];
      if ((d & ~kValueMask) == dense_live_) return d & kValueMask;
      if (dense_overflow_) {
        const int64_t found = FindInTable(key);
        if (found >= 0) return found;
      }
      if (static_cast<uint64_t>(value_if_new) <= kValueMask) {
        d = dense_live_ | static_cast<uint32_t>(value_if_new);
        ++dense_size_;
        return value_if_new;
      }
      dense_overflow_ = true;  // a batch past 2^value_bits nodes: the table holds the rest
    }
    return FindOrInsertInTable(key, value_if_new);
  }

  // FindOrInsert on keys[0 .. n) in turn, new keys numbered from `next`:
  // writes each key's index to local[e], each new key k to new_keys[index of
  // k], and returns the next free index. The loop the samplers run per edge:
  // runs of keys in the dense range go through DenseRun(). new_keys needs
  // room for next + n entries: those from the returned index on are scratch
  // (DenseRun writes each key there before it knows whether it is new).
  // REQUIRES: as FindOrInsert (Reserve() made room for every key).
  int64_t Relabel(const int64_t* keys, int64_t n, int64_t next, int64_t* local, int64_t* new_keys) {
    if (dense_end_ == 0 || dense_overflow_ || next + n > int64_t{kValueMask} + 1) {
      for (int64_t e = 0; e < n;
           ++e) {  // the general path: the table, or indexes past a dense slot's
        const int64_t l = FindOrInsert(keys[e], next);
        if (l == next) new_keys[next++] = keys[e];
        local[e] = l;
      }
      return next;
    }
    const int64_t next0 = next, hash0 = hash_size_;
    int64_t e = 0;
    while ((e = DenseRun(keys, e, n, dense_.data(), dense_end_, dense_live_, &next, local,
                         new_keys)) < n) {
      const int64_t l = FindOrInsertInTable(keys[e], next);  // a key beyond the dense range
      if (l == next) new_keys[next++] = keys[e];
      local[e++] = l;
    }
    dense_size_ += (next - next0) - (hash_size_ - hash0);
    return next;
  }

  // Returns the index of `key`, or -1.
  int64_t Find(int64_t key) const {
    if (static_cast<uint64_t>(key) < dense_end_) {
      const uint32_t d = dense_[key];
      if ((d & ~kValueMask) == dense_live_) return d & kValueMask;
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

  // Relabel's loop from keys[e] to the first key beyond the dense range (its
  // position is returned) or to n. A function of its own with no call
  // inside, so its state stays in registers (inlined into Relabel, whose
  // table path calls out, the compiler spilled it to the stack). Each key's
  // slot is prefetched kPrefetch keys ahead (at scale 23, where the slots
  // miss L2, 16 left the loads waiting and 48 cut the pass by 20%; once the
  // loop had no branch, it ran through 48 keys sooner than a line arrives:
  // 80 cut it by another 10%, at scale 20 too; 32 and 128 took longer).
  // Without a branch on whether the key is new (a third of a hop's keys are
  // held already, in no pattern a predictor learns): the slot is written
  // either way (a held key's with its own value), the key is written at
  // new_keys[next] either way (a held key's is overwritten by the next new
  // one), and `next` advances by the comparison. A mispredicted branch here
  // waited for its slot's line and then threw away the loads issued past it:
  // without it the pass takes half the time where the slots are in cache and
  // 20% less at scale 23 (docs/BENCHMARKS.md, "Round three, fourth session").
  __attribute__((noinline)) static int64_t DenseRun(const int64_t* keys, int64_t e, int64_t n,
                                                    uint32_t* dense, uint64_t dense_end,
                                                    uint32_t live, int64_t* next_io, int64_t* local,
                                                    int64_t* new_keys) {
    constexpr int64_t kPrefetch = 80;
    int64_t next = *next_io;
    for (; e < n; ++e) {
      if (e + kPrefetch < n) {
        const int64_t ahead = keys[e + kPrefetch];
        if (static_cast<uint64_t>(ahead) < dense_end) __builtin_prefetch(dense + ahead, 1, 1);
      }
      const int64_t v = keys[e];
      if (__builtin_expect(static_cast<uint64_t>(v) >= dense_end, 0)) break;
      const uint32_t d = dense[v];
      const bool held = (d & ~kValueMask) == live;
      const uint32_t idx = held ? (d & kValueMask) : static_cast<uint32_t>(next);
      dense[v] = live | idx;
      new_keys[next] = v;
      local[e] = idx;
      next += !held;
    }
    *next_io = next;
    return e;
  }

  int64_t FindOrInsertInTable(int64_t key, int64_t value_if_new) {
    if (dense_end_ > 0 && static_cast<uint64_t>(hash_size_ + 1) * 2 > slots_.size())
      Rehash(slots_.size() * 2);
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

  static constexpr uint32_t kValueMask = (uint32_t{1} << kValueBits) - 1;
  std::vector<Slot> slots_;
  std::vector<uint32_t> dense_;  // (epoch << kValueBits) | local index
  uint64_t dense_end_ = 0;
  uint32_t dense_epoch_ = 0;
  uint32_t dense_live_ = 0;      // dense_epoch_ << kValueBits
  bool dense_overflow_ = false;  // some dense-range ids of this batch are in the table
  uint64_t mask_ = 0;
  int shift_ = 64;
  uint32_t epoch_ = 0;
  int64_t hash_size_ = 0, dense_size_ = 0;
};

using IdMap = BasicIdMap<24>;

}  // namespace fanout::sampler::detail

#endif  // FANOUT_SAMPLER_DETAIL_ID_MAP_H_
