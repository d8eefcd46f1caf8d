// The R-MAT benchmark graph: one exact, documented generator so results can be
// compared with other samplers on identical input.
//
// N = 2^scale nodes, E = edge_factor * N directed edges. One sequential
// splitmix64 stream with state `seed`; for each edge, for each of the `scale`
// levels (most significant bit first) draw u = (next() >> 11) * 2^-53 and pick
// the quadrant (src bit, dst bit) = (0,0) if u < a, (0,1) if u < a+b, (1,0) if
// u < a+b+c, else (1,1). No dedupe, no self-loop removal, no permutation.
// CSR over source nodes, each row's edges in generation order.
//
// Check values at scale 20, edge factor 16, seed 42, (a,b,c) = (.57,.19,.19):
// 501,584 nodes of out-degree 0, max out-degree 69,516, indptr[N/2] =
// 12,754,809, CsrChecksum() = 0x9dfb4e99095000ca.
#ifndef FANOUT_DATASETS_RMAT_H_
#define FANOUT_DATASETS_RMAT_H_

#include <cstdint>
#include <functional>

#include "common/status.h"
#include "sampler/csr_graph.h"

namespace fanout::datasets {

struct RmatOptions {
  int scale = 20;                       // N = 2^scale nodes (1..40), default 20
  int64_t edge_factor = 16;             // E = edge_factor * N, default 16
  double a = 0.57, b = 0.19, c = 0.19;  // quadrant probabilities; d = 1 - a - b - c
  uint64_t seed = 42;                   // initial splitmix64 state, default 42
};

// Called with (edges done, edges total) now and then; may be empty.
using ProgressFn = std::function<void(int64_t, int64_t)>;

// Generates the graph as out-neighbor CSR (row = source).
Status GenerateRmat(const RmatOptions& options, sampler::CsrArrays* out,
                    const ProgressFn& progress = nullptr);

// Calls fn(src, dst) for every edge in generation order.
Status ForEachRmatEdge(const RmatOptions& options, const std::function<void(int64_t, int64_t)>& fn);
// The same, stopping after the first edge for which fn returns false.
Status ForEachRmatEdgeWhile(const RmatOptions& options,
                            const std::function<bool(int64_t, int64_t)>& fn);

// c = c * 1000003 + indices[e] over all edges (uint64, wrapping).
uint64_t CsrChecksum(const sampler::CsrArrays& csr);

}  // namespace fanout::datasets

#endif  // FANOUT_DATASETS_RMAT_H_
