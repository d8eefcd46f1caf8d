#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "datasets/detail/chunk_codec.h"
#include "datasets/detail/chunks.h"
#include "datasets/partition_store.h"
#include "datasets/progress.h"

namespace fs = std::filesystem;

namespace fanout::datasets {
namespace {

std::string RandomId() {
  std::random_device rd;
  uint64_t a = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  uint64_t b = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^ (static_cast<uint64_t>(getpid()) << 40);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  return buf;
}

Status RocksStatus(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::OK();
  return Status::IOError(what + ": " + s.ToString());
}

// Removes a temporary folder on every exit path unless released.
class TempDirGuard {
 public:
  explicit TempDirGuard(std::string path) : path_(std::move(path)) {}
  ~TempDirGuard() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

// fsync(2) of one file or folder.
Status SyncPath(const std::string& path, bool directory) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) return Status::IOError("cannot open " + path + " to sync it: " + std::strerror(errno));
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
  for (fs::directory_iterator it(target.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
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

struct Layout {
  std::vector<int64_t> offsets;      // K + 1
  std::vector<int64_t> old_of_new;   // N
  std::vector<int64_t> indptr;       // N + 1 over new ids, stored direction
  std::vector<int64_t> indices;      // new neighbor ids
  std::vector<int64_t> edge_ids;     // input edge index
};

void BuildLayout(const RawDataset& ds, const std::vector<int32_t>& part, int k, bool incoming, Layout* L) {
  const int64_t n = ds.num_nodes;
  L->offsets.assign(k + 1, 0);
  for (int32_t p : part) L->offsets[p + 1]++;
  for (int p = 0; p < k; ++p) L->offsets[p + 1] += L->offsets[p];
  std::vector<int64_t> new_of_old(n);
  L->old_of_new.resize(n);
  std::vector<int64_t> next(L->offsets.begin(), L->offsets.end() - 1);
  for (int64_t v = 0; v < n; ++v) {
    int64_t nv = next[part[v]]++;
    new_of_old[v] = nv;
    L->old_of_new[nv] = v;
  }
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

Status WritePart(const RawDataset& ds, const Layout& L, const DatasetMeta& meta, int p,
                 const std::string& path, Progress* progress, int64_t* bytes_done) {
  rocksdb::Options opts;
  opts.create_if_missing = true;
  opts.error_if_exists = true;
  opts.compression = rocksdb::kNoCompression;  // features barely compress; loads stay I/O bound
  opts.write_buffer_size = 256 << 20;
  opts.target_file_size_base = 256 << 20;
  opts.max_write_buffer_number = 2;
  opts.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  opts.keep_log_file_num = 1;
  rocksdb::BlockBasedTableOptions table;
  table.block_size = 1 << 20;
  opts.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocksdb::DB* raw = nullptr;
  FANOUT_RETURN_IF_ERROR(RocksStatus(rocksdb::DB::Open(opts, path, &raw), "creating " + path));
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;  // the temporary folder is the crash protection

  const int64_t begin = L.offsets[p], end = L.offsets[p + 1];
  const int64_t chunk_nodes = meta.chunk_nodes;
  const int64_t num_chunks = (end - begin + chunk_nodes - 1) / chunk_nodes;
  const int64_t d = meta.feature_dim;
  const int dsize = FeatureDTypeSize(meta.feature_dtype);
  nlohmann::json info = {{"part", p},
                         {"node_begin", begin},
                         {"node_end", end},
                         {"num_edges", L.indptr[end] - L.indptr[begin]},
                         {"num_chunks", num_chunks},
                         {"dataset_id", meta.dataset_id},
                         {"format_version", kStoreFormatVersion}};
  std::string info_value = info.dump();
  detail::SealChunk(&info_value);
  FANOUT_RETURN_IF_ERROR(RocksStatus(db->Put(wo, "info", info_value), path));

  std::string v;
  std::vector<int64_t> degrees, values;
  std::vector<uint8_t> split;
  std::vector<const std::string*> names;
  auto put = [&](const char* kind, int64_t c) -> Status {
    detail::SealChunk(&v);
    *bytes_done += static_cast<int64_t>(v.size());
    return RocksStatus(db->Put(wo, detail::ChunkKey(kind, c), v), path);
  };
  for (int64_t c = 0; c < num_chunks; ++c) {
    const int64_t a = begin + c * chunk_nodes, b = std::min(end, a + chunk_nodes);
    const int64_t cn = b - a, e0 = L.indptr[a], e1 = L.indptr[b];
    // Chunk kinds and their layouts: datasets/detail/chunks.h.
    degrees.resize(cn);
    for (int64_t x = a; x < b; ++x) degrees[x - a] = L.indptr[x + 1] - L.indptr[x];
    v.clear();
    detail::EncodeAdjChunk(degrees, ArrayView<const int64_t>(L.indices.data() + e0, e1 - e0),
                           ArrayView<const int64_t>(L.edge_ids.data() + e0, e1 - e0), &v);
    FANOUT_RETURN_IF_ERROR(put("adj", c));
    if (d > 0 && !ds.features.empty()) {
      v.assign(static_cast<size_t>(cn * d * dsize), '\0');
      for (int64_t x = a; x < b; ++x)
        detail::EncodeFeatureRow(meta.feature_dtype, meta.feature_scale, ds.features.data() + L.old_of_new[x] * d, d,
                                 v.data() + (x - a) * d * dsize);
      FANOUT_RETURN_IF_ERROR(put("feat", c));
    }
    if (meta.has_labels) {
      values.resize(cn);
      for (int64_t x = a; x < b; ++x) values[x - a] = ds.labels[L.old_of_new[x]];
      v.clear();
      detail::EncodeInt64Chunk(values, &v);
      FANOUT_RETURN_IF_ERROR(put("label", c));
    }
    if (meta.has_split) {
      split.resize(cn);
      for (int64_t x = a; x < b; ++x) split[x - a] = static_cast<uint8_t>(ds.split[L.old_of_new[x]]);
      v.clear();
      detail::EncodeSplitChunk(split, &v);
      FANOUT_RETURN_IF_ERROR(put("split", c));
    }
    values.resize(cn);
    for (int64_t x = a; x < b; ++x) values[x - a] = ds.original_ids[L.old_of_new[x]];
    v.clear();
    detail::EncodeInt64Chunk(values, &v);
    FANOUT_RETURN_IF_ERROR(put("orig", c));
    if (meta.has_names) {
      names.clear();
      for (int64_t x = a; x < b; ++x) names.push_back(&ds.original_names[L.old_of_new[x]]);
      v.clear();
      detail::EncodeNameChunk(names, &v);
      FANOUT_RETURN_IF_ERROR(put("name", c));
    }
    progress->Update(*bytes_done);
  }
  rocksdb::FlushOptions fo;
  fo.wait = true;
  FANOUT_RETURN_IF_ERROR(RocksStatus(db->Flush(fo), "flushing " + path));
  FANOUT_RETURN_IF_ERROR(RocksStatus(db->Close(), "closing " + path));
  return Status::OK();
}

}  // namespace

Status WritePartitionedDataset(const RawDataset& ds, const std::vector<int32_t>& part, int k,
                               const WriteOptions& o, const std::string& dir_in, DatasetMeta* meta_out) {
  FANOUT_RETURN_IF_ERROR(ds.Validate());
  if (static_cast<int64_t>(part.size()) != ds.num_nodes)
    return Status::InvalidArgument("partition assignment has " + std::to_string(part.size()) + " entries for " +
                                   std::to_string(ds.num_nodes) + " nodes");
  for (int64_t v = 0; v < ds.num_nodes; ++v)
    if (part[v] < 0 || part[v] >= k)
      return Status::InvalidArgument("node " + std::to_string(v) + " is assigned to part " + std::to_string(part[v]) +
                                     ", outside [0, " + std::to_string(k) + ")");
  if (o.chunk_nodes < 1) return Status::InvalidArgument("chunk size " + std::to_string(o.chunk_nodes) + " must be positive");
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::error_code ec;
  if (fs::exists(dir, ec) && !o.overwrite)
    return Status::InvalidArgument(dir + " already exists (choose another --output or pass --force)");
  fs::path parent = fs::path(dir).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) return Status::IOError("cannot create " + parent.string() + ": " + ec.message());
  }

  DatasetMeta meta;
  meta.dataset_id = RandomId();
  meta.name = ds.name;
  meta.source_format = ds.format;
  meta.source_path = o.source_path;
  meta.num_nodes = ds.num_nodes;
  meta.num_edges = ds.num_edges();
  meta.num_parts = k;
  meta.feature_dim = ds.features.empty() ? 0 : ds.feature_dim;
  meta.feature_dtype = o.feature_dtype;
  if (o.feature_dtype == FeatureDType::kInt8) {
    float mx = 0;
    for (float f : ds.features) mx = std::max(mx, std::fabs(f));
    meta.feature_scale = mx > 0 ? mx / 127.0 : 1.0;
  }
  meta.num_classes = ds.num_classes;
  meta.class_names = ds.class_names;
  meta.direction = o.incoming ? "in" : "out";
  meta.has_labels = !ds.labels.empty();
  meta.has_split = !ds.split.empty();
  meta.has_names = !ds.original_names.empty();
  meta.chunk_nodes = o.chunk_nodes;
  meta.method = o.method;
  meta.options_json = o.options_json;
  meta.stats = ComputePartitionStats(ds, part, k, o.incoming);

  Layout layout;
  BuildLayout(ds, part, k, o.incoming, &layout);
  meta.offsets = layout.offsets;

  RemoveStaleTemporaries(dir);
  const std::string tmp = dir + ".tmp-" + std::to_string(getpid()) + "-" + meta.dataset_id.substr(0, 8);
  fs::create_directories(tmp, ec);
  if (ec) return Status::IOError("cannot create " + tmp + ": " + ec.message());
  TempDirGuard guard(tmp);

  // Every chunk's bytes (datasets/detail/chunks.h), for the progress line.
  int64_t total_bytes = ds.num_edges() * 16 + ds.num_nodes * (8 + 8 + meta.feature_dim * FeatureDTypeSize(o.feature_dtype));
  if (meta.has_labels) total_bytes += ds.num_nodes * 8;
  if (meta.has_split) total_bytes += ds.num_nodes;
  if (meta.has_names)
    for (const std::string& n : ds.original_names) total_bytes += 4 + static_cast<int64_t>(n.size());
  Progress progress("writing " + std::to_string(k) + " partition(s)", " bytes", total_bytes, o.quiet);
  int64_t bytes_done = 0;
  for (int p = 0; p < k; ++p)
    FANOUT_RETURN_IF_ERROR(WritePart(ds, layout, meta, p, tmp + "/part-" + std::to_string(p), &progress, &bytes_done));
  {
    std::ofstream f(tmp + "/meta.json");
    f << meta.ToJson();
    f.close();
    if (!f) return Status::IOError("cannot write " + tmp + "/meta.json");
  }
  progress.Update(bytes_done);
  progress.Done();
  FANOUT_RETURN_IF_ERROR(SyncTree(tmp));

  if (fs::exists(dir, ec) &&
      ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0) {
    // Overwrite: the two folders swapped in one step; the old one is now at tmp.
    fs::remove_all(tmp, ec);
  } else if (fs::exists(dir, ec)) {  // no atomic exchange here: move aside, swap in, remove the old folder
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
  guard.Release();
  // The rename itself, on disk.
  FANOUT_RETURN_IF_ERROR(
      SyncPath(fs::absolute(fs::path(dir)).lexically_normal().parent_path().string(), true));
  if (meta_out) *meta_out = meta;
  return Status::OK();
}

}  // namespace fanout::datasets
