// WritePartitionedStream: the dataset writer for graphs larger than memory
// (bounded_partition.h says how it works and what it costs).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/cpu.h"
#include "datasets/bounded_partition.h"
#include "datasets/detail/store_write.h"
#include "datasets/progress.h"

namespace fs = std::filesystem;

namespace fanout::datasets {

std::string FormatBytes(double b) {
  char buf[32];
  if (b >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.0f bytes", b);
  return buf;
}

int64_t UsableMemoryBytes(std::string* source) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  int64_t physical = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : int64_t{4} << 30;
  if (source) *source = "this machine's memory";
  // cgroup v2, then v1: a container's limit, where lower.
  for (const char* path :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream f(path);
    std::string text;
    if (!(f >> text) || text == "max") continue;
    char* end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (end != nullptr && *end == '\0' && v > 0 && v < physical) {
      if (source) *source = std::string("the cgroup's memory limit (") + path + ")";
      return v;
    }
  }
  return physical;
}

std::string SpillFilePrefix() { return "fanout-spill-" + std::to_string(getpid()) + "-"; }

void RemoveStaleSpillFiles(const std::string& spill_dir) {
  std::error_code ec;
  const std::string prefix = "fanout-spill-";
  for (fs::directory_iterator it(spill_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && pid != getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code rm;
      fs::remove_all(it->path(), rm);
    }
  }
}

namespace {

// One spilled edge: its stored row, its neighbor (both new ids) and its id.
struct Record {
  int64_t row, nbr, eid;
};
// ... and its time and weight, in graphs whose edges have either.
// ... and its time, weight and type, in graphs whose edges have any.
struct AttrRecord {
  int64_t row, nbr, eid, time;
  float weight;
  int32_t type;
};

using Placed = detail::PlacedEdge;

// An append-only spill file of one record type with its own buffer.
class SpillWriter {
 public:
  SpillWriter(std::string path, size_t buffer_bytes) : path_(std::move(path)) {
    buf_.resize(std::max<size_t>(buffer_bytes, sizeof(AttrRecord)));
  }
  ~SpillWriter() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Open() {
    fd_ = ::open(path_.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd_ < 0)
      return Status::IOError("cannot create spill file " + path_ + ": " + std::strerror(errno));
    return Status::OK();
  }
  // False once a write failed (status() says why).
  template <typename R>
  bool Append(const R& r) {
    std::memcpy(buf_.data() + used_, &r, sizeof(R));
    used_ += sizeof(R);
    if (used_ + sizeof(R) > buf_.size()) return Flush().ok();
    return true;
  }
  Status Flush() {
    if (!status_.ok()) return status_;
    const char* p = buf_.data();
    size_t left = used_;
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        status_ = Status::IOError("writing spill file " + path_ + " (" +
                                  FormatBytes(static_cast<double>(bytes_)) +
                                  " written): " + std::strerror(n < 0 ? errno : ENOSPC));
        return status_;
      }
      p += n;
      left -= static_cast<size_t>(n);
      bytes_ += n;
    }
    used_ = 0;
    return Status::OK();
  }
  Status Close() {
    FANOUT_RETURN_IF_ERROR(Flush());
    if (::close(fd_) != 0) {
      fd_ = -1;
      return Status::IOError("closing spill file " + path_ + ": " + std::strerror(errno));
    }
    fd_ = -1;
    std::vector<char>().swap(buf_);
    return Status::OK();
  }
  const Status& status() const { return status_; }
  int64_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<char> buf_;
  size_t used_ = 0;
  int64_t bytes_ = 0;
  Status status_;
};

// Reads a spill file of R records front to back, calling fn(record) for each.
template <typename R, typename Fn>
Status ReadSpill(const std::string& path, std::vector<R>* buf, int64_t* bytes_read, Fn&& fn) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::IOError("cannot open spill file " + path + ": " + std::strerror(errno));
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  char* base = reinterpret_cast<char*>(buf->data());
  const size_t cap = buf->size() * sizeof(R);
  size_t have = 0;
  Status st;
  for (;;) {
    ssize_t n = ::read(fd, base + have, cap - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      st = Status::IOError("reading spill file " + path + ": " + std::strerror(errno));
      break;
    }
    have += static_cast<size_t>(n);
    *bytes_read += n;
    const size_t whole = have / sizeof(R);
    for (size_t i = 0; i < whole; ++i) fn((*buf)[i]);
    const size_t rest = have - whole * sizeof(R);
    if (rest > 0) std::memmove(base, base + whole * sizeof(R), rest);
    have = rest;
    if (n == 0) {
      if (have != 0) st = Status::Corruption("spill file " + path + " ends inside a record");
      break;
    }
  }
  ::close(fd);
  return st;
}

// Inverts a permutation of [0, n) in place (p[p_old[i]] = i), with the sign
// bit as the visited mark: no second array.
void InvertPermutation(std::vector<int64_t>* perm) {
  int64_t* p = perm->data();
  const int64_t n = static_cast<int64_t>(perm->size());
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] < 0) continue;
    int64_t prev = i, cur = p[i];
    while (cur != i) {
      int64_t next = p[cur];
      p[cur] = ~prev;
      prev = cur;
      cur = next;
    }
    p[i] = ~prev;
  }
  for (int64_t i = 0; i < n; ++i) p[i] = ~p[i];
}

class StreamNodeSource final : public detail::NodeSource {
 public:
  explicit StreamNodeSource(const StreamedGraph& g) : g_(g) {}
  void FeatureRow(int64_t v, float* out) const override { g_.feature_row(v, out); }
  int64_t Label(int64_t v) const override { return g_.label(v); }
  uint8_t SplitOf(int64_t v) const override { return g_.split(v); }
  int64_t OriginalId(int64_t v) const override { return g_.original_id(v); }
  std::string_view Name(int64_t v) const override { return g_.name_of(v); }

 private:
  const StreamedGraph& g_;
};

}  // namespace

StreamedGraph StreamOf(std::shared_ptr<const RawDataset> ds) {
  StreamedGraph g;
  const RawDataset* d = ds.get();
  g.name = d->name;
  g.format = d->format;
  g.num_nodes = d->num_nodes;
  g.num_edges = d->num_edges();
  g.feature_dim = d->features.empty() ? 0 : d->feature_dim;
  g.num_classes = d->num_classes;
  g.class_names = d->class_names;
  g.has_labels = !d->labels.empty();
  g.has_split = !d->split.empty();
  g.has_names = !d->original_names.empty();
  g.for_each_edge = [d](const std::function<bool(int64_t, int64_t)>& fn) {
    for (int64_t i = 0; i < d->num_edges(); ++i)
      if (!fn(d->src[i], d->dst[i])) break;
    return Status::OK();
  };
  g.has_edge_times = !d->edge_times.empty();
  g.has_edge_weights = !d->edge_weights.empty();
  g.for_each_edge_attr = [d](const EdgeAttrFn& fn) {
    EdgeAttr e;
    for (int64_t i = 0; i < d->num_edges(); ++i) {
      e.src = d->src[i];
      e.dst = d->dst[i];
      e.time = d->edge_times.empty() ? 0 : d->edge_times[i];
      e.weight = d->edge_weights.empty() ? 1.0f : d->edge_weights[i];
      e.type = d->edge_type.empty() ? 0 : d->edge_type[i];
      if (!fn(e)) break;
    }
    return Status::OK();
  };
  if (d->hetero()) {
    g.node_types = d->node_types;
    g.edge_types = d->edge_types;
    g.type_feature_dims = d->type_feature_dims;
    g.node_type = [d](int64_t v) { return d->node_type[v]; };
  }
  g.feature_row = [d](int64_t v, float* out) {
    std::copy_n(d->features.data() + v * d->feature_dim, d->feature_dim, out);
  };
  g.label = [d](int64_t v) { return d->labels[v]; };
  g.split = [d](int64_t v) { return d->split[v]; };
  g.original_id = [d](int64_t v) { return d->original_ids[v]; };
  g.name_of = [d](int64_t v) -> std::string_view { return d->original_names[v]; };
  g.state = std::move(ds);
  return g;
}

namespace {

// WritePartitionedStream's phases, in order: PlanMemory, PartitionNodes,
// SpillEdges, PlanSlices, WriteParts, Commit. Each returns the first error;
// the guards remove the temporary and spill folders on any exit before Commit.
class BoundedWrite {
 public:
  BoundedWrite(const StreamedGraph& g, const PartitionOptions& po, const WriteOptions& o,
               const BoundedOptions& b)
      : g_(g),
        po_(po),
        o_(o),
        b_(b),
        n_(g.num_nodes),
        k_(po.num_parts),
        attrs_(g.has_edge_times || g.has_edge_weights || g.hetero()),
        edge_bytes_(attrs_ ? sizeof(Placed) : 16) {}

  Status Run(const std::string& dir_in, DatasetMeta* meta_out, BoundedReport* report_out) {
    FANOUT_RETURN_IF_ERROR(Check());
    FANOUT_RETURN_IF_ERROR(detail::PrepareOutput(dir_in, o_.overwrite, &dir_));
    FANOUT_RETURN_IF_ERROR(PlanMemory());
    FANOUT_RETURN_IF_ERROR(PartitionNodes());
    FANOUT_RETURN_IF_ERROR(SpillEdges());
    FANOUT_RETURN_IF_ERROR(PlanSlices());
    FANOUT_RETURN_IF_ERROR(WriteParts());
    FANOUT_RETURN_IF_ERROR(Commit());
    if (meta_out) *meta_out = meta_;
    if (report_out) *report_out = report_;
    return Status::OK();
  }

 private:
  static constexpr int64_t kMiB = int64_t{1} << 20;

  Status Check() const {
    if (po_.method == PartitionMethod::kMetis && po_.num_parts > 1)
      return Status::InvalidArgument(
          "METIS needs the whole graph in memory; bounded-memory partitioning takes --method "
          "random, range or hash");
    if (o_.chunk_nodes < 1)
      return Status::InvalidArgument("chunk size " + std::to_string(o_.chunk_nodes) +
                                     " must be positive");
    if (b_.memory_limit_bytes <= 0)
      return Status::InvalidArgument("the memory limit must be positive");
    if (n_ <= 0) return Status::InvalidArgument(g_.name + ": the graph has no nodes");
    if (attrs_ && !g_.for_each_edge_attr)
      return Status::InvalidArgument(g_.name +
                                     ": edge times, weights or types, but no play that gives them");
    if (g_.hetero() && (!g_.node_type || g_.edge_types.empty() ||
                        g_.type_feature_dims.size() != g_.node_types.size()))
      return Status::InvalidArgument(g_.name +
                                     ": node types without node type functions, edge "
                                     "types or per-type feature widths");
    return Status::OK();
  }

  // The memory plan. Fixed: what this process holds now, RocksDB's two
  // memtables, the spill buffers, one chunk of node values (a feature chunk
  // and its memtable copy), and a margin for the allocator and libraries.
  Status PlanMemory() {
    const int64_t limit = b_.memory_limit_bytes;
    write_buffer_ = std::clamp<int64_t>(limit / 16, 4 * kMiB, 256 * kMiB);
    groups_ = std::min(k_, 64);
    spill_buffer_ = std::clamp<int64_t>(limit / 32 / groups_, 64 << 10, kMiB);
    const int64_t chunk_rows = std::min(o_.chunk_nodes, n_);
    const int64_t node_chunk =
        2 * chunk_rows * g_.feature_dim * (FeatureDTypeSize(o_.feature_dtype) + 4) +
        chunk_rows * 24 + g_.feature_dim * 4;
    const int64_t baseline = ResidentSetBytes();
    const int64_t margin = std::max<int64_t>(24 * kMiB, limit / 32);
    const int64_t fixed = baseline + 2 * write_buffer_ + 8 * kMiB + groups_ * spill_buffer_ +
                          kReadBuffer + node_chunk + margin;
    // Per node: the part (4 bytes), the renumbering (8, inverted in place
    // later), the row starts (8); random partitioning shuffles with 8 more
    // before the renumbering exists.
    // Feature files add the heat of each node (4 more).
    // Heterogeneous graphs keep each node's type (4 more).
    const int64_t node_bytes =
        n_ * (4 + 8 + 8 + (o_.feature_files ? 4 : 0) + (g_.hetero() ? 4 : 0)) + 8;
    edge_budget_ = limit - fixed - node_bytes;
    // Below this a slice would re-read the spill for too few edges.
    const int64_t min_slice = 16 * kMiB;
    if (edge_budget_ < min_slice)
      return Status::ResourceExhausted(
          "--memory-limit " + FormatBytes(static_cast<double>(limit)) + " is too small for " +
          std::to_string(n_) + " nodes: their arrays need " +
          FormatBytes(static_cast<double>(node_bytes)) + ", buffers " +
          FormatBytes(static_cast<double>(fixed - baseline)) + ", and this process already holds " +
          FormatBytes(static_cast<double>(baseline)) + "; give at least " +
          FormatBytes(static_cast<double>(fixed + node_bytes + min_slice)) +
          " (more memory means fewer, larger slices per partition)");
    report_.slice_edge_budget = edge_budget_ / edge_bytes_;
    return Status::OK();
  }

  // Partition, renumber (part by part, input order inside a part), and make
  // the temporary output and spill folders.
  Status PartitionNodes() {
    FANOUT_RETURN_IF_ERROR(ComputeNodePartition(n_, g_.original_id, po_, &part_));
    meta_ = detail::BaseMeta(
        detail::MetaInputs{g_.name, g_.format, n_, 0, g_.feature_dim, g_.num_classes,
                           g_.class_names, g_.has_labels, g_.has_split, g_.has_names,
                           g_.has_edge_times, g_.has_edge_weights},
        k_, o_);
    if (g_.hetero()) {  // by part, then node type, then input order; each part's type bounds
      node_type_.resize(static_cast<size_t>(n_));
      const int32_t T = static_cast<int32_t>(g_.node_types.size());
      for (int64_t v = 0; v < n_; ++v) {
        node_type_[v] = g_.node_type(v);
        if (node_type_[v] < 0 || node_type_[v] >= T)
          return Status::InvalidArgument(g_.name + ": node " + std::to_string(v) + " has type " +
                                         std::to_string(node_type_[v]) + ", outside [0, " +
                                         std::to_string(T) + ")");
      }
      meta_.hetero.node_types = g_.node_types;
      meta_.hetero.edge_types = g_.edge_types;
      meta_.hetero.feature_dims = g_.type_feature_dims;
      meta_.hetero.incoming = o_.incoming;
      detail::RenumberByPart(part_, k_, &meta_.offsets, &perm_, node_type_, T,
                             &meta_.hetero.type_bounds);
    } else {
      detail::RenumberByPart(part_, k_, &meta_.offsets, &perm_);
    }
    detail::SizeFeatureFiles(&meta_);
    PartitionStats& stats = meta_.stats;
    stats.nodes.assign(k_, 0);
    stats.edges.assign(k_, 0);
    for (int p = 0; p < k_; ++p) stats.nodes[p] = meta_.offsets[p + 1] - meta_.offsets[p];

    FANOUT_RETURN_IF_ERROR(detail::CreateTemporary(dir_, meta_.dataset_id, &tmp_, &guard_));
    spill_ = b_.spill_dir.empty()
                 ? tmp_ + "/spill"
                 : b_.spill_dir + "/" + SpillFilePrefix() + meta_.dataset_id.substr(0, 8);
    std::error_code ec;
    if (!b_.spill_dir.empty() && !fs::is_directory(b_.spill_dir, ec))
      return Status::IOError("spill folder " + b_.spill_dir +
                             " is not a folder (or does not exist)");
    if (!b_.spill_dir.empty()) RemoveStaleSpillFiles(b_.spill_dir);
    if (!fs::create_directory(spill_, ec) || ec)
      return Status::IOError("cannot create spill folder " + spill_ + ": " +
                             (ec ? ec.message() : std::string("it already exists")));
    spill_guard_.Reset(spill_);
    return Status::OK();
  }

  int GroupOf(int p) const { return static_cast<int>(static_cast<int64_t>(p) * groups_ / k_); }

  // One pass over the edges: degrees, stats and the spill files (one per
  // group of partitions); then the row starts, and the renumbering inverted.
  Status SpillEdges() {
    indptr_.assign(n_ + 1, 0);
    if (meta_.has_heat) heat_.assign(static_cast<size_t>(n_), 0);
    for (int gi = 0; gi < groups_; ++gi) {
      spills_.push_back(std::make_unique<SpillWriter>(spill_ + "/group-" + std::to_string(gi),
                                                      static_cast<size_t>(spill_buffer_)));
      FANOUT_RETURN_IF_ERROR(spills_.back()->Open());
    }
    PartitionStats& stats = meta_.stats;
    int64_t eid = 0;
    Status edge_error;
    {
      Progress progress("spilling the edges of " + g_.name, " edges", g_.num_edges, o_.quiet);
      const bool in = o_.incoming;
      const int32_t R = static_cast<int32_t>(g_.edge_types.size());
      auto spill = [&](const EdgeAttr& e) {
        const int64_t s = e.src, d = e.dst;
        if (s < 0 || s >= n_ || d < 0 || d >= n_) {
          edge_error = Status::InvalidArgument("edge " + std::to_string(eid) + " (" +
                                               std::to_string(s) + " -> " + std::to_string(d) +
                                               ") is outside [0, " + std::to_string(n_) + ")");
          return false;
        }
        const int32_t ps = part_[s], pd = part_[d];
        const int64_t row = perm_[in ? d : s];
        indptr_[row + 1]++;
        if (!heat_.empty() && heat_[in ? s : d] != UINT32_MAX) ++heat_[in ? s : d];
        stats.edges[in ? pd : ps]++;
        stats.cut_edges += ps != pd;
        if (attrs_) {
          if (!(std::isfinite(e.weight) && e.weight >= 0)) {
            edge_error = Status::InvalidArgument("edge " + std::to_string(eid) + " has weight " +
                                                 std::to_string(e.weight) +
                                                 ": weights must be finite and non-negative");
            return false;
          }
          if (g_.hetero()) {
            const bool known = e.type >= 0 && e.type < R;
            if (!known || node_type_[s] != g_.edge_types[e.type].src ||
                node_type_[d] != g_.edge_types[e.type].dst) {
              edge_error = Status::InvalidArgument(
                  "edge " + std::to_string(eid) + " (" + std::to_string(s) + " -> " +
                  std::to_string(d) + ") has edge type " + std::to_string(e.type) +
                  (known ? ", which does not join its endpoints' node types"
                         : ", outside [0, " + std::to_string(R) + ")"));
              return false;
            }
          }
          if (!spills_[GroupOf(in ? pd : ps)]->Append(
                  AttrRecord{row, perm_[in ? s : d], eid, e.time, e.weight, e.type}))
            return false;
        } else if (!spills_[GroupOf(in ? pd : ps)]->Append(Record{row, perm_[in ? s : d], eid})) {
          return false;
        }
        if ((++eid & 0xfffff) == 0) progress.Update(eid);
        return true;
      };
      FANOUT_RETURN_IF_ERROR(attrs_ ? g_.for_each_edge_attr(spill)
                                    : g_.for_each_edge([&](int64_t s, int64_t d) {
                                        EdgeAttr e;
                                        e.src = s;
                                        e.dst = d;
                                        return spill(e);
                                      }));
      FANOUT_RETURN_IF_ERROR(edge_error);
      for (auto& s : spills_) {
        FANOUT_RETURN_IF_ERROR(s->Close());
        report_.spill_bytes += s->bytes();
      }
      progress.Update(eid);
      progress.Done("spilled " + FormatBytes(static_cast<double>(report_.spill_bytes)));
    }
    if (g_.num_edges >= 0 && eid != g_.num_edges)
      return Status::InvalidArgument(g_.name + ": " + std::to_string(eid) + " edges read, " +
                                     std::to_string(g_.num_edges) +
                                     " the first time (did the input change?)");
    meta_.num_edges = eid;
    FinishPartitionStats(n_, eid, &stats);
    std::vector<int32_t>().swap(part_);
    std::vector<int32_t>().swap(node_type_);
    for (int64_t v = 0; v < n_; ++v) indptr_[v + 1] += indptr_[v];
    InvertPermutation(&perm_);  // now the input id of each new id
    return Status::OK();
  }

  void RowsOf(int p, int64_t c, int64_t* a, int64_t* z) const {
    *a = meta_.offsets[p] + c * o_.chunk_nodes;
    *z = std::min(meta_.offsets[p + 1], *a + o_.chunk_nodes);
  }

  // Each partition in slices of whole chunks that fit the edge budget. The
  // edge arrays are allocated once, for the largest slice, and stay while
  // every slice is written; beside them the largest chunk's encoded value is
  // held three times at most (the value and the memtable's copy while it is
  // put; the memtable's and the table builder's while a large one is
  // flushed, which PartStoreWriter does at once, alone: see store_write.h),
  // whichever slice it is in. So the budget is: that, plus the largest
  // slice's edges (16 bytes each) and fill cursors (8 per row). The plan
  // comes first, so that one allocation serves every slice (no allocator
  // fragmentation to count).
  Status PlanSlices() {
    auto chunk_cost = [&](int p, int64_t c, int64_t* edges, int64_t* rows) {
      int64_t a, z;
      RowsOf(p, c, &a, &z);
      *edges = indptr_[z] - indptr_[a];
      *rows = z - a;
    };
    auto num_chunks = [&](int p) {
      return (meta_.offsets[p + 1] - meta_.offsets[p] + o_.chunk_nodes - 1) / o_.chunk_nodes;
    };
    int64_t largest = 0;  // three copies of the largest chunk's value
    for (int p = 0; p < k_; ++p)
      for (int64_t c = 0; c < num_chunks(p); ++c) {
        int64_t ce, cr;
        chunk_cost(p, c, &ce, &cr);
        // (graphs with edge times, weights or types: the chunk's per-edge arrays, 36 bytes an edge)
        largest = std::max(largest, 3 * (16 * ce + 8 * cr) + (attrs_ ? 36 * ce : 0));
      }
    const int64_t room = edge_budget_ - largest;  // for the largest slice's arrays
    auto too_small = [&](int p, int64_t c, int64_t ce, int64_t cr) {
      return Status::ResourceExhausted(
          "--memory-limit " + FormatBytes(static_cast<double>(b_.memory_limit_bytes)) +
          " is too small: chunk " + std::to_string(c) + " of partition " + std::to_string(p) +
          " holds " + std::to_string(ce) + " edges, which need " +
          FormatBytes(static_cast<double>(edge_bytes_ * ce + 8 * cr)) + " beside " +
          FormatBytes(static_cast<double>(largest)) + " for the largest chunk's value while it " +
          "is written and " +
          FormatBytes(static_cast<double>(b_.memory_limit_bytes - edge_budget_)) +
          " for the rest; raise the limit or write fewer nodes per chunk (--chunk-nodes)");
    };
    for (int p = 0; p < k_; ++p) {
      for (int64_t c0 = 0; c0 < num_chunks(p);) {
        int64_t c1 = c0, slice_edges = 0, slice_rows = 0;
        while (c1 < num_chunks(p)) {
          int64_t ce, cr;
          chunk_cost(p, c1, &ce, &cr);
          const int64_t cost = edge_bytes_ * (slice_edges + ce) + 8 * (slice_rows + cr);
          const bool too_many = b_.max_slice_edges > 0 && slice_edges + ce > b_.max_slice_edges;
          if (c1 > c0 && (cost > room || too_many)) break;
          if (cost > room) return too_small(p, c1, ce, cr);
          slice_edges += ce;
          slice_rows += cr;
          ++c1;
        }
        plan_.push_back(Slice{p, c0, c1, slice_edges, slice_rows});
        max_edges_ = std::max(max_edges_, slice_edges);
        max_rows_ = std::max(max_rows_, slice_rows);
        c0 = c1;
      }
    }
    return Status::OK();
  }

  // Every partition's store, slice by slice: the slice's edges read back
  // from its group's spill file into rows, then each chunk's adjacency and
  // node values written.
  Status WriteParts() {
    int64_t name_bytes = 0;
    if (g_.has_names)
      for (int64_t v = 0; v < n_; ++v) name_bytes += static_cast<int64_t>(g_.name_of(v).size());
    StreamNodeSource nodes(g_);
    if (!heat_.empty()) nodes.SetHeat(heat_.data());
    if (o_.feature_dtype == FeatureDType::kInt8 && g_.feature_dim > 0) {
      std::vector<float> row(g_.feature_dim), mx(g_.feature_dim, 0.0f);
      for (int64_t v = 0; v < n_; ++v) {
        g_.feature_row(v, row.data());
        for (size_t j = 0; j < row.size(); ++j) mx[j] = std::max(mx[j], std::fabs(row[j]));
      }
      detail::SetInt8Scales(mx, &meta_);
    }
    const std::vector<int64_t>& old_of_new = perm_;
    Progress progress("writing " + std::to_string(k_) + " partition(s)", " bytes",
                      detail::StorePayloadBytes(meta_, name_bytes), o_.quiet);
    // The slice's edges: their neighbors and ids, or (graphs with edge times
    // or weights) placed edges, sorted by time in each row; and one chunk's
    // columns of those.
    std::vector<Record> read_buf(attrs_ ? 0 : static_cast<size_t>(kReadBuffer / sizeof(Record)));
    std::vector<AttrRecord> attr_buf(attrs_ ? static_cast<size_t>(kReadBuffer / sizeof(AttrRecord))
                                            : 0);
    std::vector<int64_t> indices(attrs_ ? 0 : max_edges_), edge_ids(attrs_ ? 0 : max_edges_),
        fill(max_rows_), degrees;
    std::vector<Placed> slot(attrs_ ? max_edges_ : 0);
    std::vector<int64_t> chunk_nbr, chunk_eid, chunk_time, chunk_type;
    std::vector<float> chunk_weight;
    const bool timed = g_.has_edge_times, typed = g_.hetero();
    int64_t spill_read = 0;
    size_t next = 0;
    for (int p = 0; p < k_; ++p) {
      const int64_t begin = meta_.offsets[p], end = meta_.offsets[p + 1];
      std::unique_ptr<detail::PartStoreWriter> w;
      FANOUT_RETURN_IF_ERROR(
          detail::PartStoreWriter::Open(tmp_ + "/part-" + std::to_string(p), write_buffer_, &w));
      FANOUT_RETURN_IF_ERROR(w->PutInfo(meta_, p, indptr_[end] - indptr_[begin]));
      for (; next < plan_.size() && plan_[next].p == p; ++next) {
        const Slice& sl = plan_[next];
        int64_t ra, rz, unused;
        RowsOf(p, sl.c0, &ra, &unused);
        RowsOf(p, sl.c1 - 1, &unused, &rz);
        const int64_t e0 = indptr_[ra];
        for (int64_t r = ra; r < rz; ++r) fill[r - ra] = indptr_[r] - e0;
        const std::string& spill = spills_[GroupOf(p)]->path();
        if (attrs_) {
          FANOUT_RETURN_IF_ERROR(
              ReadSpill(spill, &attr_buf, &spill_read, [&](const AttrRecord& rec) {
                if (rec.row < ra || rec.row >= rz) return;
                slot[fill[rec.row - ra]++] =
                    Placed{timed ? rec.time : 0, rec.eid, rec.nbr, rec.weight, rec.type};
              }));
          if (timed || typed)  // each row in input order so far: now by type, time, input order
            for (int64_t r = ra; r < rz; ++r)
              std::sort(slot.begin() + (indptr_[r] - e0), slot.begin() + (indptr_[r + 1] - e0));
        } else {
          FANOUT_RETURN_IF_ERROR(ReadSpill(spill, &read_buf, &spill_read, [&](const Record& rec) {
            if (rec.row < ra || rec.row >= rz) return;
            const int64_t pos = fill[rec.row - ra]++;
            indices[pos] = rec.nbr;
            edge_ids[pos] = rec.eid;
          }));
        }
        for (int64_t c = sl.c0; c < sl.c1; ++c) {
          int64_t a, z;
          RowsOf(p, c, &a, &z);
          degrees.resize(z - a);
          for (int64_t x = a; x < z; ++x) degrees[x - a] = indptr_[x + 1] - indptr_[x];
          const int64_t ea = indptr_[a] - e0, ez = indptr_[z] - e0;
          if (attrs_) {
            chunk_nbr.clear(), chunk_eid.clear(), chunk_time.clear(), chunk_weight.clear();
            chunk_type.clear();
            for (int64_t x = ea; x < ez; ++x) {
              const Placed& e = slot[x];
              chunk_nbr.push_back(e.nbr);
              chunk_eid.push_back(e.eid);
              if (timed) chunk_time.push_back(e.time);
              if (g_.has_edge_weights) chunk_weight.push_back(e.weight);
              if (typed) chunk_type.push_back(e.type);
            }
            FANOUT_RETURN_IF_ERROR(w->PutAdjChunk(c, degrees, chunk_nbr, chunk_eid));
            if (timed) FANOUT_RETURN_IF_ERROR(w->PutEdgeTimeChunk(c, chunk_time));
            if (g_.has_edge_weights) FANOUT_RETURN_IF_ERROR(w->PutEdgeWeightChunk(c, chunk_weight));
            if (typed) FANOUT_RETURN_IF_ERROR(w->PutEdgeTypeChunk(c, chunk_type));
          } else {
            FANOUT_RETURN_IF_ERROR(
                w->PutAdjChunk(c, degrees, ArrayView<const int64_t>(indices.data() + ea, ez - ea),
                               ArrayView<const int64_t>(edge_ids.data() + ea, ez - ea)));
          }
          FANOUT_RETURN_IF_ERROR(w->PutNodeChunks(meta_, c, old_of_new.data() + a, z - a, nodes));
          progress.Update(report_.store_bytes + w->bytes_written());
        }
        ++report_.slices;
      }
      FANOUT_RETURN_IF_ERROR(w->Close());
      report_.store_bytes += w->bytes_written();
    }
    if (g_.node_status) FANOUT_RETURN_IF_ERROR(g_.node_status());
    progress.Update(report_.store_bytes);
    progress.Done(std::to_string(report_.slices) + " slice(s), " +
                  FormatBytes(static_cast<double>(spill_read)) + " of spill read back");
    report_.spill_read_bytes = spill_read;
    return Status::OK();
  }

  // The spill removed, the temporary folder renamed into place.
  Status Commit() {
    spills_.clear();
    std::error_code ec;
    fs::remove_all(spill_, ec);
    if (ec) return Status::IOError("cannot remove spill folder " + spill_ + ": " + ec.message());
    spill_guard_.Release();
    return detail::CommitTemporary(tmp_, dir_, meta_, &guard_);
  }

  struct Slice {
    int p;
    int64_t c0, c1, edges, rows;
  };
  static constexpr int64_t kReadBuffer = 4 * kMiB;

  const StreamedGraph& g_;
  const PartitionOptions& po_;
  const WriteOptions& o_;
  const BoundedOptions& b_;
  const int64_t n_;
  const int k_;
  const bool attrs_;          // edges carry a time or a weight (AttrRecord, Placed)
  const int64_t edge_bytes_;  // a slice's memory per edge: 16, or sizeof(Placed)
  std::string dir_, tmp_, spill_;
  // Remove the temporary and spill folders on an early return; declared
  // before the spill writers, so destroyed after them (files closed first).
  detail::TempDirGuard guard_, spill_guard_;
  BoundedReport report_;
  DatasetMeta meta_;
  // The memory plan.
  int64_t write_buffer_ = 0, spill_buffer_ = 0, edge_budget_ = 0;
  int groups_ = 1;
  // Nodes: each input id's part; the new id of each input id (after
  // SpillEdges, the input id of each new id); row starts by new id.
  std::vector<int32_t> part_;
  std::vector<int32_t> node_type_;  // by input id (heterogeneous graphs)
  std::vector<int64_t> perm_, indptr_;
  std::vector<uint32_t> heat_;  // by input id: appearances as a neighbor (with feature files)
  std::vector<std::unique_ptr<SpillWriter>> spills_;
  std::vector<Slice> plan_;
  int64_t max_edges_ = 0, max_rows_ = 0;
};

}  // namespace

Status WritePartitionedStream(const StreamedGraph& g, const PartitionOptions& po,
                              const WriteOptions& o, const BoundedOptions& b,
                              const std::string& dir_in, DatasetMeta* meta_out,
                              BoundedReport* report_out) {
  return BoundedWrite(g, po, o, b).Run(dir_in, meta_out, report_out);
}

}  // namespace fanout::datasets
