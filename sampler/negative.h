// Negative sampling for link prediction, following PyG's NegativeSampling
// (LinkNeighborLoader's neg_sampling), with strict negatives by default.
//
// - binary: ceil(amount * P) pairs (src, dst), both ends uniform over the
//   graph's nodes; the loader labels them 0 beside the P positive edges.
// - triplet: `amount` (an integer) destinations per positive edge, uniform
//   over the nodes; the source is the positive edge's source.
//
// Strict (the default): a drawn pair that is an existing edge src -> dst of
// the stored graph is drawn again, so every negative is a non-edge (uniform
// over the non-edges: rejection sampling). Non-strict: the first draw stands,
// as PyG's loaders do. Which pairs exist is asked of an EdgeOracle: the local
// graph, or the servers owning the stored rows (Session::HasEdges).
//
// Every draw is a pure function of (request seed, negative index, attempt),
// and attempts run in rounds over all pending negatives: the same request
// seed gives the same negatives locally and through any number of servers.
//
// Temporal negatives (NegativeOptions::temporal; link prediction on temporal
// graphs evaluated as TGB does), over an EdgeHistory of the loader's seed
// edges with their times. A negative keeps its positive's source and time t
// (binary negative j: positive j % P's; triplet: its own positive's), and
// only the destination is drawn:
// - active: uniformly among the destinations first seen (as the destination
//   of a seed edge) strictly before t, other than the positive's own; where
//   none is yet (the earliest positives), uniformly over the destination
//   nodes as without the option.
// - historical: uniformly among the destinations this source linked to
//   (in a seed edge) strictly before t, other than the positive's own
//   destination; where it has none, an active draw.
// Never a destination first seen after t, either way. `strict` does not
// apply: the stored graph holds later edges too, so checking against it
// would let the future decide (and historical negatives are earlier edges
// by design); the positive's own destination is drawn again instead (up to
// 16 draws: with two or more candidates all miss with probability <= 2^-16).
#ifndef FANOUT_SAMPLER_NEGATIVE_H_
#define FANOUT_SAMPLER_NEGATIVE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/array_view.h"
#include "common/status.h"
#include "sampler/csr_graph.h"
#include "sampler/hetero.h"

namespace fanout::sampler {

enum class NegativeMode { kNone, kBinary, kTriplet };

// "none", "binary", "triplet"; InvalidArgument names the text otherwise.
Status ParseNegativeMode(const std::string& text, NegativeMode* out);
const char* NegativeModeName(NegativeMode mode);

enum class TemporalNegatives { kNone, kActive, kHistorical };

// "none", "active", "historical"; InvalidArgument names the text otherwise.
Status ParseTemporalNegatives(const std::string& text, TemporalNegatives* out);
const char* TemporalNegativesName(TemporalNegatives t);

// The seed edges' history for temporal negatives: each destination's first
// time, and each (source, destination) pair's first time. Built once per
// loader: O(P log P), 24 bytes per distinct pair and 16 per destination.
class EdgeHistory {
 public:
  // From edges src[i] -> dst[i] at times[i]. REQUIRES: equal sizes.
  EdgeHistory(ArrayView<const int64_t> src, ArrayView<const int64_t> dst,
              ArrayView<const int64_t> times);
  // How many distinct destinations were first seen strictly before t; they
  // are Active(0 .. count - 1), by (first time, id).
  int64_t ActiveBefore(int64_t t) const;
  int64_t Active(int64_t k) const { return active_[static_cast<size_t>(k)].second; }
  // The destinations `s` linked to strictly before t: Linked(k) for k in
  // [first, second), by (first time, id).
  std::pair<int64_t, int64_t> LinkedBefore(int64_t s, int64_t t) const;
  int64_t Linked(int64_t k) const { return pairs_[static_cast<size_t>(k)].dst; }

 private:
  struct Pair {
    int64_t src, time, dst;
  };
  std::vector<std::pair<int64_t, int64_t>> active_;  // (first time, destination)
  std::vector<Pair> pairs_;                          // by (src, first time, dst)
};

// A batch's positives for temporal negatives: destination and time of each.
struct TemporalPositives {
  const EdgeHistory* history = nullptr;
  ArrayView<const int64_t> dst, time;
};

struct NegativeOptions {
  NegativeMode mode = NegativeMode::kNone;
  // binary: negatives per positive edge (a fraction is allowed: ceil(amount * P)
  // in all); triplet: destinations per positive edge, an integer >= 1.
  double amount = 1;
  // Never an existing edge (see above); false = PyG's behaviour.
  bool strict = true;
  // Strict: draws per negative before giving up with InvalidArgument
  // (a source connected to nearly every node).
  int max_draws = 100;
  // Temporal negatives (see above): needs the positives' history and times.
  TemporalNegatives temporal = TemporalNegatives::kNone;
};

// Checks mode, amount and max_draws.
Status CheckNegativeOptions(const NegativeOptions& options);

// How many negatives a batch of `num_positive` edges gets.
int64_t NumNegatives(const NegativeOptions& options, int64_t num_positive);

// exists[i] = 1 when src[i] -> dst[i] is an edge of the graph, else 0.
using EdgeOracle = std::function<Status(ArrayView<const int64_t> src, ArrayView<const int64_t> dst,
                                        uint8_t* exists)>;

// Draws the negatives of one batch over nodes [0, num_nodes). `pos_src` are
// the batch's positive sources (triplet uses them). Out: binary: neg_src and
// neg_dst, NumNegatives() each; triplet: neg_dst only, amount per positive
// (positive i's at [i * amount, (i + 1) * amount)), neg_src empty. The oracle
// is asked only when strict. REQUIRES: CheckNegativeOptions(options).ok().
Status SampleNegatives(const NegativeOptions& options, ArrayView<const int64_t> pos_src,
                       int64_t num_nodes, uint64_t request_seed, const EdgeOracle& oracle,
                       std::vector<int64_t>* neg_src, std::vector<int64_t>* neg_dst);
// The same with sources drawn uniformly from `src_nodes` and destinations
// from `dst_nodes` (a heterogeneous edge type's end types): a draw picks an
// index below count() and takes that id, so over NodeRanges::All(n) this is
// the call above.
// With options.temporal, `temporal` gives the positives' destinations and
// times and the history (InvalidArgument without them); binary negatives
// then come with their sources too (their positives').
Status SampleNegatives(const NegativeOptions& options, ArrayView<const int64_t> pos_src,
                       const NodeRanges& src_nodes, const NodeRanges& dst_nodes,
                       uint64_t request_seed, const EdgeOracle& oracle,
                       std::vector<int64_t>* neg_src, std::vector<int64_t>* neg_dst,
                       const TemporalPositives* temporal = nullptr);

// Whether row `row` (an index into the graph's rows) holds `neighbor`: a
// scan of the row. With `edge_types` (per CSR position) and edge_type >= 0,
// only the row's run of that type is scanned (a heterogeneous store; REQUIRES
// rows ordered by type, as sampler/hetero.h).
bool RowHasNeighbor(const CsrGraph& g, int64_t row, int64_t neighbor,
                    const int32_t* edge_types = nullptr, int edge_type = -1);

}  // namespace fanout::sampler

#endif  // FANOUT_SAMPLER_NEGATIVE_H_
