#include "common/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace fanout {
namespace {

TEST(ThreadPoolTest, ParallelForRunsEveryIndexExactlyOnce) {
  for (int threads : {0, 1, 3}) {
    ThreadPool pool(threads);
    std::vector<std::atomic<int>> hits(1000);
    pool.ParallelFor(1000, [&](int64_t i) { hits[i]++; });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ThreadPoolTest, NestedParallelForDoesNotDeadlock) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  pool.ParallelFor(8, [&](int64_t i) { pool.ParallelFor(100, [&](int64_t j) { sum += j; }); });
  EXPECT_EQ(sum.load(), 8 * 4950);
}

TEST(ThreadPoolTest, SubmittedTasksFinishBeforeDestruction) {
  std::atomic<int> done{0};
  {
    ThreadPool pool(2);
    for (int i = 0; i < 100; ++i) pool.Submit([&] { done++; });
  }
  EXPECT_EQ(done.load(), 100);
}

}  // namespace
}  // namespace fanout
