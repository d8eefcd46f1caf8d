// The machine's own limits, measured in the same run as a benchmark so that
// figures can be printed as ratios (these machines are shared and noisy).
#ifndef FANOUT_BENCH_MACHINE_LIMITS_H_
#define FANOUT_BENCH_MACHINE_LIMITS_H_

#include <cstdint>

namespace fanout::bench {

// Independent random 8-byte reads from an array of `bytes` bytes, by
// `threads` threads pinned to distinct CPUs, for about `seconds`. Returns
// reads per second summed over the threads.
double RandomReadRate(int threads, int64_t bytes, double seconds);

// The core's clock in Hz, estimated on the calling thread from a chain of
// dependent 64-bit multiplies (three cycles each) run for about `seconds`. The chain
// is x86-64 assembly: on other architectures this returns 0 and callers
// print no cycle figures. Used to turn a rate into cycles per item where the
// VM offers no cycle counters (perf stat).
double CoreClockHz(double seconds);

}  // namespace fanout::bench

#endif  // FANOUT_BENCH_MACHINE_LIMITS_H_
