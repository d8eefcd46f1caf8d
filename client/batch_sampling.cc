// One batch's sampling for the loaders (client/detail/batch_sampling.h):
// the options checked, link seeds turned into seed nodes with negatives and
// labels, the subgraph sampled and its features, labels and ids fetched.
#include "client/detail/batch_sampling.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "common/id_range.h"
#include "common/random.h"
#include "sampler/temporal.h"

namespace fanout::client::detail {

namespace {

// What the loader's options ask of the sampler.
sampler::MultiHopOptions MultiHopOptionsOf(const LoaderOptions& o) {
  sampler::MultiHopOptions mo;
  mo.fanouts = o.fanouts;
  mo.sampling.replace = o.replace;
  mo.sampling.weighted = o.weighted;
  mo.sampling.with_edge_ids = o.edge_ids;
  mo.sampling.labor = o.labor;
  mo.induced = o.subgraph;
  mo.temporal_strategy = o.temporal_strategy;
  mo.edge_type_fanouts = o.edge_type_fanouts;
  return mo;
}

}  // namespace

Array Int64Array(ArrayView<const int64_t> v) {
  Array a = Array::Empty(DType::kInt64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), a.ptr<int64_t>());
  return a;
}

// What a batch's sampling needs of the options, for `count` seeds (or seed
// edges, `link`): fanouts, times, heterogeneous fanouts. Throws
// std::invalid_argument naming what is wrong.
void CheckSampling(const Source& source, const LoaderOptions& options, size_t count, bool link) {
  if (options.x_dtype != FeatureDType::kFloat32 && options.x_dtype != FeatureDType::kFloat16 &&
      options.x_dtype != FeatureDType::kBFloat16)
    throw std::invalid_argument(std::string("NodeLoader: x_dtype ") +
                                FeatureDTypeName(options.x_dtype) +
                                " (x is float32, float16 or bfloat16)");
  if (options.x_dtype != FeatureDType::kFloat32 && options.gpu_cache)
    throw std::invalid_argument(
        "NodeLoader: a GPU feature cache fills float32 x (x_dtype float32)");
  for (int64_t f : options.fanouts)
    if (f < -1)
      throw std::invalid_argument("NodeLoader: fanout " + std::to_string(f) +
                                  " is invalid (use -1 or >= 0)");
  if (!options.input_time.empty()) {
    if (options.input_time.size() != count)
      throw std::invalid_argument(std::string(link ? "LinkLoader" : "NodeLoader") + ": " +
                                  std::to_string(options.input_time.size()) + " input times for " +
                                  std::to_string(count) + (link ? " seed edges" : " seeds"));
    Status t = sampler::CheckTemporalOptions(MultiHopOptionsOf(options));
    if (!t.ok()) throw std::invalid_argument("NodeLoader: " + t.message());
  }
  if (options.pinsage) {
    if (options.labor || options.replace || options.subgraph || !options.input_time.empty() ||
        !options.edge_type_fanouts.empty())
      throw std::invalid_argument(
          "NodeLoader: PinSAGE hops take no LABOR, replace, subgraph, temporal or per-edge-type "
          "options");
    for (size_t h = 0; h < options.fanouts.size(); ++h) {
      WalkOptions o = options.walk;
      o.top_k = options.fanouts[h];
      Status st = o.top_k < 1 ? Status::InvalidArgument("num_neighbors " + std::to_string(o.top_k) +
                                                        " of hop " + std::to_string(h) +
                                                        " is not >= 1 (PinSAGE keeps the top "
                                                        "num_neighbors visited nodes)")
                              : CheckWalkOptions(o);
      if (!st.ok()) throw std::invalid_argument("NodeLoader: PinSAGE hops: " + st.message());
    }
  }
  if (options.ppr) {
    if (options.labor || options.pinsage || options.replace || options.subgraph ||
        !options.input_time.empty() || !options.edge_type_fanouts.empty())
      throw std::invalid_argument(
          "NodeLoader: PPR neighborhoods take no LABOR, PinSAGE, replace, subgraph, temporal or "
          "per-edge-type options");
    if (options.fanouts.size() != 1)
      throw std::invalid_argument(
          "NodeLoader: PPR neighborhoods are one hop: num_neighbors (or "
          "top_k) gives each seed's number of top nodes, got " +
          std::to_string(options.fanouts.size()) + " hops");
    PprOptions po = options.ppr_options;
    po.top_k = options.fanouts[0];
    Status st = CheckPprOptions(po, source.hetero());
    if (!st.ok()) throw std::invalid_argument("NodeLoader: " + st.message());
  }
  if (options.labor) {
    if (options.replace)
      throw std::invalid_argument(
          "NodeLoader: LABOR sampling draws without replacement (replace=False)");
    if (!options.edge_type_fanouts.empty())
      throw std::invalid_argument(
          "NodeLoader: LABOR sampling of heterogeneous (per-edge-type) hops is not supported");
    if (!options.input_time.empty())
      throw std::invalid_argument("NodeLoader: LABOR sampling of temporal graphs is not supported");
  }
  if (!options.edge_type_fanouts.empty()) {
    const sampler::HeteroSchema* h = source.hetero();
    if (h == nullptr)
      throw std::invalid_argument(
          "NodeLoader: per-edge-type fanouts need a heterogeneous dataset; " +
          source.description() + " has no edge types");
    std::vector<int64_t> per_hop;
    Status st = sampler::HeteroHopFanouts(*h, options.edge_type_fanouts, &per_hop);
    if (!st.ok()) throw std::invalid_argument("NodeLoader: " + st.message());
    if (options.subgraph)
      throw std::invalid_argument(
          "NodeLoader: subgraph (induced) sampling of heterogeneous graphs is not supported");
  }
}

// Link batches: negatives, then the seed nodes (distinct endpoints,
// ascending; temporal: every endpoint, with its edge's time) and the label
// tensors. `positions` index `links` and options.input_time.
Status LinkSeedNodes(const Source& source, const LoaderOptions& options, const LinkSeeds& links,
                     Session* session, ArrayView<const int64_t> positions, uint64_t request_seed,
                     std::vector<int64_t>* nodes, std::vector<int64_t>* times, Batch* out) {
  const sampler::NegativeOptions& neg = options.negative;
  const bool temporal = !options.input_time.empty();
  const int64_t p = static_cast<int64_t>(positions.size());
  std::vector<int64_t> src(p), dst(p), neg_src, neg_dst;
  for (int64_t i = 0; i < p; ++i)
    src[i] = links.src[positions[i]], dst[i] = links.dst[positions[i]];
  // Heterogeneous: the seed edge type's end types (LinkLoader checked it).
  const sampler::HeteroSchema* h = options.link_edge_type >= 0 ? source.hetero() : nullptr;
  const int edge_type = h ? options.link_edge_type : -1;
  const sampler::NodeRanges src_nodes = h ? h->NodesOfType(h->edge_types[edge_type].src)
                                          : sampler::NodeRanges::All(source.num_nodes());
  const sampler::NodeRanges dst_nodes =
      h ? h->NodesOfType(h->edge_types[edge_type].dst) : src_nodes;
  std::vector<int64_t> pos_time;
  sampler::TemporalPositives timed;
  if (neg.temporal != sampler::TemporalNegatives::kNone && links.history) {
    pos_time.resize(static_cast<size_t>(p));
    for (int64_t i = 0; i < p; ++i) pos_time[i] = options.input_time[positions[i]];
    timed = {links.history.get(), dst, pos_time};
  }
  FANOUT_RETURN_IF_ERROR(sampler::SampleNegatives(
      neg, src, src_nodes, dst_nodes, request_seed,
      [session, edge_type](ArrayView<const int64_t> s, ArrayView<const int64_t> d,
                           uint8_t* exists) { return session->HasEdges(s, d, exists, edge_type); },
      &neg_src, &neg_dst, timed.history ? &timed : nullptr));
  const int64_t m = static_cast<int64_t>(neg_dst.size());
  const bool triplet = neg.mode == sampler::NegativeMode::kTriplet;
  const int64_t per = triplet ? static_cast<int64_t>(neg.amount) : 1;
  // Every endpoint in PyG's order: triplet [src, dst, dst_neg], else
  // [src, src_neg, dst, dst_neg] (row 0 of edge_label_index, then row 1).
  std::vector<int64_t> all;
  all.reserve(static_cast<size_t>(2 * p + (triplet ? m : 2 * m)));
  all.insert(all.end(), src.begin(), src.end());
  if (!triplet) all.insert(all.end(), neg_src.begin(), neg_src.end());
  all.insert(all.end(), dst.begin(), dst.end());
  all.insert(all.end(), neg_dst.begin(), neg_dst.end());
  Array inverse = Array::Empty(DType::kInt64, {static_cast<int64_t>(all.size())});
  int64_t* inv = inverse.ptr<int64_t>();
  if (temporal) {
    // Disjoint (PyG's temporal link sampling): every endpoint is its own
    // seed, at its edge's time; a binary negative j takes positive j % P's
    // time, a triplet negative its positive's.
    *nodes = all;
    times->resize(all.size());
    auto time_of = [&](int64_t i) { return options.input_time[positions[i]]; };
    size_t at = 0;
    for (int64_t i = 0; i < p; ++i) (*times)[at++] = time_of(i);
    if (!triplet)
      for (int64_t j = 0; j < m; ++j) (*times)[at++] = time_of(j % p);
    for (int64_t i = 0; i < p; ++i) (*times)[at++] = time_of(i);
    for (int64_t j = 0; j < m; ++j) (*times)[at++] = time_of(triplet ? j / per : j % p);
    std::iota(inv, inv + all.size(), int64_t{0});
  } else {
    *nodes = all;
    std::sort(nodes->begin(), nodes->end());
    nodes->erase(std::unique(nodes->begin(), nodes->end()), nodes->end());
    for (size_t i = 0; i < all.size(); ++i)
      inv[i] = std::lower_bound(nodes->begin(), nodes->end(), all[i]) - nodes->begin();
  }
  out->input_id = Int64Array(positions);
  if (triplet) {
    out->src_index = inverse.Narrow(0, 0, p);
    out->dst_pos_index = inverse.Narrow(0, p, p);
    out->dst_neg_index =
        per == 1 ? inverse.Narrow(0, 2 * p, m) : inverse.Narrow(0, 2 * p, m).Reshape({p, per});
    return Status::OK();
  }
  out->edge_label_index = inverse.Reshape({2, p + m});
  if (!links.label.empty()) {
    out->edge_label = Array::Zeros(DType::kInt64, {p + m});
    int64_t* l = out->edge_label.ptr<int64_t>();
    for (int64_t i = 0; i < p; ++i) l[i] = links.label[positions[i]];
  } else if (neg.mode == sampler::NegativeMode::kBinary) {
    out->edge_label = Array::Zeros(DType::kFloat32, {p + m});
    std::fill_n(out->edge_label.ptr<float>(), p, 1.0f);
  }
  return Status::OK();
}

// The sampled subgraph of `seeds` (temporal: with one time each), then
// features, labels and ids.
Status SampleAndFetch(const Source& source, const LoaderOptions& options, Session* session,
                      DeviceFeatureFetcher* fetcher, ArrayView<const int64_t> seeds,
                      ArrayView<const int64_t> times, uint64_t request_seed, Batch* out,
                      BufferPool* pool) {
  auto empty = [pool](DType dtype, std::vector<int64_t> shape) {
    return pool != nullptr ? pool->Empty(dtype, std::move(shape))
                           : Array::Empty(dtype, std::move(shape));
  };
  // Live partitions: every read of this batch at one version per partition.
  FANOUT_RETURN_IF_ERROR(session->Pin(options.snapshot));
  const sampler::MultiHopOptions mo = MultiHopOptionsOf(options);
  sampler::SampledSubgraph sub;
  if (options.pinsage) {
    FANOUT_RETURN_IF_ERROR(SamplePinSage(*session, seeds, request_seed, options.fanouts,
                                         options.walk, options.edge_ids, &sub));
  } else if (options.ppr) {
    PprOptions po = options.ppr_options;
    po.top_k = options.fanouts.empty() ? 0 : options.fanouts[0];
    FANOUT_RETURN_IF_ERROR(
        SamplePpr(*session, seeds, po, options.edge_ids, &sub, nullptr, source.hetero()));
  } else if (options.input_time.empty()) {
    FANOUT_RETURN_IF_ERROR(session->Sample(seeds, request_seed, mo, &sub));
  } else {
    FANOUT_RETURN_IF_ERROR(session->SampleTemporal(seeds, times, request_seed, mo, &sub));
    out->seed_time = Int64Array(times);
    out->batch = Array::Take(std::move(sub.batch));
  }
  const int64_t n = static_cast<int64_t>(sub.n_id.size());
  out->batch_size = sub.batch_size;
  out->num_sampled_nodes = sub.num_sampled_nodes;
  out->num_sampled_edges = sub.num_sampled_edges;
  out->n_id = Array::Take(std::move(sub.n_id));
  const int64_t* ids = out->n_id.ptr<int64_t>();
  ArrayView<const int64_t> id_view(ids, static_cast<size_t>(n));
  const int64_t num_edges = static_cast<int64_t>(sub.row.size());
  out->edge_index = empty(DType::kInt64, {2, num_edges});
  std::copy(sub.row.begin(), sub.row.end(), out->edge_index.ptr<int64_t>());
  std::copy(sub.col.begin(), sub.col.end(), out->edge_index.ptr<int64_t>() + num_edges);
  int64_t at = 0;
  for (int64_t e : out->num_sampled_edges) {
    out->hop_edge_index.push_back(out->edge_index.Narrow(1, at, e));
    at += e;
  }
  if (options.edge_ids) out->edge_id = Array::Take(std::move(sub.edge_id));
  if ((options.labor || options.pinsage || options.ppr) && !options.subgraph)
    out->edge_weight = Array::Take(std::move(sub.edge_weight));
  if (!options.edge_type_fanouts.empty()) {
    const sampler::HeteroSchema& h = *source.hetero();
    out->node_type = Array::Empty(DType::kInt64, {n});
    int64_t* nt = out->node_type.ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) nt[i] = h.NodeTypeOf(ids[i]);
    const int64_t e = static_cast<int64_t>(sub.edge_type.size());
    out->edge_type = Array::Empty(DType::kInt64, {e});
    std::copy(sub.edge_type.begin(), sub.edge_type.end(), out->edge_type.ptr<int64_t>());
  }
  if (options.features && options.gpu_cache) {
    FANOUT_RETURN_IF_ERROR(
        GatherFeaturesOnDevice(*fetcher, *session, id_view, options.gpu_cache->device(), &out->x));
  } else if (options.features) {
    // x is ordinary memory of this process: rows of co-located partitions are
    // gathered into it here, the others received into it (never written by
    // a server).
    const int64_t d = source.feature_dim();
    if (options.x_dtype == FeatureDType::kFloat32) {
      out->x = empty(DType::kFloat32, {n, d});
      FANOUT_RETURN_IF_ERROR(session->Features(id_view, out->x.ptr<float>()));
    } else {
      // Half-width rows: fetched as float32 (exact for rows stored in the
      // same type), kept in the caller's type.
      std::vector<float> rows(static_cast<size_t>(n * d));
      FANOUT_RETURN_IF_ERROR(session->Features(id_view, rows.data()));
      out->x = empty(options.x_dtype == FeatureDType::kFloat16 ? DType::kFloat16 : DType::kBFloat16,
                     {n, d});
      ConvertFloatRow(rows.data(), n * d, options.x_dtype, out->x.ptr<char>());
    }
  }
  if (options.labels) {
    out->y = Array::Empty(DType::kInt64, {n});
    FANOUT_RETURN_IF_ERROR(session->Labels(id_view, out->y.ptr<int64_t>()));
  }
  if (options.original_ids) {
    out->original_id = Array::Empty(DType::kInt64, {n});
    FANOUT_RETURN_IF_ERROR(session->OriginalIds(id_view, out->original_id.ptr<int64_t>()));
  }
  out->versions = session->Pinned();
  return Status::OK();
}

}  // namespace fanout::client::detail
