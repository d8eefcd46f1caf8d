// Random walks through a Source (servers or a local dataset): uniform or
// weighted first-order walks, walks with restart, node2vec's second-order
// walks, and PinSAGE-style importance neighborhoods from their visit counts.
//
// Walk j of seed i has id w = i * num_walks + j. Step t (1 .. walk_length) of
// walk w uses the key WalkStepKey(request_seed, w, t) (sampler/walk.h) and
// nothing else, so walks are the same through any number of servers, any
// transport, and in process.
// - Step: the walk moves to a stored neighbor of its node (Session::WalkStep:
//   uniform, or by edge weight with `weighted`); a node without one is a dead
//   end and the rest of the walk is -1.
// - Restart (restart_prob > 0), before each step t >= 2: with probability
//   restart_prob (Draw(key, 1)) the walk jumps back to its start node instead
//   of moving (random walk with restart / personalized PageRank, PinSAGE).
// - node2vec (p != 1 or q != 1), steps t >= 2, with v the current node and u
//   the one before: a candidate x drawn as a first-order step is accepted
//   with probability alpha(u, x) / max(1/p, 1, 1/q), alpha = 1/p when x = u,
//   1 when x is a stored neighbor of u (Session::InRows: the servers'
//   has_edges), 1/q otherwise (Grover and Leskovec, KDD 2016, by rejection as
//   in PyG's torch-cluster). Attempt a > 0 draws with its own key
//   (Mix64(key ^ a * golden)); after max_trials rejections the last candidate
//   is taken (probability (1 - min/max alpha)^max_trials).
// - PinSAGE (top_k > 0; Ying et al., KDD 2018): seed i's neighborhood is the
//   top_k nodes visited most often by its walks (steps visit_stride,
//   2 visit_stride, ... <= walk_length; the seed itself and dead ends not
//   counted), by count descending, then id. visit_stride 2 on a bipartite
//   user-item graph counts items only (PinSAGE's item-user-item walks); with
//   it, restarts happen only before steps 1 + a multiple of visit_stride, so
//   counted steps stay on the seed's side.
// - Metapath walks (metapath2vec, Dong et al., KDD 2017; `metapath` not
//   empty, a heterogeneous dataset): step t moves only along edges of type
//   metapath[(t - 1) % L] in the node's stored row (Session::WalkStep with
//   that type), so the walk follows the types in order, repeating them. A
//   node with no edge of the step's type is a dead end. Types are in the
//   stored direction: with "in" storage (the default) a step along
//   (s, r, d) goes from a d node to one of its s neighbors, so on MovieLens
//   with reverse relations ["rev_rates", "rates"] walks user, movie, user,
//   ... (CheckMetapath checks that each type starts where the one before
//   ends). node2vec's p/q and restarts apply as to any walk.
#ifndef FANOUT_CLIENT_WALKS_H_
#define FANOUT_CLIENT_WALKS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "client/source.h"
#include "common/array_view.h"
#include "common/status.h"
#include "sampler/hetero.h"

namespace fanout::client {

// Limits that keep one call's output bounded (hostile or mistaken inputs get
// InvalidArgument, not an allocation of terabytes).
inline constexpr int64_t kMaxWalkLength = int64_t{1} << 16;
inline constexpr int64_t kMaxWalksPerSeed = int64_t{1} << 16;
inline constexpr int64_t kMaxWalkEntries = int64_t{1} << 30;  // walks x (walk_length + 1)

struct WalkOptions {
  int64_t walk_length = 5;        // steps per walk (>= 1); walks have walk_length + 1 nodes
  int64_t num_walks = 1;          // walks per seed (>= 1)
  double restart_prob = 0;        // in [0, 1)
  double p = 1, q = 1;            // node2vec return and in-out parameters (> 0)
  bool weighted = false;          // steps by edge weight (needs a weighted dataset)
  int64_t top_k = 0;              // PinSAGE neighborhoods: > 0 fills WalkResult's top-k arrays
  int64_t visit_stride = 1;       // count (and restart) every this many steps (>= 1)
  int max_trials = 100;           // node2vec rejection attempts per step (>= 1)
  std::vector<int32_t> metapath;  // edge type indices (HeteroSchema) per step, cyclic
};

// InvalidArgument naming the option that is out of range.
Status CheckWalkOptions(const WalkOptions& options);
// A metapath against the dataset's types (null: a homogeneous dataset):
// every index an edge type; each type's row type is the end type of the one
// before (stored direction); and, where the walk is longer than the
// metapath, the last type ends where the first starts. InvalidArgument
// naming the types otherwise. An empty metapath is always fine.
Status CheckMetapath(const sampler::HeteroSchema* schema, const WalkOptions& options);

struct WalkResult {
  // [num_seeds * num_walks, walk_length + 1], row-major: column 0 is the
  // seed; -1 past a dead end.
  std::vector<int64_t> walks;
  // top_k > 0: seed i's neighborhood is nodes[offsets[i] .. offsets[i + 1])
  // with their visit counts (at most top_k each).
  std::vector<int64_t> offsets, nodes, counts;
  int64_t steps = 0;  // walk steps taken (restarts included; dead ends not)
};

// Walks from `seeds` (ids in [0, source num_nodes)) in `session`.
Status RandomWalks(Session& session, ArrayView<const int64_t> seeds, uint64_t request_seed,
                   const WalkOptions& options, WalkResult* out);

// The top-k visited nodes of each seed's walks (WalkResult's PinSAGE part)
// from the walks alone.
void TopVisited(const std::vector<int64_t>& walks, int64_t num_seeds, int64_t num_walks,
                int64_t walk_length, int64_t top_k, WalkResult* out, int64_t visit_stride = 1);

// PinSAGE hops (a NodeLoader's sampler="pinsage"): multi-hop sampling with
// the semantics of sampler::MultiHopSampler (n_id seeds first, then new
// nodes in order of discovery; row = neighbor, col = frontier node), where
// hop h's neighbors of a frontier node are the fanouts[h] nodes its walks
// visit most (RandomWalks from the frontier with `walk` and top_k =
// fanouts[h], request seed HopKey(request_seed, h)), each edge's weight its
// visit count over the node's top-k total (PinSAGE's importance pooling
// weights, out->edge_weight). Edge ids (with_edge_ids) are -1: a walk
// neighborhood is not a stored edge. fanouts must be >= 1.
Status SamplePinSage(Session& session, ArrayView<const int64_t> seeds, uint64_t request_seed,
                     const std::vector<int64_t>& fanouts, const WalkOptions& walk,
                     bool with_edge_ids, sampler::SampledSubgraph* out);

// One thread's walker over a source (its own session). Not thread-safe.
class WalkSampler {
 public:
  static Status Create(std::shared_ptr<Source> source, WalkOptions options,
                       std::unique_ptr<WalkSampler>* out);
  Status Sample(ArrayView<const int64_t> seeds, uint64_t request_seed, WalkResult* out) {
    return RandomWalks(*session_, seeds, request_seed, options_, out);
  }
  const WalkOptions& options() const { return options_; }
  Session& session() { return *session_; }

 private:
  WalkSampler() = default;
  std::shared_ptr<Source> source_;
  std::unique_ptr<Session> session_;
  WalkOptions options_;
};

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_WALKS_H_
