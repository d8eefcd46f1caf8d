// A partition whose server shares this host, read in this process: the
// server's sealed export (rpc/local_export.h) mapped read-only, checked once,
// and served by the same kernels the server runs (sampler/), so the same
// request gives the same bytes without a request. Internal to client/.
//
// Thread safety: immutable once opened; shared by every session of a cluster.
#ifndef FANOUT_CLIENT_LOCAL_PARTITION_H_
#define FANOUT_CLIENT_LOCAL_PARTITION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "rpc/local_export.h"
#include "rpc/rpc_client.h"
#include "sampler/csr_graph.h"
#include "sampler/neighbor_sampler.h"
#include "sampler/partition_view.h"
#include "storage/disk_features.h"

namespace fanout::client {

// What a client expects of partition `info`'s export before it maps it:
// identity, size (or the most its arrays can fill) and the server's uid.
rpc::ExpectedExport ExpectedExportOf(const rpc::RemotePartitionInfo& info);

class LocalPartition {
 public:
  // Maps the export `info` advertises (info.local_socket) once its socket is
  // held by the server's uid and its record is that server's (dataset id,
  // partition, node range, export id, size: rpc::FetchLocalExport), then
  // checks that its arrays are what `info` describes: CSR well formed, neighbor ids in the
  // dataset, one feature row of the partition's dtype per node, edge types
  // below `num_edge_types`. NotFound where there is no such socket on this
  // host (the server is elsewhere).
  // Where the server's features are on disk (info.features_on_disk), its
  // feature file comes too: checked as the server checks it (identity,
  // size, checksum table), read here with this process's own io_uring
  // reads through the server's exported hot set and a SIEVE cache of its
  // own (the server's size, at most `max_cache_bytes`; -1 = an eighth of
  // physical memory).
  static Status Open(const rpc::RemotePartitionInfo& info, int num_edge_types,
                     const std::string& token, int timeout_ms,
                     std::shared_ptr<const LocalPartition>* out, int64_t max_cache_bytes = -1);

  const sampler::PartitionView& view() const { return view_; }
  const sampler::CsrGraph& graph() const { return graph_; }
  // sampler::PrepareTimeOrder's index for temporal hops (null: rows in time order).
  const int64_t* time_index() const { return time_index_; }
  size_t row_bytes() const { return row_bytes_; }
  uint64_t export_id() const { return mapping_->layout().export_id; }
  const std::string& socket() const { return socket_; }
  // The feature rows' disk tier (null: they are in view().features).
  storage::DiskFeatures* disk() const { return disk_.get(); }
  // The export holds edge ids (else hops asking for them go to the server).
  bool has_edge_ids() const { return !view_.edge_ids.empty() || view_.num_edges() == 0; }

 private:
  LocalPartition() = default;
  std::shared_ptr<rpc::LocalMapping> mapping_;
  sampler::PartitionView view_;
  sampler::CsrGraph graph_;
  const int64_t* time_index_ = nullptr;
  std::vector<int64_t> time_order_;
  size_t row_bytes_ = 0;
  std::string socket_;
  std::shared_ptr<storage::DiskFeatures> disk_;
};

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_LOCAL_PARTITION_H_
