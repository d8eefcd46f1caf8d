// A small fixed-size thread pool.
//
// Thread safety: Submit() and ParallelFor() may be called from any thread,
// including from inside a task (ParallelFor's caller works on its own loop,
// so nesting cannot deadlock). The destructor finishes queued tasks and joins.
#ifndef FANOUT_COMMON_THREAD_POOL_H_
#define FANOUT_COMMON_THREAD_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fanout {

class ThreadPool {
 public:
  // Starts `num_threads` workers (0 is allowed: everything then runs on the caller).
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()); }

  // Queues `task` to run on a worker.
  void Submit(std::function<void()> task);

  // Runs fn(i) for every i in [0, n) on the workers and the calling thread;
  // returns when all calls have returned. fn must not throw.
  void ParallelFor(int64_t n, const std::function<void(int64_t)>& fn);

  // The CPU seconds that workers spent on the calling thread's ParallelFor
  // calls so far (its own share is in its own thread CPU time): with it, a
  // caller accounts for all the CPU a request cost (a server's per-method
  // CPU metric).
  static double HelperCpuSeconds();

 private:
  void WorkerLoop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // GUARDED_BY(mu_)
  bool stopping_ = false;                    // GUARDED_BY(mu_)
  std::vector<std::thread> workers_;
};

}  // namespace fanout

#endif  // FANOUT_COMMON_THREAD_POOL_H_
