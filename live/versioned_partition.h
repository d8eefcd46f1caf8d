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

#include <atomic>
#include <cstdint>
#include <deque>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "common/thread_pool.h"
#include "live/updates.h"
#include "sampler/neighbor_sampler.h"
#include "sampler/partition_view.h"

namespace fanout::live {

// What the base does not say about the dataset.
struct LiveShape {
  int num_parts = 1;
  int64_t num_nodes_total = 0;   // global ids [0, num_nodes_total)
  int64_t base_edges_total = 0;  // the dataset's edges (added edges' ids start above)
  int64_t row_bytes = 0;         // one feature row (0: no features)
  int num_edge_types = 0;        // heterogeneous: the schema's edge types (0: homogeneous)
  bool temporal = false;         // edges carry times (rows in time order)
  bool has_labels = false;
};

struct DeltaStats {
  uint64_t committed = 0;    // the newest readable version
  uint64_t applied = 0;      // the newest applied (published once durable)
  int64_t rows_touched = 0;  // rows with added or removed edges
  int64_t added_edges = 0;   // edges added (log order ordinals handed out)
  int64_t removals = 0;      // removals recorded
  int64_t feature_rows = 0;  // feature row versions held
  int64_t labels = 0;        // label versions held
  int64_t bytes = 0;         // the delta's memory (estimate of its containers)
};

class VersionedPartition {
 public:
  // `base` must outlive this; it is never written.
  VersionedPartition(const sampler::PartitionView& base, LiveShape shape);

  // OK when every operation of `b` belongs to this partition and is in
  // range; else InvalidArgument naming the operation (its kind and index),
  // the id and what is wrong. Nothing is applied either way.
  Status Check(const UpdateBatch& b) const;
  // Applies batch `seq` (REQUIRES: Check passed, seq above every earlier one).
  void Apply(uint64_t seq, const UpdateBatch& b);
  // Versions up to `seq` become readable (durable: the log synced them).
  void Publish(uint64_t seq);
  uint64_t committed() const { return committed_.load(std::memory_order_acquire); }
  // The version a read asked for: < 0 = the newest committed (0 is the base
  // itself); above committed:
  // Unavailable (a version this replica has not reached yet: another replica,
  // or this one a moment later, serves it).
  Status ResolveVersion(int64_t requested, uint64_t* version) const;

  struct Row {
    std::vector<int64_t> neighbors, edge_ids, times;
    std::vector<int32_t> types;
  };
  // Global node `node`'s row at `version` into *out; false (out untouched)
  // where no batch at or below `version` changed it: read the base.
  bool MergedRow(int64_t node, uint64_t version, Row* out) const;
  // One uniform hop at `version` (sampler::HopSampler's contract and draws:
  // the base's rows through the CSR, changed rows through their merged row).
  Status SampleHop(ArrayView<const int64_t> nodes, int64_t fanout, int64_t hop,
                   uint64_t request_seed, const sampler::SamplingOptions& options, uint64_t version,
                   sampler::OneHopResult* out) const;
  // The node's feature row / label at `version` where a batch replaced it
  // (false: the base's).
  bool FeatureRow(int64_t node, uint64_t version, std::string* out) const;
  bool Label(int64_t node, uint64_t version, int64_t* out) const;
  // Both for many nodes at once (one lock; nothing looked up where no batch
  // set any): replaces rows[i] (LiveShape::row_bytes each; may be null) and
  // labels[i] (may be null) where a batch at or below `version` set nodes[i]'s.
  void Overlay(ArrayView<const int64_t> nodes, uint64_t version, char* rows, int64_t* labels) const;

  DeltaStats Stats() const;
  // True when no batch at or below `version` changed an edge: the base's
  // rows are the rows at `version` (every sampler reads it as it is).
  bool EdgesAsBase(uint64_t version) const {
    const uint64_t f = first_edge_change_.load(std::memory_order_acquire);
    return f == 0 || version < f;
  }

 private:
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
  struct RowDelta {
    std::vector<Added> added;      // log order
    std::vector<Removed> removed;  // log order
    uint64_t first_seq = 0;        // the first batch that touched it
  };
  // Changed rows by local row: pages of kPageRows slots, a page made when a
  // row in it first changes (8 bytes a row of a touched page, against a hash
  // map's lookups on every hop); each RowDelta made once and never moved or
  // freed while the partition lives (a deque), so a reader may keep a pointer
  // to one across a lock's release.
  class RowIndex {
   public:
    static constexpr int kPageBits = 12;
    explicit RowIndex(int64_t rows) : pages_(static_cast<size_t>((rows >> kPageBits) + 1)) {}
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
      if (s == nullptr) s = &storage_.emplace_back();
      return *s;
    }
    int64_t size() const { return static_cast<int64_t>(storage_.size()); }
    int64_t page_bytes() const {
      return num_pages_ * kPageRows * static_cast<int64_t>(sizeof(void*));
    }

   private:
    static constexpr int64_t kPageRows = int64_t{1} << kPageBits, kMask = kPageRows - 1;
    std::vector<std::unique_ptr<RowDelta*[]>> pages_;
    std::deque<RowDelta> storage_;
    int64_t num_pages_ = 0;
  };
  template <typename T>
  struct Versions {
    std::vector<std::pair<uint64_t, T>> v;  // log order
  };
  // The edge (dst, type) added at `since` (0: the base) is removed at or
  // below `version`.
  static bool RemovedBy(const RowDelta& d, int64_t dst, int32_t type, uint64_t since,
                        uint64_t version);
  // The newest value at or below `version` of `node` in `m` (null: none).
  // REQUIRES: mu_ held.
  template <typename T>
  static const T* Latest(const std::unordered_map<int64_t, Versions<T>>& m, int64_t node,
                         uint64_t version);
  // MergedRow's work. REQUIRES: mu_ held (shared).
  bool MergedRowLocked(int64_t node, uint64_t version, Row* out) const;
  bool Owns(int64_t node) const { return node >= base_.node_begin && node < base_.node_end; }

  const sampler::PartitionView base_;
  const sampler::CsrGraph graph_;
  const LiveShape shape_;
  std::atomic<uint64_t> committed_{0};
  std::atomic<uint64_t> first_edge_change_{0};  // the first batch that changed an edge (0: none)
  mutable std::shared_mutex mu_;
  RowIndex rows_;                                                                 // GUARDED_BY(mu_)
  std::unordered_map<int64_t, Versions<std::string>> features_;                   // GUARDED_BY(mu_)
  std::unordered_map<int64_t, Versions<int64_t>> labels_;                         // GUARDED_BY(mu_)
  uint64_t applied_ = 0;                                                          // GUARDED_BY(mu_)
  int64_t added_ = 0, removals_ = 0, feature_versions_ = 0, label_versions_ = 0;  // GUARDED_BY(mu_)
};

}  // namespace fanout::live

#endif  // FANOUT_LIVE_VERSIONED_PARTITION_H_
