// A map from string ids to their index (0, 1, ... in insertion order), for
// tables with string ids (datasets/tables.cc): the keys back to back in one
// arena and open addressing over (hash, index) slots, 16 bytes each. A lookup
// reads one slot and the key's bytes; std::unordered_map<std::string, ...>
// reads a bucket, a node and the string, and allocates per entry. The hash is
// seeded per process, so a table cannot be built to collide.
#ifndef FANOUT_DATASETS_DETAIL_STRING_ID_MAP_H_
#define FANOUT_DATASETS_DETAIL_STRING_ID_MAP_H_

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/random.h"

namespace fanout::datasets::detail {

class StringIdMap {
 public:
  StringIdMap() : seed_(std::random_device{}() | (uint64_t{std::random_device{}()} << 32)) {}
  explicit StringIdMap(uint64_t seed) : seed_(seed) {}

  int64_t size() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  // Adds `key` as index size(); false (and nothing added) where it is there.
  bool Insert(std::string_view key) {
    if (static_cast<uint64_t>(size() + 1) * 2 > slots_.size()) Grow();
    const uint64_t h = Hash(key);
    for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.index < 0) {
        s = {h, size()};
        bytes_.append(key.data(), key.size());
        offsets_.push_back(bytes_.size());
        return true;
      }
      if (s.hash == h && Key(s.index) == key) return false;
    }
  }
  // The index of `key`, or -1.
  int64_t Find(std::string_view key) const {
    if (slots_.empty()) return -1;
    const uint64_t h = Hash(key);
    for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.index < 0) return -1;
      if (s.hash == h && Key(s.index) == key) return s.index;
    }
  }
  std::string_view Key(int64_t k) const {
    return std::string_view(bytes_.data() + offsets_[k], offsets_[k + 1] - offsets_[k]);
  }
  // What the map holds in memory, in bytes.
  int64_t MemoryBytes() const {
    return static_cast<int64_t>(slots_.capacity() * sizeof(Slot) + bytes_.capacity() +
                                offsets_.capacity() * sizeof(uint64_t));
  }
  // The map's hash of `key` (a bucket for a join).
  uint64_t HashOf(std::string_view key) const { return Hash(key); }

 private:
  struct Slot {
    uint64_t hash;
    int64_t index;  // -1: empty
  };
  uint64_t Hash(std::string_view s) const {
    uint64_t h = seed_ ^ (s.size() * 0x9E3779B97F4A7C15ULL);
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      h = Mix64(h ^ w);
    }
    uint64_t w = 0;
    if (i < s.size()) std::memcpy(&w, s.data() + i, s.size() - i);
    return Mix64(h ^ w ^ 0x5bd1e995ULL);
  }
  void Grow() {
    std::vector<Slot> old(std::max<size_t>(16, slots_.size() * 2), Slot{0, -1});
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.index < 0) continue;
      uint64_t i = s.hash & mask_;
      while (slots_[i].index >= 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }
  uint64_t seed_;
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  std::string bytes_;
  std::vector<uint64_t> offsets_ = {0};
};

}  // namespace fanout::datasets::detail

#endif  // FANOUT_DATASETS_DETAIL_STRING_ID_MAP_H_
