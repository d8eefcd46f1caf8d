// UpdateWriter: graph updates from a client to the live partitions that
// store them (live graphs; docs/DESIGN.md "Live updates").
//
// Updates are in the graph's terms: an edge src -> dst. The writer stores it
// where the dataset's direction does (the source's row for "out", the
// destination's for "in"; both with `undirected`), and each node's feature
// row and label at its owner. One Apply is one update batch per partition it
// touches, each atomic and durable at the version its server answers. Across
// partitions a batch is not yet atomic: a partition that refuses its part
// (or fails) is named, and the others' parts stay applied (their versions
// returned).
//
// Retries: each writer has a random id and numbers its batches per
// partition; a part whose server did not answer (a timeout, a dropped
// connection, a restart) is sent again, the same bytes, until
// UpdateWriterOptions::retry_ms passes. A server that had applied it answers
// without applying it again (live::RetryTable), so a retry never doubles an
// update. Apply calls are serialized (one writer, one order).
#ifndef FANOUT_CLIENT_UPDATE_WRITER_H_
#define FANOUT_CLIENT_UPDATE_WRITER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/cluster.h"
#include "live/updates.h"
#include "rpc/rpc_client.h"

namespace fanout::client {

struct GraphUpdates {
  std::vector<live::EdgeUpdate> add_edges, remove_edges;  // src -> dst in the graph's terms
  std::vector<int64_t> label_nodes, labels;
  std::vector<int64_t> feature_nodes;
  int64_t row_bytes = 0;      // one row in the dataset's dtype
  std::string feature_bytes;  // feature_nodes.size() x row_bytes
  bool empty() const {
    return add_edges.empty() && remove_edges.empty() && label_nodes.empty() &&
           feature_nodes.empty();
  }
};

struct UpdateWriterOptions {
  // How long a part is sent again after its server did not answer (0: never).
  int retry_ms = 10000;
  // The most operations one partition's part may hold (a server refuses more:
  // live::kMaxBatchOperations); an update over it is refused before anything
  // is sent, naming the partition and the limit.
  int64_t max_batch_operations = live::kMaxBatchOperations;
};

class UpdateWriter {
 public:
  // Connects the primary of every partition (each must be live: fanout-server
  // --live-dir): of a partition's listed replicas, the one that follows no
  // other (its followers, --live-follow, apply its log and refuse writes). A
  // partition with two primaries, or none that answers, is refused by name.
  static Status Connect(const ClusterSpec& spec, const rpc::RpcOptions& options,
                        std::unique_ptr<UpdateWriter>* out, UpdateWriterOptions writer = {});

  // `undirected`: every edge stored in both directions (a dataset partitioned
  // undirected). *versions[p]: the version partition p is readable at after
  // its part (-1: untouched). InvalidArgument naming the operation for an
  // id outside the dataset (nothing sent).
  Status Apply(const GraphUpdates& u, bool undirected, std::vector<int64_t>* versions);

  // Folds partition p's delta into a new base now (the server's compact
  // RPC; write permission): the version the base then holds, its edges and
  // the seconds it took. *up_to_date (may be null): the base held the
  // newest version already and no compaction ran (*version: the base's).
  // Aborted while the generation before the last compaction is kept for
  // older reads.
  Status Compact(int p, int64_t* version, int64_t* edges, double* seconds,
                 bool* up_to_date = nullptr);

  int num_parts() const { return static_cast<int>(clients_.size()); }
  int64_t num_nodes() const { return offsets_.back(); }
  const rpc::RemotePartitionInfo& info(int p) const { return infos_[p]; }
  uint64_t writer_id() const { return writer_id_; }
  // Parts sent again after no answer, and of those the ones a server had
  // applied already (answered as retries).
  int64_t resent() const { return resent_; }
  int64_t answered_as_retry() const { return answered_as_retry_; }

 private:
  // Sends part `p` (numbered already), again while its server does not answer.
  Status Send(int p, const std::string& bytes, int64_t* version);
  int PartOf(int64_t node) const;
  std::vector<std::unique_ptr<rpc::RpcClient>> clients_;
  std::vector<rpc::RemotePartitionInfo> infos_;
  std::vector<int64_t> offsets_;         // num_parts + 1
  std::vector<live::LiveShape> shapes_;  // per partition, what CheckBatch checks against
  bool incoming_ = false;                // rows hold in-neighbors
  UpdateWriterOptions options_;
  uint64_t writer_id_ = 0;
  std::vector<uint64_t> sent_;  // per partition: the last batch number given
  std::mutex mu_;               // one Apply at a time
  int64_t resent_ = 0, answered_as_retry_ = 0;
};

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_UPDATE_WRITER_H_
