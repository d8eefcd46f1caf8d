#include <fcntl.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "datasets/detail/chunk_codec.h"
#include "datasets/detail/chunks.h"
#include "datasets/detail/store_write.h"
#include "datasets/partition_store.h"
#include "datasets/progress.h"

namespace fs = std::filesystem;

namespace fanout::datasets {
namespace detail {
namespace {

Status RocksStatus(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::OK();
  return Status::IOError(what + ": " + s.ToString());
}

// fsync(2) of one file or folder.
Status SyncPath(const std::string& path, bool directory) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0)
    return Status::IOError("cannot open " + path + " to sync it: " + std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return Status::IOError("cannot sync " + path + ": " + std::strerror(err));
  return Status::OK();
}

// Every file and folder under `root`, and `root` itself, on disk: done before
// the rename that makes the dataset visible, so that a crash can never leave
// a folder under the final name whose files are not all there.
Status SyncTree(const std::string& root) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const bool dir = it->is_directory(ec);
    if (ec) break;
    if (dir || it->is_regular_file(ec)) FANOUT_RETURN_IF_ERROR(SyncPath(it->path().string(), dir));
  }
  if (ec) return Status::IOError("cannot list " + root + " to sync it: " + ec.message());
  return SyncPath(root, true);
}

// Removes what an earlier run that was killed left: sibling folders named
// "<dir>.tmp-<pid>-..." whose process is gone. (A ".old-<pid>" folder, left
// only where the swap below could not be atomic, may be the user's previous
// dataset: it is left alone.)
void RemoveStaleTemporaries(const std::string& dir) {
  const fs::path target = fs::absolute(fs::path(dir)).lexically_normal();
  const std::string stem = target.filename().string();
  std::error_code ec;
  for (fs::directory_iterator it(target.parent_path(), ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string prefix = stem + ".tmp-";
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) {
      std::error_code rm;
      fs::remove_all(it->path(), rm);
    }
  }
}

}  // namespace

std::string RandomId() {
  std::random_device rd;
  uint64_t a = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  uint64_t b = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
               (static_cast<uint64_t>(getpid()) << 40);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return buf;
}

TempDirGuard::~TempDirGuard() {
  if (!path_.empty()) {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
}

Status PrepareOutput(const std::string& dir_in, bool overwrite, std::string* dir) {
  *dir = dir_in;
  while (dir->size() > 1 && dir->back() == '/') dir->pop_back();
  std::error_code ec;
  if (fs::exists(*dir, ec) && !overwrite)
    return Status::InvalidArgument(*dir +
                                   " already exists (choose another --output or pass --force)");
  fs::path parent = fs::path(*dir).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) return Status::IOError("cannot create " + parent.string() + ": " + ec.message());
  }
  return Status::OK();
}

Status CreateTemporary(const std::string& dir, const std::string& dataset_id, std::string* tmp,
                       TempDirGuard* guard, long owner_pid) {
  RemoveStaleTemporaries(dir);
  *tmp = dir + ".tmp-" + std::to_string(owner_pid > 0 ? owner_pid : static_cast<long>(getpid())) +
         "-" + dataset_id.substr(0, 8);
  std::error_code ec;
  fs::create_directories(*tmp, ec);
  if (ec) return Status::IOError("cannot create " + *tmp + ": " + ec.message());
  guard->Reset(*tmp);
  return Status::OK();
}

Status CommitTemporary(const std::string& tmp, const std::string& dir, const DatasetMeta& meta,
                       TempDirGuard* guard) {
  {
    std::ofstream f(tmp + "/meta.json");
    f << meta.ToJson();
    f.close();
    if (!f) return Status::IOError("cannot write " + tmp + "/meta.json");
  }
  FANOUT_RETURN_IF_ERROR(SyncTree(tmp));
  std::error_code ec;
  if (fs::exists(dir, ec) &&
      ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0) {
    // Overwrite: the two folders swapped in one step; the old one is now at tmp.
    fs::remove_all(tmp, ec);
  } else if (fs::exists(
                 dir, ec)) {  // no atomic exchange here: move aside, swap in, remove the old folder
    std::string old = dir + ".old-" + std::to_string(getpid());
    fs::rename(dir, old, ec);
    if (ec) return Status::IOError("cannot move the existing " + dir + " aside: " + ec.message());
    fs::rename(tmp, dir, ec);
    if (ec) {
      fs::rename(old, dir);
      return Status::IOError("cannot rename " + tmp + " to " + dir + ": " + ec.message());
    }
    fs::remove_all(old, ec);
  } else {
    fs::rename(tmp, dir, ec);
    if (ec) return Status::IOError("cannot rename " + tmp + " to " + dir + ": " + ec.message());
  }
  guard->Release();
  // The rename itself, on disk.
  return SyncPath(fs::absolute(fs::path(dir)).lexically_normal().parent_path().string(), true);
}

DatasetMeta BaseMeta(const MetaInputs& in, int k, const WriteOptions& o) {
  DatasetMeta meta;
  meta.dataset_id = RandomId();
  meta.name = in.name;
  meta.source_format = in.format;
  meta.source_path = o.source_path;
  meta.num_nodes = in.num_nodes;
  meta.num_edges = in.num_edges;
  meta.num_parts = k;
  meta.feature_dim = in.feature_dim;
  meta.feature_dtype = o.feature_dtype;
  meta.num_classes = in.num_classes;
  meta.class_names = in.class_names;
  meta.direction = o.incoming ? "in" : "out";
  meta.has_labels = in.has_labels;
  meta.has_split = in.has_split;
  meta.has_names = in.has_names;
  meta.has_edge_times = in.has_edge_times;
  meta.has_edge_weights = in.has_edge_weights;
  meta.chunk_nodes = o.chunk_nodes;
  meta.method = o.method;
  meta.options_json = o.options_json;
  if (o.feature_files && in.feature_dim > 0) {
    meta.feature_files.resize(static_cast<size_t>(k));
    meta.has_heat = true;
  }
  return meta;
}

void SizeFeatureFiles(DatasetMeta* meta) {
  if (meta->feature_files.empty()) return;
  meta->feature_files.resize(static_cast<size_t>(meta->num_parts));
  for (int p = 0; p < meta->num_parts; ++p) {
    const storage::FeatureFileIdentity id = FeatureFileIdentityOf(*meta, p);
    meta->feature_files[p].file = "part-" + std::to_string(p) + ".features";
    meta->feature_files[p].bytes =
        storage::FeatureFileGeometry::For(id.rows, id.row_bytes()).FileBytes();
  }
}

storage::FeatureFileIdentity FeatureFileIdentityOf(const DatasetMeta& meta, int part) {
  storage::FeatureFileIdentity id;
  id.dataset_id = meta.dataset_id;
  id.partition = part;
  id.node_begin = meta.offsets[part];
  id.rows = meta.offsets[part + 1] - meta.offsets[part];
  id.feature_dim = meta.feature_dim;
  id.dtype = meta.feature_dtype;
  return id;
}

void SetInt8Scales(const std::vector<float>& max_abs, DatasetMeta* meta) {
  meta->feature_scales.resize(max_abs.size());
  float most = 0;
  for (size_t j = 0; j < max_abs.size(); ++j) {
    meta->feature_scales[j] = Int8ColumnScale(max_abs[j]);
    most = std::max(most, max_abs[j]);
  }
  meta->feature_scale = Int8ColumnScale(most);
}

MetaInputs MetaInputsOf(const RawDataset& ds) {
  MetaInputs in;
  in.name = ds.name;
  in.format = ds.format;
  in.num_nodes = ds.num_nodes;
  in.num_edges = ds.num_edges();
  in.feature_dim = ds.features.empty() ? 0 : ds.feature_dim;
  in.num_classes = ds.num_classes;
  in.class_names = ds.class_names;
  in.has_labels = !ds.labels.empty();
  in.has_split = !ds.split.empty();
  in.has_names = !ds.original_names.empty();
  in.has_edge_times = !ds.edge_times.empty();
  in.has_edge_weights = !ds.edge_weights.empty();
  return in;
}

void RenumberByPart(const std::vector<int32_t>& part, int k, std::vector<int64_t>* offsets,
                    std::vector<int64_t>* new_of_old, const std::vector<int32_t>& node_type,
                    int num_types, std::vector<int64_t>* type_bounds) {
  const int T = node_type.empty() ? 1 : num_types;
  auto bucket = [&](size_t v) {
    return static_cast<size_t>(part[v]) * T + (node_type.empty() ? 0 : node_type[v]);
  };
  std::vector<int64_t> bounds(static_cast<size_t>(k) * T + 1, 0);
  for (size_t v = 0; v < part.size(); ++v) bounds[bucket(v) + 1]++;
  for (size_t b = 0; b + 1 < bounds.size(); ++b) bounds[b + 1] += bounds[b];
  offsets->assign(k + 1, 0);
  for (int p = 0; p <= k; ++p) (*offsets)[p] = bounds[static_cast<size_t>(p) * T];
  std::vector<int64_t> next(bounds.begin(), bounds.end() - 1);
  new_of_old->resize(part.size());
  for (size_t v = 0; v < part.size(); ++v) (*new_of_old)[v] = next[bucket(v)]++;
  if (type_bounds) *type_bounds = std::move(bounds);
}

int64_t StorePayloadBytes(const DatasetMeta& meta, int64_t name_bytes) {
  int64_t total =
      meta.num_edges * 16 +
      meta.num_nodes * (8 + 8 + meta.feature_dim * FeatureDTypeSize(meta.feature_dtype));
  if (meta.has_labels) total += meta.num_nodes * 8;
  if (meta.has_split) total += meta.num_nodes;
  if (meta.has_names) total += meta.num_nodes * 4 + name_bytes;
  if (meta.has_heat) total += meta.num_nodes * 8;
  if (meta.has_edge_times) total += meta.num_edges * 8;
  if (meta.has_edge_weights) total += meta.num_edges * 4;
  if (!meta.hetero.empty()) total += meta.num_edges * 8;
  return total;
}

Status PartStoreWriter::Open(const std::string& path, int64_t write_buffer_bytes,
                             std::unique_ptr<PartStoreWriter>* out) {
  rocksdb::Options opts;
  opts.create_if_missing = true;
  opts.error_if_exists = true;
  opts.compression = rocksdb::kNoCompression;  // features barely compress; loads stay I/O bound
  opts.write_buffer_size = static_cast<size_t>(write_buffer_bytes);
  opts.target_file_size_base = 256 << 20;
  opts.max_write_buffer_number = 2;
  opts.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  opts.keep_log_file_num = 1;
  rocksdb::BlockBasedTableOptions table;
  table.block_size = 1 << 20;
  opts.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocksdb::DB* raw = nullptr;
  FANOUT_RETURN_IF_ERROR(RocksStatus(rocksdb::DB::Open(opts, path, &raw), "creating " + path));
  std::unique_ptr<PartStoreWriter> w(new PartStoreWriter());
  w->path_ = path;
  w->write_buffer_ = write_buffer_bytes;
  w->db_.reset(raw);
  *out = std::move(w);
  return Status::OK();
}

PartStoreWriter::~PartStoreWriter() = default;

Status PartStoreWriter::Put(const char* kind, int64_t c) {
  SealChunk(&value_);
  bytes_ += static_cast<int64_t>(value_.size());
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;  // the temporary folder is the crash protection
  FANOUT_RETURN_IF_ERROR(
      RocksStatus(db_->Put(wo, c < 0 ? std::string(kind) : ChunkKey(kind, c), value_), path_));
  if (2 * static_cast<int64_t>(value_.size()) <= write_buffer_) return Status::OK();
  // A hub chunk: give this copy back and flush the memtable now, so that the
  // value is not also held by a second memtable or a later value's buffer.
  std::string().swap(value_);
  rocksdb::FlushOptions fo;
  fo.wait = true;
  return RocksStatus(db_->Flush(fo), "flushing " + path_);
}

Status PartStoreWriter::PutInfo(const DatasetMeta& meta, int p, int64_t num_edges) {
  if (meta.has_feature_files())
    FANOUT_RETURN_IF_ERROR(storage::FeatureFileWriter::Create(
        path_ + ".features", FeatureFileIdentityOf(meta, p), &features_));
  const int64_t begin = meta.offsets[p], end = meta.offsets[p + 1];
  nlohmann::json info = {{"part", p},
                         {"node_begin", begin},
                         {"node_end", end},
                         {"num_edges", num_edges},
                         {"num_chunks", (end - begin + meta.chunk_nodes - 1) / meta.chunk_nodes},
                         {"dataset_id", meta.dataset_id},
                         {"format_version", kStoreFormatVersion}};
  value_ = info.dump();
  return Put("info", -1);
}

Status PartStoreWriter::PutAdjChunk(int64_t c, ArrayView<const int64_t> degrees,
                                    ArrayView<const int64_t> neighbors,
                                    ArrayView<const int64_t> edge_ids) {
  // Chunk kinds and their layouts: datasets/detail/chunks.h.
  value_.clear();
  value_.reserve(16 + 8 * degrees.size() + 16 * neighbors.size() + 4);
  EncodeAdjChunk(degrees, neighbors, edge_ids, &value_);
  return Put("adj", c);
}

Status PartStoreWriter::PutEdgeTimeChunk(int64_t c, ArrayView<const int64_t> times) {
  value_.clear();
  EncodeInt64Chunk(times, &value_);
  return Put("etime", c);
}

Status PartStoreWriter::PutEdgeWeightChunk(int64_t c, ArrayView<const float> weights) {
  value_.clear();
  EncodeFloatChunk(weights, &value_);
  return Put("eweight", c);
}

Status PartStoreWriter::PutEdgeTypeChunk(int64_t c, ArrayView<const int64_t> types) {
  value_.clear();
  EncodeInt64Chunk(types, &value_);
  return Put("etype", c);
}

Status PartStoreWriter::PutNodeChunks(const DatasetMeta& meta, int64_t c, const int64_t* old_ids,
                                      int64_t n, const NodeSource& src) {
  const int64_t d = meta.feature_dim;
  const int dsize = FeatureDTypeSize(meta.feature_dtype);
  // label and orig: one int64 per node.
  auto put_int64 = [&](const char* kind, auto value_of) -> Status {
    values_.resize(n);
    for (int64_t x = 0; x < n; ++x) values_[x] = value_of(old_ids[x]);
    value_.clear();
    EncodeInt64Chunk(values_, &value_);
    return Put(kind, c);
  };
  if (d > 0) {
    value_.assign(static_cast<size_t>(n * d * dsize), '\0');
    row_.resize(d);
    for (int64_t x = 0; x < n; ++x) {
      src.FeatureRow(old_ids[x], row_.data());
      EncodeFeatureRow(meta.feature_dtype, meta.feature_scales.data(), row_.data(), d,
                       value_.data() + x * d * dsize);
    }
    if (features_) {
      FANOUT_RETURN_IF_ERROR(features_->Append(value_.data(), n));
      bytes_ += static_cast<int64_t>(value_.size());
    } else {
      FANOUT_RETURN_IF_ERROR(Put("feat", c));
    }
  }
  if (meta.has_labels)
    FANOUT_RETURN_IF_ERROR(put_int64("label", [&](int64_t v) { return src.Label(v); }));
  if (meta.has_split) {
    split_.resize(n);
    for (int64_t x = 0; x < n; ++x) split_[x] = src.SplitOf(old_ids[x]);
    value_.clear();
    EncodeSplitChunk(split_, &value_);
    FANOUT_RETURN_IF_ERROR(Put("split", c));
  }
  FANOUT_RETURN_IF_ERROR(put_int64("orig", [&](int64_t v) { return src.OriginalId(v); }));
  if (meta.has_heat)
    FANOUT_RETURN_IF_ERROR(put_int64("heat", [&](int64_t v) { return src.Heat(v); }));
  if (meta.has_names) {
    std::vector<std::string_view> names(n);
    for (int64_t x = 0; x < n; ++x) names[x] = src.Name(old_ids[x]);
    value_.clear();
    EncodeNameChunk(names, &value_);
    FANOUT_RETURN_IF_ERROR(Put("name", c));
  }
  return Status::OK();
}

Status PartStoreWriter::Close() {
  rocksdb::FlushOptions fo;
  fo.wait = true;
  FANOUT_RETURN_IF_ERROR(RocksStatus(db_->Flush(fo), "flushing " + path_));
  FANOUT_RETURN_IF_ERROR(RocksStatus(db_->Close(), "closing " + path_));
  db_.reset();
  if (features_) FANOUT_RETURN_IF_ERROR(features_->Finish());
  return Status::OK();
}

}  // namespace detail

namespace {

struct Layout {
  std::vector<int64_t> offsets;      // K + 1
  std::vector<int64_t> old_of_new;   // N
  std::vector<int64_t> indptr;       // N + 1 over new ids, stored direction
  std::vector<int64_t> indices;      // new neighbor ids
  std::vector<int64_t> edge_ids;     // input edge index
  std::vector<int64_t> type_bounds;  // heterogeneous: HeteroSchema::type_bounds
};

void BuildLayout(const RawDataset& ds, const std::vector<int32_t>& part, int k, bool incoming,
                 Layout* L) {
  const int64_t n = ds.num_nodes;
  std::vector<int64_t> new_of_old;
  detail::RenumberByPart(part, k, &L->offsets, &new_of_old, ds.node_type,
                         static_cast<int>(ds.node_types.size()), &L->type_bounds);
  L->old_of_new.resize(n);
  for (int64_t v = 0; v < n; ++v) L->old_of_new[new_of_old[v]] = v;
  const int64_t e = ds.num_edges();
  L->indptr.assign(n + 1, 0);
  for (int64_t i = 0; i < e; ++i) L->indptr[new_of_old[incoming ? ds.dst[i] : ds.src[i]] + 1]++;
  for (int64_t v = 0; v < n; ++v) L->indptr[v + 1] += L->indptr[v];
  L->indices.resize(e);
  L->edge_ids.resize(e);
  std::vector<int64_t> fill(L->indptr.begin(), L->indptr.end() - 1);
  for (int64_t i = 0; i < e; ++i) {
    int64_t row = new_of_old[incoming ? ds.dst[i] : ds.src[i]];
    int64_t pos = fill[row]++;
    L->indices[pos] = new_of_old[incoming ? ds.src[i] : ds.dst[i]];
    L->edge_ids[pos] = i;
  }
}

// A RawDataset's node data, by input id.
class RawNodeSource final : public detail::NodeSource {
 public:
  explicit RawNodeSource(const RawDataset& ds) : ds_(ds) {}
  void FeatureRow(int64_t v, float* out) const override {
    std::copy_n(ds_.features.data() + v * ds_.feature_dim, ds_.feature_dim, out);
  }
  int64_t Label(int64_t v) const override { return ds_.labels[v]; }
  uint8_t SplitOf(int64_t v) const override { return ds_.split[v]; }
  int64_t OriginalId(int64_t v) const override { return ds_.original_ids[v]; }
  std::string_view Name(int64_t v) const override { return ds_.original_names[v]; }

 private:
  const RawDataset& ds_;
};

// Reorders each row's edges by key(input edge id), stable: equal keys keep
// input order.
// - Stores with edge timestamps keep each row in time order, so temporal
//   sampling finds a node's edges up to a time by binary search, with no
//   index (sampler/temporal.h).
// - Heterogeneous stores keep each row ordered by edge type, so a node's
//   edges of one type are one run (sampler/hetero.h).
template <typename Key>
void SortRowsBy(const std::vector<Key>& key, Layout* L) {
  std::vector<std::pair<int64_t, int64_t>> row;  // (edge id, neighbor)
  const int64_t n = static_cast<int64_t>(L->indptr.size()) - 1;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t b = L->indptr[v], e = L->indptr[v + 1];
    row.clear();
    for (int64_t i = b; i < e; ++i) row.emplace_back(L->edge_ids[i], L->indices[i]);
    std::stable_sort(row.begin(), row.end(),
                     [&](const auto& x, const auto& y) { return key[x.first] < key[y.first]; });
    for (int64_t i = b; i < e; ++i)
      L->edge_ids[i] = row[i - b].first, L->indices[i] = row[i - b].second;
  }
}

Status WritePart(const Layout& L, const DatasetMeta& meta, int p, const detail::NodeSource& nodes,
                 const RawDataset& ds, const std::string& path, Progress* progress,
                 int64_t* bytes_done) {
  std::unique_ptr<detail::PartStoreWriter> w;
  FANOUT_RETURN_IF_ERROR(detail::PartStoreWriter::Open(path, 256 << 20, &w));
  const int64_t begin = L.offsets[p], end = L.offsets[p + 1];
  FANOUT_RETURN_IF_ERROR(w->PutInfo(meta, p, L.indptr[end] - L.indptr[begin]));
  const int64_t chunk_nodes = meta.chunk_nodes;
  const int64_t num_chunks = (end - begin + chunk_nodes - 1) / chunk_nodes;
  std::vector<int64_t> degrees, per_edge;
  std::vector<float> per_edge_weight;
  for (int64_t c = 0; c < num_chunks; ++c) {
    const int64_t a = begin + c * chunk_nodes, b = std::min(end, a + chunk_nodes);
    const int64_t e0 = L.indptr[a], e1 = L.indptr[b];
    degrees.resize(b - a);
    for (int64_t x = a; x < b; ++x) degrees[x - a] = L.indptr[x + 1] - L.indptr[x];
    FANOUT_RETURN_IF_ERROR(
        w->PutAdjChunk(c, degrees, ArrayView<const int64_t>(L.indices.data() + e0, e1 - e0),
                       ArrayView<const int64_t>(L.edge_ids.data() + e0, e1 - e0)));
    // Per-edge columns in the chunk's adjacency order (edge ids are input edge indices).
    auto column = [&](const auto& values) {
      per_edge.resize(e1 - e0);
      for (int64_t e = e0; e < e1; ++e) per_edge[e - e0] = values[L.edge_ids[e]];
      return ArrayView<const int64_t>(per_edge);
    };
    if (meta.has_edge_times) FANOUT_RETURN_IF_ERROR(w->PutEdgeTimeChunk(c, column(ds.edge_times)));
    if (meta.has_edge_weights) {
      per_edge_weight.resize(e1 - e0);
      for (int64_t e = e0; e < e1; ++e) per_edge_weight[e - e0] = ds.edge_weights[L.edge_ids[e]];
      FANOUT_RETURN_IF_ERROR(w->PutEdgeWeightChunk(c, per_edge_weight));
    }
    if (!meta.hetero.empty()) FANOUT_RETURN_IF_ERROR(w->PutEdgeTypeChunk(c, column(ds.edge_type)));
    FANOUT_RETURN_IF_ERROR(w->PutNodeChunks(meta, c, L.old_of_new.data() + a, b - a, nodes));
    progress->Update(*bytes_done + w->bytes_written());
  }
  FANOUT_RETURN_IF_ERROR(w->Close());
  *bytes_done += w->bytes_written();
  return Status::OK();
}

}  // namespace

Status WritePartitionedDataset(const RawDataset& ds, const std::vector<int32_t>& part, int k,
                               const WriteOptions& o, const std::string& dir_in,
                               DatasetMeta* meta_out) {
  FANOUT_RETURN_IF_ERROR(ds.Validate());
  if (static_cast<int64_t>(part.size()) != ds.num_nodes)
    return Status::InvalidArgument("partition assignment has " + std::to_string(part.size()) +
                                   " entries for " + std::to_string(ds.num_nodes) + " nodes");
  for (int64_t v = 0; v < ds.num_nodes; ++v)
    if (part[v] < 0 || part[v] >= k)
      return Status::InvalidArgument("node " + std::to_string(v) + " is assigned to part " +
                                     std::to_string(part[v]) + ", outside [0, " +
                                     std::to_string(k) + ")");
  if (o.chunk_nodes < 1)
    return Status::InvalidArgument("chunk size " + std::to_string(o.chunk_nodes) +
                                   " must be positive");
  std::string dir;
  FANOUT_RETURN_IF_ERROR(detail::PrepareOutput(dir_in, o.overwrite, &dir));

  DatasetMeta meta = detail::BaseMeta(detail::MetaInputsOf(ds), k, o);
  if (o.feature_dtype == FeatureDType::kInt8 && ds.feature_dim > 0) {
    std::vector<float> mx(static_cast<size_t>(ds.feature_dim), 0.0f);
    for (size_t i = 0; i < ds.features.size(); ++i)
      mx[i % mx.size()] = std::max(mx[i % mx.size()], std::fabs(ds.features[i]));
    detail::SetInt8Scales(mx, &meta);
  }
  meta.stats = ComputePartitionStats(ds, part, k, o.incoming);

  Layout layout;
  BuildLayout(ds, part, k, o.incoming, &layout);
  if (!ds.edge_times.empty()) SortRowsBy(ds.edge_times, &layout);
  if (ds.hetero()) {
    SortRowsBy(ds.edge_type, &layout);
    meta.hetero.node_types = ds.node_types;
    meta.hetero.edge_types = ds.edge_types;
    meta.hetero.type_bounds = layout.type_bounds;
    meta.hetero.feature_dims = ds.type_feature_dims;
    meta.hetero.incoming = o.incoming;
  }
  meta.offsets = layout.offsets;
  detail::SizeFeatureFiles(&meta);

  std::string tmp;
  detail::TempDirGuard guard;
  FANOUT_RETURN_IF_ERROR(detail::CreateTemporary(dir, meta.dataset_id, &tmp, &guard));
  int64_t name_bytes = 0;
  for (const std::string& n : ds.original_names) name_bytes += static_cast<int64_t>(n.size());
  Progress progress("writing " + std::to_string(k) + " partition(s)", " bytes",
                    detail::StorePayloadBytes(meta, name_bytes), o.quiet);
  int64_t bytes_done = 0;
  RawNodeSource nodes(ds);
  std::vector<uint32_t> heat;
  if (meta.has_heat) {  // each node's appearances as a stored edge's neighbor
    heat.assign(static_cast<size_t>(ds.num_nodes), 0);
    const std::vector<int64_t>& ends = o.incoming ? ds.src : ds.dst;
    for (int64_t v : ends)
      if (heat[v] != UINT32_MAX) ++heat[v];
    nodes.SetHeat(heat.data());
  }
  for (int p = 0; p < k; ++p)
    FANOUT_RETURN_IF_ERROR(WritePart(layout, meta, p, nodes, ds, tmp + "/part-" + std::to_string(p),
                                     &progress, &bytes_done));
  progress.Update(bytes_done);
  progress.Done();
  FANOUT_RETURN_IF_ERROR(detail::CommitTemporary(tmp, dir, meta, &guard));
  if (meta_out) *meta_out = meta;
  return Status::OK();
}

}  // namespace fanout::datasets
