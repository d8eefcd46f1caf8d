#include "live/versioned_partition.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <numeric>
#include <type_traits>

#include "common/cpu.h"
#include "live/base_file.h"
#include "sampler/temporal.h"

namespace fanout::live {

namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void* Generation::RowIndex::NewChunk() {
  void* raw = std::aligned_alloc(kChunkBytes, kChunkBytes);
  if (raw == nullptr) throw std::bad_alloc();
  AdviseHugePages(raw, kChunkBytes);  // before the first touch
  return raw;
}

Generation::RowDelta* Generation::RowIndex::NewDelta() {
  static_assert(kChunkRows * static_cast<int64_t>(sizeof(RowDelta)) == kChunkBytes);
  if (size_ == static_cast<int64_t>(chunks_.size()) * kChunkRows)
    chunks_.emplace_back(static_cast<RowDelta*>(NewChunk()));
  RowDelta* d = new (chunks_.back().get() + size_ % kChunkRows) RowDelta();
  ++size_;
  return d;
}

void Generation::RowIndex::Add(RowDelta* d, const Added& a) {
  static_assert(std::is_trivially_copyable_v<Added> && kChunkBytes % alignof(Added) == 0);
  AddedRun& run = d->added;
  if (run.size_ == run.capacity_) {
    const int64_t capacity = std::max<int64_t>(2, run.capacity_ * 2);
    const int64_t bytes = capacity * static_cast<int64_t>(sizeof(Added));
    Added* fresh;
    if (bytes > kChunkBytes / 4) {
      void* raw = std::malloc(static_cast<size_t>(bytes));
      if (raw == nullptr) throw std::bad_alloc();
      big_runs_.emplace_back(static_cast<Added*>(raw));
      big_bytes_ += bytes;
      fresh = big_runs_.back().get();
    } else {
      if (run_chunks_.empty() || run_used_ + bytes > kChunkBytes) {
        run_chunks_.emplace_back(static_cast<Added*>(NewChunk()));
        run_used_ = 0;
      }
      fresh =
          reinterpret_cast<Added*>(reinterpret_cast<char*>(run_chunks_.back().get()) + run_used_);
      run_used_ += bytes;
    }
    // The old run stays where it is (a reader may hold it; it goes with the
    // generation).
    if (run.size_ > 0)
      std::memcpy(static_cast<void*>(fresh), run.data_,
                  static_cast<size_t>(run.size_) * sizeof(Added));
    run.data_ = fresh;
    run.capacity_ = capacity;
  }
  run.data_[run.size_] = a;
  ++run.size_;
  d->last_added_seq = a.seq;
}

VersionedPartition::VersionedPartition(const sampler::PartitionView& base, LiveShape shape,
                                       const int64_t* time_index, int64_t max_degree)
    : shape_(shape),
      part_(base.part),
      node_begin_(base.node_begin),
      node_end_(base.node_end),
      current_(new Generation(base, 0)) {
  current_->time_index_ = time_index;
  current_->max_degree_ = max_degree;
}

Status VersionedPartition::Check(const UpdateBatch& b) const {
  return CheckBatch(shape_, node_begin_, node_end_, b);
}

void VersionedPartition::Apply(uint64_t seq, const UpdateBatch& b) {
  std::lock_guard<std::mutex> writing(write_mu_);
  Generation& g = *current_;  // only a compaction's hand-over, under write_mu_, moves it
  std::unique_lock<RwLock> lock(g.mu_);
  for (const EdgeUpdate& e : b.add_edges) {
    RowDelta& d = g.rows_.Get(e.src - node_begin_);
    if (d.first_seq == 0) d.first_seq = seq;
    const int64_t eid = shape_.base_edges_total + shape_.num_parts * next_ordinal_ + part_;
    ++next_ordinal_;
    ++g.added_;
    g.rows_.Add(&d, {e.dst, eid, e.time, e.weight, e.type, seq});
    if (static_cast<int64_t>(d.added.size()) > g.most_added_.load(std::memory_order_relaxed))
      g.most_added_.store(static_cast<int64_t>(d.added.size()), std::memory_order_release);
  }
  for (const EdgeUpdate& e : b.remove_edges) {
    RowDelta& d = g.rows_.Get(e.src - node_begin_);
    if (d.first_seq == 0) d.first_seq = seq;
    d.removed.push_back({e.dst, e.type, seq});
    ++g.removals_;
  }
  for (size_t i = 0; i < b.feature_rows.size(); ++i) {
    g.features_[b.feature_rows[i]].v.emplace_back(
        seq, b.feature_bytes.substr(i * static_cast<size_t>(b.row_bytes),
                                    static_cast<size_t>(b.row_bytes)));
    ++g.feature_versions_;
  }
  for (size_t i = 0; i < b.label_rows.size(); ++i) {
    g.labels_[b.label_rows[i]].v.emplace_back(seq, b.labels[i]);
    ++g.label_versions_;
  }
  applied_.store(seq, std::memory_order_relaxed);
  if ((!b.add_edges.empty() || !b.remove_edges.empty()) &&
      g.first_edge_change_.load(std::memory_order_relaxed) == 0)
    g.first_edge_change_.store(seq, std::memory_order_release);
}

void VersionedPartition::Publish(uint64_t seq) {
  uint64_t c = committed_.load(std::memory_order_relaxed);
  while (seq > c && !committed_.compare_exchange_weak(c, seq, std::memory_order_release)) {
  }
}

std::shared_ptr<const Generation> VersionedPartition::For(uint64_t version) const {
  std::shared_ptr<const Generation> g;
  {
    std::lock_guard<std::mutex> lock(gen_mu_);
    if (version >= current_->base_version_)
      g = current_;
    else if (previous_ && version >= previous_->base_version_)
      g = previous_;
  }
  if (g) {
    // Noted for ReleaseIdle (a relaxed store, skipped where it would not change much).
    const int64_t now = NowNs(), last = g->last_read_ns_.load(std::memory_order_relaxed);
    if (now - last > 1000000) g->last_read_ns_.store(now, std::memory_order_relaxed);
  }
  return g;
}

Status VersionedPartition::ResolveVersion(int64_t requested, uint64_t* version) const {
  const uint64_t c = committed();
  if (requested < 0) {
    *version = c;
    return Status::OK();
  }
  if (static_cast<uint64_t>(requested) > c)
    return Status::Unavailable("version " + std::to_string(requested) +
                               " is not committed on this replica yet (it has " +
                               std::to_string(c) + ")");
  *version = static_cast<uint64_t>(requested);
  std::shared_ptr<const Generation> dummy;
  return GenerationFor(*version, &dummy);
}

Status VersionedPartition::GenerationFor(uint64_t version,
                                         std::shared_ptr<const Generation>* out) const {
  *out = For(version);
  if (*out) return Status::OK();
  uint64_t oldest = 0;
  {
    std::lock_guard<std::mutex> lock(gen_mu_);
    oldest = previous_ ? previous_->base_version_ : current_->base_version_;
  }
  return Status::NotFound(
      "version " + std::to_string(version) +
      " was folded into a compacted base on this replica and is no longer kept (the oldest "
      "version it reads is " +
      std::to_string(oldest) + "): read at that version or a later one");
}

bool VersionedPartition::RemovedBy(const RowDelta& d, int64_t dst, int32_t type, uint64_t since,
                                   uint64_t version) {
  for (const Removed& r : d.removed) {
    if (r.seq > version) break;  // log order: the rest are later
    if (r.seq > since && r.dst == dst && (r.type < 0 || r.type == type)) return true;
  }
  return false;
}

bool VersionedPartition::MergedRow(const Generation& g, int64_t node, uint64_t version,
                                   Row* out) const {
  std::shared_lock<RwLock> lock(g.mu_);
  return MergedRowLocked(g, node, version, out);
}

bool VersionedPartition::MergedRowLocked(const Generation& g, int64_t node, uint64_t version,
                                         Row* out) const {
  if (!Owns(node)) return false;
  const RowDelta* found = g.ChangedAt(node, version);
  if (found == nullptr) return false;
  const RowDelta& d = *found;
  out->neighbors.clear();
  out->edge_ids.clear();
  out->times.clear();
  out->types.clear();
  out->weights.clear();
  const int64_t row = node - node_begin_;
  const sampler::CsrGraph& graph = g.graph_;
  const sampler::PartitionView& base = g.base_;
  const int64_t* indptr = graph.indptr();
  const bool typed = shape_.num_edge_types > 0, timed = shape_.temporal;
  const float* weights = graph.weights();
  for (int64_t e = indptr[row]; e < indptr[row + 1]; ++e) {
    const int64_t dst = graph.neighbor(e);
    const int32_t type = typed && !base.edge_types.empty() ? base.edge_types[e] : 0;
    if (RemovedBy(d, dst, type, 0, version)) continue;
    out->neighbors.push_back(dst);
    out->edge_ids.push_back(graph.edge_id(e));
    out->times.push_back(timed && !base.edge_times.empty() ? base.edge_times[e] : 0);
    out->types.push_back(type);
    out->weights.push_back(weights != nullptr ? weights[e] : 1.0f);
  }
  for (const Added& a : d.added) {
    if (a.seq > version) break;
    if (RemovedBy(d, a.dst, a.type, a.seq, version)) continue;
    out->neighbors.push_back(a.dst);
    out->edge_ids.push_back(a.eid);
    out->times.push_back(a.time);
    out->types.push_back(a.type);
    out->weights.push_back(a.weight);
  }
  if (typed || timed) {
    // The store's row order: by type (heterogeneous), then time (temporal),
    // stable, so base edges stay before added ones at an equal key.
    std::vector<size_t> order(out->neighbors.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      if (typed && out->types[x] != out->types[y]) return out->types[x] < out->types[y];
      return timed && out->times[x] < out->times[y];
    });
    Row sorted;
    for (size_t i : order) {
      sorted.neighbors.push_back(out->neighbors[i]);
      sorted.edge_ids.push_back(out->edge_ids[i]);
      sorted.times.push_back(out->times[i]);
      sorted.types.push_back(out->types[i]);
      sorted.weights.push_back(out->weights[i]);
    }
    *out = std::move(sorted);
  }
  return true;
}

Status VersionedPartition::SampleAnyHop(const Generation& g, uint64_t version,
                                        ArrayView<const int64_t> nodes, const RowsHop& hop,
                                        sampler::OneHopResult* out) const {
  for (int64_t v : nodes)
    if (!Owns(v))
      return Status::InvalidArgument("node " + std::to_string(v) + " is not in this partition");
  const sampler::PartitionView& base = g.base_;
  RowArrays on_base;
  on_base.graph = &g.graph_;
  on_base.edge_types = base.edge_types.empty() ? nullptr : base.edge_types.data();
  on_base.edge_times = base.edge_times.empty() ? nullptr : base.edge_times.data();
  on_base.time_index = g.time_index_;
  on_base.node_offset = node_begin_;
  const bool typed = shape_.num_edge_types > 0, timed = shape_.temporal;
  const bool weighted = g.graph_.has_weights();
  // The changed nodes one at a time (their results appended to `changed`,
  // in the request's order), the others gathered for one call over the base.
  std::vector<int64_t> plain, plain_nodes, changed_at;
  sampler::OneHopResult on_plain, changed, one;
  changed.offsets.assign(1, 0);
  Row row;
  int64_t row_node = -1;  // the node `row` holds (a hop repeats nodes)
  bool row_changed = false;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] != row_node) {
      row_node = nodes[i];
      row_changed = MergedRow(g, row_node, version, &row);
    }
    if (!row_changed) {
      plain.push_back(static_cast<int64_t>(i));
      plain_nodes.push_back(row_node);
      continue;
    }
    const int64_t self = static_cast<int64_t>(i);
    changed_at.push_back(self);
    if (row.neighbors.empty()) {  // no edge, no draw (and a CSR of none has no weights)
      changed.offsets.push_back(static_cast<int64_t>(changed.neighbors.size()));
      continue;
    }
    const int64_t one_indptr[2] = {0, static_cast<int64_t>(row.neighbors.size())};
    sampler::CsrGraph rg;
    FANOUT_RETURN_IF_ERROR(sampler::CsrGraph::Create(
        ArrayView<const int64_t>(one_indptr, 2), ArrayView<const int64_t>(row.neighbors),
        ArrayView<const int64_t>(row.edge_ids),
        weighted ? ArrayView<const float>(row.weights) : ArrayView<const float>(), &rg));
    RowArrays on_row;
    on_row.graph = &rg;
    on_row.edge_types = typed ? row.types.data() : nullptr;
    on_row.edge_times = timed ? row.times.data() : nullptr;
    on_row.node_offset = row_node;  // rows are in the store's order: no time index
    FANOUT_RETURN_IF_ERROR(hop(on_row, ArrayView<const int64_t>(&row_node, 1),
                               ArrayView<const int64_t>(&self, 1), &one));
    changed.neighbors.insert(changed.neighbors.end(), one.neighbors.begin(), one.neighbors.end());
    changed.edge_ids.insert(changed.edge_ids.end(), one.edge_ids.begin(), one.edge_ids.end());
    changed.edge_types.insert(changed.edge_types.end(), one.edge_types.begin(),
                              one.edge_types.end());
    changed.edge_weights.insert(changed.edge_weights.end(), one.edge_weights.begin(),
                                one.edge_weights.end());
    changed.offsets.push_back(static_cast<int64_t>(changed.neighbors.size()));
  }
  if (!plain.empty())
    FANOUT_RETURN_IF_ERROR(hop(on_base, ArrayView<const int64_t>(plain_nodes),
                               ArrayView<const int64_t>(plain), &on_plain));
  // Stitched in the nodes' order. A per-edge field is in the result where
  // either part has it, and then at every edge of both parts.
  const bool ids = !on_plain.edge_ids.empty() || !changed.edge_ids.empty();
  const bool types = !on_plain.edge_types.empty() || !changed.edge_types.empty();
  const bool weights = !on_plain.edge_weights.empty() || !changed.edge_weights.empty();
  const size_t total = on_plain.neighbors.size() + changed.neighbors.size();
  for (const sampler::OneHopResult* r : {&on_plain, &changed})
    if ((ids && r->edge_ids.size() != r->neighbors.size()) ||
        (types && r->edge_types.size() != r->neighbors.size()) ||
        (weights && r->edge_weights.size() != r->neighbors.size()))
      return Status::Internal("a sampler's hop gave a per-edge field that is not at every edge");
  out->offsets.resize(nodes.size() + 1);
  out->offsets[0] = 0;
  out->neighbors.resize(total);
  out->edge_ids.resize(ids ? total : 0);
  out->edge_types.resize(types ? total : 0);
  out->edge_weights.resize(weights ? total : 0);
  size_t next_plain = 0, next_changed = 0;
  int64_t at = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const bool from_changed =
        next_changed < changed_at.size() && changed_at[next_changed] == static_cast<int64_t>(i);
    const sampler::OneHopResult& r = from_changed ? changed : on_plain;
    const size_t k = from_changed ? next_changed++ : next_plain++;
    const int64_t b = r.offsets[k], e = r.offsets[k + 1];
    std::copy(r.neighbors.begin() + b, r.neighbors.begin() + e, out->neighbors.begin() + at);
    if (ids) std::copy(r.edge_ids.begin() + b, r.edge_ids.begin() + e, out->edge_ids.begin() + at);
    if (types)
      std::copy(r.edge_types.begin() + b, r.edge_types.begin() + e, out->edge_types.begin() + at);
    if (weights)
      std::copy(r.edge_weights.begin() + b, r.edge_weights.begin() + e,
                out->edge_weights.begin() + at);
    at += e - b;
    out->offsets[i + 1] = at;
  }
  return Status::OK();
}

Status VersionedPartition::SampleHop(ArrayView<const int64_t> nodes, int64_t fanout, int64_t hop,
                                     uint64_t request_seed, const sampler::SamplingOptions& options,
                                     uint64_t version, sampler::OneHopResult* out,
                                     sampler::HopSampler* scratch, ThreadPool* pool) const {
  if (options.weighted || options.labor)
    return Status::NotSupported(
        "sampling a live partition at a version is uniform for now (not weighted, not LABOR)");
  sampler::SamplingOptions o = options;
  o.node_offset = node_begin_;
  for (int64_t v : nodes)
    if (!Owns(v))
      return Status::InvalidArgument("node " + std::to_string(v) + " is not in this partition");
  std::shared_ptr<const Generation> gen;
  FANOUT_RETURN_IF_ERROR(GenerationFor(version, &gen));
  const Generation& g = *gen;
  const sampler::CsrGraph& graph = g.graph_;
  sampler::HopSampler own;
  sampler::HopSampler& hs = scratch != nullptr ? *scratch : own;
  if (g.EdgesAsBase(version))
    return hs.Sample(graph, nodes, fanout, hop, request_seed, o, pool, out);
  {
    sampler::RowDraws check;  // the hop's options, checked once before any work
    FANOUT_RETURN_IF_ERROR(check.Init(fanout, hop, request_seed, o));
  }
  // Writers wait while the hop reads the delta (one lock for the hop; the
  // pool's threads read under the caller's hold of it).
  std::shared_lock<RwLock> lock(g.mu_);
  const size_t n = nodes.size();
  const int64_t begin = node_begin_;
  const int64_t* indptr = graph.indptr();
  const bool ordered = shape_.num_edge_types > 0 || shape_.temporal;
  // Chunks of the nodes, as the static hop splits a large hop over `pool`
  // (at least kMinChunk nodes each, about four a thread); one with no pool.
  constexpr size_t kMinChunk = 512;
  const size_t threads = pool != nullptr ? static_cast<size_t>(pool->num_threads()) + 1 : 1;
  const size_t chunk = std::max(kMinChunk, (n + threads * 4 - 1) / (threads * 4));
  const size_t chunks = std::max<size_t>(1, (n + chunk - 1) / chunk);
  auto run_chunks = [&](const std::function<void(int64_t)>& fn) {
    if (chunks == 1 || pool == nullptr) {
      for (size_t c = 0; c < chunks; ++c) fn(static_cast<int64_t>(c));
    } else {
      pool->ParallelFor(static_cast<int64_t>(chunks), fn);
    }
  };
  // Each node's row at `version`, as the static sampler's one pass sees it
  // (the same draws, the same order): the base row [start, start +
  // base_degree), then, where a batch at or below `version` changed a row
  // that keeps no order and lost nothing at `version`, the added edges at or
  // below `version` (a prefix of its delta's: log order), nothing copied.
  // Any other changed row is merged whole (MergedRowLocked, into its
  // chunk's `merged`).
  struct RowRef {
    int64_t start, base_degree, degree;
    const Added* added;  // the first added edge (null: none)
    int64_t merged;      // its row in its chunk's `merged` (-1: not merged)
  };
  std::vector<RowRef> refs(n);
  std::vector<std::deque<Row>> merged(chunks);
  std::vector<char> changed(chunks, 0);  // a row of the chunk changed at `version`
  out->offsets.resize(n + 1);
  int64_t* offsets = out->offsets.data();
  offsets[0] = 0;
  // Distances, in nodes, that cover a memory miss on this kind of machine:
  // the slot, the delta it names and the CSR row bounds, each some nodes
  // ahead (a delta's added edges are read only where a draw lands on one).
  constexpr size_t kSlotAhead = 48, kDeltaAhead = 24, kRowAhead = 12;
  auto delta_of = [&](size_t i) { return g.ChangedAt(nodes[i], version); };
  // Phase 1: each node's row and its count of draws (in offsets[i + 1]).
  run_chunks([&](int64_t c) {
    const size_t b = static_cast<size_t>(c) * chunk, e = std::min(n, b + chunk);
    sampler::RowDraws draws;
    (void)draws.Init(fanout, hop, request_seed, o);  // checked above
    for (size_t i = b; i < e; ++i) {
      if (i + kSlotAhead < e && g.rows_.MayHave(nodes[i + kSlotAhead] - begin))
        if (RowDelta* const* slot = g.rows_.Slot(nodes[i + kSlotAhead] - begin))
          __builtin_prefetch(slot);
      if (i + kDeltaAhead < e && g.rows_.MayHave(nodes[i + kDeltaAhead] - begin))
        if (const RowDelta* ahead = g.rows_.Find(nodes[i + kDeltaAhead] - begin))
          __builtin_prefetch(ahead);
      if (i + kRowAhead < e) __builtin_prefetch(indptr + (nodes[i + kRowAhead] - begin));
      const int64_t r = nodes[i] - begin;
      RowRef& ref = refs[i];
      ref.start = indptr[r];
      ref.base_degree = indptr[r + 1] - ref.start;
      ref.degree = ref.base_degree;
      ref.added = nullptr;
      ref.merged = -1;
      if (const RowDelta* d = delta_of(i)) {
        changed[static_cast<size_t>(c)] = 1;
        if (ordered || (!d->removed.empty() && d->removed.front().seq <= version)) {
          std::deque<Row>& rows = merged[static_cast<size_t>(c)];
          ref.merged = static_cast<int64_t>(rows.size());
          MergedRowLocked(g, nodes[i], version, &rows.emplace_back());
          ref.degree = static_cast<int64_t>(rows.back().neighbors.size());
        } else if (!d->added.empty()) {
          size_t added = d->added.size();
          if (d->last_added_seq > version)
            added = static_cast<size_t>(
                std::upper_bound(d->added.begin(), d->added.end(), version,
                                 [](uint64_t v, const Added& x) { return v < x.seq; }) -
                d->added.begin());
          ref.added = d->added.data();
          ref.degree += static_cast<int64_t>(added);
        }
      }
      offsets[i + 1] = draws.Count(ref.degree);
    }
  });
  // No row of this hop changed: the static hop.
  if (std::find(changed.begin(), changed.end(), 1) == changed.end())
    return hs.Sample(graph, nodes, fanout, hop, request_seed, o, pool, out);
  for (size_t i = 0; i < n; ++i) offsets[i + 1] += offsets[i];
  const int64_t total = offsets[n];
  out->neighbors.resize(static_cast<size_t>(total));
  out->edge_ids.resize(o.with_edge_ids ? static_cast<size_t>(total) : 0);
  out->edge_types.clear();
  out->edge_weights.clear();
  int64_t* nbr = out->neighbors.data();
  int64_t* eid_out = o.with_edge_ids ? out->edge_ids.data() : nullptr;
  const int64_t* eids = graph.edge_ids();
  // Phase 2, software-pipelined as the static hop: node i + kDrawAhead's
  // positions are drawn (and the lines they land on prefetched) while node
  // i's are resolved. A drawn slot holds a base edge's CSR position (>= 0)
  // or -1 - j for the row's j-th added edge; a merged row is resolved as it
  // is drawn.
  constexpr size_t kDrawAhead = 6;
  run_chunks([&](int64_t c) {
    const size_t b = static_cast<size_t>(c) * chunk, e = std::min(n, b + chunk);
    sampler::RowDraws draws;
    (void)draws.Init(fanout, hop, request_seed, o);  // checked above
    auto draw = [&](size_t i) {
      const RowRef& ref = refs[i];
      const int64_t o0 = offsets[i], k = offsets[i + 1] - o0;
      if (k == 0) return;
      int64_t* pos = nbr + o0;
      draws.Positions(nodes[i], ref.degree, pos);
      if (ref.merged >= 0) {
        const Row& row = merged[static_cast<size_t>(c)][static_cast<size_t>(ref.merged)];
        for (int64_t j = 0; j < k; ++j) {
          const size_t p = static_cast<size_t>(pos[j]);
          if (eid_out != nullptr) eid_out[o0 + j] = row.edge_ids[p];
          pos[j] = row.neighbors[p];
        }
        return;
      }
      for (int64_t j = 0; j < k; ++j) {
        const int64_t p = pos[j];
        if (p < ref.base_degree) {
          pos[j] = ref.start + p;
          __builtin_prefetch(graph.neighbor_address(pos[j]), 0, 2);
          if (eid_out != nullptr && eids != nullptr) __builtin_prefetch(eids + pos[j]);
        } else {
          pos[j] = -1 - (p - ref.base_degree);
          __builtin_prefetch(ref.added + (p - ref.base_degree));
        }
      }
    };
    auto resolve = [&](size_t i) {
      const RowRef& ref = refs[i];
      if (ref.merged >= 0) return;
      for (int64_t x = offsets[i]; x < offsets[i + 1]; ++x) {
        const int64_t v = nbr[x];
        if (v >= 0) {
          if (eid_out != nullptr) eid_out[x] = graph.edge_id(v);
          nbr[x] = graph.neighbor(v);
        } else {
          const Added& a = ref.added[-1 - v];
          if (eid_out != nullptr) eid_out[x] = a.eid;
          nbr[x] = a.dst;
        }
      }
    };
    for (size_t i = b; i < std::min(e, b + kDrawAhead); ++i) draw(i);
    for (size_t i = b; i < e; ++i) {
      if (i + kDrawAhead < e) draw(i + kDrawAhead);
      resolve(i);
    }
  });
  return Status::OK();
}

template <typename T>
const T* VersionedPartition::Latest(const std::unordered_map<int64_t, Generation::Versions<T>>& m,
                                    int64_t node, uint64_t version) {
  auto it = m.find(node);
  if (it == m.end()) return nullptr;
  const T* found = nullptr;
  for (const auto& [seq, value] : it->second.v) {
    if (seq > version) break;  // log order: the rest are later
    found = &value;
  }
  return found;
}

bool VersionedPartition::FeatureRow(int64_t node, uint64_t version, std::string* out) const {
  std::shared_ptr<const Generation> g = For(version);
  if (!g) return false;
  std::shared_lock<RwLock> lock(g->mu_);
  const std::string* row = Latest(g->features_, node, version);
  if (row != nullptr) *out = *row;
  return row != nullptr;
}

bool VersionedPartition::Label(int64_t node, uint64_t version, int64_t* out) const {
  std::shared_ptr<const Generation> g = For(version);
  if (!g) return false;
  std::shared_lock<RwLock> lock(g->mu_);
  const int64_t* label = Latest(g->labels_, node, version);
  if (label != nullptr) *out = *label;
  return label != nullptr;
}

void VersionedPartition::Overlay(ArrayView<const int64_t> nodes, uint64_t version, char* rows,
                                 int64_t* labels) const {
  std::shared_ptr<const Generation> g = For(version);
  if (!g) return;
  std::shared_lock<RwLock> lock(g->mu_);
  const size_t width = static_cast<size_t>(shape_.row_bytes);
  if (rows != nullptr && !g->features_.empty())
    for (size_t i = 0; i < nodes.size(); ++i)
      if (const std::string* row = Latest(g->features_, nodes[i], version))
        std::memcpy(rows + i * width, row->data(), width);
  if (labels != nullptr && !g->labels_.empty())
    for (size_t i = 0; i < nodes.size(); ++i)
      if (const int64_t* label = Latest(g->labels_, nodes[i], version)) labels[i] = *label;
}

int64_t Generation::DeltaBytes(int64_t row_bytes) const {
  // The index's bytes hold the RowDeltas and the added edges' runs.
  return rows_.page_bytes() + removals_ * static_cast<int64_t>(sizeof(Removed)) +
         feature_versions_ * (row_bytes + 48) + label_versions_ * 48;
}

DeltaStats VersionedPartition::Stats() const {
  std::shared_ptr<Generation> cur, prev;
  {
    std::lock_guard<std::mutex> lock(gen_mu_);
    cur = current_;
    prev = previous_;
  }
  DeltaStats s;
  {
    std::shared_lock<RwLock> lock(cur->mu_);
    s.committed = committed();
    s.rows_touched = cur->rows_.size();
    s.added_edges = cur->added_;
    s.removals = cur->removals_;
    s.feature_rows = cur->feature_versions_;
    s.labels = cur->label_versions_;
    s.bytes = cur->DeltaBytes(shape_.row_bytes);
  }
  s.applied = std::max<uint64_t>(s.committed, applied_.load(std::memory_order_relaxed));
  s.base_version = cur->base_version_;
  s.base_bytes = cur->own_ ? cur->own_->bytes() : 0;
  s.compactions = compactions_.load();
  s.last_compaction_s = last_compaction_s_.load();
  if (prev) {
    std::shared_lock<RwLock> lock(prev->mu_);
    s.retained = static_cast<int64_t>(prev->base_version_);
    s.retained_bytes = (prev->own_ ? prev->own_->bytes() : 0) + prev->DeltaBytes(shape_.row_bytes);
  }
  return s;
}

Status VersionedPartition::Compact(uint64_t version, const CompactionOptions& options,
                                   CompactionReport* report) {
  std::unique_lock<std::mutex> one(compact_mu_, std::try_to_lock);
  if (!one.owns_lock()) return Status::Unavailable("a compaction of this partition is running");
  const auto t0 = std::chrono::steady_clock::now();
  if (version > committed())
    return Status::InvalidArgument("compaction at version " + std::to_string(version) +
                                   ", above the committed " + std::to_string(committed()));
  std::shared_ptr<Generation> old;
  {
    std::lock_guard<std::mutex> lock(gen_mu_);
    if (previous_)
      return Status::Aborted(
          "the generation before the last compaction (base version " +
          std::to_string(previous_->base_version_) + ") is still kept for reads below version " +
          std::to_string(current_->base_version_) +
          ": a new compaction waits until it is released (no read for the retention time)");
    old = current_;
  }
  if (version <= old->base_version_)
    return Status::InvalidArgument("compaction at version " + std::to_string(version) +
                                   ": the base already holds version " +
                                   std::to_string(old->base_version_));
  const Generation& g = *old;
  const sampler::PartitionView& base = g.base_;
  const sampler::CsrGraph& graph = g.graph_;
  const int64_t n = node_end_ - node_begin_;
  const bool typed = shape_.num_edge_types > 0, timed = shape_.temporal;
  const bool weighted = graph.weights() != nullptr, narrow = graph.indices32() != nullptr;
  int64_t most_edges = 0;
  {
    std::shared_lock<RwLock> lock(g.mu_);
    most_edges = graph.num_edges() + g.added_;  // removals only make it smaller
  }
  const int64_t per_edge =
      (narrow ? 4 : 8) + 8 + (timed ? 8 : 0) + (typed ? 4 : 0) + (weighted ? 4 : 0);
  const int64_t most_bytes = (n + 1) * 8 + most_edges * per_edge;
  if (options.max_bytes > 0 && most_bytes > options.max_bytes)
    return Status::ResourceExhausted("compaction needs up to " + std::to_string(most_bytes >> 20) +
                                     " MiB for the new base's arrays, over its budget of " +
                                     std::to_string(options.max_bytes >> 20) + " MiB");
  auto arrays = std::make_unique<Generation::Arrays>();
  Generation::Arrays& a = *arrays;
  a.indptr.reserve(static_cast<size_t>(n + 1));
  a.indptr.push_back(0);
  auto reserve = [&](auto& v, bool want) {
    if (want) v.reserve(static_cast<size_t>(most_edges));
  };
  reserve(a.indices32, narrow);
  reserve(a.indices, !narrow);
  reserve(a.edge_ids, true);
  reserve(a.times, timed);
  reserve(a.types, typed);
  reserve(a.weights, weighted);
  const int64_t* indptr = graph.indptr();
  int64_t merged_rows = 0;
  Row row;
  // Rows in chunks under the delta's shared lock: writers wait a chunk at
  // most, and what a chunk reads at `version` no writer changes (later
  // batches have higher sequence numbers).
  constexpr int64_t kChunk = 4096;
  for (int64_t r0 = 0; r0 < n; r0 += kChunk) {
    std::shared_lock<RwLock> lock(g.mu_);
    for (int64_t r = r0; r < std::min(n, r0 + kChunk); ++r) {
      if (MergedRowLocked(g, node_begin_ + r, version, &row)) {
        ++merged_rows;
        for (size_t k = 0; k < row.neighbors.size(); ++k) {
          if (narrow)
            a.indices32.push_back(static_cast<int32_t>(row.neighbors[k]));
          else
            a.indices.push_back(row.neighbors[k]);
          a.edge_ids.push_back(row.edge_ids[k]);
          if (timed) a.times.push_back(row.times[k]);
          if (typed) a.types.push_back(row.types[k]);
          if (weighted) a.weights.push_back(row.weights[k]);
        }
      } else {
        for (int64_t e = indptr[r]; e < indptr[r + 1]; ++e) {
          if (narrow)
            a.indices32.push_back(graph.indices32()[e]);
          else
            a.indices.push_back(graph.indices()[e]);
          a.edge_ids.push_back(graph.edge_id(e));
          if (timed) a.times.push_back(base.edge_times[e]);
          if (typed) a.types.push_back(base.edge_types.empty() ? 0 : base.edge_types[e]);
          if (weighted) a.weights.push_back(graph.weights()[e]);
        }
      }
      a.indptr.push_back(static_cast<int64_t>(narrow ? a.indices32.size() : a.indices.size()));
    }
  }
  const int64_t edges = static_cast<int64_t>(a.edge_ids.size()), bytes = a.bytes();
  std::shared_ptr<Generation> ng = NewGeneration(base, std::move(arrays), version);
  // The hand-over: writers wait while what they applied above `version` is
  // carried into the new generation, then it serves every read at `version`
  // or later.
  int64_t carried = 0;
  {
    std::lock_guard<std::mutex> writing(write_mu_);
    std::shared_lock<RwLock> lock(g.mu_);
    uint64_t first_change = 0;
    Generation::ForEachRow(g.rows_, n, [&](int64_t r, const RowDelta& d) {
      const bool later =
          d.last_added_seq > version || (!d.removed.empty() && d.removed.back().seq > version);
      if (!later) return;
      RowDelta& nd = ng->rows_.Get(r);
      for (const Added& x : d.added)
        if (x.seq > version) ng->rows_.Add(&nd, x);
      for (const Removed& x : d.removed)
        if (x.seq > version) nd.removed.push_back(x);
      nd.first_seq = std::min(nd.added.empty() ? UINT64_MAX : nd.added.front().seq,
                              nd.removed.empty() ? UINT64_MAX : nd.removed.front().seq);
      if (first_change == 0 || nd.first_seq < first_change) first_change = nd.first_seq;
      ng->added_ += static_cast<int64_t>(nd.added.size());
      if (static_cast<int64_t>(nd.added.size()) > ng->most_added_.load())
        ng->most_added_.store(static_cast<int64_t>(nd.added.size()));
      ng->removals_ += static_cast<int64_t>(nd.removed.size());
      carried += static_cast<int64_t>(nd.added.size() + nd.removed.size());
    });
    ng->first_edge_change_.store(first_change, std::memory_order_release);
    // Every added edge above `version` was carried: the ordinal after the
    // batches up to it is what a base file at `version` records.
    ng->base_ordinal_ = next_ordinal_ - ng->added_;
    // Feature rows and labels: the newest at or below `version`, and every later one.
    auto fold = [&](const auto& from, auto& to, int64_t* count) {
      for (const auto& [node, versions] : from) {
        auto& out = to[node].v;
        for (const auto& sv : versions.v) {
          if (sv.first <= version) {
            if (out.empty())
              out.push_back(sv);
            else
              out.back() = sv;
          } else {
            out.push_back(sv);
            ++carried;
          }
        }
        *count += static_cast<int64_t>(out.size());
      }
    };
    fold(g.features_, ng->features_, &ng->feature_versions_);
    fold(g.labels_, ng->labels_, &ng->label_versions_);
    ng->last_read_ns_.store(NowNs());
    old->last_read_ns_.store(NowNs());  // kept at least the retention time from now
    std::lock_guard<std::mutex> gens(gen_mu_);
    previous_ = current_;
    current_ = ng;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++compactions_;
  last_compaction_s_.store(seconds);
  if (report != nullptr) {
    report->version = version;
    report->rows_merged = merged_rows;
    report->edges = edges;
    report->bytes = bytes;
    report->carried = carried;
    report->seconds = seconds;
  }
  return Status::OK();
}

std::shared_ptr<Generation> VersionedPartition::NewGeneration(
    const sampler::PartitionView& like, std::unique_ptr<Generation::Arrays> arrays,
    uint64_t version) const {
  Generation::Arrays& a = *arrays;
  const bool narrow = !a.indices32.empty() || (a.indices.empty() && !like.indices32.empty());
  sampler::PartitionView nv = like;  // features, labels, names and the rest are the base's
  nv.indptr = ArrayView<const int64_t>(a.indptr);
  nv.indices = narrow ? ArrayView<const int64_t>() : ArrayView<const int64_t>(a.indices);
  nv.indices32 = narrow ? ArrayView<const int32_t>(a.indices32) : ArrayView<const int32_t>();
  nv.edge_ids = ArrayView<const int64_t>(a.edge_ids);
  nv.edge_times = shape_.temporal ? ArrayView<const int64_t>(a.times) : ArrayView<const int64_t>();
  nv.edge_types =
      shape_.num_edge_types > 0 ? ArrayView<const int32_t>(a.types) : ArrayView<const int32_t>();
  nv.edge_weights =
      a.weights.empty() ? ArrayView<const float>() : ArrayView<const float>(a.weights);
  std::shared_ptr<Generation> ng(new Generation(nv, version));
  if (shape_.temporal)
    ng->time_index_ =
        sampler::PrepareTimeOrder(ng->graph_, a.times.data(), &a.time_order,
                                  shape_.num_edge_types > 0 ? a.types.data() : nullptr);
  int64_t max_degree = 0;
  for (size_t r = 0; r + 1 < a.indptr.size(); ++r)
    max_degree = std::max(max_degree, a.indptr[r + 1] - a.indptr[r]);
  ng->max_degree_ = max_degree;
  ng->own_ = std::move(arrays);  // the vectors' memory stays where nv points
  return ng;
}

Status VersionedPartition::BaseToWrite(std::shared_ptr<const Generation>* out, BaseOverlay* overlay,
                                       int64_t* next_ordinal) const {
  std::shared_ptr<const Generation> g;
  {
    std::lock_guard<std::mutex> lock(gen_mu_);
    g = current_;
  }
  if (g->base_version_ == 0)
    return Status::NotFound("the base is the dataset's own: no compaction made one");
  const uint64_t c = g->base_version_;
  std::shared_lock<RwLock> lock(g->mu_);
  *overlay = BaseOverlay();
  // A compaction left one version at or below c first where a node has one.
  for (const auto& [node, versions] : g->features_)
    if (!versions.v.empty() && versions.v.front().first <= c) {
      overlay->feature_nodes.push_back(node);
      overlay->feature_seqs.push_back(versions.v.front().first);
      overlay->feature_bytes += versions.v.front().second;
    }
  for (const auto& [node, versions] : g->labels_)
    if (!versions.v.empty() && versions.v.front().first <= c) {
      overlay->label_nodes.push_back(node);
      overlay->label_seqs.push_back(versions.v.front().first);
      overlay->labels.push_back(versions.v.front().second);
    }
  *next_ordinal = g->base_ordinal_;
  *out = std::move(g);
  return Status::OK();
}

Status VersionedPartition::RestoreBase(std::unique_ptr<Generation::Arrays> arrays, uint64_t version,
                                       int64_t next_ordinal, const BaseOverlay& overlay) {
  std::lock_guard<std::mutex> writing(write_mu_);
  if (applied_.load() != 0 || current_->base_version_ != 0)
    return Status::Internal("a base file is restored before any batch is applied");
  if (static_cast<int64_t>(arrays->indptr.size()) != node_end_ - node_begin_ + 1)
    return Status::InvalidArgument("a base of " + std::to_string(arrays->indptr.size() - 1) +
                                   " rows for a partition of " +
                                   std::to_string(node_end_ - node_begin_));
  std::shared_ptr<Generation> ng = NewGeneration(current_->base_, std::move(arrays), version);
  ng->base_ordinal_ = next_ordinal;
  const size_t row_bytes = static_cast<size_t>(shape_.row_bytes);
  for (size_t i = 0; i < overlay.feature_nodes.size(); ++i)
    ng->features_[overlay.feature_nodes[i]].v.emplace_back(
        overlay.feature_seqs[i], overlay.feature_bytes.substr(i * row_bytes, row_bytes));
  for (size_t i = 0; i < overlay.label_nodes.size(); ++i)
    ng->labels_[overlay.label_nodes[i]].v.emplace_back(overlay.label_seqs[i], overlay.labels[i]);
  ng->feature_versions_ = static_cast<int64_t>(ng->features_.size());
  ng->label_versions_ = static_cast<int64_t>(ng->labels_.size());
  next_ordinal_ = next_ordinal;
  applied_.store(version);
  {
    std::lock_guard<std::mutex> gens(gen_mu_);
    current_ = std::move(ng);  // the dataset's base goes (its arrays with it, where adopted)
  }
  Publish(version);
  return Status::OK();
}

void VersionedPartition::AdoptBase(std::unique_ptr<Generation::Arrays> arrays) {
  std::lock_guard<std::mutex> lock(gen_mu_);
  if (current_->base_version_ == 0 && !current_->own_) current_->own_ = std::move(arrays);
}

bool VersionedPartition::ReleaseIdle(double idle_s) {
  std::shared_ptr<Generation> dropped;  // freed outside the lock
  {
    std::lock_guard<std::mutex> lock(gen_mu_);
    if (!previous_) return false;
    const int64_t idle = NowNs() - previous_->last_read_ns_.load(std::memory_order_relaxed);
    if (static_cast<double>(idle) < idle_s * 1e9) return false;
    dropped = std::move(previous_);
    previous_.reset();
  }
  return true;
}

}  // namespace fanout::live
