#include "client/local_partition.h"

#include <unistd.h>

#include <algorithm>

#include "common/feature_dtype.h"
#include "rpc/partition_export.h"
#include "sampler/temporal.h"

namespace fanout::client {

rpc::ExpectedExport ExpectedExportOf(const rpc::RemotePartitionInfo& info) {
  rpc::ExpectedExport e;
  e.dataset_id = info.dataset_id;
  e.partition = info.partition;
  e.node_begin = info.node_begin;
  e.node_end = info.node_end;
  e.export_id = static_cast<uint64_t>(info.local_export_id);
  e.bytes = info.local_export_bytes > 0 ? static_cast<uint64_t>(info.local_export_bytes) : 0;
  e.feature_file = info.features_on_disk;
  if (info.server_uid >= 0) {
    e.server_uid = static_cast<uid_t>(info.server_uid);
    e.has_server_uid = true;
  }
  // A server that does not say its export's size: at most what this
  // partition's arrays can fill, each page aligned (a wider feature dtype
  // than the one named, every optional array present).
  const uint64_t nodes =
      static_cast<uint64_t>(std::max<int64_t>(0, info.node_end - info.node_begin));
  const uint64_t edges = static_cast<uint64_t>(std::max<int64_t>(0, info.num_edges));
  const uint64_t row = static_cast<uint64_t>(std::max<int64_t>(0, info.feature_dim)) * 8;
  std::vector<rpc::ExportedArray> most = {
      {rpc::ExportArray::kIndptr, 0, nodes + 1},     {rpc::ExportArray::kIndices, 0, edges},
      {rpc::ExportArray::kIndices32, 0, edges},      {rpc::ExportArray::kEdgeIds, 0, edges},
      {rpc::ExportArray::kEdgeTimes, 0, edges},      {rpc::ExportArray::kEdgeTypes, 0, edges},
      {rpc::ExportArray::kFeatures, 0, nodes * row}, {rpc::ExportArray::kLabels, 0, nodes},
      {rpc::ExportArray::kSplit, 0, nodes},          {rpc::ExportArray::kOriginalIds, 0, nodes},
      {rpc::ExportArray::kEdgeWeights, 0, edges}};
  e.max_bytes = rpc::ExportBytesFor(most);
  return e;
}

Status LocalPartition::Open(const rpc::RemotePartitionInfo& info, int num_edge_types,
                            const std::string& token, int timeout_ms,
                            std::shared_ptr<const LocalPartition>* out, int64_t max_cache_bytes) {
  if (info.local_socket.empty()) return Status::NotFound("the server exports nothing to its host");
  std::shared_ptr<rpc::LocalMapping> m;
  FANOUT_RETURN_IF_ERROR(
      rpc::FetchLocalExport(info.local_socket, token, timeout_ms, ExpectedExportOf(info), &m));
  const std::string where = "the export at " + info.local_socket + " ";
  std::unique_ptr<LocalPartition> p(new LocalPartition());
  p->view_ = rpc::ViewOfExport(*m);
  const sampler::PartitionView& v = p->view_;
  const size_t n = static_cast<size_t>(v.num_nodes());
  auto bad = [&](const std::string& what) { return Status::Corruption(where + what); };
  if (!v.indices.empty() && !v.indices32.empty())
    return bad("holds its neighbor ids twice (int64 and int32)");
  Status st = v.MakeGraph(&p->graph_);
  if (!st.ok() || v.indptr.size() != n + 1)
    return bad("has no CSR of " + std::to_string(n) + " rows");
  st = p->graph_.Validate(info.num_nodes_total);
  if (!st.ok()) return bad(st.message());
  const size_t edges = static_cast<size_t>(v.num_edges());
  if (!v.edge_ids.empty() && v.edge_ids.size() != edges)
    return bad("has edge ids that are not one per edge");
  if (info.has_edge_times && v.edge_times.size() != edges)
    return bad("has edge times that are not one per edge");
  if (info.has_edge_weights != !v.edge_weights.empty())
    return bad(info.has_edge_weights ? "has no edge weights though its dataset has them"
                                     : "has edge weights though its dataset has none");
  if (num_edge_types > 0) {
    if (v.edge_types.size() != edges) return bad("has edge types that are not one per edge");
    for (int32_t t : v.edge_types)
      if (t < 0 || t >= num_edge_types)
        return bad("has an edge type outside [0, " + std::to_string(num_edge_types) + ")");
  }
  FeatureDType t;
  FANOUT_RETURN_IF_ERROR(ParseFeatureDType(info.feature_dtype, &t));
  p->row_bytes_ = static_cast<size_t>(info.feature_dim) * static_cast<size_t>(FeatureDTypeSize(t));
  if (info.features_on_disk) {
    // The rows are in the feature file handed beside the memory; the hot
    // set is in the memory.
    if (!v.features.empty()) return bad("has feature rows though its server keeps them on disk");
    const int fd = m->TakeFeatureFile();
    if (fd < 0) return bad("came without its feature file");
    storage::FeatureFile::Expect x;
    x.dataset_id = info.dataset_id;
    x.partition = info.partition;
    x.node_begin = info.node_begin;
    x.rows = info.node_end - info.node_begin;
    x.feature_dim = info.feature_dim;
    x.dtype = t;
    // Named by the path the kernel gives the descriptor (made printable).
    std::string name = "the feature file of " + where;
    char link[4096];
    const ssize_t got =
        readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), link, sizeof(link) - 1);
    if (got > 0) name = rpc::PrintableText(std::string(link, static_cast<size_t>(got)), 1024);
    std::shared_ptr<const storage::FeatureFile> file;
    Status fs = storage::FeatureFile::FromDescriptor(fd, name, x, &file);
    if (!fs.ok()) return Status::FromCode(static_cast<int>(fs.code()), fs.message());
    const size_t rb = p->row_bytes_;
    if (v.hot_table.size() % 2 != 0 || (rb > 0 && v.hot_rows.size() % rb != 0) ||
        (rb == 0 && !v.hot_rows.empty()))
      return bad("has a hot set that is not whole rows");
    storage::StaticRowSet hot;
    Status hs = storage::StaticRowSet::View(
        v.hot_table.data(), static_cast<int64_t>(v.hot_table.size() / 2),
        reinterpret_cast<const char*>(v.hot_rows.data()),
        rb > 0 ? static_cast<int64_t>(v.hot_rows.size() / rb) : 0, static_cast<int64_t>(rb),
        static_cast<int64_t>(n), &hot);
    if (!hs.ok()) return bad(hs.message());
    int64_t cache = m->layout().feature_cache_bytes;
    if (max_cache_bytes < 0) {
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
      max_cache_bytes = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page / 8 : 0;
    }
    cache = std::min(cache, max_cache_bytes);
    std::unique_ptr<storage::DiskFeatures> disk;
    FANOUT_RETURN_IF_ERROR(storage::DiskFeatures::Attach(file, hot, cache, 32, &disk));
    p->disk_ = std::move(disk);
  } else if (v.features.size() != n * p->row_bytes_) {
    return bad("has " + std::to_string(v.features.size()) + " feature bytes, not " +
               std::to_string(n) + " rows of " + std::to_string(p->row_bytes_));
  }
  if (info.has_labels && v.labels.size() != n) return bad("has no label per node");
  if (!v.split.empty() && v.split.size() != n) return bad("has no split value per node");
  if (v.original_ids.size() != n) return bad("has no original id per node");
  if (info.has_edge_times)
    p->time_index_ =
        sampler::PrepareTimeOrder(p->graph_, v.edge_times.data(), &p->time_order_,
                                  v.edge_types.empty() ? nullptr : v.edge_types.data());
  p->socket_ = info.local_socket;
  m->Populate();  // checked: now read in ahead of the first batches
  p->mapping_ = std::move(m);
  *out = std::move(p);
  return Status::OK();
}

}  // namespace fanout::client
