// BatchLoader: mini-batches for node-level GNN training, as Arrays (no
// LibTorch: client/loader.h's NodeLoader wraps them as torch tensors, the
// Python extension hands them out as DLPack capsules).
//
// Each epoch, the loader orders its seeds (shuffled with a seed derived from
// the loader seed and the epoch, or as given), keeps this rank's share
// (position i goes to rank i % world_size, so DDP ranks split an epoch without
// overlap or gaps; RANK/WORLD_SIZE are read from the environment as torchrun
// sets them), cuts it into batches, and background workers sample them from
// the source several batches ahead. Batch b of epoch e uses a request seed
// that depends only on (loader seed, epoch, b, rank), so a run is reproducible
// and the same through servers as in process.
//
// Thread safety: one consumer thread calls Next(); workers are internal.
#ifndef FANOUT_CLIENT_BATCH_LOADER_H_
#define FANOUT_CLIENT_BATCH_LOADER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cache/gpu_feature_cache.h"
#include "client/array.h"
#include "client/buffer_pool.h"
#include "client/device_features.h"
#include "client/ppr.h"
#include "client/source.h"
#include "client/walks.h"
#include "common/feature_dtype.h"
#include "sampler/negative.h"

namespace fanout::client {

struct LoaderOptions {
  int64_t batch_size = 1024;                // seeds per batch
  std::vector<int64_t> fanouts{15, 10, 5};  // per hop; -1 = all neighbors
  bool replace = false;                     // sample with replacement
  bool weighted = false;                    // sample by edge weight
  bool edge_ids = false;                    // fill Batch::edge_id
  // LABOR-0 (sampler/labor.h) instead of neighbor sampling: the same
  // expected fanout per seed, fewer distinct nodes per hop; batches carry
  // Batch::edge_weight. Homogeneous, not temporal, no replace.
  bool labor = false;
  // PinSAGE hops (client/walks.h SamplePinSage): hop h's neighbors of a node
  // are the fanouts[h] nodes its random walks (`walk`: num_walks,
  // walk_length, restart_prob, visit_stride, p, q) visit most; edge_weight
  // holds their normalised visit counts, edge_id -1. Not with labor,
  // temporal, heterogeneous or subgraph options.
  bool pinsage = false;
  WalkOptions walk;
  // PPR neighborhoods (client/ppr.h SamplePpr): one hop, each seed's
  // fanouts[0] nodes of highest approximate personalized PageRank
  // (ppr_options' alpha, eps, max_rounds; its top_k is fanouts[0]);
  // edge_weight holds the scores, edge_id -1. Not with labor, pinsage,
  // replace, temporal, heterogeneous or subgraph options.
  bool ppr = false;
  PprOptions ppr_options;
  // Subgraph mode (GraphLearn-for-PyTorch's SubGraphLoader): edge_index holds
  // every edge among the sampled nodes, not the sampled edges
  // (sampler::MultiHopOptions::induced); hop_edge_index then has one entry.
  bool subgraph = false;
  bool shuffle = true;             // reshuffle seeds every epoch
  bool drop_last = false;          // drop this rank's last partial batch
  uint64_t seed = 0;               // shuffling and sampling seed
  int rank = -1, world_size = -1;  // -1: from RANK / WORLD_SIZE, else 0 / 1
  int num_workers = 2;             // background sampling threads
  int prefetch = 4;                // batches kept in flight ahead of the consumer
  bool features = true;            // fetch x
  // x's element type: float32 (default), or float16 / bfloat16 where the
  // caller keeps features at half the bytes (rows stored in that type come
  // out as they are stored; others are rounded to nearest even). Not with a
  // GPU cache (float32 there).
  FeatureDType x_dtype = FeatureDType::kFloat32;
  bool labels = true;         // fetch y
  bool original_ids = false;  // fill Batch::original_id
  // With a GPU feature cache, x is CUDA memory on the cache's device: hits
  // are gathered on the device, misses fetched from the source and copied in.
  // Needs a build with CUDA and a device (cache::CudaDeviceCount()); the
  // loader refuses the option elsewhere.
  std::shared_ptr<cache::GpuFeatureCache> gpu_cache;
  // LinkLoader only: negative sampling (PyG's neg_sampling; strict by default).
  sampler::NegativeOptions negative;
  // Temporal sampling (PyG's input_time / edge_label_time with edge
  // timestamps; sampler/temporal.h): one time per seed node (NodeLoader) or
  // per seed edge (LinkLoader); empty = not temporal. Batches are then
  // disjoint: Batch::batch names each node's seed. Needs a dataset
  // partitioned with edge timestamps; no replace, weights or subgraph mode.
  std::vector<int64_t> input_time;
  sampler::TemporalStrategy temporal_strategy = sampler::TemporalStrategy::kUniform;
  // Heterogeneous datasets (Source::hetero()): PyG's num_neighbors dict, as
  // one fanout list per edge type of the source's schema (edge_type_fanouts[e][h];
  // 0 = type e is not sampled in hop h); `fanouts` is then unused. Batches
  // get node_type and edge_type. Not with input_time or subgraph.
  std::vector<std::vector<int64_t>> edge_type_fanouts;
  // LinkLoader on a heterogeneous dataset: the seed edges' type (an index
  // into the schema's edge types). Negatives then draw sources among its
  // source type's nodes and destinations among its destination type's, and
  // strictness checks edges of that type. Required there; -1 otherwise.
  int link_edge_type = -1;
  // Live partitions (docs/DESIGN.md "Live updates"): every read of a batch is
  // at one version per partition. Empty ("latest"): each partition's newest
  // committed version as the batch first reads it; else one version per
  // partition (a snapshot: -1 for the newest). Batch::versions says which.
  std::vector<int64_t> snapshot;
  // One version per partition for a whole epoch: each partition's newest
  // committed version when the epoch starts (the loader sets `snapshot` to
  // it at every epoch's start). Not with `snapshot`.
  bool snapshot_epoch = false;
};

// The seed edges of a LinkLoader: edge i is src[i] -> dst[i] (global ids,
// PyG's edge_label_index), with an optional label each (edge_label).
struct LinkSeeds {
  std::vector<int64_t> src, dst;
  std::vector<int64_t> label;  // empty, or one non-negative label per edge
  // Temporal negatives (LoaderOptions::negative.temporal): the seed edges'
  // history at their input times, built by the LinkLoader.
  std::shared_ptr<const sampler::EdgeHistory> history;
};

// The rows of `ids` as a float32 device array [ids.size(), feature_dim] on
// the fetcher's cache's device (a device buffer the array owns; from the
// device's stream-ordered pool, filled on the fetcher's own stream and
// synchronized, so loader workers neither cudaMalloc per batch nor share a
// stream, and a consumer on any stream may read it): hits from the device
// cache, misses straight into device memory where the data plane can, else
// staged through pinned host memory. Errors (no CUDA, no device, a source
// error) come back as Status.
Status GatherFeaturesOnDevice(DeviceFeatureFetcher& fetcher, Session& session,
                              ArrayView<const int64_t> ids, int device, Array* out);

// What NodeLoader throws when the source fails: the message as before
// (Status::ToString(), server address included) and the Status itself, so
// bindings can tell Unavailable from InvalidArgument.
class LoaderError : public std::runtime_error {
 public:
  explicit LoaderError(Status status)
      : std::runtime_error(status.ToString()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

struct Batch {
  Array n_id;        // int64 [N]: seeds first (batch_size of them), then sampled nodes
  Array x;           // float32 [N, F] (undefined unless features)
  Array y;           // int64 [N] labels, -1 = unknown (undefined unless labels)
  Array edge_index;  // int64 [2, E], all hops: row 0 = source (neighbor), row 1 = target
  std::vector<Array> hop_edge_index;  // per hop, views into edge_index
  Array edge_id;                      // int64 [E] global edge ids (undefined unless edge_ids)
  Array edge_weight;  // float32 [E] LABOR / PinSAGE importance weights (else undefined)
  Array original_id;  // int64 [N] dataset ids (undefined unless original_ids)
  std::vector<int64_t> num_sampled_nodes, num_sampled_edges;
  int64_t batch_size = 0;
  int64_t epoch = 0, index = 0;  // which batch of which epoch
  Array batch;      // temporal: int64 [N], the seed position (tree) of each node; else undefined
  Array seed_time;  // temporal: int64 [batch_size], the seeds' times; else undefined
  // Heterogeneous batches (LoaderOptions::edge_type_fanouts), else undefined:
  // the type of each node (int64 [N], an index into the schema's node types)
  // and of each edge (int64 [E]). SplitByType splits a batch by them.
  Array node_type, edge_type;
  // int64: positions of the batch's seeds in the loader's seeds (a NodeLoader), or of its
  // seed edges in LinkSeeds (a LinkLoader).
  Array input_id;
  // LinkLoader batches (undefined otherwise), as PyG's LinkNeighborLoader:
  Array edge_label_index;  // int64 [2, P + M] local indices: positives, then binary negatives
  Array edge_label;        // [P + M]: see LinkLoader
  Array src_index, dst_pos_index;  // triplet: int64 [P] local indices
  Array dst_neg_index;             // triplet: int64 [P, amount] ([P] when amount is 1)
  // Live partitions: the version each partition was read at (-1: not read,
  // or static); empty where the source has no live partitions.
  std::vector<int64_t> versions;
};

struct LoaderStats {
  int64_t batches = 0;
  int64_t sampled_edges = 0;
  int64_t sampled_nodes = 0;
  int64_t feature_bytes = 0;   // received from the source (servers)
  double seconds = 0;          // wall time the consumer spent in Next() plus between calls
  double network_wait_s = 0;   // summed over workers
  double consumer_wait_s = 0;  // time Next() waited for a batch
  // Where the workers' time went (summed over workers): per Stage of their
  // sessions' calls, and `produce`, each batch whole (its sampling, fetches
  // and the batch's arrays built; produce less the stages is the building).
  StageTime stages[kNumStages];
  StageTime produce;
  // Large batch arrays (x, edge_index) that reused the memory of a batch the
  // consumer had let go of, and those that needed new memory (client/buffer_pool.h).
  int64_t buffer_reuses = 0, buffer_allocations = 0;
  int64_t cache_lookups = 0, cache_hits = 0;  // feature rows, with a CachedSource
  int64_t cache_bytes = 0;                    // feature bytes served from the cache
  int64_t thrift_bytes = 0;  // reply bytes received over Thrift (features, labels, samples)
  int64_t ucx_bytes = 0;     // ... over the UCX data plane
  int64_t local_bytes =
      0;  // bytes read from same-host servers' exports in this process (no request)
  int64_t local_edges = 0;      // ... edges sampled there
  int64_t local_rows = 0;       // ... feature rows gathered there
  int64_t staged_bytes = 0;     // bytes for CUDA tensors copied in from host memory
  int64_t fallbacks = 0;        // servers whose data plane failed and that now use Thrift
  int64_t retries = 0;          // requests sent again after Unavailable or DeadlineExceeded
  int64_t failovers = 0;        // times a partition moved to another replica
  int64_t health_abandons = 0;  // requests given up at once: their replica failed its health check
  int64_t data_faults = 0;      // reads a replica refused for its data (damaged), served by another
  std::vector<ReplicaHealth>
      servers;  // per replica: failed requests, failovers to it, health (a cluster)
  // Each partition's path as this loader's workers use it (PartitionPath,
  // `sessions` = workers on it that way), as of their last batch.
  std::vector<PartitionPath> paths;
  double batches_per_s() const { return seconds > 0 ? batches / seconds : 0; }
  double sampled_edges_per_s() const { return seconds > 0 ? sampled_edges / seconds : 0; }
};

class BatchLoader {
 public:
  // Throws std::invalid_argument on bad options (batch size, fanouts, rank).
  BatchLoader(std::shared_ptr<Source> source, std::vector<int64_t> seeds, LoaderOptions options);
  virtual ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Starts epoch `epoch` (discarding what is left of the current one).
  void SetEpoch(int64_t epoch);
  // The next batch of the current epoch (epoch 0 if none was set); false at
  // its end, after which the next call starts the following epoch. Throws
  // std::runtime_error with the source's message (server address included).
  bool Next(Batch* out);

  // This rank's batches per epoch: the same on every rank. Without drop_last an
  // epoch's permutation is padded by wrapping around (its first seeds again) to a
  // multiple of world_size; with drop_last it is cut to one, and a rank's last
  // partial batch is dropped.
  int64_t num_batches() const;
  // This rank's seeds, in batch order (a LinkLoader: positions of seed edges).
  std::vector<int64_t> EpochSeeds(int64_t epoch) const;
  int rank() const { return rank_; }
  int world_size() const { return world_; }
  LoaderStats stats() const;
  const LoaderOptions& options() const { return options_; }

 protected:
  // `links`: a LinkLoader's seed edges (seeds are then their positions).
  BatchLoader(std::shared_ptr<Source> source, std::vector<int64_t> seeds, LoaderOptions options,
              std::shared_ptr<const LinkSeeds> links);

 private:
  struct Slot;
  void StopWorkers();
  void Worker(int w);
  Status Produce(Session* session, DeviceFeatureFetcher* fetcher, int64_t b, Batch* out);
  // This rank's seed positions of an epoch, in batch order.
  std::vector<int64_t> EpochPositions(int64_t epoch) const;
  // The padded (or cut) length of an epoch's permutation, over all ranks.
  int64_t EpochLength() const;

  std::shared_ptr<Source> source_;
  std::shared_ptr<const LinkSeeds> links_;  // LinkLoader only
  std::vector<int64_t> seeds_;
  LoaderOptions options_;
  int rank_ = 0, world_ = 1;
  std::vector<std::unique_ptr<Session>> sessions_;  // one per worker, kept across epochs
  // Memory of x and edge_index, reused across batches (client/buffer_pool.h).
  std::shared_ptr<BufferPool> pool_;

  // Current epoch.
  int64_t epoch_ = -1;
  int64_t pending_epoch_ = 0;  // started by Next() when no epoch runs
  bool running_ = false;
  std::vector<int64_t> order_;  // this rank's seed positions (into seeds_) for the epoch
  int64_t batches_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Slot>> slots_;  // GUARDED_BY(mu_): batch consumed_ + i
  int64_t consumed_ = 0;                     // GUARDED_BY(mu_)
  int64_t next_claim_ = 0;                   // GUARDED_BY(mu_)
  bool stop_ = false;                        // GUARDED_BY(mu_)
  std::vector<std::thread> workers_;

  // Statistics.
  mutable std::mutex stats_mu_;
  LoaderStats stats_;                                     // GUARDED_BY(stats_mu_)
  std::vector<std::vector<PartitionPath>> worker_paths_;  // per worker (GUARDED_BY(stats_mu_))
  std::chrono::steady_clock::time_point last_next_;
  bool timing_ = false;
};

// A heterogeneous batch by type, the shape of PyG's HeteroData: for node type
// t, the global ids of its nodes in the batch (n_id[t], in batch order), their
// features (x[t], its feature_dims[t] columns; undefined when the batch has
// no features or the type has none), labels (y[t]) and positions in the
// homogeneous batch (index[t]); for edge type e, edge_index[e] [2, E_e] whose
// rows index n_id[src type] and n_id[dst type] (row 0 the message source, as
// in Batch), and edge_id[e]. seed positions: batch_size[t] of the seeds
// are of type t (they come first in n_id[t], in seed order). Temporal
// batches: batch[t] names the tree (seed position) of each type-t node.
struct HeteroArrays {
  std::vector<Array> n_id, x, y, index, original_id, batch;  // per node type
  std::vector<int64_t> batch_size;                           // per node type
  std::vector<Array> edge_index, edge_id;                    // per edge type
  // Local index of every node of the homogeneous batch within its type.
  Array type_index;
};
// Splits `batch` (with node_type/edge_type) by `schema`'s types. Throws
// std::invalid_argument when the batch is not heterogeneous.
HeteroArrays SplitByType(const Batch& batch, const sampler::HeteroSchema& schema);

// LinkLoader: mini-batches for link prediction, as PyG's LinkNeighborLoader.
// A batch takes P seed edges (in epoch order, split over ranks as NodeLoader
// splits seeds) and draws negatives (LoaderOptions::negative; a pure function
// of the batch's request seed, strict by default: never an existing edge of
// the stored graph). Its seed nodes are the distinct endpoints of the
// positive and negative edges, ascending (PyG's unique); n_id, x, y,
// edge_index, ... are those of NodeLoader for these seeds. Then:
// - none: edge_label_index [2, P] (local indices); edge_label the given
//   labels (undefined without).
// - binary: edge_label_index [2, P + M], positives first; edge_label float
//   1 / 0 without labels, else int64: negatives 0, positives their label,
//   shifted up by one where the given labels start at 0 (PyG's rule).
// - triplet: src_index, dst_pos_index [P], dst_neg_index [P, amount] ([P]
//   when amount is 1); labels are refused.
// A repeated seed edge keeps every position, as a repeated node seed does.
class LinkBatchLoader : public BatchLoader {
 public:
  // Throws std::invalid_argument on bad seeds (lengths, ids out of range,
  // negative labels, labels with triplet) or options.
  LinkBatchLoader(std::shared_ptr<Source> source, LinkSeeds seeds, LoaderOptions options);
};

// The seeds of one batch a caller chose (fanout.pyg's sampler: PyG's loaders
// pick the batches): node seeds, or the batch's seed edges; with one time
// each for temporal sampling (else empty).
struct BatchSeeds {
  std::vector<int64_t> nodes;              // a NodeLoader batch's seeds
  std::shared_ptr<const LinkSeeds> links;  // or a LinkLoader batch's seed edges
  std::vector<int64_t> times;              // per seed / seed edge; empty = not temporal
};

// The batch a NodeLoader (LinkLoader, with links) with `options` builds for
// these seeds with request seed `request_seed`, the same tensors (a link
// batch's input_id is 0..P-1): the same seeds and request seed give the same
// batch through any source. options.input_time is replaced by seeds.times;
// the loop options (batch_size, shuffle, workers, rank) are not used.
// InvalidArgument for what the loaders' constructors refuse; NotSupported
// with a GPU cache (CPU batches only). Uses `session` from this thread only.
Status SampleBatch(const Source& source, Session* session, const BatchSeeds& seeds,
                   uint64_t request_seed, LoaderOptions options, Batch* out);

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_BATCH_LOADER_H_
