#include "sampler/temporal.h"

#include <algorithm>
#include <cassert>

#include "common/id_range.h"
#include "common/random.h"
#include "sampler/detail/sample_row.h"
#include "sampler/hetero.h"

namespace fanout::sampler {

namespace {
// Disjoint dedupe key: the tree (seed position) above the node id.
constexpr int kTreeShift = 40;
constexpr int64_t kMaxTrees = int64_t{1} << 22;
}  // namespace

Status ParseTemporalStrategy(const std::string& text, TemporalStrategy* out) {
  if (text == "uniform")
    *out = TemporalStrategy::kUniform;
  else if (text == "last")
    *out = TemporalStrategy::kLast;
  else
    return Status::InvalidArgument("temporal strategy '" + text + "' is not uniform or last");
  return Status::OK();
}

const char* TemporalStrategyName(TemporalStrategy s) {
  return s == TemporalStrategy::kLast ? "last" : "uniform";
}

Status CheckTemporalOptions(const MultiHopOptions& o) {
  for (size_t h = 0; h < o.fanouts.size(); ++h)
    FANOUT_RETURN_IF_ERROR(CheckFanout(o.fanouts[h], static_cast<int64_t>(h)));
  if (o.sampling.replace)
    return Status::InvalidArgument("temporal sampling draws without replacement (replace=false)");
  if (o.sampling.weighted)
    return Status::InvalidArgument("temporal sampling is not weighted (weighted=false)");
  if (o.induced) return Status::InvalidArgument("temporal sampling has no subgraph (induced) mode");
  if (o.sampling.labor)
    return Status::InvalidArgument(
        "LABOR sampling of temporal graphs is not supported (sampler='neighbor' there)");
  return Status::OK();
}

void BuildTimeOrder(const CsrGraph& g, const int64_t* edge_times, std::vector<int64_t>* order,
                    const int32_t* edge_types) {
  order->resize(static_cast<size_t>(g.num_edges()));
  for (int64_t v = 0; v < g.num_nodes(); ++v) {
    const int64_t begin = g.indptr()[v], end = g.indptr()[v + 1];
    int64_t* o = order->data() + begin;
    for (int64_t k = 0; k < end - begin; ++k) o[k] = k;
    const int64_t* t = edge_times + begin;
    if (edge_types == nullptr) {
      std::sort(o, o + (end - begin),
                [t](int64_t a, int64_t b) { return t[a] != t[b] ? t[a] < t[b] : a < b; });
    } else {
      const int32_t* ty = edge_types + begin;
      std::sort(o, o + (end - begin), [t, ty](int64_t a, int64_t b) {
        return ty[a] != ty[b] ? ty[a] < ty[b] : t[a] != t[b] ? t[a] < t[b] : a < b;
      });
    }
  }
}

bool RowsSortedByTime(const CsrGraph& g, const int64_t* edge_times, const int32_t* edge_types) {
  for (int64_t v = 0; v < g.num_nodes(); ++v)
    for (int64_t e = g.indptr()[v] + 1; e < g.indptr()[v + 1]; ++e)
      if (edge_times[e] < edge_times[e - 1] &&
          (edge_types == nullptr || edge_types[e] == edge_types[e - 1]))
        return false;
  return true;
}

const int64_t* PrepareTimeOrder(const CsrGraph& g, const int64_t* edge_times,
                                std::vector<int64_t>* storage, const int32_t* edge_types) {
  if (RowsSortedByTime(g, edge_times, edge_types)) return nullptr;
  BuildTimeOrder(g, edge_times, storage, edge_types);
  return storage->data();
}

namespace {

// The k-th edge of a run in time order, as a CSR position. Made from the
// run's first CSR position and its row's first (the time index holds
// row-relative offsets).
struct StoredRank {  // runs in time order: the k-th in time order is the k-th stored
  StoredRank(const int64_t*, int64_t run_begin, int64_t) : base(run_begin) {}
  int64_t operator()(int64_t k) const { return base + k; }
  int64_t base;
};
struct IndexRank {
  IndexRank(const int64_t* time_order, int64_t run_begin, int64_t row_begin)
      : order(time_order + run_begin), row(row_begin) {}
  int64_t operator()(int64_t k) const { return row + order[k]; }
  const int64_t* order;
  int64_t row;
};

// Appends to `chosen` the CSR positions a node draws from one run of `deg`
// edges (rank: their time order) at time t: all those not later than t, the
// `fanout` latest of them, or `fanout` uniform ones under `key`; in stored
// order.
template <typename Rank>
void DrawRun(const int64_t* edge_times, const Rank& rank, int64_t deg, int64_t t, int64_t fanout,
             TemporalStrategy strategy, uint64_t key, std::vector<int64_t>* chosen,
             detail::RowScratch* scratch) {
  // m: how many of the run's edges are not later than t (a prefix of the time order).
  int64_t lo = 0, hi = deg;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (edge_times[rank(mid)] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  const int64_t m = lo;
  const size_t at = chosen->size();
  if (fanout < 0 || fanout >= m) {
    for (int64_t k = 0; k < m; ++k) chosen->push_back(rank(k));
  } else if (strategy == TemporalStrategy::kLast) {
    for (int64_t k = m - fanout; k < m; ++k)
      chosen->push_back(rank(k));  // the latest (time, then offset)
  } else {
    // Floyd's algorithm: `fanout` distinct ranks in [0, m), uniform.
    chosen->resize(at + static_cast<size_t>(fanout));
    detail::FloydSample(m, fanout, key, chosen->data() + at, scratch);
    for (size_t c = at; c < chosen->size(); ++c) (*chosen)[c] = rank((*chosen)[c]);
  }
  std::sort(chosen->begin() + static_cast<std::ptrdiff_t>(at), chosen->end());  // stored order
}

// Appends the chosen CSR positions to `out` (ResolveChosen turns them into
// neighbors and edge ids once the hop's draws are done).
void AppendChosen(const std::vector<int64_t>& chosen, OneHopResult* out) {
  out->neighbors.insert(out->neighbors.end(), chosen.begin(), chosen.end());
}

// Replaces the CSR positions in out->neighbors by their neighbors (and edge
// ids): one pass over the hop, each read prefetched ahead, so the misses
// overlap instead of stalling each node's draws.
void ResolveChosen(const CsrGraph& g, bool with_edge_ids, OneHopResult* out) {
  constexpr size_t kAhead = 16;
  auto& pos = out->neighbors;
  const size_t n = pos.size();
  if (with_edge_ids) {
    out->edge_ids.resize(n);
    for (size_t c = 0; c < n; ++c) out->edge_ids[c] = g.edge_id(pos[c]);
  }
  for (size_t c = 0; c < n; ++c) {
    if (c + kAhead < n) __builtin_prefetch(g.neighbor_address(pos[c + kAhead]));
    pos[c] = g.neighbor(pos[c]);
  }
}

// Empties `out` for a hop over n nodes (offsets[0] = 0; the rest appended).
void StartHop(size_t n, OneHopResult* out) {
  out->offsets.resize(n + 1);
  out->offsets[0] = 0;
  out->neighbors.clear();
  out->edge_ids.clear();
  out->edge_types.clear();
  out->edge_weights.clear();
}

uint64_t TimeKey(uint64_t node_key, int64_t t) {
  return Mix64(node_key ^ static_cast<uint64_t>(t));
}

// One hop, with Rank giving the k-th edge of a row in time order.
template <typename Rank>
void TemporalHop(const CsrGraph& g, const int64_t* edge_times, const int64_t* time_order,
                 int64_t node_offset, ArrayView<const int64_t> nodes,
                 ArrayView<const int64_t> times, int64_t fanout, int64_t hop, uint64_t request_seed,
                 TemporalStrategy strategy, bool with_edge_ids, OneHopResult* out) {
  const size_t n = nodes.size();
  StartHop(n, out);
  std::vector<int64_t> chosen;
  detail::RowScratch scratch;
  for (size_t i = 0; i < n; ++i) {
    const int64_t row = nodes[i] - node_offset, t = times[i];
    const int64_t begin = g.indptr()[row], deg = g.indptr()[row + 1] - begin;
    chosen.clear();
    DrawRun(
        edge_times, Rank(time_order, begin, begin), deg, t, fanout, strategy,
        TimeKey(NodeKey(request_seed, static_cast<uint64_t>(hop), static_cast<uint64_t>(nodes[i])),
                t),
        &chosen, &scratch);
    AppendChosen(chosen, out);
    out->offsets[i + 1] = static_cast<int64_t>(out->neighbors.size());
  }
  ResolveChosen(g, with_edge_ids, out);
}

template <typename Rank>
void HeteroTemporalHop(const CsrGraph& g, const int32_t* edge_types, const int64_t* edge_times,
                       const int64_t* time_order, int64_t node_offset,
                       ArrayView<const int64_t> nodes, ArrayView<const int64_t> times,
                       ArrayView<const int64_t> fanouts, int64_t hop, uint64_t request_seed,
                       TemporalStrategy strategy, bool with_edge_ids, OneHopResult* out) {
  const size_t n = nodes.size();
  const int64_t num_types = static_cast<int64_t>(fanouts.size());
  StartHop(n, out);
  std::vector<int64_t> chosen;
  detail::RowScratch scratch;
  chosen.reserve(64);
  // Rows are cache misses on large graphs: indptr a few nodes ahead, then
  // the row's types, times and neighbors (as SampleHeteroHop prefetches).
  constexpr size_t kIndptrAhead = 16, kRowAhead = 8;
  const int64_t* indptr = g.indptr();
  for (size_t i = 0; i < n; ++i) {
    if (i + kIndptrAhead < n) __builtin_prefetch(indptr + (nodes[i + kIndptrAhead] - node_offset));
    if (i + kRowAhead < n) {
      const int64_t ahead = indptr[nodes[i + kRowAhead] - node_offset];
      __builtin_prefetch(edge_types + ahead);
      __builtin_prefetch(edge_times + ahead);
    }
    const int64_t row = nodes[i] - node_offset, t = times[i];
    const int64_t begin = indptr[row], end = indptr[row + 1];
    chosen.clear();
    for (int64_t b = begin; b < end;) {
      const int64_t e = detail::TypeRunEnd(edge_types, b, end);
      const int32_t type = edge_types[b];
      const int64_t fanout = type >= 0 && type < num_types ? fanouts[static_cast<size_t>(type)] : 0;
      if (fanout != 0) {
        const size_t before = chosen.size();
        DrawRun(edge_times, Rank(time_order, b, begin), e - b, t, fanout, strategy,
                TimeKey(EdgeTypeKey(request_seed, hop, nodes[i], type), t), &chosen, &scratch);
        out->edge_types.insert(out->edge_types.end(), chosen.size() - before, type);
      }
      b = e;
    }
    AppendChosen(chosen, out);
    out->offsets[i + 1] = static_cast<int64_t>(out->neighbors.size());
  }
  ResolveChosen(g, with_edge_ids, out);
}

}  // namespace

void SampleTemporalHop(const CsrGraph& g, const int64_t* edge_times, const int64_t* time_order,
                       int64_t node_offset, ArrayView<const int64_t> nodes,
                       ArrayView<const int64_t> times, int64_t fanout, int64_t hop,
                       uint64_t request_seed, TemporalStrategy strategy, bool with_edge_ids,
                       OneHopResult* out) {
  assert(times.size() == nodes.size());  // REQUIRES
#ifndef NDEBUG
  for (int64_t v : nodes)
    assert(v >= node_offset && v < node_offset + g.num_nodes());  // REQUIRES: in the graph's rows
#endif
  if (time_order == nullptr)
    TemporalHop<StoredRank>(g, edge_times, nullptr, node_offset, nodes, times, fanout, hop,
                            request_seed, strategy, with_edge_ids, out);
  else
    TemporalHop<IndexRank>(g, edge_times, time_order, node_offset, nodes, times, fanout, hop,
                           request_seed, strategy, with_edge_ids, out);
}

Status SampleHeteroTemporalHop(const CsrGraph& g, const int32_t* edge_types,
                               const int64_t* edge_times, const int64_t* time_order,
                               int64_t node_offset, ArrayView<const int64_t> nodes,
                               ArrayView<const int64_t> times, ArrayView<const int64_t> fanouts,
                               int64_t hop, uint64_t request_seed, TemporalStrategy strategy,
                               bool with_edge_ids, OneHopResult* out) {
  if (times.size() != nodes.size())
    return Status::InvalidArgument(
        "temporal sampling needs one time per node: " + std::to_string(nodes.size()) + " nodes, " +
        std::to_string(times.size()) + " times");
  FANOUT_RETURN_IF_ERROR(CheckIdsInRange(nodes, node_offset, node_offset + g.num_nodes()));
  if (time_order == nullptr)
    HeteroTemporalHop<StoredRank>(g, edge_types, edge_times, nullptr, node_offset, nodes, times,
                                  fanouts, hop, request_seed, strategy, with_edge_ids, out);
  else
    HeteroTemporalHop<IndexRank>(g, edge_types, edge_times, time_order, node_offset, nodes, times,
                                 fanouts, hop, request_seed, strategy, with_edge_ids, out);
  return Status::OK();
}

Status TemporalBuilder::Begin(ArrayView<const int64_t> seeds, ArrayView<const int64_t> seed_times,
                              int64_t num_nodes_total, SampledSubgraph* out) {
  const int64_t b = static_cast<int64_t>(seeds.size());
  if (seed_times.size() != seeds.size())
    return Status::InvalidArgument(
        "temporal sampling needs one time per seed: " + std::to_string(seeds.size()) + " seeds, " +
        std::to_string(seed_times.size()) + " times");
  if (b > kMaxTrees)
    return Status::InvalidArgument("temporal batches hold at most " + std::to_string(kMaxTrees) +
                                   " seeds, got " + std::to_string(b));
  if (num_nodes_total > (int64_t{1} << kTreeShift))
    return Status::NotSupported("temporal sampling supports graphs of up to 2^40 nodes");
  out->Clear();
  out->batch_size = b;
  out->n_id.resize(b);
  out->batch.resize(b);
  std::copy(seeds.begin(), seeds.end(), out->n_id.begin());
  for (int64_t i = 0; i < b; ++i) out->batch[i] = i;
  out->num_sampled_nodes.push_back(b);
  times_.assign(seed_times.begin(), seed_times.end());
  seed_times_ = times_;
  map_.Reset(b);
  for (int64_t i = 0; i < b; ++i) map_.FindOrInsert((i << kTreeShift) | seeds[i], i);
  begin_ = 0;
  end_ = b;
  return Status::OK();
}

void TemporalBuilder::AddHop(const OneHopResult& hop, bool with_edge_ids, SampledSubgraph* out) {
  const int64_t m = end_ - begin_;
  const int64_t total = hop.offsets[m];
  const int64_t e0 = static_cast<int64_t>(out->row.size());
  out->row.resize(e0 + total);
  out->col.resize(e0 + total);
  if (with_edge_ids) {
    out->edge_id.resize(e0 + total);
    std::copy(hop.edge_ids.begin(), hop.edge_ids.begin() + total, out->edge_id.begin() + e0);
  }
  if (!hop.edge_types.empty())
    out->edge_type.insert(out->edge_type.end(), hop.edge_types.begin(),
                          hop.edge_types.begin() + total);
  const int64_t n0 = static_cast<int64_t>(out->n_id.size());
  map_.Reserve(map_.size() + total);
  int64_t next = n0;
  // The (tree, node) slots are cache misses on large batches: each edge's
  // slot is prefetched kAhead edges before its insert (ia: that edge's node).
  constexpr int64_t kAhead = 16;
  int64_t ia = 0;
  for (int64_t i = 0; i < m; ++i) {
    const int64_t target = begin_ + i, tree = out->batch[target];
    for (int64_t e = hop.offsets[i]; e < hop.offsets[i + 1]; ++e) {
      if (e + kAhead < total) {
        while (hop.offsets[ia + 1] <= e + kAhead) ++ia;
        map_.Prefetch((out->batch[begin_ + ia] << kTreeShift) | hop.neighbors[e + kAhead]);
      }
      const int64_t v = hop.neighbors[e];
      const int64_t local = map_.FindOrInsert((tree << kTreeShift) | v, next);
      if (local == next) {
        out->n_id.push_back(v);
        out->batch.push_back(tree);
        times_.push_back(seed_times_[tree]);
        ++next;
      }
      out->row[e0 + e] = local;
      out->col[e0 + e] = target;
    }
  }
  out->num_sampled_nodes.push_back(next - n0);
  out->num_sampled_edges.push_back(total);
  begin_ = n0;
  end_ = next;
}

TemporalSampler::TemporalSampler(CsrGraph graph, const int64_t* edge_times, MultiHopOptions options)
    : TemporalSampler(graph, edge_times, nullptr, std::move(options)) {}

TemporalSampler::TemporalSampler(CsrGraph graph, const int64_t* edge_times,
                                 const int32_t* edge_types, MultiHopOptions options)
    : graph_(graph),
      edge_times_(edge_times),
      time_order_(nullptr),
      edge_types_(edge_types),
      options_(std::move(options)) {
  if (edge_times_ != nullptr)
    time_order_ = PrepareTimeOrder(graph_, edge_times_, &own_order_, edge_types_);
}

Status TemporalSampler::Sample(ArrayView<const int64_t> seeds, ArrayView<const int64_t> seed_times,
                               uint64_t request_seed, SampledSubgraph* out) {
  FANOUT_RETURN_IF_ERROR(CheckTemporalOptions(options_));
  if (edge_times_ == nullptr && graph_.num_edges() > 0)
    return Status::InvalidArgument("temporal sampling needs edge timestamps; this graph has none");
  const int64_t lo = options_.sampling.node_offset;
  IdRangeCheck how;
  how.what = "seed";
  FANOUT_RETURN_IF_ERROR(CheckIdsInRange(seeds, lo, lo + graph_.num_nodes(), how));
  const bool typed = !options_.edge_type_fanouts.empty();
  if (typed) FANOUT_RETURN_IF_ERROR(CheckMultiHopOptions(options_, graph_.has_weights()));
  if (typed != (edge_types_ != nullptr))
    return Status::InvalidArgument(
        typed ? "per-edge-type fanouts need a heterogeneous dataset (this one has no edge types)"
              : "temporal sampling of a heterogeneous dataset samples each edge type on its own: "
                "give per-edge-type fanouts");
  FANOUT_RETURN_IF_ERROR(builder_.Begin(seeds, seed_times, lo + graph_.num_nodes(), out));
  const size_t hops = typed ? options_.edge_type_fanouts.front().size() : options_.fanouts.size();
  std::vector<int64_t> type_fanouts;
  for (size_t h = 0; h < hops; ++h) {
    if (typed) {
      HopTypeFanouts(options_.edge_type_fanouts, h, &type_fanouts);
      FANOUT_RETURN_IF_ERROR(SampleHeteroTemporalHop(
          graph_, edge_types_, edge_times_, time_order_, lo, builder_.Frontier(*out),
          builder_.FrontierTimes(), type_fanouts, static_cast<int64_t>(h), request_seed,
          options_.temporal_strategy, options_.sampling.with_edge_ids, &hop_));
    } else {
      SampleTemporalHop(graph_, edge_times_, time_order_, lo, builder_.Frontier(*out),
                        builder_.FrontierTimes(), options_.fanouts[h], static_cast<int64_t>(h),
                        request_seed, options_.temporal_strategy, options_.sampling.with_edge_ids,
                        &hop_);
    }
    builder_.AddHop(hop_, options_.sampling.with_edge_ids, out);
  }
  return Status::OK();
}

}  // namespace fanout::sampler
