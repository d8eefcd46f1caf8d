#include "live/versioned_partition.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <numeric>

namespace fanout::live {

namespace {

std::string Op(const char* kind, size_t i) { return std::string(kind) + " " + std::to_string(i); }

}  // namespace

VersionedPartition::VersionedPartition(const sampler::PartitionView& base, LiveShape shape)
    : base_(base), graph_(base.Graph()), shape_(shape), rows_(base.node_end - base.node_begin) {}

Status VersionedPartition::Check(const UpdateBatch& b) const {
  const int64_t n = shape_.num_nodes_total;
  auto node_in_range = [&](int64_t v) { return v >= 0 && v < n; };
  auto check_edge = [&](const EdgeUpdate& e, const std::string& op, bool removal) -> Status {
    if (!Owns(e.src))
      return Status::InvalidArgument(
          op + ": source " + std::to_string(e.src) + " is not in this partition's rows [" +
          std::to_string(base_.node_begin) + ", " + std::to_string(base_.node_end) +
          ") (the client routes each edge to its source's partition)");
    if (!node_in_range(e.dst))
      return Status::InvalidArgument(op + ": destination " + std::to_string(e.dst) +
                                     " is out of range [0, " + std::to_string(n) + ")");
    if (shape_.num_edge_types > 0) {
      if (e.type >= shape_.num_edge_types || e.type < (removal ? -1 : 0))
        return Status::InvalidArgument(op + ": edge type " + std::to_string(e.type) +
                                       " is not one of the dataset's " +
                                       std::to_string(shape_.num_edge_types));
    } else if (e.type != 0 && !(removal && e.type == -1)) {
      return Status::InvalidArgument(op + ": edge type " + std::to_string(e.type) +
                                     " on a homogeneous dataset (give 0)");
    }
    if (!removal && !(e.weight >= 0 && e.weight < 3.0e38f))
      return Status::InvalidArgument(op + ": weight " + std::to_string(e.weight) +
                                     " is not a finite non-negative number");
    if (!removal && !shape_.temporal && e.time != 0)
      return Status::InvalidArgument(op + ": a time on a dataset without edge times");
    return Status::OK();
  };
  for (size_t i = 0; i < b.add_edges.size(); ++i)
    FANOUT_RETURN_IF_ERROR(check_edge(b.add_edges[i], Op("added edge", i), false));
  for (size_t i = 0; i < b.remove_edges.size(); ++i)
    FANOUT_RETURN_IF_ERROR(check_edge(b.remove_edges[i], Op("removed edge", i), true));
  if (!b.feature_rows.empty()) {
    if (shape_.row_bytes == 0)
      return Status::InvalidArgument("feature rows given for a dataset without features");
    if (b.row_bytes != shape_.row_bytes)
      return Status::InvalidArgument("feature rows of " + std::to_string(b.row_bytes) +
                                     " bytes; this dataset's rows are " +
                                     std::to_string(shape_.row_bytes) + " bytes");
    if (static_cast<int64_t>(b.feature_bytes.size()) !=
        b.row_bytes * static_cast<int64_t>(b.feature_rows.size()))
      return Status::InvalidArgument("feature bytes do not match their rows");
  }
  for (size_t i = 0; i < b.feature_rows.size(); ++i)
    if (!Owns(b.feature_rows[i]))
      return Status::InvalidArgument(Op("feature row", i) + ": node " +
                                     std::to_string(b.feature_rows[i]) +
                                     " is not in this partition");
  if (b.labels.size() != b.label_rows.size())
    return Status::InvalidArgument("labels and their rows differ in count");
  if (!b.label_rows.empty() && !shape_.has_labels)
    return Status::InvalidArgument("labels given for a dataset without labels");
  for (size_t i = 0; i < b.label_rows.size(); ++i)
    if (!Owns(b.label_rows[i]))
      return Status::InvalidArgument(Op("label", i) + ": node " + std::to_string(b.label_rows[i]) +
                                     " is not in this partition");
  return Status::OK();
}

void VersionedPartition::Apply(uint64_t seq, const UpdateBatch& b) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  for (const EdgeUpdate& e : b.add_edges) {
    RowDelta& d = rows_.Get(e.src - base_.node_begin);
    if (d.first_seq == 0) d.first_seq = seq;
    const int64_t eid = shape_.base_edges_total + shape_.num_parts * added_ + base_.part;
    ++added_;
    d.added.push_back({e.dst, eid, e.time, e.weight, e.type, seq});
  }
  for (const EdgeUpdate& e : b.remove_edges) {
    RowDelta& d = rows_.Get(e.src - base_.node_begin);
    if (d.first_seq == 0) d.first_seq = seq;
    d.removed.push_back({e.dst, e.type, seq});
    ++removals_;
  }
  for (size_t i = 0; i < b.feature_rows.size(); ++i) {
    features_[b.feature_rows[i]].v.emplace_back(
        seq, b.feature_bytes.substr(i * static_cast<size_t>(b.row_bytes),
                                    static_cast<size_t>(b.row_bytes)));
    ++feature_versions_;
  }
  for (size_t i = 0; i < b.label_rows.size(); ++i) {
    labels_[b.label_rows[i]].v.emplace_back(seq, b.labels[i]);
    ++label_versions_;
  }
  applied_ = seq;
  if ((!b.add_edges.empty() || !b.remove_edges.empty()) &&
      first_edge_change_.load(std::memory_order_relaxed) == 0)
    first_edge_change_.store(seq, std::memory_order_release);
}

void VersionedPartition::Publish(uint64_t seq) {
  uint64_t c = committed_.load(std::memory_order_relaxed);
  while (seq > c && !committed_.compare_exchange_weak(c, seq, std::memory_order_release)) {
  }
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
  return Status::OK();
}

bool VersionedPartition::RemovedBy(const RowDelta& d, int64_t dst, int32_t type, uint64_t since,
                                   uint64_t version) {
  for (const Removed& r : d.removed) {
    if (r.seq > version) break;  // log order: the rest are later
    if (r.seq > since && r.dst == dst && (r.type < 0 || r.type == type)) return true;
  }
  return false;
}

bool VersionedPartition::MergedRow(int64_t node, uint64_t version, Row* out) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return MergedRowLocked(node, version, out);
}

bool VersionedPartition::MergedRowLocked(int64_t node, uint64_t version, Row* out) const {
  if (!Owns(node)) return false;
  const RowDelta* found = rows_.Find(node - base_.node_begin);
  if (found == nullptr || found->first_seq == 0 || found->first_seq > version) return false;
  const RowDelta& d = *found;
  out->neighbors.clear();
  out->edge_ids.clear();
  out->times.clear();
  out->types.clear();
  const int64_t row = node - base_.node_begin;
  const int64_t* indptr = graph_.indptr();
  const bool typed = shape_.num_edge_types > 0, timed = shape_.temporal;
  for (int64_t e = indptr[row]; e < indptr[row + 1]; ++e) {
    const int64_t dst = graph_.neighbor(e);
    const int32_t type = typed && !base_.edge_types.empty() ? base_.edge_types[e] : 0;
    if (RemovedBy(d, dst, type, 0, version)) continue;
    out->neighbors.push_back(dst);
    out->edge_ids.push_back(graph_.edge_id(e));
    out->times.push_back(timed && !base_.edge_times.empty() ? base_.edge_times[e] : 0);
    out->types.push_back(type);
  }
  for (const Added& a : d.added) {
    if (a.seq > version) break;
    if (RemovedBy(d, a.dst, a.type, a.seq, version)) continue;
    out->neighbors.push_back(a.dst);
    out->edge_ids.push_back(a.eid);
    out->times.push_back(a.time);
    out->types.push_back(a.type);
  }
  if (typed || timed) {
    // The store's row order: by type (heterogeneous) or time (temporal),
    // stable, so base edges stay before added ones at an equal key.
    std::vector<size_t> order(out->neighbors.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return typed ? out->types[x] < out->types[y] : out->times[x] < out->times[y];
    });
    Row sorted;
    for (size_t i : order) {
      sorted.neighbors.push_back(out->neighbors[i]);
      sorted.edge_ids.push_back(out->edge_ids[i]);
      sorted.times.push_back(out->times[i]);
      sorted.types.push_back(out->types[i]);
    }
    *out = std::move(sorted);
  }
  return true;
}

Status VersionedPartition::SampleHop(ArrayView<const int64_t> nodes, int64_t fanout, int64_t hop,
                                     uint64_t request_seed, const sampler::SamplingOptions& options,
                                     uint64_t version, sampler::OneHopResult* out) const {
  if (options.weighted || options.labor)
    return Status::NotSupported(
        "sampling a live partition at a version is uniform for now (not weighted, not LABOR)");
  sampler::SamplingOptions o = options;
  o.node_offset = base_.node_begin;
  for (int64_t v : nodes)
    if (!Owns(v))
      return Status::InvalidArgument("node " + std::to_string(v) + " is not in this partition");
  sampler::HopSampler hs;
  if (EdgesAsBase(version))
    return hs.Sample(graph_, nodes, fanout, hop, request_seed, o, nullptr, out);
  // Writers wait while the hop reads the delta (one lock for the hop).
  std::shared_lock<std::shared_mutex> lock(mu_);
  const size_t n = nodes.size();
  const int64_t begin = base_.node_begin;
  const int64_t* indptr = graph_.indptr();
  const bool ordered = shape_.num_edge_types > 0 || shape_.temporal;
  // One pass over the nodes, pipelined (the slot, the delta it names, that
  // delta's newest added edge and CSR row, each some nodes ahead):
  // a node whose row no batch at or below `version` changed is sampled
  // through the CSR below (its draws depend on nothing but the node, hop and
  // seed). A changed row that keeps no order and lost nothing at `version`
  // merges as the base row, then the added edges at or below `version` (a
  // prefix: log order): its draws are made here, each target recorded (a
  // base edge or an added one), nothing copied. Other changed rows are merged
  // whole (MergedRowLocked).
  enum Kind : char { kPlain, kFast, kMerged };
  struct Draw {
    int64_t e;       // a base edge (a == null)
    const Added* a;  // or an added edge
  };
  std::vector<char> kind(n, kPlain);
  std::vector<Draw> draws;
  std::vector<size_t> draws_at(n + 1, 0);
  std::vector<int64_t> plain, pos;
  bool any = false;
  // Distances, in nodes and in draws, that cover a memory miss on this
  // kind of machine (a row's ~15 draws share a line or two of the CSR).
  constexpr size_t kSlotAhead = 48, kDeltaAhead = 24, kRowAhead = 12, kDrawAhead = 128;
  auto delta_of = [&](size_t i) -> const RowDelta* {
    const RowDelta* d = rows_.Find(nodes[i] - begin);
    return d != nullptr && d->first_seq != 0 && d->first_seq <= version ? d : nullptr;
  };
  for (size_t i = 0; i < n; ++i) {
    if (i + kSlotAhead < n)
      if (RowDelta* const* slot = rows_.Slot(nodes[i + kSlotAhead] - begin))
        __builtin_prefetch(slot);
    if (i + kDeltaAhead < n)
      if (const RowDelta* ahead = rows_.Find(nodes[i + kDeltaAhead] - begin))
        __builtin_prefetch(ahead);
    if (i + kRowAhead < n)
      if (const RowDelta* ahead = delta_of(i + kRowAhead)) {
        __builtin_prefetch(indptr + (nodes[i + kRowAhead] - begin));
        if (!ahead->added.empty()) __builtin_prefetch(&ahead->added.back());
      }
    draws_at[i] = draws.size();
    const RowDelta* d = delta_of(i);
    if (d == nullptr) {
      plain.push_back(nodes[i]);
      continue;
    }
    any = true;
    if (ordered || (!d->removed.empty() && d->removed.front().seq <= version)) {
      kind[i] = kMerged;
      continue;
    }
    kind[i] = kFast;
    const int64_t r = nodes[i] - begin, b0 = indptr[r], base_degree = indptr[r + 1] - b0;
    size_t added = d->added.size();
    if (added > 0 && d->added.back().seq > version)
      added = static_cast<size_t>(
          std::upper_bound(d->added.begin(), d->added.end(), version,
                           [](uint64_t v, const Added& x) { return v < x.seq; }) -
          d->added.begin());
    FANOUT_RETURN_IF_ERROR(sampler::SampleRowPositionsFor(
        nodes[i], base_degree + static_cast<int64_t>(added), fanout, hop, request_seed, o, &pos));
    for (int64_t p : pos) {
      if (p < base_degree)
        draws.push_back({b0 + p, nullptr});
      else
        draws.push_back({-1, &d->added[static_cast<size_t>(p - base_degree)]});
    }
  }
  draws_at[n] = draws.size();
  if (!any) return hs.Sample(graph_, nodes, fanout, hop, request_seed, o, nullptr, out);
  sampler::OneHopResult base;
  FANOUT_RETURN_IF_ERROR(hs.Sample(graph_, ArrayView<const int64_t>(plain), fanout, hop,
                                   request_seed, o, nullptr, &base));
  out->offsets.clear();
  out->neighbors.clear();
  out->edge_ids.clear();
  out->edge_types.clear();
  out->edge_weights.clear();
  out->offsets.push_back(0);
  out->neighbors.reserve(base.neighbors.size() + draws.size());
  auto prefetch_draw = [&](size_t k) {
    if (k >= draws.size()) return;
    if (draws[k].a == nullptr)
      __builtin_prefetch(graph_.neighbor_address(draws[k].e));
    else
      __builtin_prefetch(draws[k].a);
  };
  for (size_t k = 0; k < kDrawAhead; ++k) prefetch_draw(k);
  size_t next_plain = 0;
  Row row;
  for (size_t i = 0; i < n; ++i) {
    if (kind[i] == kPlain) {
      const int64_t b = base.offsets[next_plain], e = base.offsets[next_plain + 1];
      for (int64_t x = b; x < e; ++x) {
        out->neighbors.push_back(base.neighbors[x]);
        if (o.with_edge_ids) out->edge_ids.push_back(base.edge_ids[x]);
      }
      ++next_plain;
    } else if (kind[i] == kFast) {
      for (size_t k = draws_at[i]; k < draws_at[i + 1]; ++k) {
        prefetch_draw(k + kDrawAhead);
        const Draw& w = draws[k];
        if (w.a == nullptr) {
          out->neighbors.push_back(graph_.neighbor(w.e));
          if (o.with_edge_ids) out->edge_ids.push_back(graph_.edge_id(w.e));
        } else {
          out->neighbors.push_back(w.a->dst);
          if (o.with_edge_ids) out->edge_ids.push_back(w.a->eid);
        }
      }
    } else {
      MergedRowLocked(nodes[i], version, &row);
      FANOUT_RETURN_IF_ERROR(
          sampler::SampleRowPositionsFor(nodes[i], static_cast<int64_t>(row.neighbors.size()),
                                         fanout, hop, request_seed, o, &pos));
      for (int64_t p : pos) {
        out->neighbors.push_back(row.neighbors[p]);
        if (o.with_edge_ids) out->edge_ids.push_back(row.edge_ids[p]);
      }
    }
    out->offsets.push_back(static_cast<int64_t>(out->neighbors.size()));
  }
  return Status::OK();
}

template <typename T>
const T* VersionedPartition::Latest(const std::unordered_map<int64_t, Versions<T>>& m, int64_t node,
                                    uint64_t version) {
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
  std::shared_lock<std::shared_mutex> lock(mu_);
  const std::string* row = Latest(features_, node, version);
  if (row != nullptr) *out = *row;
  return row != nullptr;
}

bool VersionedPartition::Label(int64_t node, uint64_t version, int64_t* out) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  const int64_t* label = Latest(labels_, node, version);
  if (label != nullptr) *out = *label;
  return label != nullptr;
}

void VersionedPartition::Overlay(ArrayView<const int64_t> nodes, uint64_t version, char* rows,
                                 int64_t* labels) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  const size_t width = static_cast<size_t>(shape_.row_bytes);
  if (rows != nullptr && !features_.empty())
    for (size_t i = 0; i < nodes.size(); ++i)
      if (const std::string* row = Latest(features_, nodes[i], version))
        std::memcpy(rows + i * width, row->data(), width);
  if (labels != nullptr && !labels_.empty())
    for (size_t i = 0; i < nodes.size(); ++i)
      if (const int64_t* label = Latest(labels_, nodes[i], version)) labels[i] = *label;
}

DeltaStats VersionedPartition::Stats() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  DeltaStats s;
  s.committed = committed();
  s.applied = applied_;
  s.rows_touched = rows_.size();
  s.added_edges = added_;
  s.removals = removals_;
  s.feature_rows = feature_versions_;
  s.labels = label_versions_;
  s.bytes = added_ * static_cast<int64_t>(sizeof(Added)) +
            removals_ * static_cast<int64_t>(sizeof(Removed)) +
            s.rows_touched * static_cast<int64_t>(sizeof(RowDelta) + 8) + rows_.page_bytes() +
            feature_versions_ * (shape_.row_bytes + 48) + label_versions_ * 48;
  return s;
}

}  // namespace fanout::live
