// ShardedCounters: lock-free counters for hot paths. Each thread adds into its
// own cache-line-aligned shard (chosen from its thread id), so threads on
// different shards never share a line; reading sums all shards. Works for
// gauges too (add +1 and -1).
//
// Thread safety: Add() from any thread; Get()/Snapshot() from any thread
// (they see each shard's relaxed value, possibly a moment old).
#ifndef FANOUT_COMMON_METRICS_H_
#define FANOUT_COMMON_METRICS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace fanout {

class ShardedCounters {
 public:
  static constexpr int kShards = 32;

  explicit ShardedCounters(int num_counters)
      : n_(num_counters),
        stride_((num_counters + 7) / 8 * 8),
        cells_(new Cell[static_cast<size_t>(kShards) * stride_]) {}

  int size() const { return n_; }

  void Add(int counter, int64_t delta) {
    cells_[static_cast<size_t>(ShardOfThisThread()) * stride_ + counter].v.fetch_add(
        delta, std::memory_order_relaxed);
  }

  int64_t Get(int counter) const {
    int64_t s = 0;
    for (int sh = 0; sh < kShards; ++sh)
      s += cells_[static_cast<size_t>(sh) * stride_ + counter].v.load(std::memory_order_relaxed);
    return s;
  }

  void Snapshot(std::vector<int64_t>* out) const {
    out->assign(n_, 0);
    for (int sh = 0; sh < kShards; ++sh)
      for (int c = 0; c < n_; ++c)
        (*out)[c] +=
            cells_[static_cast<size_t>(sh) * stride_ + c].v.load(std::memory_order_relaxed);
  }

 private:
  struct Cell {
    std::atomic<int64_t> v{0};
  };
  static int ShardOfThisThread() {
    thread_local const int shard =
        static_cast<int>(std::hash<std::thread::id>()(std::this_thread::get_id()) % kShards);
    return shard;
  }
  int n_;
  size_t stride_;  // counters per shard, rounded up to a multiple of 8 (one line per 8)
  std::unique_ptr<Cell[]> cells_;
};

}  // namespace fanout

#endif  // FANOUT_COMMON_METRICS_H_
