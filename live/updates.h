// An update batch: what one atomic write changes in a graph (live graphs,
// docs/DESIGN.md "Live updates"), and its byte form (the log's record and the
// write RPC's payload).
//
// Ids are global node ids. An added edge src -> dst is stored in src's row
// (the client sends both directions where the dataset stores both); a
// removal takes away every edge src -> dst (of `type`, on a heterogeneous
// graph; -1: of any type) that exists when it applies, whether from the base
// or added earlier. Feature rows replace a node's whole row (the store's
// dtype and width); labels replace its label.
#ifndef FANOUT_LIVE_UPDATES_H_
#define FANOUT_LIVE_UPDATES_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace fanout::live {

struct EdgeUpdate {
  int64_t src = 0, dst = 0;
  int64_t time = 0;  // temporal datasets: the edge's time
  float weight = 1;  // weighted datasets
  int32_t type = 0;  // heterogeneous datasets: the edge type (removals: -1 = any)
};

struct UpdateBatch {
  std::vector<EdgeUpdate> add_edges;
  std::vector<EdgeUpdate> remove_edges;
  // Feature rows: feature_rows[i]'s row is feature_bytes[i * row_bytes ..).
  std::vector<int64_t> feature_rows;
  int64_t row_bytes = 0;
  std::string feature_bytes;
  std::vector<int64_t> label_rows, labels;
  // Who sent it, for retries (docs/DESIGN.md "Live updates", "Retries"): a
  // writer's random id (0: none, never deduplicated) and its batch number on
  // this partition, rising by one per batch. A batch whose writer_seq is at
  // or below the last one the partition applied from that writer is a
  // retry: logged, answered, not applied again.
  uint64_t writer = 0, writer_seq = 0;

  int64_t size() const {
    return static_cast<int64_t>(add_edges.size() + remove_edges.size() + feature_rows.size() +
                                label_rows.size());
  }
  bool empty() const { return size() == 0; }
};

// The largest batch a server takes (operations and bytes): bounded so that one
// write cannot hold the log, the delta or a request frame without limit.
inline constexpr int64_t kMaxBatchOperations = int64_t{1} << 22;
inline constexpr int64_t kMaxBatchBytes = int64_t{256} << 20;

// The last batch number a partition applied from each writer, for telling a
// retry from a new batch (UpdateBatch::writer). Bounded: past `capacity`
// writers the one heard from least recently is forgotten (a retry of its
// would apply again; forgotten() counts them). Decided in log order, live
// and on replay alike, so a log holding a retry replays to the same graph.
// Not thread-safe: its caller orders the calls (the log's order lock).
// A RetryTable's contents (a base file keeps the table at its version).
struct RetryState {
  struct Writer {
    uint64_t writer, writer_seq, heard;
  };
  std::vector<Writer> writers;  // oldest heard first
  int64_t forgotten = 0;
};

class RetryTable {
 public:
  static constexpr size_t kDefaultCapacity = 65536;
  explicit RetryTable(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}
  // True for a new batch (recorded as heard at `seq`), false for a retry.
  // Writer 0 is always new.
  bool Admit(uint64_t writer, uint64_t writer_seq, uint64_t seq);
  size_t size() const { return last_.size(); }
  int64_t forgotten() const { return forgotten_; }
  void Export(RetryState* out) const;
  // Replaces the table by `state` (the writers past the capacity, oldest
  // first, forgotten).
  void Import(const RetryState& state);

 private:
  struct Entry {
    uint64_t writer_seq, heard;
  };
  const size_t capacity_;
  std::unordered_map<uint64_t, Entry> last_;
  std::map<uint64_t, uint64_t> by_heard_;  // heard -> writer
  int64_t forgotten_ = 0;
};

// What the base does not say about the dataset.
struct LiveShape {
  int num_parts = 1;
  int64_t num_nodes_total = 0;   // global ids [0, num_nodes_total)
  int64_t base_edges_total = 0;  // the dataset's edges (added edges' ids start above)
  int64_t row_bytes = 0;         // one feature row (0: no features)
  int num_edge_types = 0;        // heterogeneous: the schema's edge types (0: homogeneous)
  bool temporal = false;         // edges carry times (rows in time order)
  bool weighted = false;         // edges carry weights
  bool has_labels = false;
};

// InvalidArgument naming the first operation of `b` that the partition
// owning rows [node_begin, node_end) of a dataset of `shape` refuses (a row
// not its own, a node out of range, an edge type, a time or weight the
// dataset has not, a feature row's width, labels where it has none). It
// reads nothing but its arguments (never the partition's state), so a writer
// checks every partition's part with it before it sends any, and the server
// again before it logs one.
Status CheckBatch(const LiveShape& shape, int64_t node_begin, int64_t node_end,
                  const UpdateBatch& b);

std::string EncodeUpdateBatch(const UpdateBatch& batch);
// The size of EncodeUpdateBatch(batch), without encoding it.
int64_t EncodedBatchBytes(const UpdateBatch& batch);
// InvalidArgument naming what is wrong with `bytes` (sizes that do not add
// up, counts over the limits); never reads past them.
Status DecodeUpdateBatch(std::string_view bytes, UpdateBatch* out);

}  // namespace fanout::live

#endif  // FANOUT_LIVE_UPDATES_H_
