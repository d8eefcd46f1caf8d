// One-hop neighbor sampling of a batch of nodes.
//
// Sampling is a pure function of (graph, node id, hop, request seed): node v's
// sample in hop h of the request with seed s depends on nothing else, so the
// output is the same for any thread count, any split of the nodes into
// batches, any order of the nodes, and on any server holding v's row.
#ifndef FANOUT_SAMPLER_NEIGHBOR_SAMPLER_H_
#define FANOUT_SAMPLER_NEIGHBOR_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "common/array_view.h"
#include "common/pod_vector.h"
#include "common/status.h"
#include "common/thread_pool.h"
#include "sampler/csr_graph.h"

namespace fanout::sampler {

struct SamplingOptions {
  // Draw with replacement: exactly `fanout` draws from any non-empty row
  // (default false: without replacement, min(fanout, degree) distinct edges).
  bool replace = false;
  // Draw proportionally to edge weights; REQUIRES a weighted graph. Edges of
  // weight 0 are never drawn (default false: uniform).
  bool weighted = false;
  // Return the id of each sampled edge (default true).
  bool with_edge_ids = true;
  // Global id of the graph's row 0: node v is row v - node_offset. A
  // partition's CSR holds rows [node_offset, node_offset + num_nodes) of the
  // global graph (default 0: the whole graph).
  int64_t node_offset = 0;
  // LABOR-0 instead of independent per-node draws (sampler/labor.h): the
  // seeds of a hop share one variate per neighbor; each sampled edge gets an
  // importance weight (OneHopResult::edge_weights). Not with replace.
  bool labor = false;
};

inline bool operator==(const SamplingOptions& a, const SamplingOptions& b) {
  return a.replace == b.replace && a.weighted == b.weighted && a.with_edge_ids == b.with_edge_ids &&
         a.node_offset == b.node_offset && a.labor == b.labor;
}

// Checks one fanout value: -1 (all neighbors) or >= 0.
Status CheckFanout(int64_t fanout, int64_t hop);

// The result of a one-hop request: node i's sample is
// neighbors[offsets[i] .. offsets[i+1]) with edge ids at the same positions.
struct OneHopResult {
  PodVector<int64_t> offsets;    // nodes + 1 entries
  PodVector<int64_t> neighbors;  // global node ids
  PodVector<int64_t> edge_ids;   // empty unless with_edge_ids
  PodVector<int32_t>
      edge_types;  // heterogeneous hops (sampler/hetero.h): same positions; else empty
  PodVector<float> edge_weights;  // LABOR hops (sampler/labor.h): same positions; else empty
};

// Reusable state for sampling one hop. Not thread-safe: one per thread.
class HopSampler {
 public:
  // Samples up to `fanout` neighbors of every node in `nodes` (global ids in
  // [node_offset, node_offset + graph.num_nodes())) for hop `hop` of the
  // request with seed `request_seed`. Uses `pool` (may be null) to split large
  // batches. options.labor: a LABOR-0 hop (SampleLaborHop). On error `out`
  // is unspecified.
  Status Sample(const CsrGraph& graph, ArrayView<const int64_t> nodes, int64_t fanout, int64_t hop,
                uint64_t request_seed, const SamplingOptions& options, ThreadPool* pool,
                OneHopResult* out);

 private:
  PodVector<int64_t> start_;  // per node: first CSR position of its row
  PodVector<int64_t> degree_;
};

namespace detail {
struct RowScratch;
}  // namespace detail

// The draws of rows that live outside a CsrGraph (a live partition's merged
// and changed rows, live/versioned_partition.h): the positions in
// [0, degree) that the uniform hop (options.replace; not weighted or LABOR)
// takes for global node `node` in hop `hop` of the request with seed
// `request_seed` from a row of `degree` neighbors, in the hop's order. So a
// row of the same neighbors in the same order samples the same wherever it
// is held. Init checks the hop once; Count and Positions cost no allocation
// (the hop's per-row work, as in HopSampler). One thread.
class RowDraws {
 public:
  RowDraws();
  ~RowDraws();
  RowDraws(const RowDraws&) = delete;
  RowDraws& operator=(const RowDraws&) = delete;
  // InvalidArgument for a bad fanout; NotSupported for weighted or LABOR.
  Status Init(int64_t fanout, int64_t hop, uint64_t request_seed, const SamplingOptions& options);
  // How many positions a row of `degree` gives (REQUIRES: degree >= 0).
  int64_t Count(int64_t degree) const {
    if (fanout_ < 0) return degree;
    if (replace_) return degree > 0 ? fanout_ : 0;
    return degree < fanout_ ? degree : fanout_;
  }
  // Writes Count(degree) positions into pos.
  void Positions(int64_t node, int64_t degree, int64_t* pos);

 private:
  int64_t fanout_ = 0;
  bool replace_ = false;
  uint64_t hop_key_ = 0;
  SamplingOptions options_;
  detail::RowScratch* scratch_;
};

// Convenience wrapper: a fresh HopSampler per call.
Status SampleOneHop(const CsrGraph& graph, ArrayView<const int64_t> nodes, int64_t fanout,
                    int64_t hop, uint64_t request_seed, const SamplingOptions& options,
                    ThreadPool* pool, OneHopResult* out);

}  // namespace fanout::sampler

#endif  // FANOUT_SAMPLER_NEIGHBOR_SAMPLER_H_
