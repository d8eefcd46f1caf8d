// VersionedPartition: a served partition as an immutable base (its CSR,
// feature rows and labels: a sampler::PartitionView) plus a delta of updates
// under multi-version concurrency by sequence number (live graphs,
// docs/DESIGN.md "Live updates"). The write path is this layer of its own:
// samplers read through it (as RocksDB's SuperVersion pins a memtable over
// its files), never a branch in every reader.
//
// Versions. Update batch s (the update log's sequence number) is applied
// with Apply(s, ...) in log order and becomes readable with Publish(s) once
// durable. A reader names a version v <= committed() and sees exactly the
// batches 1..v: a batch applied after v, or not yet published, is invisible
// to it, so a batch sampled at v is the same whatever writers do meanwhile.
//
// What a row holds at version v (equal to the row of the graph rebuilt from
// scratch with batches 1..v applied, as the partitioner orders rows):
//   the base row's edges that no removal at or below v took, then the added
//   edges (in log order) that no later removal at or below v took; on a
//   temporal partition stably ordered by time, on a heterogeneous one by
//   edge type (the store's own row order: base edges before added ones at an
//   equal key, as input order would have them).
// An added edge gets the id base_edges_total + num_parts * ordinal + part
// (ordinal: its place among this partition's added edges in log order):
// unique across partitions, the same on every replica that applies the same
// log.
//
// Thread safety: readers (MergedRow, SampleHop, FeatureRow, Label, Stats)
// from any threads, concurrently with the one writer (Apply, Publish).
#ifndef FANOUT_LIVE_VERSIONED_PARTITION_H_
#define FANOUT_LIVE_VERSIONED_PARTITION_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/rw_lock.h"
#include "common/status.h"
#include "common/thread_pool.h"
#include "live/updates.h"
#include "sampler/neighbor_sampler.h"
#include "sampler/partition_view.h"

namespace fanout::live {

struct DeltaStats {
  uint64_t committed = 0;    // the newest readable version
  uint64_t applied = 0;      // the newest applied (published once durable)
  int64_t rows_touched = 0;  // rows with added or removed edges (in the current delta)
  int64_t added_edges = 0;   // edges the current delta adds
  int64_t removals = 0;      // removals the current delta records
  int64_t feature_rows = 0;  // feature row versions held
  int64_t labels = 0;        // label versions held
  int64_t bytes = 0;         // the delta's memory (estimate of its containers)
  // Compaction (VersionedPartition::Compact).
  uint64_t base_version = 0;     // the version the current base holds (0: the dataset's)
  int64_t base_bytes = 0;        // a compacted base's arrays (0: the dataset's own base)
  int64_t compactions = 0;       // generations made since start
  int64_t retained = -1;         // the previous generation's base version, while kept (-1: none)
  int64_t retained_bytes = 0;    // ... and its base and delta bytes
  double last_compaction_s = 0;  // the last compaction's duration
};

// What a compaction may use and what it did.
struct CompactionOptions {
  // The new base's arrays may take at most this many bytes (0: no bound);
  // past it, ResourceExhausted before anything is made.
  int64_t max_bytes = 0;
};
struct CompactionReport {
  uint64_t version = 0;     // the version folded into the new base
  int64_t rows_merged = 0;  // rows that differed from the old base
  int64_t edges = 0;        // edges of the new base
  int64_t bytes = 0;        // its arrays
  int64_t carried = 0;      // delta entries above `version` carried into the new generation
  double seconds = 0;
  // Nothing newer than the base to fold: no compaction ran (`version` is the
  // base's). Set by the server's LivePartition; Compact itself refuses that
  // case as InvalidArgument.
  bool up_to_date = false;
};

// One generation of a live partition: a base (the CSR arrays a sampler
// reads, the dataset's own or one a compaction made) and the delta applied
// over it since. Read-only to its readers; VersionedPartition writes its
// delta under its lock.
class Generation {
 public:
  const sampler::PartitionView& view() const { return base_; }
  const sampler::CsrGraph& graph() const { return graph_; }
  // PrepareTimeOrder's index for temporal sampling (null: rows in time order).
  const int64_t* time_index() const { return time_index_; }
  int64_t max_degree() const { return max_degree_; }
  // No row is longer than this at any version this generation reads: the
  // base's largest degree and the most edges a batch added to one row since
  // (-1: the base's is not known).
  int64_t degree_bound() const {
    return max_degree_ < 0 ? -1 : max_degree_ + most_added_.load(std::memory_order_acquire);
  }
  // The version this base holds: reads at versions below it are another
  // generation's.
  uint64_t base_version() const { return base_version_; }
  // True when no batch above the base and at or below `version` changed an
  // edge: the base's rows are the rows at `version` (every sampler reads it
  // as it is: walks, LABOR, temporal, per-edge-type and weighted hops).
  bool EdgesAsBase(uint64_t version) const {
    const uint64_t f = first_edge_change_.load(std::memory_order_acquire);
    return f == 0 || version < f;
  }

  // A base's arrays where the generation owns them: a compacted base's,
  // or the dataset's base handed over (VersionedPartition::AdoptBase).
  struct Arrays {
    std::vector<int64_t> indptr, indices, edge_ids, times, time_order;
    std::vector<int32_t> indices32, types;
    std::vector<float> weights;
    int64_t bytes() const {
      return static_cast<int64_t>(
          (indptr.size() + indices.size() + edge_ids.size() + times.size() + time_order.size()) *
              8 +
          (indices32.size() + types.size() + weights.size()) * 4);
    }
  };

 private:
  friend class VersionedPartition;
  struct Added {
    int64_t dst, eid, time;
    float weight;
    int32_t type;
    uint64_t seq;
  };
  struct Removed {
    int64_t dst;
    int32_t type;  // -1: any
    uint64_t seq;
  };
  // A row's added edges in log order: one run of memory the generation's
  // RowIndex hands out (grown by doubling into a new run; a run is never
  // freed while the generation lives). A vector's interface for reading.
  class AddedRun {
   public:
    int64_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const Added* data() const { return data_; }
    const Added* begin() const { return data_; }
    const Added* end() const { return data_ + size_; }
    const Added& front() const { return data_[0]; }
    const Added& back() const { return data_[size_ - 1]; }
    const Added& operator[](int64_t i) const { return data_[i]; }

   private:
    friend class Generation;
    Added* data_ = nullptr;
    int64_t size_ = 0, capacity_ = 0;
  };
  // One cache line: a hop reads first_seq and the added run's bounds of
  // every changed row it meets, and prefetches it by its address.
  struct alignas(64) RowDelta {
    uint64_t first_seq = 0;        // the first batch that touched it
    uint64_t last_added_seq = 0;   // added.back().seq (0: none), read without added's memory
    AddedRun added;                // log order (RowIndex::Add)
    std::vector<Removed> removed;  // log order
  };
  static_assert(sizeof(RowDelta) == 64, "a RowDelta is one cache line");
  // Changed rows by local row: pages of kPageRows slots, a page made when a
  // row in it first changes (8 bytes a row of a touched page, against a hash
  // map's lookups on every hop); each RowDelta made once and never moved or
  // freed while the generation lives, so a reader may keep a pointer to one
  // across a lock's release. The RowDeltas and the added edges' runs are
  // carved from chunks of one huge page each (advised as such): a hop reads
  // them for every changed row it meets, spread over the partition, and on
  // 4 KiB pages each read would cost a TLB miss.
  class RowIndex {
   public:
    static constexpr int kPageBits = 12;
    explicit RowIndex(int64_t rows)
        : pages_(static_cast<size_t>((rows >> kPageBits) + 1)),
          bits_(static_cast<size_t>((rows >> 6) + 1), 0) {}
    ~RowIndex() {
      for (int64_t i = 0; i < size_; ++i) chunks_[i / kChunkRows].get()[i % kChunkRows].~RowDelta();
    }
    // Appends `a` to d's added edges (d: one of this index's).
    void Add(RowDelta* d, const Added& a);
    RowIndex(const RowIndex&) = delete;
    RowIndex& operator=(const RowIndex&) = delete;
    // False where the row never changed: one bit a row (a partition's
    // bits fit a core's cache where its slots do not), asked before a slot.
    bool MayHave(int64_t row) const {
      return (bits_[static_cast<size_t>(row >> 6)] >> (row & 63)) & 1;
    }
    // Where row's pointer is held (null: its page was never made).
    RowDelta* const* Slot(int64_t row) const {
      const auto& p = pages_[static_cast<size_t>(row >> kPageBits)];
      return p ? p.get() + (row & kMask) : nullptr;
    }
    const RowDelta* Find(int64_t row) const {
      RowDelta* const* s = Slot(row);
      return s != nullptr ? *s : nullptr;
    }
    RowDelta& Get(int64_t row) {
      auto& p = pages_[static_cast<size_t>(row >> kPageBits)];
      if (!p) {
        p.reset(new RowDelta*[kPageRows]());
        ++num_pages_;
      }
      RowDelta*& s = p[row & kMask];
      if (s == nullptr) {
        s = NewDelta();
        bits_[static_cast<size_t>(row >> 6)] |= uint64_t{1} << (row & 63);
      }
      return *s;
    }
    int64_t size() const { return size_; }
    // The slot pages, the bits, the RowDeltas' chunks and the added runs'.
    int64_t page_bytes() const {
      return num_pages_ * kPageRows * static_cast<int64_t>(sizeof(void*)) +
             static_cast<int64_t>(bits_.size() * 8) +
             static_cast<int64_t>(chunks_.size() + run_chunks_.size()) * kChunkBytes + big_bytes_;
    }

   private:
    static constexpr int64_t kPageRows = int64_t{1} << kPageBits, kMask = kPageRows - 1;
    static constexpr int64_t kChunkBytes = int64_t{2} << 20;
    static constexpr int64_t kChunkRows = kChunkBytes / 64;  // sizeof(RowDelta)
    struct FreeChunk {
      void operator()(void* p) const { std::free(p); }
    };
    static void* NewChunk();  // kChunkBytes, aligned to them, advised huge
    RowDelta* NewDelta();
    std::vector<std::unique_ptr<RowDelta*[]>> pages_;
    std::vector<uint64_t> bits_;  // rows with a RowDelta
    std::vector<std::unique_ptr<RowDelta, FreeChunk>> chunks_;
    // Added runs: carved from the last chunk (a run that does not fit the
    // rest of it starts a new one); a run over a quarter chunk has its own.
    std::vector<std::unique_ptr<Added, FreeChunk>> run_chunks_, big_runs_;
    int64_t run_used_ = 0;  // bytes of the last run chunk handed out
    int64_t big_bytes_ = 0;
    int64_t size_ = 0;  // RowDeltas made
    int64_t num_pages_ = 0;
  };
  // Every changed row's delta: fn(local row, const RowDelta&).
  template <typename Fn>
  static void ForEachRow(const RowIndex& index, int64_t num_rows, Fn fn) {
    for (int64_t r = 0; r < num_rows; r += int64_t{1} << RowIndex::kPageBits)
      if (index.Slot(r) != nullptr)
        for (int64_t k = r; k < std::min(num_rows, r + (int64_t{1} << RowIndex::kPageBits)); ++k)
          if (const RowDelta* d = index.Find(k)) fn(k, *d);
  }
  template <typename T>
  struct Versions {
    std::vector<std::pair<uint64_t, T>> v;  // log order
  };
  Generation(const sampler::PartitionView& base, uint64_t base_version)
      : base_(base),
        graph_(base.Graph()),
        base_version_(base_version),
        rows_(base.node_end - base.node_begin) {}
  bool Owns(int64_t node) const { return node >= base_.node_begin && node < base_.node_end; }
  // The row delta of `node` that a batch at or below `version` started
  // (null: the base row is the row). REQUIRES: mu_ held (shared).
  const RowDelta* ChangedAt(int64_t node, uint64_t version) const {
    if (!rows_.MayHave(node - base_.node_begin)) return nullptr;
    const RowDelta* d = rows_.Find(node - base_.node_begin);
    return d != nullptr && d->first_seq != 0 && d->first_seq <= version ? d : nullptr;
  }
  int64_t DeltaBytes(int64_t row_bytes) const;

  sampler::PartitionView base_;
  std::unique_ptr<Arrays> own_;  // a compacted base's arrays (base_ points into them)
  sampler::CsrGraph graph_;
  const int64_t* time_index_ = nullptr;
  int64_t max_degree_ = -1;
  const uint64_t base_version_;
  int64_t base_ordinal_ = 0;  // added edges' ordinal after the batches up to base_version_
  std::atomic<uint64_t> first_edge_change_{0};  // the first batch that changed an edge (0: none)
  std::atomic<int64_t> most_added_{0};          // the most added edges one row's delta holds
  mutable RwLock mu_;  // writer-preferring: a batch does not wait behind a stream of hops
  RowIndex rows_;      // GUARDED_BY(mu_)
  std::unordered_map<int64_t, Versions<std::string>> features_;                   // GUARDED_BY(mu_)
  std::unordered_map<int64_t, Versions<int64_t>> labels_;                         // GUARDED_BY(mu_)
  int64_t added_ = 0, removals_ = 0, feature_versions_ = 0, label_versions_ = 0;  // GUARDED_BY(mu_)
  // When a read last came here (steady-clock ns; for releasing a retained
  // generation nobody reads).
  mutable std::atomic<int64_t> last_read_ns_{0};
};

// The arrays one call of a sampler reads (VersionedPartition::SampleAnyHop):
// a generation's base, or one changed row's merged edges.
struct RowArrays {
  const sampler::CsrGraph* graph = nullptr;
  const int32_t* edge_types = nullptr;  // heterogeneous datasets (else null)
  const int64_t* edge_times = nullptr;  // temporal datasets (else null)
  const int64_t* time_index = nullptr;  // PrepareTimeOrder's index (null: rows in time order)
  int64_t node_offset = 0;              // the global id of the graph's first row
};
// A sampler's hop over `nodes`, the request's nodes at positions `which`
// (whose side inputs, times or walk keys, the caller gathers by `which`), on
// `arrays`, into *out.
using RowsHop = std::function<Status(const RowArrays& arrays, ArrayView<const int64_t> nodes,
                                     ArrayView<const int64_t> which, sampler::OneHopResult* out)>;

struct BaseOverlay;  // live/base_file.h

class VersionedPartition {
 public:
  // `base` must outlive this; it is never written. `time_index` and
  // `max_degree`: what the server prepared for it (PrepareTimeOrder's index,
  // null where rows are in time order; -1: not known).
  VersionedPartition(const sampler::PartitionView& base, LiveShape shape,
                     const int64_t* time_index = nullptr, int64_t max_degree = -1);

  // OK when every operation of `b` belongs to this partition and is in
  // range; else InvalidArgument naming the operation (its kind and index),
  // the id and what is wrong. Nothing is applied either way.
  Status Check(const UpdateBatch& b) const;
  // Applies batch `seq` (REQUIRES: Check passed, seq above every earlier one).
  void Apply(uint64_t seq, const UpdateBatch& b);
  // Versions up to `seq` become readable (durable: the log synced them).
  void Publish(uint64_t seq);
  uint64_t committed() const { return committed_.load(std::memory_order_acquire); }
  // The version a read asked for: < 0 = the newest committed (0 is the
  // dataset's base); above committed: Unavailable (a version this replica has
  // not reached yet: another replica, or this one a moment later, serves it);
  // below what this replica keeps after a compaction: NotFound naming the
  // oldest version it still reads.
  Status ResolveVersion(int64_t requested, uint64_t* version) const;

  // The generation that reads `version` (REQUIRES: ResolveVersion accepted
  // it; NotFound where a compaction has folded it away since).
  // Holding it keeps its arrays alive: a request samples its base (when
  // EdgesAsBase(version)) with every sampler the static server has.
  Status GenerationFor(uint64_t version, std::shared_ptr<const Generation>* out) const;

  struct Row {
    std::vector<int64_t> neighbors, edge_ids, times;
    std::vector<int32_t> types;
    std::vector<float> weights;
  };
  // Global node `node`'s row at `version` in generation `g` into *out;
  // false (out untouched) where no batch since g's base and at or below
  // `version` changed it: read g's base. `g` is GenerationFor(version)'s,
  // held by the caller, so that a compaction's hand-over in between does
  // not move the read to another generation's base.
  bool MergedRow(const Generation& g, int64_t node, uint64_t version, Row* out) const;
  // One uniform hop at `version` (sampler::HopSampler's contract and draws:
  // the base's rows through the CSR, changed rows through their merged row).
  // `scratch` (may be null): the caller's sampler, reused across calls;
  // `pool` (may be null): threads for the base's rows, as the static path.
  Status SampleHop(ArrayView<const int64_t> nodes, int64_t fanout, int64_t hop,
                   uint64_t request_seed, const sampler::SamplingOptions& options, uint64_t version,
                   sampler::OneHopResult* out, sampler::HopSampler* scratch = nullptr,
                   ThreadPool* pool = nullptr) const;
  // Any sampler's hop at `version` in generation `g` (held by the caller):
  // walk steps, LABOR, temporal, per-edge-type and weighted hops, which
  // SampleHop does not draw. `hop` is the sampler: called once over the
  // base for the nodes whose rows no batch since g's base changed at
  // `version`, and once per changed node over its merged row (a one-row
  // CSR whose row is the node's own: node_offset is the node, so every
  // draw keyed by (node, hop, seed) or by a neighbor is the one the rebuilt
  // graph's row gets); the results stitched in the nodes' order. A cost
  // a changed node (a merge and a sampler call) that uniform hops do not pay.
  Status SampleAnyHop(const Generation& g, uint64_t version, ArrayView<const int64_t> nodes,
                      const RowsHop& hop, sampler::OneHopResult* out) const;
  // The node's feature row / label at `version` where a batch replaced it
  // (false: the base's).
  bool FeatureRow(int64_t node, uint64_t version, std::string* out) const;
  bool Label(int64_t node, uint64_t version, int64_t* out) const;
  // Both for many nodes at once (one lock; nothing looked up where no batch
  // set any): replaces rows[i] (LiveShape::row_bytes each; may be null) and
  // labels[i] (may be null) where a batch at or below `version` set nodes[i]'s.
  void Overlay(ArrayView<const int64_t> nodes, uint64_t version, char* rows, int64_t* labels) const;

  DeltaStats Stats() const;

  // Compaction: folds every batch at or below `version` (<= committed) into
  // a new base (CSR, edge ids, times, types and weights, rows in the store's
  // order: the rows the partitioner would write for the graph rebuilt with
  // those batches) while writers and readers go on; feature rows and labels
  // keep one version per node at or below it. The new generation then
  // serves every read at `version` or later, with the delta above `version`
  // carried over; the one before is kept for reads below `version` until
  // ReleaseIdle drops it (one is kept at a time: Aborted while it is). ResourceExhausted where the
  // new arrays would pass options.max_bytes. Not concurrent with itself (one compactor).
  Status Compact(uint64_t version, const CompactionOptions& options, CompactionReport* report);
  // Hands the dataset's base arrays (what `base` views, moved into `arrays`:
  // a vector's move keeps its memory where the view points) to the first
  // generation, so that they are freed once a compaction's new base has
  // replaced it and no read holds it. REQUIRES: before any compaction.
  void AdoptBase(std::unique_ptr<Generation::Arrays> arrays);
  // A base file (live/base_file.h) of the current generation: it, held (its
  // base view is what the file holds), the feature rows and labels it holds
  // over the dataset's (the newest at or below its version), and the added
  // edges' ordinal after its version's batches. NotFound where the
  // base is the dataset's own (no compaction made one).
  Status BaseToWrite(std::shared_ptr<const Generation>* g, BaseOverlay* overlay,
                     int64_t* next_ordinal) const;
  // Replaces the dataset's base by a base file's (read and checked by
  // ReadBaseFile) at `version`, which becomes the committed version; the
  // log's records above it are applied after. REQUIRES: nothing applied yet.
  Status RestoreBase(std::unique_ptr<Generation::Arrays> arrays, uint64_t version,
                     int64_t next_ordinal, const BaseOverlay& overlay);
  // Drops the retained previous generation when no read came to it for
  // `idle_s` seconds (0: now); true where one was dropped.
  bool ReleaseIdle(double idle_s);

 private:
  using RowDelta = Generation::RowDelta;
  using Added = Generation::Added;
  using Removed = Generation::Removed;
  // The edge (dst, type) added at `since` (0: the base) is removed at or
  // below `version`.
  static bool RemovedBy(const RowDelta& d, int64_t dst, int32_t type, uint64_t since,
                        uint64_t version);
  // The newest value at or below `version` of `node` in `m` (null: none).
  // REQUIRES: the generation's mu_ held.
  template <typename T>
  static const T* Latest(const std::unordered_map<int64_t, Generation::Versions<T>>& m,
                         int64_t node, uint64_t version);
  // MergedRow's work in generation g. REQUIRES: g.mu_ held (shared).
  bool MergedRowLocked(const Generation& g, int64_t node, uint64_t version, Row* out) const;
  // A generation whose base is `arrays` (moved in; `like`: the view whose
  // other fields it keeps) at `version`, with its time index and largest degree.
  std::shared_ptr<Generation> NewGeneration(const sampler::PartitionView& like,
                                            std::unique_ptr<Generation::Arrays> arrays,
                                            uint64_t version) const;
  // The generation for `version` (null: folded away and not kept).
  std::shared_ptr<const Generation> For(uint64_t version) const;
  bool Owns(int64_t node) const { return node >= node_begin_ && node < node_end_; }

  const LiveShape shape_;
  const int part_;
  const int64_t node_begin_, node_end_;
  std::atomic<uint64_t> committed_{0};
  mutable std::mutex gen_mu_;             // guards the two pointers (held briefly)
  std::shared_ptr<Generation> current_;   // GUARDED_BY(gen_mu_)
  std::shared_ptr<Generation> previous_;  // GUARDED_BY(gen_mu_): kept for older reads
  std::mutex write_mu_;                   // Apply and a compaction's hand-over
  std::atomic<uint64_t> applied_{0};      // written under write_mu_
  int64_t next_ordinal_ = 0;              // GUARDED_BY(write_mu_): added edges' ordinals
  std::atomic<int64_t> compactions_{0};
  std::atomic<double> last_compaction_s_{0};
  std::mutex compact_mu_;  // one compaction at a time
};

}  // namespace fanout::live

#endif  // FANOUT_LIVE_VERSIONED_PARTITION_H_
