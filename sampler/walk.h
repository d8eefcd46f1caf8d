// One step of many random walks: the server-side (and same-host) kernel of
// client/walks.h's walkers.
//
// Walk i stands at nodes[i] and moves to one stored neighbor chosen by
// keys[i] alone: uniformly (position DrawBelow(Draw(key, 0), degree)) or, with
// options.weighted, in proportion to the edge weights (inverse CDF of
// Draw(key, 0) over the row's positive weights; weight-0 edges never). A row
// with no (positive-weight) edge is a dead end: that walk gets no neighbor.
// The key is the walk's own (client/walks.h: a pure function of walk id, step
// and request seed), so two walks at one node move independently, and the
// step is the same on any server holding the row.
#ifndef FANOUT_SAMPLER_WALK_H_
#define FANOUT_SAMPLER_WALK_H_

#include <cstdint>

#include "common/array_view.h"
#include "common/random.h"
#include "common/status.h"
#include "sampler/csr_graph.h"
#include "sampler/neighbor_sampler.h"

namespace fanout::sampler {

// The key of step `step` (1-based) of walk `walk` (a position: walk j of seed
// i is i * num_walks + j) in the request with seed `request_seed`.
inline constexpr uint64_t WalkStepKey(uint64_t request_seed, uint64_t walk, uint64_t step) {
  return Mix64(Mix64(HopKey(request_seed, 0x57414c4bULL) ^ (walk * kGolden64)) +
               step * 0xd1b54a32d192ed03ULL);
}

// out gets one run per node, of length 1 (the next node, its edge id with
// options.with_edge_ids) or 0 (dead end). keys.size() must equal nodes.size();
// nodes in [node_offset, node_offset + graph.num_nodes()). No replace or
// LABOR (a step is one draw).
// Metapath steps (edge_type >= 0): the walk moves only along its row's
// edges of that type (edge_types per CSR position, rows ordered by type, as
// sampler/hetero.h stores them); a row without one is a dead end; out's
// edge_types name the type. InvalidArgument without edge_types.
Status SampleWalkStep(const CsrGraph& graph, ArrayView<const int64_t> nodes,
                      ArrayView<const uint64_t> keys, const SamplingOptions& options,
                      OneHopResult* out, const int32_t* edge_types = nullptr, int edge_type = -1);

}  // namespace fanout::sampler

#endif  // FANOUT_SAMPLER_WALK_H_
