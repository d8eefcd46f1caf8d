#include "bench/machine_limits.h"

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "common/cpu.h"
#include "common/random.h"

namespace fanout::bench {

double RandomReadRate(int threads, int64_t bytes, double seconds) {
  const uint64_t n = static_cast<uint64_t>(bytes) / 8;
  uint64_t pow2 = 1;
  while (pow2 * 2 <= n) pow2 *= 2;
  // 2 MiB-aligned and advised for transparent huge pages, so the figure is
  // the memory's random-access limit rather than the page walker's.
  size_t alloc = pow2 * sizeof(uint64_t);
  void* raw = std::aligned_alloc(size_t{2} << 20,
                                 (alloc + (size_t{2} << 20) - 1) & ~((size_t{2} << 20) - 1));
  if (raw == nullptr) return 0;
  std::unique_ptr<uint64_t[], void (*)(uint64_t*)> data(static_cast<uint64_t*>(raw),
                                                        [](uint64_t* p) { std::free(p); });
  madvise(raw, alloc, MADV_HUGEPAGE);
  // Touch every page in parallel so the timed loop reads real memory.
  {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        (void)PinThisThread(t);
        for (uint64_t i = t; i < pow2; i += threads) data[i] = i * kGolden64;
      });
    for (auto& th : ts) th.join();
  }
  const uint64_t mask = pow2 - 1;
  std::atomic<uint64_t> total_reads{0};
  std::atomic<uint64_t> sink{0};
  std::vector<std::thread> ts;
  auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      (void)PinThisThread(t);
      // Four independent LCG streams give addresses at about one per cycle,
      // so the loop is bound by the loads, not by computing where they go.
      uint64_t s = 0, reads = 0;
      uint64_t x0 = Mix64(4 * t + 1), x1 = Mix64(4 * t + 2), x2 = Mix64(4 * t + 3),
               x3 = Mix64(4 * t + 4);
      const uint64_t kMul = 6364136223846793005ULL, kAdd = 1442695040888963407ULL;
      const int shift = 64 - __builtin_ctzll(pow2);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
      while (std::chrono::steady_clock::now() < deadline) {
        for (int k = 0; k < (1 << 14); ++k) {
          x0 = x0 * kMul + kAdd;
          x1 = x1 * kMul + kAdd;
          x2 = x2 * kMul + kAdd;
          x3 = x3 * kMul + kAdd;
          s += data[x0 >> shift] + data[x1 >> shift] + data[x2 >> shift] + data[x3 >> shift];
        }
        reads += 4 << 14;
      }
      (void)mask;
      total_reads += reads;
      sink += s;
    });
  }
  for (auto& th : ts) th.join();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return total_reads.load() / elapsed;
}

double CoreClockHz(double seconds) {
#if defined(__x86_64__)
  // A dependency chain of 64-bit multiplies: 3 cycles each on every x86-64
  // core of the last decade (Intel since Sandy Bridge, AMD since Zen). Not a
  // chain of `add $1`: recent cores (Intel since Golden Cove, AMD Zen 5) fold
  // immediate adds at rename, several per cycle, and such a chain read 11-16
  // GHz here.
  constexpr uint64_t kMulsPerBlock = 1 << 18;
  constexpr double kCyclesPerMul = 3;
  uint64_t x = 1, blocks = 0;
  const uint64_t m = 0x9E3779B97F4A7C15ull;  // odd: the product never becomes 0
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  do {
    for (uint64_t i = 0; i < kMulsPerBlock; i += 8) {
      asm volatile(
          "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\t"
          "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0"
          : "+r"(x)
          : "r"(m));
    }
    ++blocks;
  } while (std::chrono::steady_clock::now() < deadline);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return x != 0 ? kCyclesPerMul * static_cast<double>(blocks * kMulsPerBlock) / elapsed : 0;
#else
  (void)seconds;
  return 0;
#endif
}

}  // namespace fanout::bench
