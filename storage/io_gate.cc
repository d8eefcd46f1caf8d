#include "storage/io_gate.h"

#include <chrono>

namespace fanout::storage {

void IoGate::OnlineEnd() {
  if (online_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
}

bool IoGate::Take() {
  const int64_t n = batch_.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (n <= budget_ || online_.load(std::memory_order_acquire) == 0) return true;
  batch_.fetch_sub(1, std::memory_order_acq_rel);
  return false;
}

bool IoGate::BatchTryAcquire() {
  if (Take()) return true;
  held_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void IoGate::BatchDone(int64_t n) {
  batch_.fetch_sub(n, std::memory_order_acq_rel);
  if (online_.load(std::memory_order_acquire) > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_one();
  }
}

void IoGate::BatchWait() {
  std::unique_lock<std::mutex> lock(mu_);
  // Woken when the last online read ends or a batch read completes; the
  // timeout bounds a missed wake-up (the check and the wait are not atomic
  // with the counters).
  while (!Take()) cv_.wait_for(lock, std::chrono::milliseconds(1));
}

}  // namespace fanout::storage
