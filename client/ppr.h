// Approximate personalized PageRank neighborhoods by forward push (Andersen,
// Chung and Lang, FOCS 2006), the sampler of PinSAGE-style and PPRGo-style
// GNNs: for each seed s, scores p with |p(v) - ppr_s(v)| <= eps * deg(v) for
// every node v, and s's top_k nodes by score.
//
// Definition (ppr_s over the stored rows: with "in" storage a node's
// neighbors are its in-neighbors): ppr_s = alpha e_s + (1 - alpha) ppr_s P,
// P[u][v] = (multiplicity of v in u's row) / deg(u); a node with an empty row
// keeps its alpha share and the rest of its mass is dropped (P's row is 0),
// as the exact computation the tests compare with.
//
// Push, in synchronous rounds so that the result is a pure function of the
// graph and the options, the same through any number of servers and in
// process: each round, every node u of a seed's residual r with
// r(u) > eps * max(deg(u), 1) pushes at once: p(u) += alpha r(u), and
// (1 - alpha) r(u) / deg(u) goes to each entry of its row. The rounds end
// when no node pushes (or after max_rounds: PprResult::converged false).
// Mass is fixed point (sampler/ppr_push.h: 1.0 = 2^62, alpha a 32-bit
// fraction, shares rounded down), so every sum is exact and equal in any
// order, whoever adds it.
//
// Distribution: the push runs where the rows are. Each round the caller
// routes every seed's pushing (seed, node, residual) entries to the nodes'
// owners (Session::PprPush: one request per partition, all in flight at
// once; a co-located partition's pushes run here on its export); each owner
// pushes on its rows and answers the mass for every (seed, neighbor), summed
// per pair, which the caller adds to the residuals it routes next round.
// Only residuals and pushed mass cross the network, never rows. The caller
// keeps p and r per seed, and each node's degree once an owner has told it
// (until then a node's threshold is eps, so no node that should push is
// missed; an entry under its real threshold comes back not pushed).
// The top_k list of seed s: its nodes other than s by score descending, then
// id ascending.
#ifndef FANOUT_CLIENT_PPR_H_
#define FANOUT_CLIENT_PPR_H_

#include <cstdint>
#include <vector>

#include "client/source.h"
#include "common/array_view.h"
#include "common/status.h"
#include "sampler/hetero.h"

namespace fanout::client {

// The most scores and residuals one call holds over all its seeds (about 3
// GiB of hash-map entries): past it the call fails with InvalidArgument
// naming eps, rather than taking the machine's memory.
inline constexpr size_t kMaxPprEntries = size_t{64} << 20;

struct PprOptions {
  double alpha = 0.15;  // teleport (restart) probability, in (0, 1)
  // Residual threshold per unit of degree, in [1e-9, 1). The default finds
  // 0.97 of the exact top-32 lists on R-MAT scale 12 (bench/ppr_recall.py;
  // 1e-4: 0.79, 1e-5: 0.95); work grows about as 1 / eps.
  double eps = 5e-6;
  int64_t top_k = 32;         // nodes kept per seed (>= 1)
  int64_t max_rounds = 1000;  // push rounds per batch (>= 1)
  // Heterogeneous datasets: at most type_budgets[t] nodes of node type t in
  // a seed's list (one entry per node type, each >= 0; empty = no budgets),
  // on top of top_k: the best of each type within its budget, then the
  // top_k best of those (PinSAGE-style per-type neighborhoods).
  std::vector<int64_t> type_budgets;
};

// InvalidArgument naming the option out of range. type_budgets need
// `schema` (the source's hetero(); null: a homogeneous one) and one budget
// >= 0 per node type.
Status CheckPprOptions(const PprOptions& options, const sampler::HeteroSchema* schema = nullptr);

struct PprResult {
  // Seed i's top nodes: nodes[offsets[i] .. offsets[i + 1]) with scores.
  std::vector<int64_t> offsets, nodes;
  std::vector<float> scores;
  int64_t pushes = 0;        // node pushes over all seeds
  int64_t rounds = 0;        // push rounds taken
  int64_t entries_sent = 0;  // (seed, node, residual) entries sent to their owners
  bool converged = true;     // false: stopped at max_rounds with residuals above the threshold
};

// Forward-push PPR for `seeds` (ids in [0, num_nodes) of the session's
// source) as defined above. `schema` (the source's hetero(); null for a
// homogeneous one) is needed for options.type_budgets: InvalidArgument
// without it, or where the budgets do not name every node type.
Status PersonalizedPageRank(Session& session, ArrayView<const int64_t> seeds,
                            const PprOptions& options, PprResult* out,
                            const sampler::HeteroSchema* schema = nullptr);

// The exact ppr_s of the definition above by `iterations` rounds of power
// iteration over `rows` (every node's stored row): the reference the tests
// and benches compare forward push with. O(iterations x edges) time, O(nodes)
// memory. REQUIRES: 0 <= seed < rows.size(), neighbors in range.
std::vector<double> ExactPersonalizedPageRank(const std::vector<std::vector<int64_t>>& rows,
                                              int64_t seed, double alpha, int iterations);

// A PPR batch as a one-hop subgraph (sampler::MultiHopSampler's layout):
// n_id = the seeds, then each seed's top nodes in order of first appearance;
// one edge per (seed, top node) with row = the top node, col = the seed, and
// edge_weight = its score; edge ids -1 (not stored edges).
Status SamplePpr(Session& session, ArrayView<const int64_t> seeds, const PprOptions& options,
                 bool with_edge_ids, sampler::SampledSubgraph* out, PprResult* stats = nullptr,
                 const sampler::HeteroSchema* schema = nullptr);

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_PPR_H_
