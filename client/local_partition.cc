#include "client/local_partition.h"

#include "rpc/partition_export.h"
#include "sampler/temporal.h"

namespace fanout::client {

Status LocalPartition::Open(const rpc::RemotePartitionInfo& info, int num_edge_types,
                            const std::string& token, int timeout_ms,
                            std::shared_ptr<const LocalPartition>* out) {
  if (info.local_socket.empty()) return Status::NotFound("the server exports nothing to its host");
  std::shared_ptr<rpc::LocalMapping> m;
  FANOUT_RETURN_IF_ERROR(rpc::FetchLocalExport(info.local_socket, token, timeout_ms, &m));
  const std::string where = "the export at " + info.local_socket + " ";
  const rpc::ExportLayout& l = m->layout();
  if (l.dataset_id != info.dataset_id || l.partition != info.partition ||
      l.node_begin != info.node_begin || l.node_end != info.node_end ||
      l.export_id != static_cast<uint64_t>(info.local_export_id))
    return Status::InvalidArgument(
        where + "is partition " + std::to_string(l.partition) + " of dataset " + l.dataset_id +
        " (export " + std::to_string(l.export_id) +
        "), not the one this server serves (partition " + std::to_string(info.partition) + " of " +
        info.dataset_id + ", export " + std::to_string(info.local_export_id) +
        "): another server on the socket path?");
  std::unique_ptr<LocalPartition> p(new LocalPartition());
  p->view_ = rpc::ViewOfExport(*m);
  const datasets::PartitionView& v = p->view_;
  const size_t n = static_cast<size_t>(v.num_nodes());
  auto bad = [&](const std::string& what) { return Status::Corruption(where + what); };
  Status st = sampler::CsrGraph::Create(v.indptr, v.indices, v.edge_ids, {}, &p->graph_);
  if (!st.ok() || v.indptr.size() != n + 1)
    return bad("has no CSR of " + std::to_string(n) + " rows");
  st = p->graph_.Validate(info.num_nodes_total);
  if (!st.ok()) return bad(st.message());
  const size_t edges = v.indices.size();
  if (!v.edge_ids.empty() && v.edge_ids.size() != edges)
    return bad("has edge ids that are not one per edge");
  if (info.has_edge_times && v.edge_times.size() != edges)
    return bad("has edge times that are not one per edge");
  if (num_edge_types > 0) {
    if (v.edge_types.size() != edges) return bad("has edge types that are not one per edge");
    for (int32_t t : v.edge_types)
      if (t < 0 || t >= num_edge_types)
        return bad("has an edge type outside [0, " + std::to_string(num_edge_types) + ")");
  }
  FeatureDType t;
  FANOUT_RETURN_IF_ERROR(ParseFeatureDType(info.feature_dtype, &t));
  p->row_bytes_ = static_cast<size_t>(info.feature_dim) * static_cast<size_t>(FeatureDTypeSize(t));
  if (v.features.size() != n * p->row_bytes_)
    return bad("has " + std::to_string(v.features.size()) + " feature bytes, not " +
               std::to_string(n) + " rows of " + std::to_string(p->row_bytes_));
  if (info.has_labels && v.labels.size() != n) return bad("has no label per node");
  if (!v.split.empty() && v.split.size() != n) return bad("has no split value per node");
  if (v.original_ids.size() != n) return bad("has no original id per node");
  if (info.has_edge_times)
    p->time_index_ = sampler::PrepareTimeOrder(p->graph_, v.edge_times.data(), &p->time_order_);
  p->socket_ = info.local_socket;
  p->mapping_ = std::move(m);
  *out = std::move(p);
  return Status::OK();
}

}  // namespace fanout::client
