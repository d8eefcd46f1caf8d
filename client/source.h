// Where mini-batches come from: a cluster of sampling servers, or a whole
// dataset held in this process (for single-machine runs and for checking the
// distributed path against local sampling). No LibTorch here: sessions write
// into caller-provided memory (the loader's tensors).
#ifndef FANOUT_CLIENT_SOURCE_H_
#define FANOUT_CLIENT_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/array_view.h"
#include "common/status.h"
#include "common/thread_pool.h"
#include "sampler/hetero.h"
#include "sampler/multihop.h"
#include "sampler/ppr_push.h"

namespace fanout::client {

// How a partition's requests travel, for one replica in use
// (Cluster::Paths, LoaderStats::paths, Session::Paths). Path names:
//   "local"   the server shares this host: read (or sampled) in this process
//             from its export, no request;
//   "ucx"     the UCX data plane (RDMA, or shared memory / tcp where UCX picks them);
//   "thrift"  the Thrift RPC connection.
struct PartitionPath {
  int partition = 0;
  std::string replica;   // the replica's address (host:port)
  std::string path;      // where its features, labels and lookups come from
  std::string sampling;  // where its hops are sampled ("local": here; else the RPC path)
  // Sessions on it this way; 0 where none is open: what a new session takes
  // (a data plane that then fails to come up falls back to "thrift").
  int64_t sessions = 0;
  bool operator==(const PartitionPath& o) const {
    return partition == o.partition && replica == o.replica && path == o.path &&
           sampling == o.sampling && sessions == o.sessions;
  }
};

// Where a session's time goes, per stage of its calls (docs/BENCHMARKS.md
// "Where a distributed batch's time goes"): wall and this thread's CPU
// seconds, summed over calls.
enum class Stage : int {
  kRoute = 0,        // request build: ids split by partition, per-partition arguments
  kLocalSample,      // hops sampled here, on co-located partitions' exports
  kSampleTransfer,   // sample requests out and replies in (server time included)
  kMerge,            // replies checked and merged in frontier order, relabelled
  kLocalFeatures,    // feature rows gathered here from co-located exports
  kFeatureTransfer,  // feature requests out and rows in (server time included)
  kFeatureDecode,    // received rows decoded or copied to their places in x
  kLabels,           // labels (every path)
  kCount
};
inline constexpr int kNumStages = static_cast<int>(Stage::kCount);
// Names as the loader's stats report them.
inline const char* StageName(Stage s) {
  static const char* const kNames[kNumStages] = {
      "route",          "local_sample",     "sample_transfer", "merge",
      "local_features", "feature_transfer", "feature_decode",  "labels"};
  return kNames[static_cast<int>(s)];
}
struct StageTime {
  double wall_s = 0, cpu_s = 0;
  int64_t calls = 0;
};

// Per-session counters (a session is used by one thread).
struct SessionStats {
  StageTime stages[kNumStages];  // Stage-indexed
  double network_wait_s = 0;     // time blocked waiting for replies
  int64_t feature_bytes = 0;     // feature bytes received
  int64_t requests =
      0;  // requests sent to servers (one per partition asked; none for those read here)
  int64_t cache_lookups = 0;  // feature rows looked up in a cache (CachedSource)
  int64_t cache_hits = 0;     // ... and found there
  int64_t cache_bytes = 0;    // feature bytes served from the cache
  int64_t thrift_bytes = 0;   // reply payload bytes received over Thrift
  int64_t ucx_bytes = 0;      // ... over the UCX data plane
  int64_t local_bytes =
      0;  // bytes read from same-host servers' exports in this process (no request)
  int64_t local_edges = 0;      // ... edges sampled there
  int64_t local_rows = 0;       // ... feature rows gathered there
  int64_t staged_bytes = 0;     // bytes for CUDA memory that went through a host buffer first
  int64_t fallbacks = 0;        // servers whose data plane failed and that now use Thrift
  int64_t retries = 0;          // requests sent again after Unavailable or DeadlineExceeded
  int64_t failovers = 0;        // times a partition moved to another replica
  int64_t health_abandons = 0;  // requests given up because their replica failed its health check
  // Reads refused for their data (Corruption or IOError: a damaged block on
  // one replica, co-located or remote) and sent to another replica instead.
  int64_t data_faults = 0;
  int64_t reprobes = 0;  // servers back on the data plane after a fallback
};

// One thread's handle on a source (its own connections and scratch).
// Not thread-safe.
class Session {
 public:
  virtual ~Session() = default;
  // Multi-hop sampling with the semantics of sampler::MultiHopSampler
  // (heterogeneous sampling where options.edge_type_fanouts is set: the
  // dataset must have edge types; out->edge_type names each edge's).
  virtual Status Sample(ArrayView<const int64_t> seeds, uint64_t request_seed,
                        const sampler::MultiHopOptions& options, sampler::SampledSubgraph* out) = 0;
  // Temporal sampling with the semantics of sampler::TemporalSampler (disjoint
  // trees; out->batch names each node's seed position): seed i draws only
  // among edges not later than seed_times[i]. Needs a dataset with edge
  // timestamps; InvalidArgument otherwise.
  virtual Status SampleTemporal(ArrayView<const int64_t> seeds, ArrayView<const int64_t> seed_times,
                                uint64_t request_seed, const sampler::MultiHopOptions& options,
                                sampler::SampledSubgraph* out) = 0;
  // Feature rows of `ids` as float32, row i at out + i * feature_dim.
  virtual Status Features(ArrayView<const int64_t> ids, float* out) = 0;
  // Feature rows of `ids` straight into device memory (d_out on CUDA device
  // `device`, row i at d_out + i * feature_dim), with no copy through host
  // memory: only where every server involved is reached over a UCX data plane
  // that moves CUDA memory itself (a UCX built with CUDA; GPUDirect RDMA
  // between hosts). Works best when ids are ascending (one run per server).
  // Otherwise NotSupported, and nothing is written: the caller stages the
  // rows through pinned host memory (DeviceFeatureFetcher does both).
  virtual Status FeaturesToDevice(ArrayView<const int64_t> ids, float* d_out, int device) {
    (void)ids, (void)d_out, (void)device;
    return Status::NotSupported("this source cannot write feature rows into device memory");
  }
  // Labels (-1 = unknown) of `ids`.
  virtual Status Labels(ArrayView<const int64_t> ids, int64_t* out) = 0;
  // Live partitions (fanout-server --live-dir; docs/DESIGN.md "Live
  // updates"): every read until the next Pin is at one version per
  // partition. `versions` empty: each partition's newest committed version,
  // as the first read after this call finds it, kept for every later read;
  // else one version per partition (-1: the newest, at the first read).
  // Static partitions are read as they are. A source without live
  // partitions ignores it.
  virtual Status Pin(const std::vector<int64_t>& versions) {
    (void)versions;
    return Status::OK();
  }
  // The version each partition was read at since the last Pin (-1: not read,
  // or static); empty where the source has no live partitions.
  virtual std::vector<int64_t> Pinned() const { return {}; }
  // Each partition's newest committed version now (-1: static), asked of
  // the live partitions' replicas; empty where the source has none.
  virtual Status Newest(std::vector<int64_t>* versions) {
    versions->clear();
    return Status::OK();
  }
  // Original dataset ids of `ids`.
  virtual Status OriginalIds(ArrayView<const int64_t> ids, int64_t* out) = 0;
  // Stored-direction degrees of `ids` (in-degrees for the default incoming
  // storage): the degree hot-set selection of the feature cache uses them.
  virtual Status Degrees(ArrayView<const int64_t> ids, int64_t* out) = 0;
  // Global ids of every node in a split (1 train, 2 val, 3 test), ascending.
  virtual Status SplitNodes(int split, std::vector<int64_t>* out) = 0;
  // exists[i] = 1 where src[i] -> dst[i] is an edge of the dataset (as
  // partitioned: with --undirected both ways), else 0; asked of the node
  // whose row stores the edge (dst for "in" storage, src for "out"). Strict
  // negative sampling uses it. Ids must be in [0, num_nodes). edge_type >= 0
  // (heterogeneous datasets): only edges of that type count.
  virtual Status HasEdges(ArrayView<const int64_t> src, ArrayView<const int64_t> dst,
                          uint8_t* exists, int edge_type = -1) = 0;
  // One step of many random walks (sampler/walk.h): walk i, at nodes[i],
  // moves to the stored neighbor keys[i] picks (uniformly, or by edge weight
  // with `weighted`); next[i] is that node, or -1 at a dead end. Asked of the
  // servers owning the nodes (client/walks.h drives whole walks).
  // edge_type >= 0 (a metapath step on a heterogeneous dataset): only edges
  // of that type in the node's stored row (sampler::SampleWalkStep).
  virtual Status WalkStep(ArrayView<const int64_t> nodes, ArrayView<const uint64_t> keys,
                          bool weighted, int64_t* next, int edge_type = -1) = 0;
  // One round of forward-push PPR (sampler/ppr_push.h) on the owners of
  // in.nodes (ids in [0, num_nodes)), each running sampler::PprPushRound on
  // its rows: out->pushed and out->degrees for every entry (out->done ==
  // in.nodes.size()), and the pushed mass summed per (query, node) within
  // each owner (a pair may come once per owner; client/ppr.h adds them up).
  // Live partitions: at the session's pinned versions.
  virtual Status PprPush(const sampler::PprPushRequest& in, sampler::PprPushResult* out) {
    (void)in, (void)out;
    return Status::NotSupported("this source does not run PPR pushes");
  }
  // exists[i] = 1 where candidates[i] is a stored neighbor of rows[i] (in
  // rows[i]'s row, whichever the storage direction), else 0: node2vec's
  // "is x a neighbor of the previous node" (HasEdges in storage terms).
  Status InRows(ArrayView<const int64_t> rows, ArrayView<const int64_t> candidates,
                uint8_t* exists) {
    return StoresIncoming() ? HasEdges(candidates, rows, exists)
                            : HasEdges(rows, candidates, exists);
  }
  // Whether rows hold in-neighbors (direction "in", the default) or out-neighbors.
  virtual bool StoresIncoming() const = 0;
  // Splits large hops sampled in this process (co-located partitions) over
  // `pool` (null: none), as servers split large requests over theirs. For a
  // session that works alone (the Python binding's call session), not for
  // loader workers, which already keep every core busy. The pool must
  // outlive the session's calls.
  virtual void UseThreadPool(ThreadPool* pool) { (void)pool; }
  // How this session reaches each partition now (a cluster's; empty for a
  // source with no servers). `sessions` is 1 in each.
  virtual std::vector<PartitionPath> Paths() const { return {}; }
  const SessionStats& stats() const { return stats_; }

 protected:
  SessionStats stats_;
};

// One replica as this client sees it (Source::Health()).
struct ReplicaHealth {
  int partition = 0;
  std::string address;
  bool healthy = true;  // answered its last health check (true until one fails)
  int64_t checks = 0, checks_failed = 0;
  int64_t failures =
      0;  // requests that failed there (Unavailable, DeadlineExceeded) and were retried
  int64_t failovers_to = 0;  // times a session moved to it after another replica failed
  std::string last_error;    // the last failed check's or request's reason
};

// Thread-safe: sessions may be opened from any thread.
class Source {
 public:
  virtual ~Source() = default;
  virtual Status NewSession(std::unique_ptr<Session>* out) = 0;
  virtual int64_t num_nodes() const = 0;
  virtual int64_t feature_dim() const = 0;
  virtual int64_t num_classes() const = 0;
  virtual std::string description() const = 0;
  // A heterogeneous dataset's types (sampler/hetero.h); null for a homogeneous one.
  virtual const sampler::HeteroSchema* hetero() const { return nullptr; }
  // The servers' replicas as this client sees them (a cluster); empty otherwise.
  virtual std::vector<ReplicaHealth> Health() const { return {}; }
};

// A whole dataset in memory: every partition of a fanout-partition folder
// concatenated (global ids are contiguous across partitions).
class LocalSource : public Source {
 public:
  static Status Open(const std::string& dataset_dir, std::shared_ptr<LocalSource>* out);
  Status NewSession(std::unique_ptr<Session>* out) override;
  int64_t num_nodes() const override { return csr_.num_nodes(); }
  int64_t feature_dim() const override { return feature_dim_; }
  int64_t num_classes() const override { return num_classes_; }
  std::string description() const override { return "local dataset " + dir_; }
  const sampler::HeteroSchema* hetero() const override {
    return hetero_.empty() ? nullptr : &hetero_;
  }
  // Global ids of the nodes in a split (1 train, 2 val, 3 test).
  std::vector<int64_t> SplitNodes(int split) const;

 private:
  friend class LocalSession;
  std::string dir_;
  sampler::CsrArrays csr_;
  std::vector<float> features_;
  std::vector<int64_t> labels_, original_ids_;
  std::vector<uint8_t> split_;
  int64_t feature_dim_ = 0, num_classes_ = 0;
  bool incoming_ = true;             // rows hold in-neighbors (direction "in")
  std::vector<int64_t> edge_times_;  // per CSR edge; empty without timestamps
  std::vector<int32_t> edge_types_;  // per CSR edge; empty unless heterogeneous
  sampler::HeteroSchema hetero_;
  // With timestamps: sampler::PrepareTimeOrder's index (null: rows in time order) and its storage.
  const int64_t* time_index_ = nullptr;
  std::vector<int64_t> time_order_;
};

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_SOURCE_H_
