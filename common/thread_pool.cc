#include "common/thread_pool.h"

#include <atomic>
#include <memory>

#include "common/cpu.h"

namespace fanout {

ThreadPool::ThreadPool(int num_threads) {
  workers_.reserve(num_threads > 0 ? num_threads : 0);
  for (int i = 0; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::Submit(std::function<void()> task) {
  if (workers_.empty()) {
    task();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping_ and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

namespace {
// Nanoseconds of CPU that workers spent on this thread's ParallelFor calls.
thread_local int64_t t_helper_cpu_ns = 0;

int64_t ThreadCpuNanos() { return static_cast<int64_t>(ThreadCpuSeconds() * 1e9); }

// Shared between the caller of ParallelFor and its helpers. Helpers that start
// after the loop is finished see next >= n and never touch fn.
struct ParallelForState {
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::atomic<int64_t> helper_cpu_ns{0};  // CPU the workers spent in Work()
  int64_t n = 0;
  const std::function<void(int64_t)>* fn = nullptr;
  std::mutex mu;
  std::condition_variable cv;

  void Work() {
    for (;;) {
      int64_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) return;
      (*fn)(i);
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
        std::lock_guard<std::mutex> lock(mu);
        cv.notify_all();
      }
    }
  }
};
}  // namespace

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  if (n == 1 || workers_.empty()) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  auto state = std::make_shared<ParallelForState>();
  state->n = n;
  state->fn = &fn;
  int64_t helpers = std::min<int64_t>(n - 1, num_threads());
  for (int64_t h = 0; h < helpers; ++h)
    Submit([state] {
      const int64_t t0 = ThreadCpuNanos();
      state->Work();
      state->helper_cpu_ns.fetch_add(ThreadCpuNanos() - t0, std::memory_order_relaxed);
    });
  state->Work();
  std::unique_lock<std::mutex> lock(state->mu);
  state->cv.wait(lock, [&] { return state->done.load(std::memory_order_acquire) == n; });
  // A helper adds its CPU after its last call's `done`: read what is in (a
  // helper still finishing adds a few microseconds that are not counted).
  t_helper_cpu_ns += state->helper_cpu_ns.load(std::memory_order_relaxed);
}

double ThreadPool::HelperCpuSeconds() { return static_cast<double>(t_helper_cpu_ns) * 1e-9; }

}  // namespace fanout
