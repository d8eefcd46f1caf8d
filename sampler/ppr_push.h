// One round of forward-push personalized PageRank on the rows one owner
// holds (client/ppr.h gives the definition and drives the rounds): the
// kernel a server runs for the pushes routed to it, and the one a client
// runs on a co-located export or on a whole local graph.
//
// Mass is fixed point: 1.0 is 2^62 (kPprOne), so residuals and scores are
// 64-bit integers and their sums are exact, equal in any order. That is what
// makes the push a pure function of the graph and the options whatever the
// partitioning: a node's residual is the same integer whether its shares
// came from one server or five, in whichever order they were added.
//
// A push of node v with residual r (an entry (query, v, r)): v pushes when
// r > eps_fixed * max(deg(v), 1); it keeps PprKept(r) = floor(r * alpha)
// (alpha as a 32-bit fraction) as score, and each entry of its stored row
// receives floor((r - kept) / deg(v)) (the remainder, under deg(v) units of
// 2^-62, is dropped; an empty row drops all of r - kept).
#ifndef FANOUT_SAMPLER_PPR_PUSH_H_
#define FANOUT_SAMPLER_PPR_PUSH_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/array_view.h"
#include "common/status.h"
#include "sampler/csr_graph.h"
#include "sampler/detail/id_map.h"

namespace fanout::sampler {

inline constexpr int kPprMassBits = 62;
inline constexpr uint64_t kPprOne = uint64_t{1} << kPprMassBits;
// Queries (seeds) one push request may name: [0, kMaxPprQueries).
inline constexpr int32_t kMaxPprQueries = int32_t{1} << 22;

// alpha in (0, 1) as a 32-bit fraction, in [1, 2^32 - 1].
uint64_t PprAlphaFixed(double alpha);
// eps in (0, 1) in units of 2^-62 (at least 1).
uint64_t PprEpsFixed(double eps);
inline uint64_t PprKept(uint64_t r, uint64_t alpha_fixed) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(r) * alpha_fixed) >> 32);
}
inline bool PprPushes(uint64_t r, int64_t degree, uint64_t eps_fixed) {
  return static_cast<unsigned __int128>(r) >
         static_cast<unsigned __int128>(eps_fixed) * static_cast<uint64_t>(degree > 1 ? degree : 1);
}
// Fixed-point mass as a double (m / 2^62: exact up to double's rounding).
inline double PprMassToDouble(uint64_t m) {
  return std::ldexp(static_cast<double>(m), -kPprMassBits);
}

// A round's entries for one owner: entry i is (queries[i], nodes[i],
// residuals[i]).
struct PprPushRequest {
  ArrayView<const int32_t> queries;
  ArrayView<const int64_t> nodes;  // global ids
  ArrayView<const uint64_t> residuals;
  uint64_t alpha_fixed = 0;
  uint64_t eps_fixed = 0;
};

struct PprPushResult {
  // Per entry processed (the first `done` of the request): whether it pushed,
  // and its node's row length.
  std::vector<uint8_t> pushed;
  std::vector<int64_t> degrees;
  // The pushed mass, summed per (query, node): entry j gives mass[j] to
  // nodes[j]'s residual for query queries[j]. In no particular order.
  std::vector<int32_t> queries;
  std::vector<int64_t> nodes;
  std::vector<uint64_t> mass;
  // Entries processed: the request's first `done`. Fewer than all where the
  // pushed mass would have passed max_out (node, query) pairs; the caller
  // sends the rest again.
  size_t done = 0;
  void Clear();
  // Row entries the done entries that pushed spread mass over (the edges
  // the round read, for metrics).
  int64_t PushedEdges() const;
};

// A row that differs from the CSR's (a live partition's merged row at the
// version read): returns true and fills *row with its neighbors (global
// ids), or false to read the CSR.
using PprRowOverride = std::function<bool(int64_t node, std::vector<int64_t>* row)>;

// InvalidArgument unless the request has one query id and one residual per
// node (PprPushRound checks it, and so does a caller that routes entries).
Status CheckPprPushShape(const PprPushRequest& in);

// max_out for an owner whose reply nothing bounds (a whole graph in process,
// a co-located export): every entry is done in one call.
inline constexpr size_t kPprNoReplyLimit = ~size_t{0} >> 1;

// Runs the pushes of `in` on `graph` (rows node_offset .. node_offset +
// num_nodes). InvalidArgument naming the value where the arrays differ in
// length, a node is outside the rows, a query outside [0, kMaxPprQueries),
// alpha_fixed or eps_fixed is 0 (or alpha_fixed >= 2^32), or one node's row
// alone is longer than max_out. Uses `map` as scratch.
Status PprPushRound(const CsrGraph& graph, int64_t node_offset, const PprPushRequest& in,
                    size_t max_out, PprPushResult* out, detail::IdMap* map,
                    const PprRowOverride* override_row = nullptr);

}  // namespace fanout::sampler

#endif  // FANOUT_SAMPLER_PPR_PUSH_H_
