// IoGate: the device's order between online and batch reads in one process.
// While an online read waits (a latency-bound query's feature reads), the
// threads reading for batch work keep at most `budget` reads in flight among
// them all; the rest of the device's depth is left to the query. When no
// online read waits, batch reads take the whole depth. The block layer cannot
// do this by itself: with both classes at best effort a query's reads queue
// behind a hundred batch reads, and with batch at I/O class idle
// (mq-deadline, bfq) the device runs below its depth during each query,
// costing batch work a quarter of its throughput (docs/BENCHMARKS.md,
// "Tenants").
//
// The budget adapts to the device (IoGateOptions::budget 0, the default), as
// Linux's blk-iolatency does for cgroups. The adaptive budget holds batch
// reads while online reads go on (one waits, or one completed in the last
// second), not only while one waits: reads queued between two queries are
// what the next query waits behind, and on a slow (or throttled) device
// they are many milliseconds of it. Online reads report their latency, and
// every window (100 ms and 100 reads, or 1 s and 8) the gate compares the window's
// 99th percentile with a target of `latency_factor` x a reference: the
// online reads' p99 with batch held to one read, measured in a probe of two
// windows every 10 s (as BBR probes its RTT; the first window lets the
// reads out drain). So the reference is what the gate can make the online
// latency under the load of the moment (the query's own depth, the CPU),
// not a quiet device's figure that no budget could reach; it is the lowest
// of the last three probes (one probe can land on a stall). Above the target
// the budget is cut by a quarter (at least 1, down to 1); well below it
// (0.85 x), and only where the budget held a batch read back in the window,
// it grows by an eighth (at least 1). So a fast device gives batch work a
// deep budget and a slow or throttled one a shallow one, each as deep as
// the query's latency allows. A fixed budget (IoGateOptions::budget > 0)
// keeps the old behaviour: held only while an online read waits.
//
// A read's class and gate travel with it as an argument (ReadOptions, as
// RocksDB's IOOptions), set per request by the server (its Tenancy decides
// the class where it runs with --online-io-first; the gate is the server's
// own); reads of no class are never held. BlockReader consults the gate for
// every read of a class and reports each online read's latency.
//
// Thread safety: every method from any thread, except Configure (before the
// first read).
#ifndef FANOUT_STORAGE_IO_GATE_H_
#define FANOUT_STORAGE_IO_GATE_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace fanout::storage {

enum class ReadClass : uint8_t { kNone = 0, kOnline = 1, kBatch = 2 };

class IoGate;

// How one Read's reads are ordered on the device: their class, and the gate
// that orders the classes (null, or kNone: not ordered).
struct ReadOptions {
  ReadClass read_class = ReadClass::kNone;
  IoGate* gate = nullptr;
};

struct IoGateOptions {
  // Batch reads in flight at most while an online read waits: 0 adapts it
  // (see the top); > 0 fixes it.
  int budget = 0;
  // Adaptive: the online reads' window p99 is held near this multiple of
  // the device's latency (> 1).
  double latency_factor = 1.5;
  // Adaptive: where the budget starts, and its ceiling.
  int initial_budget = 8;
  int max_budget = 1024;
  // The clock, in ns (tests give their own; null: steady_clock).
  int64_t (*now_ns)() = nullptr;
};

// What the gate is doing (/stats "io_gate").
struct IoGateStats {
  bool adaptive = false;
  int budget = 0;
  int64_t online_reads = 0;      // latencies reported
  int64_t held = 0;              // times a batch reader was told to wait
  int64_t cuts = 0, raises = 0;  // adaptive budget changes
  int64_t windows = 0;           // windows closed
  int64_t probes = 0;            // reference probes (batch held to 1 read)
  bool probing = false;          // a probe is on
  double reference_us = 0;       // the online p99 in the last probe
  double target_us = 0;          // latency_factor x reference_us
  double last_p99_us = 0;        // the last window's online p99
};

class IoGate {
 public:
  // The fixed budget of old (measured with 4, 8 and 16 on the disk tier:
  // docs/BENCHMARKS.md, "Tenants"), and the adaptive gate's start.
  static constexpr int kBatchBudget = 8;

  // Adaptive with the defaults.
  IoGate() { Configure(IoGateOptions()); }
  // A fixed budget.
  explicit IoGate(int batch_budget) {
    IoGateOptions o;
    o.budget = batch_budget;
    Configure(o);
  }
  explicit IoGate(const IoGateOptions& o) { Configure(o); }

  // Before any read; budget < 0, latency_factor <= 1 or an initial budget
  // outside 1..max_budget are clamped to the defaults' sense (see the top).
  void Configure(const IoGateOptions& o);

  // An online reader around its reads.
  void OnlineBegin() { online_.fetch_add(1, std::memory_order_acq_rel); }
  void OnlineEnd();
  // An online read's latency (queued to completed), in ns. Adaptive gates
  // close a window here.
  void OnlineRead(int64_t latency_ns);
  bool adaptive() const { return adaptive_; }

  // A batch reader before each read it submits: true when it may submit it
  // now (counted until BatchDone). Where it may not, a reader with reads
  // out waits for one of its own to complete and asks again; one with none
  // out calls BatchWait, which returns once it may (the read counted).
  bool BatchTryAcquire();
  void BatchWait();
  void BatchDone(int64_t n);

  bool online_waiting() const { return online_.load(std::memory_order_acquire) > 0; }
  int64_t batch_in_flight() const { return batch_.load(std::memory_order_acquire); }
  int budget() const { return budget_.load(std::memory_order_relaxed); }
  // Times a batch reader was told to wait (each refusal of BatchTryAcquire).
  int64_t held() const { return held_.load(std::memory_order_relaxed); }
  IoGateStats stats() const;
  // The gate's clock in ns (IoGateOptions::now_ns, else steady_clock): what
  // online readers time their reads with.
  int64_t Now() const;

 private:
  // Latency buckets: an eighth of an octave each (9%) from 1 us (bucket 0
  // holds less) to about 16 s.
  static constexpr int kBuckets = 8 * 24;
  static int BucketOf(int64_t ns);
  static double BucketUpperNs(int b);
  bool Take();
  void CloseWindow(int64_t now);

  bool adaptive_ = false;
  double factor_ = 1.5;
  int max_budget_ = 1024;
  int64_t (*now_ns_)() = nullptr;
  std::atomic<int> budget_{kBatchBudget};
  std::atomic<int> online_{0};
  std::atomic<int64_t> batch_{0};
  std::atomic<int64_t> held_{0};
  // Adaptive: batch reads keep to the budget until then (ns), kLingerNs
  // after the last online read.
  static constexpr int64_t kLingerNs = 1'000'000'000;
  std::atomic<int64_t> online_until_{0};
  std::mutex mu_;
  std::condition_variable cv_;

  // The window (adaptive): counts per bucket since window_start_.
  std::array<std::atomic<uint32_t>, kBuckets> hist_{};
  std::atomic<int64_t> window_reads_{0};
  std::atomic<int64_t> window_start_{0};
  std::atomic<int64_t> held_at_window_{0};
  std::atomic<int64_t> online_reads_{0};
  // Closing a window and the figures it sets (stats reads them).
  mutable std::mutex window_mu_;
  static constexpr int64_t kProbeEveryNs = 10'000'000'000;
  int probe_ = 0;  // windows of the probe left (2, 1; 0: none on)
  static constexpr int kProbesKept = 3;
  std::array<double, kProbesKept> probe_ns_{};  // the last probes' p99s
  int saved_budget_ = kBatchBudget;             // the budget before the probe
  int64_t cuts_ = 0, raises_ = 0, windows_ = 0, probes_ = 0;
  int64_t last_probe_ns_ = 0;
  double reference_ns_ = 0, last_p99_ns_ = 0;
};

}  // namespace fanout::storage

#endif  // FANOUT_STORAGE_IO_GATE_H_
