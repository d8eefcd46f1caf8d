#include "server/handler.h"

#include <chrono>
#include <cstring>

#include "rpc/codec.h"

namespace fanout::server {

namespace gen = rpc::gen;

template <typename Fn>
void RpcHandler::Serve(int method, Fn&& fn) {
  auto t0 = std::chrono::steady_clock::now();
  metrics_->BeginRequest();
  Status st;
  try {
    st = fn();
  } catch (const std::bad_alloc&) {
    st = Status::ResourceExhausted("out of memory serving " + std::string(MethodName(method)));
  } catch (const std::exception& e) {
    st = Status::Internal(e.what());
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  metrics_->EndRequest(method, st.ok() ? kOk : st.IsInvalidArgument() ? kInvalidArgument : kError, secs);
  if (!st.ok()) {
    gen::FanoutError err;
    err.code = static_cast<int32_t>(st.code());
    err.message = st.message();
    throw err;
  }
}

Status RpcHandler::CheckIds(const std::string& payload, ArrayView<const int64_t>* ids) const {
  FANOUT_RETURN_IF_ERROR(rpc::View(payload, "node ids", ids));
  if (static_cast<int64_t>(ids->size()) > s_->options.max_ids_per_request)
    return Status::InvalidArgument("request has " + std::to_string(ids->size()) + " ids, more than the limit of " +
                                   std::to_string(s_->options.max_ids_per_request));
  const int64_t lo = s_->data->node_begin, hi = s_->data->node_end;
  for (size_t i = 0; i < ids->size(); ++i) {
    int64_t v = (*ids)[i];
    if (v < lo || v >= hi)
      return Status::InvalidArgument("node " + std::to_string(v) + " (position " + std::to_string(i) +
                                     ") is outside this partition's range [" + std::to_string(lo) + ", " +
                                     std::to_string(hi) + ")");
  }
  return Status::OK();
}

void RpcHandler::partition_info(gen::PartitionInfo& out) {
  Serve(kPartitionInfo, [&] {
    const datasets::PartitionData& d = *s_->data;
    const datasets::DatasetMeta& m = d.meta;
    out.partition = d.part;
    out.num_parts = m.num_parts;
    out.node_begin = d.node_begin;
    out.node_end = d.node_end;
    out.num_nodes_total = m.num_nodes;
    out.num_edges = static_cast<int64_t>(d.indices.size());
    out.num_edges_total = m.num_edges;
    out.feature_dim = m.feature_dim;
    out.feature_dtype = datasets::FeatureDTypeName(m.feature_dtype);
    out.feature_scale = m.feature_scale;
    out.num_classes = m.num_classes;
    out.format_version = m.format_version;
    out.dataset_id = m.dataset_id;
    out.dataset_name = m.name;
    out.direction = m.direction;
    rpc::Pack(ArrayView<const int64_t>(m.offsets), &out.partition_offsets);
    out.has_labels = m.has_labels;
    out.max_ids_per_request = s_->options.max_ids_per_request;
    out.max_fanout = s_->options.max_fanout;
    return Status::OK();
  });
}

void RpcHandler::sample_neighbors(gen::SampleResponse& out, const gen::SampleRequest& req) {
  Serve(kSampleNeighbors, [&]() -> Status {
    ArrayView<const int64_t> ids;
    FANOUT_RETURN_IF_ERROR(CheckIds(req.nodes, &ids));
    if (req.fanout < -1 || req.fanout > s_->options.max_fanout)
      return Status::InvalidArgument("fanout " + std::to_string(req.fanout) + " is outside [-1, " +
                                     std::to_string(s_->options.max_fanout) + "]");
    if (req.hop < 0) return Status::InvalidArgument("hop " + std::to_string(req.hop) + " is negative");
    sampler::SamplingOptions so;
    so.replace = req.replace;
    so.weighted = req.weighted;
    so.with_edge_ids = req.with_edge_ids;
    so.node_offset = s_->data->node_begin;
    FANOUT_RETURN_IF_ERROR(sampler_.Sample(s_->graph, ids, req.fanout, req.hop, static_cast<uint64_t>(req.seed), so,
                                           s_->pool.get(), &hop_));
    const size_t n = ids.size();
    const int64_t total = hop_.offsets[n];
    out.counts.resize(n * 4);
    int32_t* counts = reinterpret_cast<int32_t*>(out.counts.data());
    for (size_t i = 0; i < n; ++i) counts[i] = static_cast<int32_t>(hop_.offsets[i + 1] - hop_.offsets[i]);
    out.neighbors.assign(reinterpret_cast<const char*>(hop_.neighbors.data()), total * 8);
    if (req.with_edge_ids) out.edge_ids.assign(reinterpret_cast<const char*>(hop_.edge_ids.data()), total * 8);
    else out.edge_ids.clear();
    metrics_->RecordSample(static_cast<int64_t>(n), total);
    return Status::OK();
  });
}

void RpcHandler::lookup_features(std::string& out, const std::string& nodes) {
  Serve(kLookupFeatures, [&]() -> Status {
    ArrayView<const int64_t> ids;
    FANOUT_RETURN_IF_ERROR(CheckIds(nodes, &ids));
    const datasets::PartitionData& d = *s_->data;
    const size_t row = static_cast<size_t>(d.meta.feature_dim * datasets::FeatureDTypeSize(d.meta.feature_dtype));
    const int64_t n = static_cast<int64_t>(ids.size());
    out.resize(n * row);
    char* dst = out.data();
    const uint8_t* src = d.features.data();
    const int64_t base = d.node_begin;
    auto gather = [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if (i + 8 < e) __builtin_prefetch(src + (ids[i + 8] - base) * row);
        std::memcpy(dst + i * row, src + (ids[i] - base) * row, row);
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
    return Status::OK();
  });
}

template <typename T, typename Fn>
void RpcHandler::ServeLookup(int method, const std::string& nodes, std::string& out, Fn&& value_of_row) {
  Serve(method, [&]() -> Status {
    ArrayView<const int64_t> ids;
    FANOUT_RETURN_IF_ERROR(CheckIds(nodes, &ids));
    out.resize(ids.size() * sizeof(T));
    T* dst = reinterpret_cast<T*>(out.data());
    const int64_t base = s_->data->node_begin;
    for (size_t i = 0; i < ids.size(); ++i) dst[i] = value_of_row(ids[i] - base);
    return Status::OK();
  });
}

void RpcHandler::lookup_labels(std::string& out, const std::string& nodes) {
  const datasets::PartitionData& d = *s_->data;
  if (d.labels.empty()) {
    Serve(kLookupLabels, [&] { return Status::NotFound("dataset '" + d.meta.name + "' has no labels"); });
    return;
  }
  ServeLookup<int64_t>(kLookupLabels, nodes, out, [&](int64_t r) { return d.labels[r]; });
}

void RpcHandler::lookup_degrees(std::string& out, const std::string& nodes) {
  const datasets::PartitionData& d = *s_->data;
  ServeLookup<int64_t>(kLookupDegrees, nodes, out, [&](int64_t r) { return d.indptr[r + 1] - d.indptr[r]; });
}

void RpcHandler::lookup_splits(std::string& out, const std::string& nodes) {
  const datasets::PartitionData& d = *s_->data;
  ServeLookup<uint8_t>(kLookupSplits, nodes, out, [&](int64_t r) { return d.split.empty() ? uint8_t{0} : d.split[r]; });
}

void RpcHandler::lookup_original_ids(std::string& out, const std::string& nodes) {
  const datasets::PartitionData& d = *s_->data;
  ServeLookup<int64_t>(kLookupOriginalIds, nodes, out, [&](int64_t r) { return d.original_ids[r]; });
}

void RpcHandler::ping(std::string& out, const std::string& text) {
  Serve(kPing, [&] {
    out = text;
    return Status::OK();
  });
}

}  // namespace fanout::server
