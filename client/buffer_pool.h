// BufferPool: host memory for a loader's large batch arrays (x, edge_index),
// taken back when the consumer lets go of an array and handed to a later
// batch of the same loader.
//
// Why: a batch's x is tens of MB. Allocated fresh per batch, glibc maps it
// from the kernel and unmaps it on free, so every batch pays the kernel's
// zeroing of each page and a fault per page on first touch, on top of the
// copy that fills it (measured: docs/BENCHMARKS.md, "Where a distributed
// batch's time goes"). A reused buffer is already mapped and resident.
//
// An array's memory is returned by its owner's deleter, whichever thread
// drops the last reference (a torch tensor freed in Python included); the
// deleter holds the pool, so arrays may outlive the loader. At most
// `max_idle` buffers are kept idle (the rest are freed), and a buffer is
// reused only for an array of at least half its size, so the pool never holds
// much more than the loader's batches in flight would anyway.
//
// Thread safety: Empty() and the deleters may run on any thread.
#ifndef FANOUT_CLIENT_BUFFER_POOL_H_
#define FANOUT_CLIENT_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "client/array.h"

namespace fanout::client {

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  // Arrays smaller than this come from malloc as usual (its own free lists
  // reuse them without the kernel).
  static constexpr size_t kMinBytes = size_t{1} << 20;

  static std::shared_ptr<BufferPool> Create(size_t max_idle) {
    return std::shared_ptr<BufferPool>(new BufferPool(max_idle));
  }
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A contiguous host array whose elements are not initialized (as
  // Array::Empty), from an idle buffer where one fits.
  Array Empty(DType dtype, std::vector<int64_t> shape);

  struct Stats {
    int64_t reused = 0, allocated = 0;  // large arrays served from idle buffers / new ones
    int64_t idle = 0;                   // buffers idle now
    int64_t idle_bytes = 0;
  };
  Stats stats() const;

 private:
  explicit BufferPool(size_t max_idle) : max_idle_(max_idle) {}
  void Give(void* p, size_t capacity);

  const size_t max_idle_;
  mutable std::mutex mu_;
  std::vector<std::pair<size_t, void*>> idle_;  // GUARDED_BY(mu_): (capacity, memory)
  int64_t reused_ = 0, allocated_ = 0;          // GUARDED_BY(mu_)
};

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_BUFFER_POOL_H_
