// CPU topology helpers used by benchmarks and servers.
#ifndef FANOUT_COMMON_CPU_H_
#define FANOUT_COMMON_CPU_H_

#include <cstddef>

#include "common/status.h"

namespace fanout {

// Number of CPUs this process may run on (its affinity mask).
int UsableCpuCount();

// Pins the calling thread to the `index`-th CPU of the process affinity mask
// (wrapping around). Returns an error status if the OS refuses.
Status PinThisThread(int index);

// The calling thread's CPU seconds so far (CLOCK_THREAD_CPUTIME_ID).
double ThreadCpuSeconds();

// Resident set size of this process in bytes (0 if unknown), and its peak.
int64_t ResidentSetBytes();
int64_t PeakResidentSetBytes();

// The resident set split as the kernel counts it (/proc/self/status): the
// process's own heap and stacks (anon), mapped files (file: the binary and
// its libraries), and shared memory (shmem: a server's sealed partition
// export, or a client's mapped partitions, or UCX's shared-memory FIFOs).
struct ResidentBreakdown {
  int64_t anon = 0, file = 0, shmem = 0;
};
ResidentBreakdown ResidentSetBreakdown();

// Asks the kernel to back [p, p + bytes) with transparent huge pages (the
// 2 MiB-aligned interior of the range). Call it before the memory is first
// touched; random-access arrays (CSR, id maps) then miss the TLB far less.
// Best effort: does nothing where THP is unavailable.
void AdviseHugePages(const void* p, size_t bytes);

// Reserves `n` elements in `v` and advises huge pages for them, so a
// following resize()/assign() faults the memory in as huge pages.
template <typename Vec>
void ReserveHuge(Vec* v, size_t n) {
  if (v->capacity() >= n) return;
  v->reserve(n);
  AdviseHugePages(v->data(), v->capacity() * sizeof(typename Vec::value_type));
}

}  // namespace fanout

#endif  // FANOUT_COMMON_CPU_H_
