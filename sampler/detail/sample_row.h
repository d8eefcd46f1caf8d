// Per-row sampling kernels. Internal to sampler/.
#ifndef FANOUT_SAMPLER_DETAIL_SAMPLE_ROW_H_
#define FANOUT_SAMPLER_DETAIL_SAMPLE_ROW_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "sampler/csr_graph.h"
#include "sampler/neighbor_sampler.h"

namespace fanout::sampler::detail {

// Scratch reused across rows by one thread.
struct RowScratch {
  std::vector<uint64_t> bits;                    // Floyd membership for large fanouts
  std::vector<std::pair<double, int64_t>> keys;  // weighted without replacement
  std::vector<double> cdf;                       // weighted with replacement
};

// Exact number of edges SampleRowPositions() writes for a row.
int64_t RowSampleCount(const CsrGraph& graph, int64_t start, int64_t degree, int64_t fanout,
                       const SamplingOptions& options);

// Writes the sample of the row [start, start + degree) under `key` as CSR
// positions (relative to start) into pos[0 .. count). REQUIRES: count ==
// RowSampleCount(...).
void SampleRowPositions(const CsrGraph& graph, int64_t start, int64_t degree, int64_t fanout,
                        int64_t count, uint64_t key, const SamplingOptions& options,
                        int64_t* pos, RowScratch* scratch);

}  // namespace fanout::sampler::detail

#endif  // FANOUT_SAMPLER_DETAIL_SAMPLE_ROW_H_
