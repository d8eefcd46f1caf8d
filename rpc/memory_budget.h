// MemoryBudget: one server's bound on the request bytes it holds, shared by
// its Thrift connections (ConnectionGuard) and its UCX data plane, so that
// neither path can take the memory the other was promised (--max-inflight-mib
// is one number for the whole server).
//
// Takers either wait for room (a Thrift frame: its thread may block) or ask
// without waiting (a data-plane progress thread, which must keep serving its
// other endpoints). A single take larger than the whole budget is clamped to
// it: it waits for all of it rather than never fitting. Force() records bytes
// that already exist (a reply just built) and may go over the limit: the
// stated margin is one reply per data-plane thread.
//
// Thread safety: every method is safe from any thread.
#ifndef FANOUT_RPC_MEMORY_BUDGET_H_
#define FANOUT_RPC_MEMORY_BUDGET_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <utility>

namespace fanout::rpc {

struct MemoryBudgetStats {
  int64_t limit = 0;  // 0 = unlimited
  int64_t held = 0;   // taken now, both paths
  int64_t peak = 0;   // the most ever held at once
  int64_t waits = 0;  // takes that did not fit at once
};

class MemoryBudget {
 public:
  explicit MemoryBudget(int64_t limit) : limit_(limit > 0 ? limit : 0) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  int64_t limit() const { return limit_; }
  // What a take of `bytes` actually takes (clamped to the limit).
  int64_t Clamp(int64_t bytes) const {
    if (bytes < 0) return 0;
    return limit_ > 0 && bytes > limit_ ? limit_ : bytes;
  }

  // Takes Clamp(bytes) when it fits now; `*taken` is what to give back.
  bool TryTake(int64_t bytes, int64_t* taken, bool count_wait = true) {
    bytes = Clamp(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    if (!FitsLocked(bytes)) {
      if (count_wait) ++stats_.waits;
      return false;
    }
    AddLocked(bytes);
    *taken = bytes;
    return true;
  }

  // Waits up to `timeout_ms` (<= 0: without end) for Clamp(bytes) to fit, or
  // until `*abandon` is true (re-checked on Wake()).
  bool Take(int64_t bytes, int64_t timeout_ms, const std::atomic<bool>* abandon, int64_t* taken) {
    bytes = Clamp(bytes);
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [&] { return (abandon != nullptr && abandon->load()) || FitsLocked(bytes); };
    if (!FitsLocked(bytes)) {
      ++stats_.waits;
      if (timeout_ms > 0) {
        if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready)) return false;
      } else {
        cv_.wait(lock, ready);
      }
      if (abandon != nullptr && abandon->load()) return false;
    }
    AddLocked(bytes);
    *taken = bytes;
    return true;
  }

  // Records bytes that exist already, over the limit if need be.
  void Force(int64_t bytes) {
    if (bytes <= 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    AddLocked(bytes);
  }

  void Give(int64_t bytes) {
    if (bytes <= 0) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.held -= bytes;
    }
    cv_.notify_all();
  }

  // Wakes every waiter to look at its abandon flag again.
  void Wake() {
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
  }

  // Whether anything more can be taken now (false once the limit is reached).
  bool HasRoom() const {
    std::lock_guard<std::mutex> lock(mu_);
    return limit_ == 0 || stats_.held < limit_;
  }

  MemoryBudgetStats Stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    MemoryBudgetStats s = stats_;
    s.limit = limit_;
    return s;
  }

 private:
  bool FitsLocked(int64_t bytes) const { return limit_ == 0 || stats_.held + bytes <= limit_; }
  void AddLocked(int64_t bytes) {
    stats_.held += bytes;
    if (stats_.held > stats_.peak) stats_.peak = stats_.held;
  }

  const int64_t limit_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  MemoryBudgetStats stats_;  // GUARDED_BY(mu_)
};

// Bytes taken from a budget, given back when this goes (move-only).
class BudgetHold {
 public:
  BudgetHold() = default;
  BudgetHold(MemoryBudget* budget, int64_t bytes) : budget_(budget), bytes_(bytes) {}
  BudgetHold(BudgetHold&& o) noexcept
      : budget_(std::exchange(o.budget_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  BudgetHold& operator=(BudgetHold&& o) noexcept {
    if (this != &o) {
      Reset();
      budget_ = std::exchange(o.budget_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~BudgetHold() { Reset(); }
  int64_t bytes() const { return bytes_; }
  void Reset() {
    if (budget_ != nullptr) budget_->Give(bytes_);
    budget_ = nullptr;
    bytes_ = 0;
  }

 private:
  MemoryBudget* budget_ = nullptr;
  int64_t bytes_ = 0;
};

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_MEMORY_BUDGET_H_
