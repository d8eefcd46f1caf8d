#include "server/service.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/id_range.h"
#include "sampler/hetero.h"
#include "sampler/ppr_push.h"
#include "sampler/walk.h"

namespace fanout::server {

void FailoverLog::Note(const std::string& from, const std::string& reason, bool retry) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.last_reason = reason.substr(0, 1024);
  if (retry) {
    ++s_.retries;
    return;
  }
  ++s_.failovers;
  std::string key = from.substr(0, kMaxAddressBytes);
  if (s_.from.size() >= kMaxOrigins && !s_.from.count(key)) key = "(other)";
  ++s_.from[key];
}

FailoverLog::Snapshot FailoverLog::Get() const {
  std::lock_guard<std::mutex> lock(mu_);
  return s_;
}

double PartitionService::EstimateCost(int method, const Work& w) const {
  const double ids = static_cast<double>(std::max<int64_t>(0, w.ids));
  switch (method) {
    case kLookupFeatures:
      return ids * (8 + static_cast<double>(FeatureRowBytes()));
    case kSampleNeighbors: {
      // The server's own bound of the reply: counts, and per node the most
      // neighbors and edge ids it may draw (its draws, capped by the
      // partition's largest degree). Charged to the in-flight quota while the
      // request runs; the fair order's tag is corrected by the actual cost.
      const int64_t max_degree = std::max<int64_t>(0, s_->max_degree);
      const double per =
          static_cast<double>(w.draws < 0 ? max_degree : std::min(w.draws, max_degree));
      return ids * (8 + 4 + per * 16);
    }
    default:
      return ids * 16;
  }
}

Status PartitionService::CheckIds(ArrayView<const int64_t> ids) const {
  if (static_cast<int64_t>(ids.size()) > s_->options.max_ids_per_request)
    return Status::InvalidArgument("request has " + std::to_string(ids.size()) +
                                   " ids, more than the limit of " +
                                   std::to_string(s_->options.max_ids_per_request));
  IdRangeCheck how;
  how.range = "this partition's range ";
  return CheckIdsInRange(ids, s_->view.node_begin, s_->view.node_end, how);
}

Status PartitionService::CheckReplyBytes(size_t rows, size_t row_bytes) const {
  const double bytes = static_cast<double>(rows) * static_cast<double>(row_bytes);
  if (bytes > static_cast<double>(s_->options.max_reply_bytes))
    return Status::InvalidArgument("a reply of " + std::to_string(rows) + " rows x " +
                                   std::to_string(row_bytes) +
                                   " bytes is over the server's limit of " +
                                   std::to_string(s_->options.max_reply_bytes >> 20) +
                                   " MiB (--max-reply-mib): ask for fewer rows per request");
  return Status::OK();
}

size_t PartitionService::FeatureRowBytes() const {
  const datasets::DatasetMeta& m = s_->data->meta;
  return static_cast<size_t>(m.feature_dim * datasets::FeatureDTypeSize(m.feature_dtype));
}

Status PartitionService::GatherFeatures(ArrayView<const int64_t> ids, char* dst) {
  const size_t row = FeatureRowBytes();
  const int64_t n = static_cast<int64_t>(ids.size());
  const uint8_t* src = s_->view.features.data();
  const int64_t base = s_->view.node_begin;
  if (row == 0) {  // a dataset without feature values: nothing to copy (and no memory to copy from)
    metrics_->RecordFeatures(n, 0);
    return Status::OK();
  }
  if (s_->disk) {
    storage::ReaderPool::Lease reader;  // one of the server's readers, for this request
    FANOUT_RETURN_IF_ERROR(s_->readers->Borrow(&reader));
    rows_.resize(ids.size());
    for (int64_t i = 0; i < n; ++i) rows_[i] = ids[i] - base;
    storage::ReadOptions ro;
    ro.read_class = read_class_;
    ro.gate = &s_->io_gate;
    FANOUT_RETURN_IF_ERROR(s_->disk->Gather(rows_.data(), n, dst, reader.get(), ro));
    metrics_->RecordFeatures(n, n * static_cast<int64_t>(row));
    last_rows_ += n;
    return Status::OK();
  }
  auto gather = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if (i + 8 < e) __builtin_prefetch(src + (ids[i + 8] - base) * row);
      std::memcpy(dst + i * static_cast<int64_t>(row), src + (ids[i] - base) * row, row);
    }
  };
  constexpr int64_t kChunk = 4096;
  if (s_->pool && n > 2 * kChunk) {
    s_->pool->ParallelFor((n + kChunk - 1) / kChunk,
                          [&](int64_t c) { gather(c * kChunk, std::min(n, (c + 1) * kChunk)); });
  } else {
    gather(0, n);
  }
  metrics_->RecordFeatures(n, n * static_cast<int64_t>(row));
  last_rows_ += n;
  return Status::OK();
}

Status PartitionService::GraphFor(bool with_edge_ids, const sampler::CsrGraph** graph) {
  if (!with_edge_ids || s_->edge_ids_at_start) {
    *graph = &s_->graph;
    return Status::OK();
  }
  ServerState::OnDemandEdgeIds& e = s_->edge_ids;
  if (!e.ready.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(e.mu);
    if (!e.ready.load(std::memory_order_relaxed)) {
      if (!e.failed.ok()) return e.failed;
      const datasets::PartitionView& v = s_->view;
      if (s_->options.dataset_dir.empty())
        return Status::NotSupported(
            "this server holds no edge ids and has no store to read them "
            "from: ask without edge ids");
      const auto t0 = std::chrono::steady_clock::now();
      Status st = datasets::ReadPartitionEdgeIds(s_->options.dataset_dir, v.part, v.num_edges(),
                                                 true, &e.ids);
      datasets::PartitionView with = v;
      with.edge_ids = e.ids;
      if (st.ok()) st = with.MakeGraph(&e.graph);
      if (!st.ok()) {
        e.failed = Status::FromCode(static_cast<int>(st.code()),
                                    "reading this partition's edge ids on demand: " + st.message());
        return e.failed;
      }
      e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr,
                   "fanout-server: read %lld edge ids on demand in %.2f s (a request asked for "
                   "them; --edge-ids memory holds them from the start)\n",
                   static_cast<long long>(e.ids.size()), e.seconds);
      e.ready.store(true, std::memory_order_release);
    }
  }
  *graph = &e.graph;
  return Status::OK();
}

Status PartitionService::Labels(ArrayView<const int64_t> ids, int64_t* dst) const {
  const datasets::PartitionView& d = s_->view;
  if (d.labels.empty())
    return Status::NotFound("dataset '" + s_->data->meta.name + "' has no labels");
  for (size_t i = 0; i < ids.size(); ++i) dst[i] = d.labels[ids[i] - d.node_begin];
  return Status::OK();
}

Status PartitionService::OverlayLive(ArrayView<const int64_t> ids, int64_t version, char* rows,
                                     int64_t* labels, int64_t* read_at) const {
  FANOUT_RETURN_IF_ERROR(ResolveVersion(version, read_at));
  if (*read_at >= 0)
    s_->live->partition().Overlay(ids, static_cast<uint64_t>(*read_at), rows, labels);
  return Status::OK();
}

Status PartitionService::ResolveVersion(int64_t requested, int64_t* read_at) const {
  *read_at = -1;
  if (!s_->live) {
    if (requested > 0)
      return Status::InvalidArgument("version " + std::to_string(requested) +
                                     " of a static partition (it has only its base, 0)");
    return Status::OK();
  }
  uint64_t v = 0;
  FANOUT_RETURN_IF_ERROR(s_->live->ReadVersion(requested, &v));
  *read_at = static_cast<int64_t>(v);
  return Status::OK();
}

Status PartitionService::Sample(ArrayView<const int64_t> ids, const SampleParams& p,
                                const sampler::OneHopResult** out) {
  // A live partition: the version this request reads (< 0: the newest), and
  // whether its rows differ from the base's there (then the hop reads
  // through the versioned partition).
  FANOUT_RETURN_IF_ERROR(ResolveVersion(p.version, &last_version_));
  // The arrays every sampler reads: the static base, or the live generation
  // that holds this version (the dataset's base, or one a compaction made).
  const datasets::PartitionView* view = &s_->view;
  const int64_t* time_index = s_->time_index;
  int64_t max_degree = s_->max_degree;
  const sampler::CsrGraph* live_graph = nullptr;
  bool merged = false;
  // Held for this call only: an idle connection keeps no generation (and
  // its memory) alive past a compaction.
  std::shared_ptr<const live::Generation> gen;
  if (last_version_ >= 0) {
    const uint64_t at = static_cast<uint64_t>(last_version_);
    FANOUT_RETURN_IF_ERROR(s_->live->partition().GenerationFor(at, &gen));
    view = &gen->view();
    live_graph = &gen->graph();
    time_index = gen->time_index();
    merged = !gen->EdgesAsBase(at);
    // Rows the delta changed may be longer than the base's.
    max_degree = merged ? gen->degree_bound() : gen->max_degree();
  }
  // `over(sample)` runs the sampler a request names, sample(arrays, nodes,
  // times, walk keys, out): on the request's own arrays, or, on a live
  // partition whose rows changed at the version, through SampleAnyHop (once
  // over the base for the unchanged rows, once per changed row over its
  // merged edges, each with its nodes' own times and keys).
  std::vector<int64_t> sub_times;
  std::vector<uint64_t> sub_keys;
  auto over = [&](auto&& sample) -> Status {
    live::RowArrays on_base;
    on_base.edge_types = view->edge_types.empty() ? nullptr : view->edge_types.data();
    on_base.edge_times = view->edge_times.empty() ? nullptr : view->edge_times.data();
    on_base.time_index = time_index;
    on_base.node_offset = s_->view.node_begin;
    on_base.graph = live_graph;
    if (on_base.graph == nullptr) FANOUT_RETURN_IF_ERROR(GraphFor(p.with_edge_ids, &on_base.graph));
    if (!merged) return sample(on_base, ids, p.times, p.walk_keys, &hop_);
    return s_->live->partition().SampleAnyHop(
        *gen, static_cast<uint64_t>(last_version_), ids,
        [&](const live::RowArrays& a, ArrayView<const int64_t> nodes,
            ArrayView<const int64_t> which, sampler::OneHopResult* o) {
          sub_times.clear();
          sub_keys.clear();
          for (int64_t i : which) {
            if (!p.times.empty()) sub_times.push_back(p.times[i]);
            if (!p.walk_keys.empty()) sub_keys.push_back(p.walk_keys[i]);
          }
          return sample(a, nodes, ArrayView<const int64_t>(sub_times),
                        ArrayView<const uint64_t>(sub_keys), o);
        },
        &hop_);
  };
  auto done = [&]() {
    metrics_->RecordSample(static_cast<int64_t>(ids.size()), hop_.offsets[ids.size()]);
    last_edges_ += hop_.offsets[ids.size()];
    *out = &hop_;
    return Status::OK();
  };
  if (p.walk) {
    if (p.labor || p.temporal)
      return Status::InvalidArgument("a walk step takes no LABOR or temporal options");
    // A metapath step: per-edge-type fanouts with exactly one type at 1.
    int edge_type = -1;
    if (p.hetero) {
      const sampler::HeteroSchema& h = s_->data->meta.hetero;
      int ones = 0;
      for (size_t e = 0; e < p.type_fanouts.size(); ++e) {
        if (p.type_fanouts[e] == 1)
          edge_type = static_cast<int>(e), ++ones;
        else if (p.type_fanouts[e] != 0)
          ones = 2;
      }
      if (h.empty() || p.type_fanouts.size() != static_cast<size_t>(h.num_edge_types()) ||
          ones != 1)
        return Status::InvalidArgument(
            "a metapath walk step names one edge type (fanout 1, the rest 0) of a heterogeneous "
            "dataset; dataset '" +
            s_->data->meta.name + "' has " + std::to_string(h.num_edge_types()) +
            " edge types and the request gives " + std::to_string(p.type_fanouts.size()));
    }
    if (p.walk_keys.size() != ids.size())
      return Status::InvalidArgument("walk step: " + std::to_string(ids.size()) + " nodes but " +
                                     std::to_string(p.walk_keys.size()) + " walk keys");
    FANOUT_RETURN_IF_ERROR(
        over([&](const live::RowArrays& a, ArrayView<const int64_t> n, ArrayView<const int64_t>,
                 ArrayView<const uint64_t> k, sampler::OneHopResult* o) {
          sampler::SamplingOptions so;
          so.weighted = p.weighted;
          so.with_edge_ids = p.with_edge_ids;
          so.node_offset = a.node_offset;
          return sampler::SampleWalkStep(*a.graph, n, k, so, o, a.edge_types, edge_type);
        }));
    return done();
  }
  if (p.labor && (p.temporal || p.hetero))
    return Status::InvalidArgument(p.temporal
                                       ? "LABOR sampling of temporal graphs is not supported"
                                       : "LABOR sampling of heterogeneous (per-edge-type) hops is "
                                         "not supported");
  if (p.fanout < -1 || p.fanout > s_->options.max_fanout)
    return Status::InvalidArgument("fanout " + std::to_string(p.fanout) + " is outside [-1, " +
                                   std::to_string(s_->options.max_fanout) + "]");
  if (p.hop < 0) return Status::InvalidArgument("hop " + std::to_string(p.hop) + " is negative");
  // Heterogeneous: a node draws at most the sum of its types' fanouts (all
  // its edges where one is -1); the reply bound below uses that.
  int64_t bound_fanout = p.fanout;
  if (p.hetero) {
    const sampler::HeteroSchema& h = s_->data->meta.hetero;
    if (h.empty())
      return Status::InvalidArgument("per-edge-type fanouts need a heterogeneous dataset; '" +
                                     s_->data->meta.name + "' has no edge types");
    if (p.type_fanouts.size() != static_cast<size_t>(h.num_edge_types()))
      return Status::InvalidArgument("per-edge-type fanouts name " +
                                     std::to_string(p.type_fanouts.size()) +
                                     " edge types; dataset '" + s_->data->meta.name + "' has " +
                                     std::to_string(h.num_edge_types()));
    bound_fanout = 0;
    for (size_t e = 0; e < p.type_fanouts.size(); ++e) {
      const int64_t f = p.type_fanouts[e];
      if (f < -1 || f > s_->options.max_fanout)
        return Status::InvalidArgument("fanout " + std::to_string(f) + " of edge type " +
                                       h.EdgeTypeName(static_cast<int>(e)) + " is outside [-1, " +
                                       std::to_string(s_->options.max_fanout) + "]");
      if (bound_fanout >= 0) bound_fanout = f < 0 ? -1 : bound_fanout + f;
    }
  }
  // The reply's largest possible size, before any work: repeated hub ids with
  // a large fanout could otherwise ask for terabytes. A bound from the
  // fanout and the largest degree first; the exact one only where that is over.
  const double per_edge = (p.with_edge_ids ? 16 : 8) + (p.labor ? 4 : 0);
  const double limit = static_cast<double>(s_->options.max_reply_bytes);
  // The most edges one node of this degree can draw.
  auto most_drawn = [&](int64_t deg) -> double {
    return deg == 0           ? 0
           : p.labor          ? deg  // LABOR may take any neighbor (each with probability k/d)
           : bound_fanout < 0 ? deg
           : p.replace        ? bound_fanout
                              : std::min(bound_fanout, deg);
  };
  double most_edges =
      max_degree < 0 ? -1 : static_cast<double>(ids.size()) * most_drawn(max_degree);
  if (most_edges < 0 || 4.0 * ids.size() + most_edges * per_edge > limit) {
    most_edges = 0;
    if (merged) {
      const live::VersionedPartition& vp = s_->live->partition();
      live::VersionedPartition::Row row;
      for (int64_t id : ids)
        most_edges += most_drawn(vp.MergedRow(*gen, id, static_cast<uint64_t>(last_version_), &row)
                                     ? static_cast<int64_t>(row.neighbors.size())
                                     : live_graph->degree(id - view->node_begin));
    } else {
      const sampler::CsrGraph& dg = live_graph != nullptr ? *live_graph : s_->graph;
      for (int64_t id : ids) most_edges += most_drawn(dg.degree(id - view->node_begin));
    }
  }
  const double most_bytes = 4.0 * ids.size() + most_edges * per_edge;
  if (most_bytes > limit)
    return Status::InvalidArgument(
        "this sampling request may draw " + std::to_string(static_cast<int64_t>(most_edges)) +
        " edges, a reply over the server's limit of " +
        std::to_string(s_->options.max_reply_bytes >> 20) +
        " MiB (--max-reply-mib): ask for fewer nodes or a smaller fanout per request");
  sampler::SamplingOptions so;
  so.replace = p.replace;
  so.weighted = p.weighted;
  so.with_edge_ids = p.with_edge_ids;
  so.labor = p.labor;
  if (p.temporal) {
    if (!s_->data->meta.has_edge_times)
      return Status::InvalidArgument("temporal sampling needs edge timestamps; dataset '" +
                                     s_->data->meta.name +
                                     "' has none (fanout-partition --edge-times)");
    if (p.times.size() != ids.size())
      return Status::InvalidArgument(
          "temporal sampling needs one time per node: " + std::to_string(ids.size()) + " nodes, " +
          std::to_string(p.times.size()) + " times");
    if (p.replace || p.weighted)
      return Status::InvalidArgument(
          "temporal sampling draws uniformly without replacement (no replace, no weights)");
    if (!p.hetero && !s_->data->meta.hetero.empty())
      // The time index orders each edge type's run on its own (PrepareTimeOrder).
      return Status::InvalidArgument(
          "temporal sampling of heterogeneous dataset '" + s_->data->meta.name +
          "' samples each edge type on its own: give per-edge-type fanouts");
    FANOUT_RETURN_IF_ERROR(over([&](const live::RowArrays& a, ArrayView<const int64_t> n,
                                    ArrayView<const int64_t> t, ArrayView<const uint64_t>,
                                    sampler::OneHopResult* o) -> Status {
      if (p.hetero)
        return sampler::SampleHeteroTemporalHop(*a.graph, a.edge_types, a.edge_times, a.time_index,
                                                a.node_offset, n, t, p.type_fanouts, p.hop, p.seed,
                                                p.strategy, p.with_edge_ids, o);
      sampler::SampleTemporalHop(*a.graph, a.edge_times, a.time_index, a.node_offset, n, t,
                                 p.fanout, p.hop, p.seed, p.strategy, p.with_edge_ids, o);
      return Status::OK();
    }));
    return done();
  }
  if (p.hetero) {
    FANOUT_RETURN_IF_ERROR(
        over([&](const live::RowArrays& a, ArrayView<const int64_t> n, ArrayView<const int64_t>,
                 ArrayView<const uint64_t>, sampler::OneHopResult* o) {
          sampler::SamplingOptions on = so;
          on.node_offset = a.node_offset;
          return sampler::SampleHeteroHop(*a.graph, a.edge_types, n, p.type_fanouts, p.hop, p.seed,
                                          on, o);
        }));
    return done();
  }
  if (merged && !p.weighted && !p.labor) {
    // The uniform hop reads changed rows in place (VersionedPartition::SampleHop).
    so.node_offset = s_->view.node_begin;
    FANOUT_RETURN_IF_ERROR(s_->live->partition().SampleHop(ids, p.fanout, p.hop, p.seed, so,
                                                           static_cast<uint64_t>(last_version_),
                                                           &hop_, &sampler_, s_->pool.get()));
    return done();
  }
  FANOUT_RETURN_IF_ERROR(
      over([&](const live::RowArrays& a, ArrayView<const int64_t> n, ArrayView<const int64_t>,
               ArrayView<const uint64_t>, sampler::OneHopResult* o) {
        sampler::SamplingOptions on = so;
        on.node_offset = a.node_offset;
        // The pool splits the base's large hops; a changed row's is one node.
        return sampler_.Sample(*a.graph, n, p.fanout, p.hop, p.seed, on,
                               n.size() > 1 ? s_->pool.get() : nullptr, o);
      }));
  return done();
}

Status PartitionService::PprPush(const sampler::PprPushRequest& in, int64_t version,
                                 const sampler::PprPushResult** out) {
  last_version_ = -1;
  if (static_cast<int64_t>(in.nodes.size()) > s_->options.max_ids_per_request)
    return Status::InvalidArgument("PPR push request has " + std::to_string(in.nodes.size()) +
                                   " entries, more than the limit of " +
                                   std::to_string(s_->options.max_ids_per_request));
  FANOUT_RETURN_IF_ERROR(ResolveVersion(version, &last_version_));
  // A live partition: the generation holding that version, its rows changed
  // since its base read merged.
  sampler::PprRowOverride merged;
  live::VersionedPartition::Row row;
  const uint64_t at = static_cast<uint64_t>(last_version_);
  const sampler::CsrGraph* graph = &s_->graph;
  std::shared_ptr<const live::Generation> gen;  // held for this call only
  if (last_version_ >= 0) {
    FANOUT_RETURN_IF_ERROR(s_->live->partition().GenerationFor(at, &gen));
    graph = &gen->graph();
    if (!gen->EdgesAsBase(at))
      merged = [vp = &s_->live->partition(), g = gen.get(), at, &row](
                   int64_t node, std::vector<int64_t>* out_row) {
        if (!vp->MergedRow(*g, node, at, &row)) return false;
        out_row->assign(row.neighbors.begin(), row.neighbors.end());
        return true;
      };
  }
  // 20 reply bytes per (query, node) pair.
  const size_t max_out = std::max<size_t>(1, static_cast<size_t>(s_->options.max_reply_bytes / 20));
  FANOUT_RETURN_IF_ERROR(sampler::PprPushRound(*graph, s_->view.node_begin, in, max_out, &ppr_,
                                               &ppr_map_, merged ? &merged : nullptr));
  const int64_t spread = ppr_.PushedEdges();
  metrics_->RecordSample(static_cast<int64_t>(ppr_.done), spread);
  last_edges_ += spread;
  *out = &ppr_;
  return Status::OK();
}

}  // namespace fanout::server
