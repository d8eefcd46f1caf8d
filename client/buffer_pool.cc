#include "client/buffer_pool.h"

#include <cstdlib>
#include <new>

namespace fanout::client {

BufferPool::~BufferPool() {
  for (auto& [capacity, p] : idle_) std::free(p);
}

Array BufferPool::Empty(DType dtype, std::vector<int64_t> shape) {
  int64_t count = 1;
  for (int64_t s : shape) count *= s < 0 ? 0 : s;
  const size_t bytes = static_cast<size_t>(count) * static_cast<size_t>(DTypeSize(dtype));
  if (bytes < kMinBytes) return Array::Empty(dtype, std::move(shape));  // checks the shape too
  void* p = nullptr;
  size_t capacity = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The smallest idle buffer that holds it and is at most twice its size.
    size_t best = idle_.size();
    for (size_t i = 0; i < idle_.size(); ++i)
      if (idle_[i].first >= bytes && idle_[i].first / 2 <= bytes &&
          (best == idle_.size() || idle_[i].first < idle_[best].first))
        best = i;
    if (best < idle_.size()) {
      capacity = idle_[best].first;
      p = idle_[best].second;
      idle_[best] = idle_.back();
      idle_.pop_back();
      ++reused_;
    } else {
      ++allocated_;
    }
  }
  if (p == nullptr) {
    capacity = (bytes + 63) / 64 * 64;
    p = std::aligned_alloc(64, capacity);
    if (p == nullptr) throw std::bad_alloc();
  }
  std::shared_ptr<BufferPool> self = shared_from_this();
  std::shared_ptr<void> owner(p, [self, capacity](void* q) { self->Give(q, capacity); });
  return Array::Borrow(std::move(owner), p, dtype, std::move(shape));
}

void BufferPool::Give(void* p, size_t capacity) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (idle_.size() < max_idle_) {
      idle_.emplace_back(capacity, p);
      return;
    }
  }
  std::free(p);
}

BufferPool::Stats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s;
  s.reused = reused_;
  s.allocated = allocated_;
  s.idle = static_cast<int64_t>(idle_.size());
  for (auto& [capacity, p] : idle_) s.idle_bytes += static_cast<int64_t>(capacity);
  return s;
}

}  // namespace fanout::client
