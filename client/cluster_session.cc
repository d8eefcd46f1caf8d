// ClusterSession's calls, each routed to the partitions that own its ids and
// its replies merged in the caller's order (sampling hop by hop, features,
// labels, lookups, walks, has_edges, splits); Cluster::NewSession.
#include "client/detail/cluster_session.h"

#include "client/detail/stage_timer.h"

namespace fanout::client {

using detail::StageTimer;

Status ClusterSession::ViewDataPlaneSample(int p, bool eids, bool weights, HopView* v) {
  const PodVector<char>& b = dp_replies_[p];
  stats_.ucx_bytes += static_cast<int64_t>(b.size());
  rpc::SampleReplyView r;
  Status st = rpc::DecodeSampleReply(b.data(), b.size(), by_part_[p].size(), eids, &r, weights);
  if (!st.ok()) return Status::Corruption("server " + Address(p) + ": " + st.message());
  v->counts = r.counts;
  v->neighbors = r.neighbors;
  v->edge_ids = r.edge_ids;
  v->edge_weights = r.edge_weights;
  return Status::OK();
}

Status ClusterSession::CheckWeights(bool weighted, const char* what) const {
  if (!weighted) return Status::OK();
  for (int p = 0; p < c_->num_parts(); ++p)
    if (!links_[p].info.has_edge_weights)
      return Status::InvalidArgument(std::string(what) + ": server " + Address(p) + " (partition " +
                                     std::to_string(p) +
                                     ") serves no edge weights: it needs a dataset partitioned "
                                     "with a weight per edge (docs/DATA.md), and servers that "
                                     "know it");
  return Status::OK();
}

Status ClusterSession::Sample(ArrayView<const int64_t> seeds, uint64_t request_seed,
                              const sampler::MultiHopOptions& options,
                              sampler::SampledSubgraph* out) {
  FANOUT_RETURN_IF_ERROR(sampler::CheckMultiHopOptions(options, true));
  FANOUT_RETURN_IF_ERROR(CheckWeights(options.sampling.weighted, "weighted sampling"));
  IdRangeCheck seed;
  seed.what = "seed";
  FANOUT_RETURN_IF_ERROR(CheckIdsInRange(seeds, 0, c_->num_nodes(), seed));
  builder_.UseDenseIdRange(
      c_->num_nodes());  // the relabel's dedupe, direct-mapped where the id space is small
  builder_.Begin(seeds, out);
  const bool eids = options.sampling.with_edge_ids;
  if (!options.edge_type_fanouts.empty()) {  // heterogeneous: per-edge-type fanouts, over Thrift
    if (c_->hetero_.empty())
      return Status::InvalidArgument("per-edge-type fanouts need a heterogeneous dataset; '" +
                                     c_->info_[0].dataset_name + "' has no edge types");
    std::vector<int64_t> per_hop;
    FANOUT_RETURN_IF_ERROR(
        sampler::HeteroHopFanouts(c_->hetero_, options.edge_type_fanouts, &per_hop));
    if (options.induced)
      return Status::InvalidArgument(
          "subgraph (induced) sampling of heterogeneous graphs is not supported");
    std::vector<int64_t> type_fanouts;
    for (size_t h = 0; h < per_hop.size(); ++h) {
      sampler::HopTypeFanouts(options.edge_type_fanouts, h, &type_fanouts);
      FANOUT_RETURN_IF_ERROR(FetchHop(builder_.Frontier(*out), per_hop[h], static_cast<int32_t>(h),
                                      request_seed, options.sampling, {}, {}, "uniform",
                                      type_fanouts));
      {
        StageTimer merge(&stats_, Stage::kMerge);
        builder_.AddHop(hop_, eids, out);
      }
    }
    return Status::OK();
  }
  for (size_t h = 0; h < options.fanouts.size(); ++h) {
    FANOUT_RETURN_IF_ERROR(FetchHop(builder_.Frontier(*out), options.fanouts[h],
                                    static_cast<int32_t>(h), request_seed, options.sampling));
    StageTimer merge(&stats_, Stage::kMerge);
    builder_.AddHop(hop_, eids, out);
  }
  if (options.induced) {  // every stored edge of every node among the nodes
    sampler::SamplingOptions every = options.sampling;
    every.weighted = every.replace = every.labor = false;
    // The servers keep only neighbors among the nodes (older ones send
    // every neighbor: SetInducedEdges filters either way).
    keep_.assign(out->n_id.begin(), out->n_id.end());
    std::sort(keep_.begin(), keep_.end());
    keep_.erase(std::unique(keep_.begin(), keep_.end()), keep_.end());
    FANOUT_RETURN_IF_ERROR(FetchHop(builder_.Nodes(*out), -1,
                                    static_cast<int32_t>(options.fanouts.size()), request_seed,
                                    every, keep_));
    builder_.SetInducedEdges(hop_, eids, out);
  }
  return Status::OK();
}

Status ClusterSession::SampleTemporal(ArrayView<const int64_t> seeds,
                                      ArrayView<const int64_t> seed_times, uint64_t request_seed,
                                      const sampler::MultiHopOptions& options,
                                      sampler::SampledSubgraph* out) {
  FANOUT_RETURN_IF_ERROR(sampler::CheckTemporalOptions(options));
  for (int p = 0; p < c_->num_parts(); ++p)
    if (!links_[p].info.has_edge_times)
      return Status::InvalidArgument(
          "server " + Address(p) + " (partition " + std::to_string(p) +
          ") serves no edge timestamps: temporal sampling needs a dataset partitioned "
          "with --edge-times, and servers that know it");
  IdRangeCheck seed;
  seed.what = "seed";
  FANOUT_RETURN_IF_ERROR(CheckIdsInRange(seeds, 0, c_->num_nodes(), seed));
  const bool typed = !options.edge_type_fanouts.empty();
  if (typed != !c_->hetero_.empty())
    return Status::InvalidArgument(
        typed ? "per-edge-type fanouts need a heterogeneous dataset; '" +
                    c_->info_[0].dataset_name + "' has no edge types"
              : "temporal sampling of heterogeneous dataset '" + c_->info_[0].dataset_name +
                    "' samples each edge type on its own: give per-edge-type fanouts");
  FANOUT_RETURN_IF_ERROR(temporal_.Begin(seeds, seed_times, c_->num_nodes(), out));
  const bool eids = options.sampling.with_edge_ids;
  if (typed) {
    std::vector<int64_t> per_hop;
    FANOUT_RETURN_IF_ERROR(
        sampler::HeteroHopFanouts(c_->hetero_, options.edge_type_fanouts, &per_hop));
    std::vector<int64_t> type_fanouts;
    for (size_t h = 0; h < per_hop.size(); ++h) {
      sampler::HopTypeFanouts(options.edge_type_fanouts, h, &type_fanouts);
      FANOUT_RETURN_IF_ERROR(FetchHop(temporal_.Frontier(*out), per_hop[h], static_cast<int32_t>(h),
                                      request_seed, options.sampling, {}, temporal_.FrontierTimes(),
                                      sampler::TemporalStrategyName(options.temporal_strategy),
                                      type_fanouts));
      {
        StageTimer merge(&stats_, Stage::kMerge);
        temporal_.AddHop(hop_, eids, out);
      }
    }
    return Status::OK();
  }
  for (size_t h = 0; h < options.fanouts.size(); ++h) {
    FANOUT_RETURN_IF_ERROR(FetchHop(temporal_.Frontier(*out), options.fanouts[h],
                                    static_cast<int32_t>(h), request_seed, options.sampling, {},
                                    temporal_.FrontierTimes(),
                                    sampler::TemporalStrategyName(options.temporal_strategy)));
    StageTimer merge(&stats_, Stage::kMerge);
    temporal_.AddHop(hop_, eids, out);
  }
  return Status::OK();
}

Status ClusterSession::FetchHop(ArrayView<const int64_t> frontier, int64_t fanout, int32_t hop,
                                uint64_t request_seed, const sampler::SamplingOptions& sampling,
                                ArrayView<const int64_t> keep, ArrayView<const int64_t> times,
                                const char* strategy, ArrayView<const int64_t> type_fanouts,
                                ArrayView<const uint64_t> walk_keys) {
  const bool eids = sampling.with_edge_ids;
  const bool typed = !type_fanouts.empty();
  const bool walk = !walk_keys.empty();
  const bool weights = sampling.labor && !walk;
  // The most neighbors a node's reply may hold (-1: no bound: every
  // neighbor, or LABOR, whose picks are not capped by the fanout).
  int64_t cap = weights || fanout < 0 ? -1 : fanout;
  if (typed) {
    cap = 0;
    for (int64_t f : type_fanouts) cap = (f < 0 || cap < 0) ? -1 : cap + f;
  }
  StageTimer route(&stats_, Stage::kRoute);
  FANOUT_RETURN_IF_ERROR(Route(frontier));
  if (walk) {  // each partition's walks' keys, in its order
    for (int p = 0; p < c_->num_parts(); ++p) {
      walk_keys_by_part_[p].resize(pos_[p].size());
      for (size_t j = 0; j < pos_[p].size(); ++j) walk_keys_by_part_[p][j] = walk_keys[pos_[p][j]];
    }
  }
  if (!times.empty()) {  // each partition's nodes' times, in its order
    for (int p = 0; p < c_->num_parts(); ++p) {
      times_by_part_[p].resize(pos_[p].size());
      for (size_t j = 0; j < pos_[p].size(); ++j) times_by_part_[p][j] = times[pos_[p][j]];
    }
  }
  rpc::DataRequest req;
  req.method = rpc::DataMethod::kSample;
  rpc::SampleCall& call = req.call;
  call.fanout = fanout;
  call.replace = sampling.replace;
  call.weighted = sampling.weighted;
  call.seed = request_seed;
  call.hop = hop;
  call.with_edge_ids = eids;
  call.keep = keep;
  call.temporal_strategy = strategy;
  call.times = times;
  call.type_fanouts = type_fanouts;
  call.labor = weights;
  call.walk_keys = walk_keys;
  route.Stop();
  // Co-located partitions are sampled here, on their mapped CSR (the
  // keep filter is the builder's: SetInducedEdges keeps only edges among
  // the nodes, whichever path the hop came by).
  // (An export without edge ids, where the server reads them on demand:
  // hops that ask for them go to the server.)
  StageTimer local(&stats_, Stage::kLocalSample);
  if (LocalSampling())
    for (int p = 0; p < c_->num_parts(); ++p)
      if (Here(p) && (!eids || Local(p)->has_edge_ids()))
        FANOUT_RETURN_IF_ERROR(SampleHere(
            p, fanout, hop, request_seed, sampling,
            times.empty() ? ArrayView<const int64_t>() : times_by_part_[p], strategy, type_fanouts,
            walk ? ArrayView<const uint64_t>(walk_keys_by_part_[p]) : ArrayView<const uint64_t>()));
  local.Stop();
  // One request per other partition, all in flight at once.
  StageTimer transfer(&stats_, Stage::kSampleTransfer);
  auto t0 = std::chrono::steady_clock::now();
  auto part_call = [&](int p) {
    rpc::SampleCall mine = call;
    mine.version = pinned_.empty() ? -1 : pinned_[p];
    if (!times.empty()) mine.times = times_by_part_[p];
    if (walk) mine.walk_keys = walk_keys_by_part_[p];
    return mine;
  };
  auto send = [&](int p) { return links_[p].client->SendSample(by_part_[p], part_call(p)); };
  // A data-plane request carries no keep list, times or type fanouts: those go by Thrift.
  FANOUT_RETURN_IF_ERROR(Exchange(
      keep.empty() && times.empty() && !typed ? &req : nullptr, [&](int p) { return GrowSink(p); },
      send,
      [&](int p) {
        return links_[p].client->ReceiveSample(by_part_[p].size(), part_call(p), &replies_[p]);
      }));
  stats_.network_wait_s +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  transfer.Stop();
  StageTimer merge(&stats_, Stage::kMerge);
  for (int p = 0; p < c_->num_parts(); ++p) {
    if (by_part_[p].empty() || served_[p]) continue;  // served: views_[p] set by SampleHere
    if (via_dp_[p]) {
      FANOUT_RETURN_IF_ERROR(ViewDataPlaneSample(p, eids, weights, &views_[p]));
    } else {
      views_[p] = {replies_[p].Counts().data(), replies_[p].Neighbors().data(),
                   replies_[p].EdgeIds().data(), replies_[p].EdgeWeights().data()};
      // A live partition's first read pins it (one version per batch).
      if (!pinned_.empty() && pinned_[p] < 0 && replies_[p].version >= 0)
        pinned_[p] = replies_[p].version;
    }
    // What a server sent, whichever path: no count past the request, no
    // neighbor outside the dataset (a rogue or broken server's reply is
    // refused here, before the merge writes anything).
    int64_t total = 0;
    Status st = rpc::CheckSampleCounts(views_[p].counts, by_part_[p].size(), cap, &total);
    if (st.ok()) st = rpc::CheckNeighborIds(views_[p].neighbors, total, c_->num_nodes());
    if (!st.ok()) return Status::Corruption("server " + Address(p) + ": " + st.message());
  }
  // Merge into frontier order: counts first, then each partition's runs.
  const size_t m = frontier.size();
  hop_.offsets.resize(m + 1);
  hop_.offsets[0] = 0;
  for (int p = 0; p < c_->num_parts(); ++p) {
    const int32_t* counts = views_[p].counts;
    for (size_t j = 0; j < pos_[p].size(); ++j) hop_.offsets[pos_[p][j] + 1] = counts[j];
  }
  for (size_t i = 0; i < m; ++i) hop_.offsets[i + 1] += hop_.offsets[i];
  hop_.neighbors.resize(hop_.offsets[m]);
  hop_.edge_ids.resize(eids ? hop_.offsets[m] : 0);
  hop_.edge_types.resize(typed ? hop_.offsets[m] : 0);
  hop_.edge_weights.resize(weights ? hop_.offsets[m] : 0);
  for (int p = 0; p < c_->num_parts(); ++p) {
    const int32_t* counts = views_[p].counts;
    const int64_t* nbr = views_[p].neighbors;
    const int64_t* eid = views_[p].edge_ids;
    const float* ew = views_[p].edge_weights;
    const int32_t* et = !typed       ? nullptr
                        : served_[p] ? local_hops_[p].edge_types.data()
                                     : replies_[p].EdgeTypes().data();
    if (typed && !by_part_[p].empty() && !served_[p] &&
        replies_[p].EdgeTypes().size() != replies_[p].Neighbors().size())
      return Status::Corruption(
          "server " + Address(p) +
          " sent no edge types for a heterogeneous sample (a server before heterogeneous "
          "sampling?)");
    int64_t at = 0;
    for (size_t j = 0; j < pos_[p].size(); ++j) {
      int64_t dst = hop_.offsets[pos_[p][j]], k = counts[j];
      std::memcpy(hop_.neighbors.data() + dst, nbr + at, k * 8);
      if (eids) std::memcpy(hop_.edge_ids.data() + dst, eid + at, k * 8);
      if (typed) std::memcpy(hop_.edge_types.data() + dst, et + at, k * 4);
      if (weights) std::memcpy(hop_.edge_weights.data() + dst, ew + at, k * 4);
      at += k;
    }
  }
  return Status::OK();
}

Status ClusterSession::Pin(const std::vector<int64_t>& versions) {
  const size_t k = static_cast<size_t>(c_->num_parts());
  if (!versions.empty() && versions.size() != k)
    return Status::InvalidArgument("a snapshot names " + std::to_string(versions.size()) +
                                   " partitions' versions; the cluster has " + std::to_string(k));
  pinned_ = versions.empty() ? std::vector<int64_t>(k, -1) : versions;
  return Status::OK();
}

Status ClusterSession::NewestOf(int p, int64_t* version) {
  *version = -1;
  // Static partitions (as their replica said when connected; read here or
  // not) have no versions: no call for them.
  if (Here(p) || links_[p].info.live_version < 0) return Status::OK();
  FANOUT_RETURN_IF_ERROR(EnsureClient(p));
  rpc::RemotePartitionInfo info;
  FANOUT_RETURN_IF_ERROR(links_[p].client->Info(&info));
  *version = info.live_version;
  return Status::OK();
}

Status ClusterSession::Newest(std::vector<int64_t>* versions) {
  versions->assign(static_cast<size_t>(c_->num_parts()), -1);
  for (int p = 0; p < c_->num_parts(); ++p) FANOUT_RETURN_IF_ERROR(NewestOf(p, &(*versions)[p]));
  return Status::OK();
}

Status ClusterSession::PinUnread() {
  for (int p = 0; p < c_->num_parts(); ++p)
    if (!pinned_.empty() && pinned_[p] < 0 && !by_part_[p].empty())
      FANOUT_RETURN_IF_ERROR(NewestOf(p, &pinned_[p]));
  return Status::OK();
}

Status ClusterSession::Features(ArrayView<const int64_t> ids, float* out) {
  StageTimer route(&stats_, Stage::kRoute);
  FANOUT_RETURN_IF_ERROR(Route(ids));
  FANOUT_RETURN_IF_ERROR(PinUnread());
  const int64_t d = c_->feature_dim();
  if (d == 0) return Status::OK();  // a dataset without feature values: nothing to fetch
  const int k = c_->num_parts();
  std::vector<FeatureDType> types(k);
  for (int p = 0; p < k; ++p)
    FANOUT_RETURN_IF_ERROR(ParseFeatureDType(links_[p].info.feature_dtype, &types[p]));
  route.Stop();
  // Co-located partitions: each row gathered from the mapped export
  // straight to its place in `out` (one copy, done here).
  StageTimer local(&stats_, Stage::kLocalFeatures);
  for (int p = 0; p < k; ++p) {
    if (!Here(p)) continue;
    const LocalPartition& lp = *Local(p);
    const uint8_t* src = lp.view().features.data();
    const size_t row = lp.row_bytes();
    const int64_t base = lp.view().node_begin;
    const auto& part_ids = by_part_[p];
    const auto& pos = pos_[p];
    const double* scale = links_[p].info.feature_scales.data();
    if (storage::DiskFeatures* disk = lp.disk()) {
      // On disk: this session's own reads of the server's feature file,
      // through the exported hot set and this process's cache; no request.
      if (disk_readers_.size() < static_cast<size_t>(k)) disk_readers_.resize(k);
      if (!disk_readers_[p]) FANOUT_RETURN_IF_ERROR(disk->NewReader(&disk_readers_[p]));
      disk_rows_.resize(part_ids.size());
      for (size_t j = 0; j < part_ids.size(); ++j) disk_rows_[j] = part_ids[j] - base;
      disk_buffer_.resize(part_ids.size() * row);
      Status read = disk->Gather(disk_rows_.data(), static_cast<int64_t>(part_ids.size()),
                                 disk_buffer_.data(), disk_readers_[p].get());
      if (!read.ok()) {
        if (read.code() != Status::Code::kCorruption && read.code() != Status::Code::kIOError)
          return read;
        // A damaged block (or a failing disk) under this host's replica: these
        // rows go to the replicas over RPC below, like a dead replica's
        // (its server reads the same file: the exchange moves on from it).
        ++stats_.data_faults;
        if (c_->exporter_[p] >= 0) c_->NoteFailure(p, c_->exporter_[p], read.message());
        std::fprintf(stderr,
                     "fanout: partition %d: the co-located read failed (%s); these rows go to a "
                     "replica over RPC\n",
                     p, read.message().c_str());
        continue;
      }
      for (size_t j = 0; j < part_ids.size(); ++j)
        DecodeFeatureRow(types[p], scale, disk_buffer_.data() + j * row, d, out + pos[j] * d);
      const int64_t bytes = static_cast<int64_t>(part_ids.size() * row);
      stats_.feature_bytes += bytes;
      NoteLocal(p, bytes, static_cast<int64_t>(part_ids.size()), bytes, 0, 0);
      continue;
    }
    for (size_t j = 0; j < part_ids.size(); ++j) {
      if (j + 8 < part_ids.size()) __builtin_prefetch(src + (part_ids[j + 8] - base) * row);
      DecodeFeatureRow(types[p], scale,
                       reinterpret_cast<const char*>(src + (part_ids[j] - base) * row), d,
                       out + pos[j] * d);
    }
    const int64_t bytes = static_cast<int64_t>(part_ids.size() * row);
    stats_.feature_bytes += bytes;
    NoteLocal(p, bytes, static_cast<int64_t>(part_ids.size()), bytes, 0, 0);
  }
  local.Stop();
  StageTimer transfer(&stats_, Stage::kFeatureTransfer);
  std::vector<char> direct(k, 0);  // the data-plane sink was `out` itself
  // Thrift replies of float32 rows received straight into their rows of
  // `out` (one segment per run of consecutive positions), not into a string
  // and then copied.
  std::vector<char> thrift_direct(k, 0);
  if (thrift_segments_.size() < static_cast<size_t>(k)) thrift_segments_.resize(k);
  rpc::DataRequest req;
  req.method = rpc::DataMethod::kFeatures;
  auto t0 = std::chrono::steady_clock::now();
  FANOUT_RETURN_IF_ERROR(Exchange(
      &req,
      [&](int p) {
        if (types[p] != FeatureDType::kFloat32) return GrowSink(p);
        // float32 rows go straight to their rows of the output: one segment
        // per run of consecutive positions.
        direct[p] = 1;
        std::vector<rpc::ReplySink::Segment> segments;
        ForEachRowRun(p, out, d, [&](float* at, size_t bytes) { segments.push_back({at, bytes}); });
        if (segments.size() > kMaxDirectSegments) {
          // UCX 1.13 receives long scatter lists slowly (measured in
          // docs/BENCHMARKS.md): take the rows into a buffer and copy.
          direct[p] = 0;
          return GrowSink(p);
        }
        return rpc::ReplySink::Scatter(std::move(segments));
      },
      [&](int p) {
        return links_[p].client->SendFeatures(by_part_[p], pinned_.empty() ? -1 : pinned_[p]);
      },
      [&](int p) {
        thrift_direct[p] = 0;
        if (types[p] != FeatureDType::kFloat32)
          return links_[p].client->ReceiveFeatures(&replies_[p].neighbors);
        std::vector<iovec>& segments = thrift_segments_[p];
        segments.clear();
        ForEachRowRun(p, out, d, [&](float* at, size_t bytes) { segments.push_back({at, bytes}); });
        bool into = false;
        Status st = links_[p].client->ReceiveFeaturesInto(segments, &replies_[p].neighbors, &into);
        thrift_direct[p] = into;
        return st;
      }));
  stats_.network_wait_s +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  transfer.Stop();
  StageTimer decode(&stats_, Stage::kFeatureDecode);
  for (int p = 0; p < k; ++p) {
    if (by_part_[p].empty() || served_[p]) continue;
    const FeatureDType t = types[p];
    const size_t row = static_cast<size_t>(d) * FeatureDTypeSize(t);
    if (direct[p] && via_dp_[p]) {  // rows landed in `out` already
      stats_.feature_bytes += static_cast<int64_t>(by_part_[p].size() * row);
      stats_.ucx_bytes += static_cast<int64_t>(by_part_[p].size() * row);
      continue;
    }
    if (thrift_direct[p] && !via_dp_[p]) {  // ... over Thrift
      stats_.feature_bytes += static_cast<int64_t>(by_part_[p].size() * row);
      stats_.thrift_bytes += static_cast<int64_t>(by_part_[p].size() * row);
      continue;
    }
    // Rows in a buffer: Thrift's reply, or the data plane's for a dtype to convert.
    const bool dp = via_dp_[p];
    const char* rows = dp ? dp_replies_[p].data() : replies_[p].neighbors.data();
    const size_t size = dp ? dp_replies_[p].size() : replies_[p].neighbors.size();
    if (dp) stats_.ucx_bytes += static_cast<int64_t>(size);
    stats_.feature_bytes += static_cast<int64_t>(size);
    const rpc::RemotePartitionInfo& info = links_[p].info;
    if (size != by_part_[p].size() * row)
      return Status::Corruption(
          "server " + Address(p) + ": feature reply of " + std::to_string(size) + " bytes for " +
          std::to_string(by_part_[p].size()) + " rows of " + std::to_string(row));
    // Each row goes straight to its place in the output.
    for (size_t j = 0; j < pos_[p].size(); ++j)
      DecodeFeatureRow(t, info.feature_scales.data(), rows + j * row, d, out + pos_[p][j] * d);
  }
  return Status::OK();
}

Status ClusterSession::FeaturesToDevice(ArrayView<const int64_t> ids, float* d_out, int device) {
  (void)device;  // UCX finds the device from the pointer (ucp_mem_query / memory type)
  if (!channel_ || !ctx_ || !ctx_->info().cuda)
    return Status::NotSupported(
        "the data plane cannot receive into CUDA memory here (" +
        std::string(!ctx_ ? "no UCX data plane" : "this UCX was built without CUDA") + ")");
  FANOUT_RETURN_IF_ERROR(Route(ids));
  const int k = c_->num_parts();
  const int64_t d = c_->feature_dim();
  const size_t row = static_cast<size_t>(d) * 4;
  std::vector<rpc::ReplySink> sinks(k);
  for (int p = 0; p < k; ++p) {
    if (by_part_[p].empty()) continue;
    if (links_[p].peer < 0)
      return Status::NotSupported("server " + Address(p) + " is not on the data plane");
    FeatureDType t;
    FANOUT_RETURN_IF_ERROR(ParseFeatureDType(links_[p].info.feature_dtype, &t));
    if (t != FeatureDType::kFloat32)
      return Status::NotSupported("server " + Address(p) + " stores " +
                                  links_[p].info.feature_dtype + " rows (converted on the host)");
    std::vector<rpc::ReplySink::Segment> segments;
    ForEachRowRun(p, d_out, d, [&](float* at, size_t bytes) { segments.push_back({at, bytes}); });
    if (segments.size() > kMaxDirectSegments)
      return Status::NotSupported("ids of server " + Address(p) + " form " +
                                  std::to_string(segments.size()) + " runs (sort them)");
    sinks[p] = rpc::ReplySink::Scatter(std::move(segments), rpc::MemoryKind::kCuda);
  }
  rpc::DataRequest req;
  req.method = rpc::DataMethod::kFeatures;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<char> owed(k, 0);
  Status st;
  for (int p = 0; p < k && st.ok(); ++p) {
    if (by_part_[p].empty()) continue;
    rpc::DataRequest r = req;
    r.ids = by_part_[p];
    st = channel_->Post(links_[p].peer, r, sinks[p]);
    if (st.ok()) owed[p] = 1;
  }
  for (int p = 0; p < k && st.ok(); ++p) {
    if (!owed[p]) continue;
    st = channel_->Wait(links_[p].peer);
    owed[p] = 0;
    if (st.ok()) {
      const int64_t bytes = static_cast<int64_t>(by_part_[p].size() * row);
      stats_.feature_bytes += bytes;
      stats_.ucx_bytes += bytes;
    }
  }
  if (!st.ok()) {
    for (int p = 0; p < k; ++p)
      if (owed[p]) channel_->Abandon(links_[p].peer);
    // A failed endpoint is closed: the next Exchange() finds it so and
    // falls back to Thrift; the caller may stage these rows meanwhile.
  }
  stats_.requests += k;
  stats_.network_wait_s +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

Status ClusterSession::Labels(ArrayView<const int64_t> ids, int64_t* out) {
  StageTimer timer(&stats_, Stage::kLabels);
  FANOUT_RETURN_IF_ERROR(Route(ids));
  FANOUT_RETURN_IF_ERROR(PinUnread());
  if (!links_[0].info.has_labels) {  // every label unknown, as the dataset in process says
    std::fill(out, out + ids.size(), int64_t{-1});
    return Status::OK();
  }
  for (int p = 0; p < c_->num_parts(); ++p)
    if (Here(p)) {
      const ArrayView<const int64_t> labels = Local(p)->view().labels;
      LookupHere(p, out, [&](int64_t r) { return labels[r]; });
    }
  rpc::DataRequest req;
  req.method = rpc::DataMethod::kLabels;
  for (auto& b : dp_replies_) b.clear();
  FANOUT_RETURN_IF_ERROR(Exchange(
      &req, [&](int p) { return GrowSink(p); },
      [&](int p) {
        return links_[p].client->SendLabels(by_part_[p], pinned_.empty() ? -1 : pinned_[p]);
      },
      [&](int p) { return links_[p].client->ReceiveLabels(&replies_[p].neighbors); }));
  for (int p = 0; p < c_->num_parts(); ++p) {
    if (by_part_[p].empty() || served_[p]) continue;
    const char* data = via_dp_[p] ? dp_replies_[p].data() : replies_[p].neighbors.data();
    const size_t size = via_dp_[p] ? dp_replies_[p].size() : replies_[p].neighbors.size();
    if (size != by_part_[p].size() * 8)
      return Status::Corruption("server " + Address(p) + ": malformed label reply");
    if (via_dp_[p]) stats_.ucx_bytes += static_cast<int64_t>(size);
    const int64_t* l = reinterpret_cast<const int64_t*>(data);
    for (size_t j = 0; j < pos_[p].size(); ++j) out[pos_[p][j]] = l[j];
  }
  return Status::OK();
}

Status ClusterSession::OriginalIds(ArrayView<const int64_t> ids, int64_t* out) {
  FANOUT_RETURN_IF_ERROR(Route(ids));
  for (int p = 0; p < c_->num_parts(); ++p) {
    if (by_part_[p].empty()) continue;
    if (Here(p)) {
      const ArrayView<const int64_t> orig = Local(p)->view().original_ids;
      LookupHere(p, out, [&](int64_t r) { return orig[r]; });
      continue;
    }
    std::string orig;
    FANOUT_RETURN_IF_ERROR(links_[p].client->OriginalIds(by_part_[p], &orig));
    const int64_t* o = reinterpret_cast<const int64_t*>(orig.data());
    for (size_t j = 0; j < pos_[p].size(); ++j) out[pos_[p][j]] = o[j];
  }
  return Status::OK();
}

Status ClusterSession::Degrees(ArrayView<const int64_t> ids, int64_t* out) {
  FANOUT_RETURN_IF_ERROR(Route(ids));
  std::string deg;
  for (int p = 0; p < c_->num_parts(); ++p) {
    if (by_part_[p].empty()) continue;
    if (Here(p)) {
      const sampler::CsrGraph& g = Local(p)->graph();
      LookupHere(p, out, [&](int64_t r) { return g.degree(r); });
      continue;
    }
    FANOUT_RETURN_IF_ERROR(links_[p].client->Degrees(by_part_[p], &deg));
    const int64_t* d = reinterpret_cast<const int64_t*>(deg.data());
    for (size_t j = 0; j < pos_[p].size(); ++j) out[pos_[p][j]] = d[j];
  }
  return Status::OK();
}

Status ClusterSession::WalkStep(ArrayView<const int64_t> nodes, ArrayView<const uint64_t> keys,
                                bool weighted, int64_t* next, int edge_type) {
  if (keys.size() != nodes.size())
    return Status::InvalidArgument("walk step: " + std::to_string(nodes.size()) + " nodes but " +
                                   std::to_string(keys.size()) + " walk keys");
  if (nodes.empty()) return Status::OK();
  FANOUT_RETURN_IF_ERROR(CheckWeights(weighted, "weighted walks"));
  sampler::SamplingOptions so;
  so.weighted = weighted;
  so.with_edge_ids = false;
  // A metapath step is a walk step with per-edge-type fanouts: 1 for its
  // type, 0 for the rest (it goes over Thrift, as every typed request).
  std::vector<int64_t> type_fanouts;
  if (edge_type >= 0) {
    if (edge_type >= c_->hetero_.num_edge_types())
      return Status::InvalidArgument("metapath walk step: edge type " + std::to_string(edge_type) +
                                     " is not one of '" + c_->info_[0].dataset_name + "''s " +
                                     std::to_string(c_->hetero_.num_edge_types()) + " edge types");
    type_fanouts.assign(static_cast<size_t>(c_->hetero_.num_edge_types()), 0);
    type_fanouts[static_cast<size_t>(edge_type)] = 1;
  }
  FANOUT_RETURN_IF_ERROR(FetchHop(nodes, 1, 0, 0, so, {}, {}, "uniform", type_fanouts, keys));
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int64_t k = hop_.offsets[i + 1] - hop_.offsets[i];
    if (k > 1)
      return Status::Corruption("a walk step came back with " + std::to_string(k) +
                                " neighbors for one walk (a server before random walks?)");
    next[i] = k == 1 ? hop_.neighbors[hop_.offsets[i]] : -1;
  }
  return Status::OK();
}

Status ClusterSession::PprPush(const sampler::PprPushRequest& in, sampler::PprPushResult* out) {
  out->Clear();
  FANOUT_RETURN_IF_ERROR(sampler::CheckPprPushShape(in));
  const size_t n = in.nodes.size();
  FANOUT_RETURN_IF_ERROR(Route(in.nodes));
  FANOUT_RETURN_IF_ERROR(PinUnread());
  const int k = c_->num_parts();
  ppr_queries_.resize(k);
  ppr_residuals_.resize(k);
  ppr_replies_.resize(k);
  out->pushed.assign(n, 0);
  out->degrees.assign(n, 0);
  for (int p = 0; p < k; ++p) {
    ppr_queries_[p].resize(pos_[p].size());
    ppr_residuals_[p].resize(pos_[p].size());
    for (size_t j = 0; j < pos_[p].size(); ++j) {
      ppr_queries_[p][j] = in.queries[pos_[p][j]];
      ppr_residuals_[p][j] = in.residuals[pos_[p][j]];
    }
  }
  // Takes one owner's result for its entries' first `done`.
  auto take = [&](int p, size_t done, const uint8_t* pushed, const int64_t* degrees) {
    for (size_t j = 0; j < done; ++j) {
      out->pushed[pos_[p][j]] = pushed[j];
      out->degrees[pos_[p][j]] = degrees[j];
    }
  };
  // Co-located partitions: the server's kernel on the mapped export (where
  // this session samples exports itself, as hops).
  for (int p = 0; p < k; ++p) {
    if (!LocalSampling() || !Here(p)) continue;
    const LocalPartition& lp = *Local(p);
    sampler::PprPushRequest mine = in;
    mine.queries = ppr_queries_[p];
    mine.nodes = by_part_[p];
    mine.residuals = ppr_residuals_[p];
    FANOUT_RETURN_IF_ERROR(sampler::PprPushRound(lp.graph(), lp.view().node_begin, mine,
                                                 sampler::kPprNoReplyLimit, &ppr_here_, &ppr_map_));
    take(p, ppr_here_.done, ppr_here_.pushed.data(), ppr_here_.degrees.data());
    out->queries.insert(out->queries.end(), ppr_here_.queries.begin(), ppr_here_.queries.end());
    out->nodes.insert(out->nodes.end(), ppr_here_.nodes.begin(), ppr_here_.nodes.end());
    out->mass.insert(out->mass.end(), ppr_here_.mass.begin(), ppr_here_.mass.end());
    // Bytes as the wire would move them: 20 per entry and per (query, node) pair.
    NoteLocal(p, static_cast<int64_t>((ppr_here_.nodes.size() + by_part_[p].size()) * 20), 0, 0,
              static_cast<int64_t>(by_part_[p].size()), ppr_here_.PushedEdges());
  }
  // The rest over Thrift, again and again while a server's reply limit
  // leaves entries over (each round trip takes at least one).
  const rpc::PprReplyBounds bounds{c_->num_nodes(), sampler::kMaxPprQueries, sampler::kPprOne};
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    bool more = false;
    for (int p = 0; p < k; ++p) more |= !by_part_[p].empty() && !served_[p];
    if (!more) break;
    FANOUT_RETURN_IF_ERROR(Exchange(
        nullptr, [&](int p) { return GrowSink(p); },
        [&](int p) {
          return links_[p].client->SendPprPush(ppr_queries_[p], by_part_[p], ppr_residuals_[p],
                                               in.alpha_fixed, in.eps_fixed,
                                               pinned_.empty() ? -1 : pinned_[p]);
        },
        [&](int p) {
          return links_[p].client->ReceivePprPush(by_part_[p].size(), bounds, &ppr_replies_[p]);
        }));
    for (int p = 0; p < k; ++p) {
      if (by_part_[p].empty() || served_[p]) continue;
      const rpc::PprPushReply& r = ppr_replies_[p];
      const size_t m = r.num_out();
      const int32_t* q = reinterpret_cast<const int32_t*>(r.out_queries.data());
      const int64_t* v = reinterpret_cast<const int64_t*>(r.out_nodes.data());
      const uint64_t* mass = reinterpret_cast<const uint64_t*>(r.out_mass.data());
      const uint8_t* pushed = reinterpret_cast<const uint8_t*>(r.pushed.data());
      const int64_t* degrees = reinterpret_cast<const int64_t*>(r.degrees.data());
      take(p, static_cast<size_t>(r.done), pushed, degrees);
      out->queries.insert(out->queries.end(), q, q + m);
      out->nodes.insert(out->nodes.end(), v, v + m);
      out->mass.insert(out->mass.end(), mass, mass + m);
      if (!pinned_.empty() && pinned_[p] < 0 && r.version >= 0) pinned_[p] = r.version;
      // Entries not done yet go again.
      const auto d = static_cast<std::ptrdiff_t>(r.done);
      by_part_[p].erase(by_part_[p].begin(), by_part_[p].begin() + d);
      pos_[p].erase(pos_[p].begin(), pos_[p].begin() + d);
      ppr_queries_[p].erase(ppr_queries_[p].begin(), ppr_queries_[p].begin() + d);
      ppr_residuals_[p].erase(ppr_residuals_[p].begin(), ppr_residuals_[p].begin() + d);
    }
  }
  stats_.network_wait_s +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out->done = n;
  return Status::OK();
}

Status ClusterSession::HasEdges(ArrayView<const int64_t> src, ArrayView<const int64_t> dst,
                                uint8_t* exists, int edge_type) {
  if (src.size() != dst.size())
    return Status::InvalidArgument("HasEdges: " + std::to_string(src.size()) + " sources but " +
                                   std::to_string(dst.size()) + " destinations");
  const bool in = c_->info_[0].direction != "out";
  ArrayView<const int64_t> rows = in ? dst : src, nbrs = in ? src : dst;
  IdRangeCheck check;
  check.what = "node";
  FANOUT_RETURN_IF_ERROR(CheckIdsInRange(nbrs, 0, c_->num_nodes(), check));
  FANOUT_RETURN_IF_ERROR(Route(rows));
  const int k = c_->num_parts();
  std::vector<std::vector<int64_t>> part_nbrs(k);
  std::vector<std::string> found(k);
  for (int p = 0; p < k; ++p) {
    part_nbrs[p].resize(pos_[p].size());
    for (size_t j = 0; j < pos_[p].size(); ++j) part_nbrs[p][j] = nbrs[pos_[p][j]];
  }
  if (edge_type >= 0 && edge_type >= c_->hetero_.num_edge_types())
    return Status::InvalidArgument("has_edges: edge type " + std::to_string(edge_type) +
                                   " is outside [0, " +
                                   std::to_string(c_->hetero_.num_edge_types()) + ")");
  for (int p = 0; p < k; ++p)
    if (Here(p)) {
      const LocalPartition& lp = *Local(p);
      const int32_t* types = lp.view().edge_types.empty() ? nullptr : lp.view().edge_types.data();
      LookupHere(p, exists, [&, j = size_t{0}](int64_t r) mutable {
        return static_cast<uint8_t>(
            sampler::RowHasNeighbor(lp.graph(), r, part_nbrs[p][j++], types, edge_type));
      });
    }
  auto t0 = std::chrono::steady_clock::now();
  Status st = Exchange(
      nullptr, [&](int p) { return GrowSink(p); },
      [&](int p) { return links_[p].client->SendHasEdges(by_part_[p], part_nbrs[p], edge_type); },
      [&](int p) { return links_[p].client->ReceiveHasEdges(by_part_[p].size(), &found[p]); });
  if (st.IsNotSupported())
    return Status::NotSupported(st.message() +
                                ": strict negative sampling needs servers with has_edges; "
                                "upgrade them or sample non-strict negatives");
  FANOUT_RETURN_IF_ERROR(st);
  for (int p = 0; p < k; ++p) {
    if (by_part_[p].empty() || served_[p]) continue;
    stats_.thrift_bytes += static_cast<int64_t>(found[p].size());
    for (size_t j = 0; j < pos_[p].size(); ++j)
      exists[pos_[p][j]] = static_cast<uint8_t>(found[p][j] != 0);
  }
  stats_.network_wait_s +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::OK();
}

Status ClusterSession::SplitNodes(int split, std::vector<int64_t>* out) {
  out->clear();
  std::vector<int64_t> ids;
  std::string splits;
  for (int p = 0; p < c_->num_parts(); ++p) {
    if (const LocalPartition* lp = Local(p)) {
      const auto& v = lp->view();
      for (size_t r = 0; r < v.split.size(); ++r)
        if (v.split[r] == split) out->push_back(v.node_begin + static_cast<int64_t>(r));
      continue;
    }
    const int64_t step =
        std::max<int64_t>(1, std::min<int64_t>(links_[p].info.max_ids_per_request, 1 << 20));
    for (int64_t a = c_->offsets_[p]; a < c_->offsets_[p + 1]; a += step) {
      int64_t b = std::min(c_->offsets_[p + 1], a + step);
      ids.resize(b - a);
      for (int64_t v = a; v < b; ++v) ids[v - a] = v;
      FANOUT_RETURN_IF_ERROR(links_[p].client->Splits(ids, &splits));
      for (int64_t v = a; v < b; ++v)
        if (static_cast<uint8_t>(splits[v - a]) == split) out->push_back(v);
    }
  }
  return Status::OK();
}

Status Cluster::NewSession(std::unique_ptr<Session>* out) {
  return NewSession(rpc::DataPlaneMode::kAuto, out);
}

Status Cluster::NewSession(const SessionMode& mode, std::unique_ptr<Session>* out) {
  if (mode.data_plane == rpc::DataPlaneMode::kUcx && !data_ctx_)
    return Status::NotSupported(
        "a UCX data-plane session on a cluster without a UCX data plane (connected with "
        "data_plane \"" +
        std::string(rpc::DataPlaneModeName(mode_)) + "\" or UCX could not start here)");
  auto s = std::make_unique<ClusterSession>(shared_from_this(), mode);
  FANOUT_RETURN_IF_ERROR(s->Open());
  *out = std::move(s);
  return Status::OK();
}

namespace {
// A cluster whose sessions reach the servers another way (Cluster::WithSessionMode).
class SessionModeSource : public Source {
 public:
  SessionModeSource(std::shared_ptr<Cluster> c, const SessionMode& mode)
      : c_(std::move(c)), mode_(mode) {}
  Status NewSession(std::unique_ptr<Session>* out) override { return c_->NewSession(mode_, out); }
  int64_t num_nodes() const override { return c_->num_nodes(); }
  int64_t feature_dim() const override { return c_->feature_dim(); }
  int64_t num_classes() const override { return c_->num_classes(); }
  std::string description() const override {
    std::string s = c_->description() + " (sessions: " + rpc::DataPlaneModeName(mode_.data_plane);
    if (mode_.local_sampling >= 0)
      s += mode_.local_sampling ? ", local sampling" : ", no local sampling";
    return s + ")";
  }
  const sampler::HeteroSchema* hetero() const override { return c_->hetero(); }
  std::vector<ReplicaHealth> Health() const override { return c_->Health(); }

 private:
  const std::shared_ptr<Cluster> c_;
  const SessionMode mode_;
};
}  // namespace

std::shared_ptr<Source> Cluster::WithSessionMode(const SessionMode& mode) {
  if (mode.data_plane == rpc::DataPlaneMode::kAuto &&
      (mode.local_sampling < 0 || (mode.local_sampling > 0) == local_sampling_))
    return shared_from_this();
  return std::make_shared<SessionModeSource>(shared_from_this(), mode);
}

}  // namespace fanout::client
