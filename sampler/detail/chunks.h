// A hop's nodes in chunks, run inline or over a thread pool (about four
// chunks per thread, none smaller than a minimum). Internal to sampler/.
#ifndef FANOUT_SAMPLER_DETAIL_CHUNKS_H_
#define FANOUT_SAMPLER_DETAIL_CHUNKS_H_

#include <algorithm>
#include <cstdint>

#include "common/thread_pool.h"

namespace fanout::sampler::detail {

class Chunks {
 public:
  // n nodes, chunks of at least min_chunk; pool may be null (one thread).
  Chunks(int64_t n, int64_t min_chunk, ThreadPool* pool) : n_(n), pool_(pool) {
    const int64_t threads = pool ? pool->num_threads() + 1 : 1;
    size_ = std::max<int64_t>(min_chunk, (n + threads * 4 - 1) / (threads * 4));
    count_ = (n + size_ - 1) / size_;
  }
  int64_t count() const { return count_; }
  int64_t begin(int64_t c) const { return c * size_; }
  int64_t end(int64_t c) const { return std::min(n_, (c + 1) * size_); }
  // fn(c) for every chunk: inline where there is one chunk or no pool.
  template <typename Fn>
  void Run(Fn&& fn) const {
    if (count_ <= 1 || pool_ == nullptr) {
      for (int64_t c = 0; c < count_; ++c) fn(c);
    } else {
      pool_->ParallelFor(count_, fn);
    }
  }

 private:
  int64_t n_, size_, count_;
  ThreadPool* pool_;
};

}  // namespace fanout::sampler::detail

#endif  // FANOUT_SAMPLER_DETAIL_CHUNKS_H_
