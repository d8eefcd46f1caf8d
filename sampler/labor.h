// LABOR-0 (layer-neighbor sampling; Balin and Catalyurek, "Layer-Neighbor
// Sampling -- Defusing Neighborhood Explosion in GNNs", NeurIPS 2023; DGL's
// LaborSampler with importance_sampling=0).
//
// Definition. In hop h of the request with seed S, every node t gets one
// variate r_t = LaborVariate(LaborKey(S, h), t), uniform in (0, 1] and a pure
// function of (t, h, S): the same for every frontier node of the hop that
// has t as a neighbor, on any server. Frontier node s with stored neighbors
// N(s) and fanout k includes neighbor t when r_t <= pi_ts, where
//   - unweighted: pi_ts = min(1, k / d_s), d_s = |N(s)| (all of N(s) when
//     d_s <= k or k = -1);
//   - weighted (edge weights a_ts, the paper's weighted form): pi_ts =
//     min(1, c_s * a_ts) with c_s chosen so that sum_t pi_ts = k (all edges
//     of positive weight when there are at most k of them or k = -1; edges
//     of weight 0 never).
// Each seed keeps k neighbors in expectation, as neighbor sampling, but the
// seeds of a hop share their draws, so the hop reaches fewer distinct nodes.
// The count per seed varies (it is not exactly k).
//
// Each sampled edge carries the importance weight of the paper's
// Horvitz-Thompson estimator, normalised per seed:
//   edge_weight(t -> s) = a_ts / (pi_ts * sum_{t' in N(s)} a_t's)
// (a = 1 unweighted: 1 / min(d_s, k)), so sum over the sampled edges of s of
// edge_weight * h_t is an unbiased estimate of the (weighted) mean of h over
// N(s); with every neighbor included it is the mean itself. PyG's name for
// it is edge_weight (SimpleConv(aggr='sum'), GraphConv(aggr='add') take it).
//
// Not supported (refused by name): with replacement, heterogeneous (per-edge-
// type) and temporal hops; LABOR-* (the paper's fixed-point iterations).
#ifndef FANOUT_SAMPLER_LABOR_H_
#define FANOUT_SAMPLER_LABOR_H_

#include <cstdint>

#include "common/array_view.h"
#include "common/random.h"
#include "common/status.h"
#include "common/thread_pool.h"
#include "sampler/csr_graph.h"
#include "sampler/neighbor_sampler.h"

namespace fanout::sampler {

// The key of hop `hop`'s variates in the request with seed `request_seed`
// (distinct from neighbor sampling's HopKey streams).
inline constexpr uint64_t LaborKey(uint64_t request_seed, uint64_t hop) {
  return Mix64(HopKey(request_seed, hop) ^ 0x4c41424f522d3030ULL);  // "LABOR-00"
}
// r_t: node t's variate under a hop's LaborKey, uniform in (0, 1].
inline double LaborVariate(uint64_t labor_key, int64_t t) {
  return DrawOpenUnit(Mix64(labor_key ^ (static_cast<uint64_t>(t) * kGolden64)));
}

// One LABOR-0 hop for `nodes` (global ids in [node_offset, node_offset +
// graph.num_nodes())), the output as HopSampler::Sample's plus
// out->edge_weights (one per sampled edge, same positions). `pool` may be
// null. Neighbors of a row come out in CSR order.
Status SampleLaborHop(const CsrGraph& graph, ArrayView<const int64_t> nodes, int64_t fanout,
                      int64_t hop, uint64_t request_seed, const SamplingOptions& options,
                      ThreadPool* pool, OneHopResult* out);

// c_s of the weighted form for one row: the scale with sum_i min(1, c * w_i)
// = k over the positive weights w (k < their count). Exposed for tests.
double LaborWeightScale(const float* w, int64_t degree, int64_t k);

}  // namespace fanout::sampler

#endif  // FANOUT_SAMPLER_LABOR_H_
