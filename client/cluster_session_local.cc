// ClusterSession's co-located partitions: hops sampled here on the mapped
// export (the server's kernels on the server's memory), and the counts of
// that work handed to the cluster's reporter (client/local_reports.cc).
#include "client/detail/cluster_session.h"

namespace fanout::client {

void ClusterSession::NoteLocal(int p, int64_t bytes, int64_t feature_rows, int64_t feature_bytes,
                               int64_t nodes, int64_t edges) {
  served_[p] = 1;
  rpc::LocalWork& w = work_[p];
  ++w.requests;
  w.bytes += bytes;
  w.feature_rows += feature_rows;
  w.feature_bytes += feature_bytes;
  w.sampled_nodes += nodes;
  w.sampled_edges += edges;
  stats_.local_bytes += bytes;
  stats_.local_edges += edges;
  stats_.local_rows += feature_rows;
}

void ClusterSession::HandOffLocalWork(bool now) {
  const auto t = std::chrono::steady_clock::now();
  if (!now && t - last_handoff_ < std::chrono::milliseconds(250)) return;
  last_handoff_ = t;
  for (size_t p = 0; p < work_.size(); ++p) {
    if (work_[p].empty()) continue;
    c_->AddLocalWork(static_cast<int>(p), work_[p]);
    work_[p] = rpc::LocalWork();
  }
}

Status ClusterSession::SampleHere(int p, int64_t fanout, int32_t hop, uint64_t request_seed,
                                  const sampler::SamplingOptions& sampling,
                                  ArrayView<const int64_t> times, const char* strategy,
                                  ArrayView<const int64_t> type_fanouts,
                                  ArrayView<const uint64_t> walk_keys) {
  const LocalPartition& lp = *Local(p);
  sampler::SamplingOptions so = sampling;
  so.node_offset = lp.view().node_begin;
  sampler::OneHopResult& r = local_hops_[p];
  const auto& ids = by_part_[p];
  if (!walk_keys.empty()) {
    sampler::SamplingOptions step = so;
    step.labor = false;
    int edge_type = -1;  // a metapath step: the one type with fanout 1
    for (size_t e = 0; e < type_fanouts.size(); ++e)
      if (type_fanouts[e] != 0) edge_type = static_cast<int>(e);
    FANOUT_RETURN_IF_ERROR(sampler::SampleWalkStep(
        lp.graph(), ids, walk_keys, step, &r,
        lp.view().edge_types.empty() ? nullptr : lp.view().edge_types.data(), edge_type));
  } else if (!times.empty()) {
    sampler::TemporalStrategy how;
    FANOUT_RETURN_IF_ERROR(sampler::ParseTemporalStrategy(strategy, &how));
    if (!type_fanouts.empty())
      FANOUT_RETURN_IF_ERROR(sampler::SampleHeteroTemporalHop(
          lp.graph(), lp.view().edge_types.data(), lp.view().edge_times.data(), lp.time_index(),
          so.node_offset, ids, times, type_fanouts, hop, request_seed, how, so.with_edge_ids, &r));
    else
      sampler::SampleTemporalHop(lp.graph(), lp.view().edge_times.data(), lp.time_index(),
                                 so.node_offset, ids, times, fanout, hop, request_seed, how,
                                 so.with_edge_ids, &r);
  } else if (!type_fanouts.empty()) {
    FANOUT_RETURN_IF_ERROR(sampler::SampleHeteroHop(lp.graph(), lp.view().edge_types.data(), ids,
                                                    type_fanouts, hop, request_seed, so, &r));
  } else {
    FANOUT_RETURN_IF_ERROR(
        local_sampler_.Sample(lp.graph(), ids, fanout, hop, request_seed, so, pool_, &r));
  }
  std::vector<int32_t>& counts = local_counts_[p];
  counts.resize(ids.size());
  for (size_t j = 0; j < ids.size(); ++j)
    counts[j] = static_cast<int32_t>(r.offsets[j + 1] - r.offsets[j]);
  const int64_t edges = r.offsets[ids.size()];
  const bool weights = !r.edge_weights.empty();
  NoteLocal(p,
            edges * ((so.with_edge_ids ? 16 : 8) + (weights ? 4 : 0)) +
                static_cast<int64_t>(ids.size()) * 4,
            0, 0, static_cast<int64_t>(ids.size()), edges);
  views_[p] = {counts.data(), r.neighbors.data(), so.with_edge_ids ? r.edge_ids.data() : nullptr,
               weights ? r.edge_weights.data() : nullptr};
  return Status::OK();
}

}  // namespace fanout::client
