// Host buffers in data-plane regions (rpc::DataRegion), reused: the loader's
// feature tensors live in them, so that servers on this host write each row
// straight to its place in the tensor (placement: one copy in all).
//
// Thread safety: Acquire() and the release of what it returned are safe from
// any thread, also after the pool itself is gone.
#ifndef FANOUT_CLIENT_REGION_POOL_H_
#define FANOUT_CLIENT_REGION_POOL_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "rpc/data_plane.h"

namespace fanout::client {

class RegionPool {
 public:
  // Keeps at most `max_cached_bytes` of released regions for reuse.
  RegionPool(std::shared_ptr<rpc::DataPlaneContext> context, size_t max_cached_bytes);
  ~RegionPool();
  RegionPool(const RegionPool&) = delete;
  RegionPool& operator=(const RegionPool&) = delete;

  // A region of at least `bytes` (a cached one no more than twice that big,
  // else a new one); it goes back to the pool when the last reference to
  // *out is released, unless a request into it was abandoned (tainted) or the
  // cache is full. Errors: the region could not be allocated (e.g. shared
  // memory exhausted); callers then use ordinary memory.
  Status Acquire(size_t bytes, std::shared_ptr<rpc::DataRegion>* out);

  struct Stats {
    int64_t allocated = 0;  // regions made
    int64_t reused = 0;     // acquisitions served from the cache
    int64_t retired = 0;    // tainted regions freed rather than reused
    size_t cached_bytes = 0;
  };
  Stats stats() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_REGION_POOL_H_
