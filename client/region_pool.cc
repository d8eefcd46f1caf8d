#include "client/region_pool.h"

#include <algorithm>

namespace fanout::client {

struct RegionPool::State {
  std::shared_ptr<rpc::DataPlaneContext> context;
  size_t max_cached_bytes = 0;
  mutable std::mutex mu;
  std::vector<std::shared_ptr<rpc::DataRegion>> free;  // GUARDED_BY(mu)
  Stats stats;                                          // GUARDED_BY(mu)

  void Release(std::shared_ptr<rpc::DataRegion> r) {
    std::lock_guard<std::mutex> lock(mu);
    if (r->tainted()) {
      ++stats.retired;  // its server may still write into it: never handed out again
      return;
    }
    if (stats.cached_bytes + r->size() > max_cached_bytes) return;  // freed
    stats.cached_bytes += r->size();
    free.push_back(std::move(r));
  }
};

RegionPool::RegionPool(std::shared_ptr<rpc::DataPlaneContext> context, size_t max_cached_bytes)
    : state_(std::make_shared<State>()) {
  state_->context = std::move(context);
  state_->max_cached_bytes = max_cached_bytes;
}

RegionPool::~RegionPool() = default;

Status RegionPool::Acquire(size_t bytes, std::shared_ptr<rpc::DataRegion>* out) {
  if (bytes == 0) bytes = 1;
  std::shared_ptr<rpc::DataRegion> region;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto best = state_->free.end();
    for (auto it = state_->free.begin(); it != state_->free.end(); ++it)
      if ((*it)->size() >= bytes && (*it)->size() / 2 <= bytes &&
          (best == state_->free.end() || (*it)->size() < (*best)->size()))
        best = it;
    if (best != state_->free.end()) {
      region = std::move(*best);
      state_->free.erase(best);
      state_->stats.cached_bytes -= region->size();
      ++state_->stats.reused;
    }
  }
  if (!region) {
    // A little headroom, rounded to 1 MiB, so that batches of similar size
    // reuse each other's regions.
    constexpr size_t kMiB = size_t{1} << 20;
    const size_t size = (bytes + bytes / 8 + kMiB - 1) / kMiB * kMiB;
    FANOUT_RETURN_IF_ERROR(state_->context->AllocateRegion(size, &region));
    std::lock_guard<std::mutex> lock(state_->mu);
    ++state_->stats.allocated;
  }
  // The caller's reference hands the region back to the pool (if it still
  // exists) when released.
  std::weak_ptr<State> weak = state_;
  rpc::DataRegion* raw = region.get();
  *out = std::shared_ptr<rpc::DataRegion>(raw, [weak, region](rpc::DataRegion*) mutable {
    if (auto s = weak.lock()) s->Release(std::move(region));
  });
  return Status::OK();
}

RegionPool::Stats RegionPool::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stats;
}

}  // namespace fanout::client
