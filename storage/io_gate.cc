#include "storage/io_gate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace fanout::storage {
namespace {
constexpr int64_t kWindowNs = 100'000'000;        // a window: at least 100 ms ...
constexpr int64_t kWindowReads = 100;             // ... and 100 online reads (a p99 of them),
constexpr int64_t kLongWindowNs = 1'000'000'000;  // or 1 s and kFewReads
constexpr int64_t kFewReads = 8;
constexpr int64_t kStaleNs = 2'000'000'000;  // fewer reads after this: a new window
}  // namespace

void IoGate::Configure(const IoGateOptions& o) {
  adaptive_ = o.budget <= 0;
  factor_ = o.latency_factor > 1.0 ? o.latency_factor : 1.5;
  max_budget_ = std::max(1, o.max_budget);
  now_ns_ = o.now_ns;
  const int start = adaptive_ ? std::clamp(o.initial_budget, 1, max_budget_) : o.budget;
  budget_.store(start, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(window_mu_);
  for (auto& h : hist_) h.store(0, std::memory_order_relaxed);
  window_reads_.store(0);
  window_start_.store(Now());
  held_at_window_.store(held_.load());
  cuts_ = raises_ = windows_ = probes_ = 0;
  probe_ = 0;
  probe_ns_.fill(0);
  saved_budget_ = start;
  reference_ns_ = last_p99_ns_ = 0;
  last_probe_ns_ = 0;
}

int64_t IoGate::Now() const {
  if (now_ns_ != nullptr) return now_ns_();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int IoGate::BucketOf(int64_t ns) {
  if (ns <= 1000) return 0;
  const int b = static_cast<int>(std::ceil(std::log2(static_cast<double>(ns) / 1000.0) * 8));
  return std::clamp(b, 0, kBuckets - 1);
}

double IoGate::BucketUpperNs(int b) { return 1000.0 * std::exp2(b / 8.0); }

void IoGate::OnlineEnd() {
  if (online_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
}

void IoGate::OnlineRead(int64_t latency_ns) {
  online_reads_.fetch_add(1, std::memory_order_relaxed);
  if (!adaptive_) return;
  hist_[BucketOf(latency_ns)].fetch_add(1, std::memory_order_relaxed);
  const int64_t reads = window_reads_.fetch_add(1, std::memory_order_acq_rel) + 1;
  const int64_t now = Now();
  online_until_.store(now + kLingerNs, std::memory_order_relaxed);
  const int64_t age = now - window_start_.load(std::memory_order_acquire);
  const bool full =
      (age >= kWindowNs && reads >= kWindowReads) || (age >= kLongWindowNs && reads >= kFewReads);
  if (!full && age < kStaleNs) return;
  std::unique_lock<std::mutex> lock(window_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another reader is closing it
  if (now - window_start_.load(std::memory_order_acquire) < kWindowNs) return;  // just closed
  CloseWindow(now);
}

// REQUIRES: window_mu_ held.
void IoGate::CloseWindow(int64_t now) {
  std::array<uint32_t, kBuckets> h;
  int64_t total = 0;
  for (int b = 0; b < kBuckets; ++b) {
    h[b] = hist_[b].exchange(0, std::memory_order_acq_rel);
    total += h[b];
  }
  window_reads_.store(0, std::memory_order_release);
  window_start_.store(now, std::memory_order_release);
  const int64_t held_now = held_.load(std::memory_order_relaxed);
  const int64_t held = held_now - held_at_window_.exchange(held_now);
  // A window of a few reads after a quiet spell says nothing: started again.
  if (total < kFewReads) return;
  ++windows_;
  int64_t seen = 0;
  int b = 0;
  for (; b < kBuckets; ++b) {
    seen += h[b];
    if (seen * 100 >= total * 99) break;
  }
  const double p99 = BucketUpperNs(std::min(b, kBuckets - 1));
  last_p99_ns_ = p99;
  const int budget = budget_.load(std::memory_order_relaxed);
  // The probe: two windows with batch held to one read (the first lets the
  // reads already out drain, the second is measured), every kProbeEveryNs
  // and before the first adjustment. Its p99 is the reference: the online
  // reads' latency as the gate can make it under the load of the moment
  // (their own depth, the CPU), which the budget then may add to.
  if (probe_ > 0) {
    if (probe_ == 2) {
      probe_ = 1;
      return;
    }
    probe_ = 0;
    // The lowest of the last kProbesKept probes: one probe's p99 of a few
    // hundred reads can land on a stall of its own.
    probe_ns_[probes_ % kProbesKept] = p99;
    reference_ns_ = p99;
    for (int i = 0; i < kProbesKept && i <= probes_; ++i)
      reference_ns_ = std::min(reference_ns_, probe_ns_[i]);
    last_probe_ns_ = now;
    ++probes_;
    budget_.store(saved_budget_, std::memory_order_relaxed);
    return;
  }
  if (reference_ns_ == 0 || now - last_probe_ns_ >= kProbeEveryNs) {
    saved_budget_ = budget;
    budget_.store(1, std::memory_order_relaxed);
    probe_ = 2;
    return;
  }
  const double target = factor_ * reference_ns_;
  if (p99 > target) {
    const int cut = std::max(1, std::min(budget - 1, budget * 3 / 4));
    if (cut != budget) {
      budget_.store(cut, std::memory_order_relaxed);
      ++cuts_;
    }
  } else if (p99 < 0.85 * target && held > 0 && budget < max_budget_) {
    // Raised only where the budget held batch reads back: a budget beyond
    // what batch work keeps in flight buys nothing and would take windows
    // of cuts to come down.
    budget_.store(std::min(max_budget_, budget + std::max(1, budget / 8)),
                  std::memory_order_relaxed);
    ++raises_;
  }
}

IoGateStats IoGate::stats() const {
  IoGateStats s;
  s.adaptive = adaptive_;
  s.budget = budget();
  s.online_reads = online_reads_.load(std::memory_order_relaxed);
  s.held = held();
  std::lock_guard<std::mutex> lock(window_mu_);
  s.cuts = cuts_, s.raises = raises_, s.windows = windows_, s.probes = probes_;
  s.probing = probe_ > 0;
  s.reference_us = reference_ns_ / 1e3;
  s.target_us = adaptive_ ? factor_ * reference_ns_ / 1e3 : 0;
  s.last_p99_us = last_p99_ns_ / 1e3;
  return s;
}

bool IoGate::Take() {
  const int64_t n = batch_.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (n <= budget_.load(std::memory_order_relaxed)) return true;
  // Past the budget: free while no online read waits, and (adaptive) none
  // completed in the last kLingerNs.
  if (online_.load(std::memory_order_acquire) == 0 &&
      (!adaptive_ || Now() >= online_until_.load(std::memory_order_relaxed)))
    return true;
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
