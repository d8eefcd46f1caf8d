// Per-row sampling kernels. Internal to sampler/.
#ifndef FANOUT_SAMPLER_DETAIL_SAMPLE_ROW_H_
#define FANOUT_SAMPLER_DETAIL_SAMPLE_ROW_H_

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/random.h"
#include "sampler/csr_graph.h"
#include "sampler/neighbor_sampler.h"

namespace fanout::sampler::detail {

// Scratch reused across rows by one thread.
struct RowScratch {
  std::vector<uint64_t> bits;                    // Floyd membership for large fanouts
  std::vector<std::pair<double, int64_t>> keys;  // weighted without replacement
  std::vector<double> cdf;                       // weighted with replacement
};

// Uniform k-subset of [0, degree) by Floyd's algorithm (REQUIRES: 0 <= k <=
// degree): draw j in [degree - k, degree) takes DrawBelow(Draw(key, j), j + 1),
// or j itself where that was taken, so the subset is a pure function of
// (key, degree, k). Membership is a bitmap (256 bits up to k = 32, FloydSmall
// below, which the uniform hop calls directly): O(k) for any k. Positions
// come out in draw order. The one Floyd sampler of sampler/ (neighbor and
// temporal hops).
void FloydSample(int64_t degree, int64_t k, uint64_t key, int64_t* pos, RowScratch* scratch);

// FloydSample's loop for k <= 32 (REQUIRES 0 <= k <= min(degree, 32)):
// writes start + p for each position p taken, in draw order. `raw`: the
// draws precomputed by FloydDrawsAvx512() (key unused), or null to draw them
// here under `key`. on_pick(start + p) runs as each is taken (the uniform
// hop prefetches its line). `seen` has bit (p mod 256) set for every
// position taken so far: a draw whose bit is clear is new without scanning.
template <typename OnPick>
inline void FloydSmall(int64_t degree, int64_t k, uint64_t key, const int64_t* raw, int64_t start,
                       int64_t* pos, OnPick&& on_pick) {
  uint64_t seen[4] = {0, 0, 0, 0};
  int64_t n = 0;
  for (int64_t j = degree - k; j < degree; ++j) {
    int64_t t = raw != nullptr ? raw[n] : static_cast<int64_t>(DrawBelow(Draw(key, j), j + 1));
    if (seen[(t >> 6) & 3] & (uint64_t{1} << (t & 63))) {
      for (int64_t q = 0; q < n; ++q) {
        if (pos[q] == start + t) {
          t = j;  // j cannot be chosen yet: it is above every earlier draw range
          break;
        }
      }
    }
    seen[(t >> 6) & 3] |= uint64_t{1} << (t & 63);
    pos[n++] = start + t;
    on_pick(start + t);
  }
}

// Floyd's raw draws: t[i] = DrawBelow(Draw(key, j), j + 1) for j = j0 + i,
// i in [0, count) (FloydSample's draw for position j before its collision
// check). With AVX-512 (F and DQ) eight at a time, and t[count .. count
// rounded up to 8) are written too (REQUIRES room for them); false where the
// CPU lacks AVX-512, and nothing is written.
bool FloydDrawsAvx512(uint64_t key, int64_t j0, int64_t count, int64_t* t);
// Whether FloydDrawsAvx512() runs on this CPU (and is not turned off).
bool HasFloydDrawsAvx512();
// Turns the AVX-512 draws off (tests: the scalar path on any CPU).
void SetFloydDrawsAvx512Off(bool off);

// Exact number of edges SampleRowPositions() writes for a row. Inline: the
// hops call it once per node; a weighted row counts its positive weights
// (WeightedRowSampleCount).
int64_t WeightedRowSampleCount(const CsrGraph& graph, int64_t start, int64_t degree, int64_t fanout,
                               const SamplingOptions& options);
inline int64_t RowSampleCount(const CsrGraph& graph, int64_t start, int64_t degree, int64_t fanout,
                              const SamplingOptions& options) {
  if (options.weighted) return WeightedRowSampleCount(graph, start, degree, fanout, options);
  if (fanout < 0) return degree;
  if (options.replace) return degree > 0 ? fanout : 0;
  return degree < fanout ? degree : fanout;
}

// Writes the sample of the row [start, start + degree) under `key` as CSR
// positions (relative to start) into pos[0 .. count). REQUIRES: count ==
// RowSampleCount(...).
void SampleRowPositions(const CsrGraph& graph, int64_t start, int64_t degree, int64_t fanout,
                        int64_t count, uint64_t key, const SamplingOptions& options, int64_t* pos,
                        RowScratch* scratch);

// The end of the run of edges of type types[b] that starts at position b
// of a row ordered by type ([b, end) the rest of the row).
inline int64_t TypeRunEnd(const int32_t* types, int64_t b, int64_t end) {
  const int32_t t = types[b];
  if (end - b <= 16) {
    while (b < end && types[b] == t) ++b;
    return b;
  }
  return std::upper_bound(types + b, types + end, t) - types;
}

}  // namespace fanout::sampler::detail

#endif  // FANOUT_SAMPLER_DETAIL_SAMPLE_ROW_H_
