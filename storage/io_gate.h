// IoGate: the device's order between online and batch reads in one process.
// While an online read waits (a latency-bound query's feature reads), the
// threads reading for batch work keep at most `batch_budget` reads in
// flight among them all; the rest of the device's depth is left to the
// query. When no online read waits, batch reads take the whole depth. The
// block layer cannot do this by itself: with both classes at best effort a
// query's reads queue behind a hundred batch reads, and with batch at I/O
// class idle (mq-deadline, bfq) the device runs below its depth during each
// query, costing batch work a quarter of its throughput
// (docs/BENCHMARKS.md, "Tenants").
//
// A read's class and gate travel with it as an argument (ReadOptions, as
// RocksDB's IOOptions), set per request by the server (its Tenancy decides
// the class where it runs with --online-io-first; the gate is the server's
// own); reads of no class are never held. BlockReader consults the gate for
// every read of a class.
//
// Thread safety: every method from any thread.
#ifndef FANOUT_STORAGE_IO_GATE_H_
#define FANOUT_STORAGE_IO_GATE_H_

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

class IoGate {
 public:
  // Batch reads in flight at most, process-wide, while an online read waits
  // (measured with 4, 8 and 16 on the disk tier: docs/BENCHMARKS.md, "Tenants").
  static constexpr int kBatchBudget = 8;

  explicit IoGate(int batch_budget = kBatchBudget) : budget_(batch_budget) {}

  // An online reader around its reads.
  void OnlineBegin() { online_.fetch_add(1, std::memory_order_acq_rel); }
  void OnlineEnd();

  // A batch reader before each read it submits: true when it may submit it
  // now (counted until BatchDone). Where it may not, a reader with reads
  // out waits for one of its own to complete and asks again; one with none
  // out calls BatchWait, which returns once it may (the read counted).
  bool BatchTryAcquire();
  void BatchWait();
  void BatchDone(int64_t n);

  bool online_waiting() const { return online_.load(std::memory_order_acquire) > 0; }
  int64_t batch_in_flight() const { return batch_.load(std::memory_order_acquire); }
  // Times a batch reader was told to wait (each refusal of BatchTryAcquire).
  int64_t held() const { return held_.load(std::memory_order_relaxed); }

 private:
  bool Take();
  const int budget_;
  std::atomic<int> online_{0};
  std::atomic<int64_t> batch_{0};
  std::atomic<int64_t> held_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace fanout::storage

#endif  // FANOUT_STORAGE_IO_GATE_H_
