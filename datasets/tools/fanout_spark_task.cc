// fanout-spark-task: the native steps of the Spark partitioning job
// (python/fanout/spark.py; docs/DATA.md "On Spark"). The job's driver and
// executors run it; each step reads or writes one file or one partition:
//
//   plan    the schema checked, its files resolved (JSON on stdout)
//   nodes   one node file, or a run of a Parquet file's row groups, read
//           (the native reader: CSV or Parquet) to a binary stream of ids,
//           labels, splits and feature rows (or the ids alone)
//   edges   one edge file (or row groups) read to a binary stream of
//           endpoint ids
//   assign  a random or given assignment of every node, as int32 per node
//   begin   the output checked and its staging folder made
//   meta    meta.json's contents from the driver's counts
//   write   one partition's store from the node files the job's node tasks
//           wrote and its edges on stdin, in any order (placed by row and
//           edge id; the chunk writer the native tool uses)
//   commit  the staging folder published as the dataset (fsync and rename)
//
// The streams are little-endian binary, checked as a peer's would be
// (bounded sizes, ordered records, ids in range); each step below gives
// its layout.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/version.h"
#include "datasets/bounded_partition.h"
#include "datasets/detail/store_write.h"
#include "datasets/formats.h"
#include "datasets/partition_store.h"
#include "datasets/partitioner.h"
#include "datasets/table_tasks.h"

using namespace fanout;            // NOLINT: a tool's main file
using namespace fanout::datasets;  // NOLINT
using nlohmann::json;

namespace {

int Fail(const Status& st) {
  std::fprintf(stderr, "fanout-spark-task: error: %s\n", st.ToString().c_str());
  return 1;
}

constexpr int64_t kMaxBlockRows = int64_t{1} << 22;
constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int64_t kMaxNameBytes = int64_t{1} << 31;

// Buffered binary output to stdout.
class Out {
 public:
  Out() { buf_.reserve(1 << 20); }
  void Bytes(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    buf_.insert(buf_.end(), c, c + n);
    if (buf_.size() >= (1 << 20)) Flush();
  }
  template <typename T>
  void Value(T v) {
    Bytes(&v, sizeof v);
  }
  template <typename T>
  void Array(const std::vector<T>& v) {
    Bytes(v.data(), v.size() * sizeof(T));
  }
  bool Flush() {
    size_t off = 0;
    while (off < buf_.size()) {
      ssize_t n = ::write(1, buf_.data() + off, buf_.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ok_ = false;
        break;
      }
      off += static_cast<size_t>(n);
    }
    buf_.clear();
    return ok_;
  }
  bool ok() const { return ok_; }

 private:
  std::vector<char> buf_;
  bool ok_ = true;
};

// Exact reads from stdin.
class In {
 public:
  Status Read(void* p, size_t n, const char* what) {
    char* c = static_cast<char*>(p);
    while (n > 0) {
      ssize_t got = ::read(0, c, n);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return Status::IOError(std::string("reading ") + what + ": " + strerror(errno));
      if (got == 0)
        return Status::InvalidArgument(std::string("the record stream ends inside ") + what);
      c += got;
      n -= static_cast<size_t>(got);
      bytes_ += got;
    }
    return Status::OK();
  }
  template <typename T>
  Status Array(std::vector<T>* v, int64_t n, const char* what) {
    v->resize(static_cast<size_t>(n));
    return Read(v->data(), static_cast<size_t>(n) * sizeof(T), what);
  }
  int64_t bytes() const { return bytes_; }

 private:
  int64_t bytes_ = 0;
};

// plan: the schema's facts as JSON.
int Plan(const std::string& schema) {
  TablesPlan p;
  Status st = PlanTables(schema, &p);
  if (!st.ok()) return Fail(st);
  json nodes = json::array(), edges = json::array();
  for (const auto& t : p.node_tables)
    nodes.push_back({{"type", t.type},
                     {"string_ids", t.string_ids},
                     {"has_split", t.has_split},
                     {"has_features", t.has_features},
                     {"files", t.files}});
  for (const auto& t : p.edge_tables)
    edges.push_back({{"type", t.type},
                     {"reverse", t.reverse},
                     {"source_type", t.source_type},
                     {"destination_type", t.destination_type},
                     {"weighted", t.weighted},
                     {"files", t.files}});
  json j = {{"name", p.name},
            {"hetero", p.hetero},
            {"node_tables", nodes},
            {"edge_tables", edges},
            {"node_files", p.node_files},
            {"edge_files", p.edge_files},
            {"node_file_table", p.node_file_table},
            {"edge_file_table", p.edge_file_table},
            {"string_ids", p.string_ids},
            {"drop_dangling", p.drop_dangling},
            {"has_split", p.has_split},
            {"has_features", p.has_features},
            {"timed", p.timed},
            {"weighted", p.weighted}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

// Whether node file `file_index`'s type (nodes) or edge file `file_index`'s
// source and destination types have string ids.
Status StringIds(const std::string& schema, int file_index, bool nodes, bool* a, bool* b) {
  TablesPlan p;
  FANOUT_RETURN_IF_ERROR(PlanTables(schema, &p));
  const std::vector<int>& table = nodes ? p.node_file_table : p.edge_file_table;
  if (file_index < 0 || static_cast<size_t>(file_index) >= table.size())
    return Status::InvalidArgument("schema " + schema + " lists " + std::to_string(table.size()) +
                                   (nodes ? " node" : " edge") + " file(s); there is no file " +
                                   std::to_string(file_index));
  if (nodes) {
    *a = *b = p.node_tables[static_cast<size_t>(table[file_index])].string_ids;
  } else {
    const auto& et = p.edge_tables[static_cast<size_t>(table[file_index])];
    *a = p.node_tables[static_cast<size_t>(et.source_type)].string_ids;
    *b = p.node_tables[static_cast<size_t>(et.destination_type)].string_ids;
  }
  return Status::OK();
}

// nodes: "FNSN0001", then blocks: int64 n (0 ends), int64 dim, the ids
// (int64[n], or, where the file's node type has string ids, int64
// offsets[n + 1] and the names' bytes), int64 labels[n], uint8 splits[n],
// float32 features[n * dim].
int Nodes(const std::string& schema, int file_index, const TableSlice& slice, int64_t block_rows) {
  bool string_ids = false, unused = false;
  Status plan = StringIds(schema, file_index, true, &string_ids, &unused);
  if (!plan.ok()) return Fail(plan);
  Out out;
  out.Bytes("FNSN0001", 8);
  std::vector<int64_t> ids, offsets{0}, labels;
  std::vector<uint8_t> splits;
  std::vector<float> features;
  std::string names;
  int64_t dim = -1, n = 0;
  auto flush = [&]() {
    out.Value<int64_t>(n);
    out.Value<int64_t>(std::max<int64_t>(dim, 0));
    if (string_ids) {
      out.Array(offsets);
      out.Bytes(names.data(), names.size());
    } else {
      out.Array(ids);
    }
    out.Array(labels);
    out.Array(splits);
    out.Array(features);
    ids.clear(), offsets.assign(1, 0), labels.clear(), splits.clear(), features.clear();
    names.clear();
    n = 0;
    return out.ok();
  };
  Status st = ReadTablesNodeFile(schema, file_index, true, slice, [&](const TableNode& node) {
    if (string_ids) {
      names.append(node.name.data(), node.name.size());
      offsets.push_back(static_cast<int64_t>(names.size()));
    } else {
      ids.push_back(node.id);
    }
    if (dim < 0) dim = static_cast<int64_t>(node.features->size());
    features.insert(features.end(), node.features->begin(), node.features->end());
    labels.push_back(node.label);
    splits.push_back(node.split);
    if (++n == block_rows && !flush())
      return Status::IOError("writing the node stream: " + std::string(strerror(errno)));
    return Status::OK();
  });
  if (!st.ok()) return Fail(st);
  if (n > 0 && !flush()) return Fail(Status::IOError("writing the node stream"));
  out.Value<int64_t>(0);
  if (!out.Flush()) return Fail(Status::IOError("writing the node stream"));
  return 0;
}

// edges: "FNSE0001", then blocks: int64 n (0 ends), the sources and the
// destinations (int64[n] each, or, where their node type has string ids,
// offsets[n + 1] and bytes), then with `timed` the times (int64[n]), then
// with `weighted` the weights (float32[n]; 1 where the file's table names
// no weight column).
int Edges(const std::string& schema, int file_index, const TableSlice& slice, bool timed,
          bool weighted, int64_t block_rows) {
  bool src_strings = false, dst_strings = false;
  Status plan = StringIds(schema, file_index, false, &src_strings, &dst_strings);
  if (!plan.ok()) return Fail(plan);
  Out out;
  out.Bytes("FNSE0001", 8);
  // One end's ids of a block: int64, or offsets and bytes.
  struct End {
    bool strings;
    std::vector<int64_t> ids, off{0};
    std::string names;
    void Add(int64_t id, std::string_view name) {
      if (strings) {
        names.append(name.data(), name.size());
        off.push_back(static_cast<int64_t>(names.size()));
      } else {
        ids.push_back(id);
      }
    }
    void Write(Out* out) {
      if (strings) {
        out->Array(off);
        out->Bytes(names.data(), names.size());
      } else {
        out->Array(ids);
      }
      ids.clear(), off.assign(1, 0), names.clear();
    }
  };
  End src{src_strings, {}, {0}, {}}, dst{dst_strings, {}, {0}, {}};
  std::vector<int64_t> times;
  std::vector<float> weights;
  int64_t n = 0;
  auto flush = [&]() {
    out.Value<int64_t>(n);
    src.Write(&out);
    dst.Write(&out);
    if (timed) out.Array(times);
    if (weighted) out.Array(weights);
    times.clear(), weights.clear();
    n = 0;
    return out.ok();
  };
  Status st = ReadTablesEdgeFile(schema, file_index, true, slice, [&](const TableEdge& e) {
    src.Add(e.source_id, e.source_name);
    dst.Add(e.destination_id, e.destination_name);
    if (timed) times.push_back(e.time);
    if (weighted) weights.push_back(e.weight);
    if (++n == block_rows && !flush())
      return Status::IOError("writing the edge stream: " + std::string(strerror(errno)));
    return Status::OK();
  });
  if (!st.ok()) return Fail(st);
  if (n > 0 && !flush()) return Fail(Status::IOError("writing the edge stream"));
  out.Value<int64_t>(0);
  if (!out.Flush()) return Fail(Status::IOError("writing the edge stream"));
  return 0;
}

// assign: int32 part per node (dense order) into `out_path`, written whole
// then renamed.
int Assign(const std::string& method, int parts, uint64_t seed, int64_t num_nodes,
           const std::string& assignment, const std::string& out_path) {
  PartitionOptions po;
  po.num_parts = parts;
  po.seed = seed;
  po.assignment_path = assignment;
  Status st = ParsePartitionMethod(method, &po.method);
  if (!st.ok()) return Fail(st);
  if (po.method != PartitionMethod::kRandom && po.method != PartitionMethod::kFile)
    return Fail(Status::InvalidArgument("assign computes --method random or file, not " + method));
  std::vector<int32_t> part;
  st = ComputeNodePartition(
      num_nodes, [](int64_t v) { return v; }, po, &part);
  if (!st.ok()) return Fail(st);
  const std::string tmp = out_path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(reinterpret_cast<const char*>(part.data()),
            static_cast<std::streamsize>(part.size() * sizeof(int32_t)));
    f.close();
    if (!f) return Fail(Status::IOError("cannot write " + tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out_path, ec);
  if (ec) return Fail(Status::IOError("cannot rename " + tmp + ": " + ec.message()));
  return 0;
}

// begin: the output checked, stale staging folders removed, a new one made
// (named for the driver's pid, so that a live run's folder is never taken
// for a killed run's).
int Begin(const std::string& output, bool force, long owner_pid) {
  std::string dir;
  Status st = detail::PrepareOutput(output, force, &dir);
  if (!st.ok()) return Fail(st);
  const std::string id = detail::RandomId();
  std::string tmp;
  detail::TempDirGuard guard;
  st = detail::CreateTemporary(dir, id, &tmp, &guard, owner_pid);
  if (!st.ok()) return Fail(st);
  guard.Release();
  std::printf("%s\n", json({{"output", dir}, {"staging", tmp}, {"dataset_id", id}}).dump().c_str());
  return 0;
}

Status ReadText(const std::string& path, std::string* text) {
  std::ifstream f(path);
  if (!f) return Status::NotFound("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  *text = ss.str();
  return Status::OK();
}

// meta: meta.json's contents from the driver's plan (counts, offsets,
// stats: metadata only).
int Meta(const std::string& plan_path, const std::string& out_path) {
  std::string text;
  Status st = ReadText(plan_path, &text);
  if (!st.ok()) return Fail(st);
  DatasetMeta meta;
  try {
    const json j = json::parse(text);
    WriteOptions wo;
    wo.incoming = j.at("direction").get<std::string>() == "in";
    st = ParseFeatureDType(j.at("feature_dtype").get<std::string>(), &wo.feature_dtype);
    if (!st.ok()) return Fail(st);
    wo.chunk_nodes = j.at("chunk_nodes").get<int64_t>();
    wo.method = j.at("method").get<std::string>();
    wo.source_path = j.at("source_path").get<std::string>();
    wo.options_json = j.at("options").dump();
    detail::MetaInputs in;
    in.name = j.at("name").get<std::string>();
    in.format = "tables";
    in.num_nodes = j.at("num_nodes").get<int64_t>();
    in.num_edges = j.at("num_edges").get<int64_t>();
    in.feature_dim = j.at("feature_dim").get<int64_t>();
    in.num_classes = j.at("num_classes").get<int64_t>();
    in.has_labels = j.at("has_labels").get<bool>();
    in.has_split = j.at("has_split").get<bool>();
    in.has_names = j.at("has_names").get<bool>();
    in.has_edge_times = j.value("has_edge_times", false);
    in.has_edge_weights = j.value("has_edge_weights", false);
    const int k = j.at("num_parts").get<int>();
    meta = detail::BaseMeta(in, k, wo);
    meta.dataset_id = j.at("dataset_id").get<std::string>();
    meta.offsets = j.at("offsets").get<std::vector<int64_t>>();
    meta.stats.nodes = j.at("stats").at("nodes").get<std::vector<int64_t>>();
    meta.stats.edges = j.at("stats").at("edges").get<std::vector<int64_t>>();
    meta.stats.cut_edges = j.at("stats").at("cut_edges").get<int64_t>();
    if (static_cast<int>(meta.offsets.size()) != k + 1 ||
        static_cast<int>(meta.stats.nodes.size()) != k ||
        static_cast<int>(meta.stats.edges.size()) != k)
      return Fail(Status::InvalidArgument(plan_path + ": offsets and stats must cover " +
                                          std::to_string(k) + " partitions"));
    FinishPartitionStats(in.num_nodes, in.num_edges, &meta.stats);
    if (j.contains("hetero")) {  // node and edge types, each partition's type bounds
      const json& h = j.at("hetero");
      meta.hetero.node_types = h.at("node_types").get<std::vector<std::string>>();
      for (const json& e : h.at("edge_types"))
        meta.hetero.edge_types.push_back(
            {e.at(0).get<int32_t>(), e.at(1).get<std::string>(), e.at(2).get<int32_t>()});
      meta.hetero.type_bounds = h.at("type_bounds").get<std::vector<int64_t>>();
      meta.hetero.feature_dims = h.at("feature_dims").get<std::vector<int64_t>>();
      meta.hetero.incoming = wo.incoming;
      // What meta.json's reader checks (bounds per partition and type, dims, names).
      DatasetMeta back;
      st = DatasetMeta::FromJson(meta.ToJson(), plan_path, &back);
      if (!st.ok()) return Fail(st);
    }
    if (meta.feature_dtype == FeatureDType::kInt8 && in.feature_dim > 0)
      detail::SetInt8Scales(j.at("feature_max_abs").get<std::vector<float>>(), &meta);
  } catch (const std::exception& e) {
    return Fail(Status::InvalidArgument(plan_path + ": " + e.what()));
  }
  std::ofstream f(out_path);
  f << meta.ToJson();
  f.close();
  if (!f) return Fail(Status::IOError("cannot write " + out_path));
  return 0;
}

Status LoadMeta(const std::string& path, DatasetMeta* meta) {
  std::string text;
  FANOUT_RETURN_IF_ERROR(ReadText(path, &text));
  return DatasetMeta::FromJson(text, path, meta);
}

// One chunk's nodes as the node files gave them.
class ChunkNodes final : public detail::NodeSource {
 public:
  void FeatureRow(int64_t v, float* out) const override {
    std::copy_n(features.data() + v * dim, dim, out);
  }
  int64_t Label(int64_t v) const override { return labels[v]; }
  uint8_t SplitOf(int64_t v) const override { return splits[v]; }
  int64_t OriginalId(int64_t v) const override { return originals[v]; }
  std::string_view Name(int64_t v) const override {
    return std::string_view(names).substr(name_off[v], name_off[v + 1] - name_off[v]);
  }
  void Clear() {
    features.clear(), labels.clear(), splits.clear(), originals.clear(), names.clear();
    name_off.assign(1, 0);
  }
  int64_t dim = 0;
  std::vector<float> features;
  std::vector<int64_t> labels, originals, name_off{0};
  std::vector<uint8_t> splits;
  std::string names;
};

// A partition's node rows, in stored order, from the node files the job's
// node tasks wrote (one per input slice that holds nodes of the partition,
// read in slice order): "FNSP0001", then blocks: int64 m (0 ends), int64
// dim, int64 name bytes; int64 labels[m], uint8 splits[m], int64 original
// ids[m], with names int64 offsets[m + 1] and the bytes; float32
// features[m * dim].
class NodeFiles {
 public:
  NodeFiles(std::string dir, int units, int part, const DatasetMeta& meta)
      : dir_(std::move(dir)), units_(units), part_(part), meta_(meta) {}
  ~NodeFiles() {
    if (f_) std::fclose(f_);
  }
  // The next node: its index in the current block (*k), or an error; false
  // at the end of the last file.
  Status Next(bool* got, int64_t* k) {
    while (at_ >= m_) {
      FANOUT_RETURN_IF_ERROR(NextBlock());
      if (m_ < 0) {
        *got = false;
        return Status::OK();
      }
    }
    *got = true;
    *k = at_++;
    return Status::OK();
  }
  std::vector<int64_t> labels, originals, name_off;
  std::vector<uint8_t> splits;
  std::vector<char> names;
  std::vector<float> features;

 private:
  Status Read(void* p, size_t n, const char* what) {
    if (std::fread(p, 1, n, f_) != n)
      return Status::Corruption(path_ + ": ends inside " + std::string(what));
    return Status::OK();
  }
  template <typename T>
  Status Array(std::vector<T>* v, int64_t n, const char* what) {
    v->resize(static_cast<size_t>(n));
    return Read(v->data(), static_cast<size_t>(n) * sizeof(T), what);
  }
  // Opens the next unit's file that exists; m_ = -1 after the last.
  Status NextBlock() {
    at_ = 0, m_ = 0;
    for (;;) {
      if (f_ == nullptr) {
        while (unit_ < units_) {
          path_ = dir_ + "/u" + std::to_string(unit_++) + "-p" + std::to_string(part_) + ".bin";
          f_ = std::fopen(path_.c_str(), "rb");
          if (f_ != nullptr) break;
          if (errno != ENOENT)
            return Status::IOError("cannot open " + path_ + ": " + strerror(errno));
        }
        if (f_ == nullptr) {
          m_ = -1;
          return Status::OK();
        }
        char magic[8];
        FANOUT_RETURN_IF_ERROR(Read(magic, 8, "its header"));
        if (std::memcmp(magic, "FNSP0001", 8) != 0)
          return Status::Corruption(path_ + ": not a node file (no FNSP0001 header)");
      }
      int64_t head[3];
      FANOUT_RETURN_IF_ERROR(Read(head, sizeof head, "a block header"));
      const int64_t m = head[0], dim = head[1], name_bytes = head[2];
      if (m == 0) {
        std::fclose(f_);
        f_ = nullptr;
        continue;
      }
      // A heterogeneous dataset's narrower types come at their own width, padded here.
      const bool width_ok =
          meta_.hetero.empty() ? dim == meta_.feature_dim : dim >= 0 && dim <= meta_.feature_dim;
      if (m < 0 || m > kMaxBlockRows || !width_ok || name_bytes < 0 || name_bytes > kMaxNameBytes ||
          (!meta_.has_names && name_bytes != 0))
        return Status::Corruption(path_ + ": a block of " + std::to_string(m) + " nodes, " +
                                  std::to_string(dim) + " features (the dataset has " +
                                  std::to_string(meta_.feature_dim) + ") and " +
                                  std::to_string(name_bytes) + " name bytes");
      FANOUT_RETURN_IF_ERROR(Array(&labels, m, "the labels"));
      FANOUT_RETURN_IF_ERROR(Array(&splits, m, "the splits"));
      FANOUT_RETURN_IF_ERROR(Array(&originals, m, "the original ids"));
      if (meta_.has_names) {
        FANOUT_RETURN_IF_ERROR(Array(&name_off, m + 1, "the name offsets"));
        FANOUT_RETURN_IF_ERROR(Array(&names, name_bytes, "the names"));
        if (name_off[0] != 0 || name_off[static_cast<size_t>(m)] != name_bytes)
          return Status::Corruption(path_ + ": name offsets do not span the block's names");
        for (int64_t i = 0; i < m; ++i)
          if (name_off[i + 1] < name_off[i])
            return Status::Corruption(path_ + ": name offsets decrease");
      }
      FANOUT_RETURN_IF_ERROR(Array(&features, m * dim, "the feature rows"));
      const int64_t d = meta_.feature_dim;
      if (dim < d) {  // padded in place, from the last row back
        features.resize(static_cast<size_t>(m * d));
        for (int64_t i = m - 1; i >= 0; --i) {
          std::copy_backward(features.begin() + i * dim, features.begin() + (i + 1) * dim,
                             features.begin() + i * d + dim);
          std::fill(features.begin() + i * d + dim, features.begin() + (i + 1) * d, 0.0f);
        }
      }
      m_ = m;
      return Status::OK();
    }
  }

  const std::string dir_;
  const int units_, part_;
  const DatasetMeta& meta_;
  std::string path_;
  FILE* f_ = nullptr;
  int unit_ = 0;
  int64_t at_ = 0, m_ = 0;
};

// write: partition `part`'s store: its nodes from the node files, its
// stored edges from stdin, in any order: "FNSW0003", then blocks: int64 n (0
// ends); int64 rows[n], eids[n], neighbors[n], int64 times[n] where the
// dataset has edge times, int64 edge types[n] where it is heterogeneous,
// float32 weights[n] where it has edge weights (a negative row is a
// placeholder, skipped: it gives a partition without edges a task). The
// edges go to a spill file (24 bytes each, 8 more for each of time, type
// and weight) while their rows' degrees are counted; then slices of whole
// chunks are read back from it and placed by counting sort, each row's
// edges ordered by type, then time, then edge id (the native order: input
// order, stably sorted by time, then by type), under `memory_limit` bytes
// for the slice's edges.
class PartWrite {
 public:
  PartWrite(const DatasetMeta& meta, int part, bool normalize, NodeFiles* nodes,
            std::string spill_path, int64_t memory_limit)
      : meta_(meta),
        part_(part),
        normalize_(normalize),
        begin_(meta.offsets[part]),
        end_(meta.offsets[part + 1]),
        files_(nodes),
        spill_path_(std::move(spill_path)),
        memory_limit_(memory_limit) {
    nodes_.dim = meta.feature_dim;
  }
  ~PartWrite() {
    if (spill_ != nullptr) std::fclose(spill_);
    if (!spill_path_.empty()) std::remove(spill_path_.c_str());
  }

  Status Run(const std::string& staging, json* report) {
    degrees_.assign(static_cast<size_t>(end_ - begin_), 0);
    const auto t0 = std::chrono::steady_clock::now();
    FANOUT_RETURN_IF_ERROR(Spill());
    const auto t1 = std::chrono::steady_clock::now();
    // Written beside its final name and renamed into place when complete: a failed attempt leaves
    // nothing (the guard removes it), and a retried one replaces what an earlier, killed one left.
    const std::string final_path = staging + "/part-" + std::to_string(part_);
    const std::string tmp_path = final_path + ".attempt-" + std::to_string(getpid());
    guard_.Reset(tmp_path);
    FANOUT_RETURN_IF_ERROR(detail::PartStoreWriter::Open(tmp_path, int64_t{64} << 20, &w_));
    FANOUT_RETURN_IF_ERROR(w_->PutInfo(meta_, part_, edges_));
    FANOUT_RETURN_IF_ERROR(Place());
    bool more = false;
    int64_t k = 0;
    FANOUT_RETURN_IF_ERROR(files_->Next(&more, &k));
    if (more)
      return Status::InvalidArgument("partition " + std::to_string(part_) +
                                     ": the node files hold more than its " +
                                     std::to_string(end_ - begin_) + " nodes");
    FANOUT_RETURN_IF_ERROR(w_->Close());
    const int64_t bytes = w_->bytes_written();
    w_.reset();
    std::error_code ec;
    std::filesystem::remove_all(final_path, ec);
    std::filesystem::rename(tmp_path, final_path, ec);
    if (ec)
      return Status::IOError("cannot rename " + tmp_path + " to " + final_path + ": " +
                             ec.message());
    guard_.Release();
    const auto t2 = std::chrono::steady_clock::now();
    *report = {{"part", part_},
               {"edges", edges_},
               {"cut_edges", cut_},
               {"bytes", bytes},
               {"slices", slices_},
               {"receive_seconds", std::chrono::duration<double>(t1 - t0).count()},
               {"write_seconds", std::chrono::duration<double>(t2 - t1).count()}};
    return Status::OK();
  }

 private:
  using Placed = detail::PlacedEdge;

  Status Spill() {
    spill_ = std::fopen(spill_path_.c_str(), "w+b");
    if (spill_ == nullptr)
      return Status::IOError("cannot create " + spill_path_ + ": " + strerror(errno));
    char magic[8];
    FANOUT_RETURN_IF_ERROR(in_.Read(magic, 8, "the stream's header"));
    if (std::memcmp(magic, "FNSW0003", 8) != 0)
      return Status::InvalidArgument("the edge stream does not start with FNSW0003");
    std::vector<int64_t> rows, eids, nbrs, times, types;
    std::vector<float> weights;
    const bool timed = meta_.has_edge_times, weighted = meta_.has_edge_weights,
               typed = !meta_.hetero.empty();
    const size_t words = Words();
    std::vector<int64_t> out;  // row, eid, nbr[, time][, type][, weight's bits] per edge
    for (;;) {
      int64_t n = 0;
      FANOUT_RETURN_IF_ERROR(in_.Read(&n, sizeof n, "a block header"));
      if (n == 0) break;
      if (n < 0 || n > kMaxBlockRows)
        return Status::InvalidArgument("a block header claims " + std::to_string(n) + " edges");
      FANOUT_RETURN_IF_ERROR(in_.Array(&rows, n, "the rows"));
      FANOUT_RETURN_IF_ERROR(in_.Array(&eids, n, "the edge ids"));
      FANOUT_RETURN_IF_ERROR(in_.Array(&nbrs, n, "the neighbors"));
      if (timed) FANOUT_RETURN_IF_ERROR(in_.Array(&times, n, "the times"));
      if (typed) FANOUT_RETURN_IF_ERROR(in_.Array(&types, n, "the edge types"));
      if (weighted) FANOUT_RETURN_IF_ERROR(in_.Array(&weights, n, "the weights"));
      out.clear();
      for (int64_t i = 0; i < n; ++i) {
        const int64_t row = rows[i], eid = eids[i], nbr = nbrs[i];
        if (row < 0) continue;  // a placeholder
        if (row < begin_ || row >= end_ || eid < 0 || eid >= meta_.num_edges || nbr < 0 ||
            nbr >= meta_.num_nodes)
          return Status::InvalidArgument(
              "partition " + std::to_string(part_) + ": edge " + std::to_string(eid) + " (row " +
              std::to_string(row) + ", neighbor " + std::to_string(nbr) +
              ") is outside its rows [" + std::to_string(begin_) + ", " + std::to_string(end_) +
              "), the edge ids [0, " + std::to_string(meta_.num_edges) + ") or the nodes");
        ++degrees_[static_cast<size_t>(row - begin_)];
        cut_ += nbr < begin_ || nbr >= end_;
        out.insert(out.end(), {row, eid, nbr});
        if (timed) out.push_back(times[i]);
        if (typed) {
          const int64_t x = types[i];
          const auto& h = meta_.hetero;
          if (x < 0 || x >= h.num_edge_types() ||
              h.RowType(static_cast<int>(x)) != h.NodeTypeOf(row) ||
              (h.incoming ? h.edge_types[x].src : h.edge_types[x].dst) != h.NodeTypeOf(nbr))
            return Status::InvalidArgument(
                "partition " + std::to_string(part_) + ": edge " + std::to_string(eid) +
                " has edge type " + std::to_string(x) +
                ", outside the types or not joining its row's and its neighbor's node types");
          out.push_back(x);
        }
        if (weighted) {
          const float w = weights[i];
          if (!(std::isfinite(w) && w >= 0))
            return Status::InvalidArgument("partition " + std::to_string(part_) + ": edge " +
                                           std::to_string(eid) + " has weight " +
                                           std::to_string(w) + " (weights are finite and >= 0)");
          uint32_t bits;
          std::memcpy(&bits, &w, 4);
          out.push_back(bits);
        }
      }
      if (!out.empty() &&
          std::fwrite(out.data(), sizeof(int64_t), out.size(), spill_) != out.size())
        return Status::IOError("writing " + spill_path_ + ": " + strerror(errno));
      edges_ += static_cast<int64_t>(out.size() / words);
    }
    if (std::fflush(spill_) != 0)
      return Status::IOError("writing " + spill_path_ + ": " + strerror(errno));
    return Status::OK();
  }

  // int64 words per spilled edge.
  size_t Words() const {
    return 3 + (meta_.has_edge_times ? 1 : 0) + (meta_.hetero.empty() ? 0 : 1) +
           (meta_.has_edge_weights ? 1 : 0);
  }

  // Slices of whole chunks, each read back from the spill and written.
  Status Place() {
    const int64_t rows = end_ - begin_, cn = meta_.chunk_nodes;
    std::vector<int64_t> start(static_cast<size_t>(rows) + 1, 0);
    for (int64_t r = 0; r < rows; ++r) start[r + 1] = start[r] + degrees_[r];
    const int64_t budget =
        std::max<int64_t>(memory_limit_ / 40, 1);  // 32 placed + 8 per row, about
    const size_t words = Words();
    const bool timed = meta_.has_edge_times, weighted = meta_.has_edge_weights,
               typed = !meta_.hetero.empty();
    std::vector<Placed> slot;
    std::vector<int64_t> fill;
    std::vector<int64_t> buf(words << 16);
    for (int64_t c0 = 0; c0 * cn < rows || (rows == 0 && c0 == 0);) {
      // Chunks [c0, c1) whose edges fit the budget (one chunk at least).
      int64_t c1 = c0 + 1;
      while (c1 * cn < rows && start[std::min(rows, (c1 + 1) * cn)] - start[c0 * cn] <= budget)
        ++c1;
      const int64_t ra = c0 * cn, rz = std::min(rows, c1 * cn), e0 = start[ra];
      slot.assign(static_cast<size_t>(start[rz] - e0), Placed{0, 0, 0, 0, 0});
      fill.assign(start.begin() + ra, start.begin() + rz);
      if (std::fseek(spill_, 0, SEEK_SET) != 0)
        return Status::IOError("reading " + spill_path_ + ": " + strerror(errno));
      for (;;) {
        const size_t got = std::fread(buf.data(), sizeof(int64_t), buf.size(), spill_) / words;
        for (size_t i = 0; i < got; ++i) {
          const int64_t* e = buf.data() + i * words;
          const int64_t r = e[0] - begin_;
          if (r < ra || r >= rz) continue;
          float w = 0;
          if (weighted) {
            const uint32_t bits = static_cast<uint32_t>(e[words - 1]);
            std::memcpy(&w, &bits, 4);
          }
          const int32_t type = typed ? static_cast<int32_t>(e[timed ? 4 : 3]) : 0;
          slot[static_cast<size_t>(fill[r - ra]++ - e0)] = {timed ? e[3] : 0, e[1], e[2], w, type};
        }
        if (got < buf.size() / words) break;
      }
      if (std::ferror(spill_)) return Status::IOError("reading " + spill_path_);
      for (int64_t r = ra; r < rz; ++r) {
        auto first = slot.begin() + (start[r] - e0), last = slot.begin() + (start[r + 1] - e0);
        std::sort(first, last);
        for (auto it = first; it != last && it + 1 != last; ++it)
          if (it->eid == (it + 1)->eid)
            return Status::InvalidArgument("partition " + std::to_string(part_) + ": edge id " +
                                           std::to_string(it->eid) + " is stored twice");
      }
      for (int64_t c = c0; c < c1 && c * cn < std::max<int64_t>(rows, 1); ++c) {
        const int64_t a = c * cn, z = std::min(rows, (c + 1) * cn);
        std::vector<int64_t> deg(degrees_.begin() + a, degrees_.begin() + z), nbr, eid, time, type;
        std::vector<float> weight;
        nbr.reserve(static_cast<size_t>(start[z] - start[a]));
        eid.reserve(nbr.capacity());
        for (int64_t x = start[a]; x < start[z]; ++x) {
          const Placed& e = slot[static_cast<size_t>(x - e0)];
          eid.push_back(e.eid);
          nbr.push_back(e.nbr);
          if (timed) time.push_back(e.time);
          if (weighted) weight.push_back(e.weight);
          if (typed) type.push_back(e.type);
        }
        if (z > a) {
          FANOUT_RETURN_IF_ERROR(w_->PutAdjChunk(c, deg, nbr, eid));
          if (timed) FANOUT_RETURN_IF_ERROR(w_->PutEdgeTimeChunk(c, time));
          if (weighted) FANOUT_RETURN_IF_ERROR(w_->PutEdgeWeightChunk(c, weight));
          if (typed) FANOUT_RETURN_IF_ERROR(w_->PutEdgeTypeChunk(c, type));
          FANOUT_RETURN_IF_ERROR(Nodes(c, z - a));
        }
      }
      ++slices_;
      c0 = c1;
      if (rows == 0) break;
    }
    return Status::OK();
  }

  // Chunk c's `n` node rows from the node files.
  Status Nodes(int64_t c, int64_t n) {
    nodes_.Clear();
    for (int64_t i = 0; i < n; ++i) {
      bool got = false;
      int64_t k = 0;
      FANOUT_RETURN_IF_ERROR(files_->Next(&got, &k));
      if (!got)
        return Status::InvalidArgument(
            "partition " + std::to_string(part_) + ": the node files end at row " +
            std::to_string(begin_ + c * meta_.chunk_nodes + i) + " of [" + std::to_string(begin_) +
            ", " + std::to_string(end_) + ")");
      nodes_.labels.push_back(files_->labels[k]);
      nodes_.splits.push_back(files_->splits[k]);
      nodes_.originals.push_back(files_->originals[k]);
      if (meta_.has_names) {
        nodes_.names.append(files_->names.data() + files_->name_off[k],
                            files_->name_off[k + 1] - files_->name_off[k]);
        nodes_.name_off.push_back(static_cast<int64_t>(nodes_.names.size()));
      }
      const int64_t d = meta_.feature_dim;
      float* row = files_->features.data() + k * d;
      if (normalize_ && d > 0) NormalizeFeatureRow(row, d);
      nodes_.features.insert(nodes_.features.end(), row, row + d);
    }
    std::vector<int64_t> local(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) local[i] = i;
    return w_->PutNodeChunks(meta_, c, local.data(), n, nodes_);
  }

  const DatasetMeta& meta_;
  const int part_;
  const bool normalize_;
  const int64_t begin_, end_;
  NodeFiles* files_;
  const std::string spill_path_;
  const int64_t memory_limit_;
  FILE* spill_ = nullptr;
  In in_;
  // Declared before the writer, so destroyed after it: the store is closed before its folder goes.
  detail::TempDirGuard guard_;
  std::unique_ptr<detail::PartStoreWriter> w_;
  std::vector<int64_t> degrees_;
  int64_t edges_ = 0, cut_ = 0, slices_ = 0;
  ChunkNodes nodes_;
};

int Write(const std::string& meta_path, const std::string& staging, int part, bool normalize,
          const std::string& nodes_dir, int units, const std::string& spill_dir,
          int64_t memory_limit) {
  DatasetMeta meta;
  Status st = LoadMeta(meta_path, &meta);
  if (!st.ok()) return Fail(st);
  if (part < 0 || part >= meta.num_parts)
    return Fail(Status::InvalidArgument("--part " + std::to_string(part) + " is outside [0, " +
                                        std::to_string(meta.num_parts) + ")"));
  if (meta.has_feature_files())
    return Fail(Status::NotSupported("feature files are not written by the Spark job"));
  if (meta.feature_dim > kMaxDim) return Fail(Status::InvalidArgument("feature_dim too large"));
  NodeFiles files(nodes_dir, units, part, meta);
  PartWrite w(meta, part, normalize, &files,
              spill_dir + "/spill-p" + std::to_string(part) + "-" + std::to_string(getpid()),
              memory_limit);
  json report;
  st = w.Run(staging, &report);
  if (!st.ok()) return Fail(st);
  std::printf("%s\n", report.dump().c_str());
  return 0;
}

// commit: every partition present, then meta.json written, the folder
// synced and renamed into place.
int Commit(const std::string& meta_path, const std::string& staging, const std::string& output) {
  DatasetMeta meta;
  Status st = LoadMeta(meta_path, &meta);
  if (!st.ok()) return Fail(st);
  for (int p = 0; p < meta.num_parts; ++p) {
    std::error_code ec;
    if (!std::filesystem::is_directory(staging + "/part-" + std::to_string(p), ec))
      return Fail(Status::InvalidArgument(staging + ": partition " + std::to_string(p) +
                                          " was not written; nothing published"));
  }
  detail::TempDirGuard guard(staging);
  st = detail::CommitTemporary(staging, output, meta, &guard);
  if (!st.ok()) return Fail(st);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-spark-task: the native steps of the Spark partitioning job (python -m fanout.spark; "
      "docs/DATA.md). The job runs it on its driver and executors; each step reads one table "
      "file or writes one partition."};
  app.set_version_flag("--version", fanout::VersionLine("fanout-spark-task"));
  app.require_subcommand(1);
  std::string schema, output, method, assignment, out_path, meta_path, staging, plan_path;
  int file_index = 0, parts = 1, part = 0;
  bool force = false, normalize = false, ids_only = false, timed = false, weighted = false;
  int64_t block_rows = 65536, num_nodes = 0, first_row = 0;
  std::string row_groups, nodes_dir, spill_dir, memory_text = "1G";
  int units = 0;
  uint64_t seed = 1;
  long owner_pid = 0;

  auto* plan = app.add_subcommand("plan", "Check a schema and list its files (JSON)");
  plan->add_option("--schema", schema, "The tables' schema (docs/DATA.md)")->required();

  auto* nodes = app.add_subcommand(
      "nodes", "Read a node file (or some of its row groups) to a binary stream on stdout");
  auto* edges_cmd = app.add_subcommand(
      "edges", "Read an edge file (or some of its row groups) to a binary stream on stdout");
  for (auto* c : {nodes, edges_cmd}) {
    c->add_option("--schema", schema, "The tables' schema")->required();
    c->add_option("--file-index", file_index, "Which file, in the plan's order")->required();
    c->add_option("--block-rows", block_rows, "Rows per block")->check(CLI::Range(1, 1 << 22));
    c->add_option("--row-groups", row_groups,
                  "Parquet: read row groups FIRST:END only (END -1: to the last)");
    c->add_option("--first-row", first_row, "With --row-groups: the file's row of the first one")
        ->check(CLI::NonNegativeNumber);
  }
  nodes->add_flag("--ids-only", ids_only, "Read the ids alone (no features, labels or split)");
  edges_cmd->add_flag("--timed", timed,
                      "Also stream each edge's time (the schema names a time column)");
  edges_cmd->add_flag("--weighted", weighted,
                      "Also stream each edge's weight (the schema names a weight column)");

  auto* assign = app.add_subcommand("assign", "Write each node's part (int32 per node)");
  assign->add_option("--method", method, "random or file")->required();
  assign->add_option("--parts", parts, "Partitions")->required()->check(CLI::Range(1, 4096));
  assign->add_option("--seed", seed, "Random seed");
  assign->add_option("--num-nodes", num_nodes, "Nodes")->required()->check(CLI::PositiveNumber);
  assign->add_option("--assignment", assignment, "--method file: one part per line");
  assign->add_option("--out", out_path, "Output file")->required();

  auto* begin = app.add_subcommand("begin", "Check the output and make its staging folder");
  begin->add_option("--output", output, "The dataset folder to publish")->required();
  begin->add_flag("--force", force, "Replace an existing output at commit");
  begin->add_option("--owner-pid", owner_pid, "The driver's pid (names the staging folder)")
      ->required();

  auto* meta = app.add_subcommand("meta", "Write meta.json's contents from the driver's plan");
  meta->add_option("--plan", plan_path, "The driver's counts (JSON)")->required();
  meta->add_option("--out", out_path, "Output file")->required();

  auto* write = app.add_subcommand(
      "write", "Write one partition's store from its node files and stdin's edges");
  write->add_option("--meta", meta_path, "meta.json's contents (from meta)")->required();
  write->add_option("--staging", staging, "The staging folder (from begin)")->required();
  write->add_option("--part", part, "The partition")->required();
  write->add_flag("--normalize-features", normalize, "Scale each feature row to sum |x| = 1");
  write->add_option("--nodes-dir", nodes_dir, "The node files' folder (u<unit>-p<part>.bin)")
      ->required();
  write->add_option("--units", units, "Input slices the node tasks read")->required();
  write->add_option("--spill-dir", spill_dir, "Folder for the edges' spill file")->required();
  write->add_option("--memory-limit", memory_text,
                    "Memory for one slice of placed edges, e.g. 1G (default 1G)");

  auto* commit = app.add_subcommand("commit", "Publish the staging folder as the dataset");
  commit->add_option("--meta", meta_path, "meta.json's contents (from meta)")->required();
  commit->add_option("--staging", staging, "The staging folder")->required();
  commit->add_option("--output", output, "The dataset folder")->required();

  CLI11_PARSE(app, argc, argv);
  if (plan->parsed()) return Plan(schema);
  ParquetRange range;
  TableSlice slice;
  slice.ids_only = ids_only;
  if (!row_groups.empty()) {
    long long a = 0, z = 0;
    char tail = 0;
    if (std::sscanf(row_groups.c_str(), "%lld:%lld%c", &a, &z, &tail) != 2 || a < 0 ||
        (z >= 0 && z < a))
      return Fail(Status::InvalidArgument("--row-groups '" + row_groups + "': FIRST:END"));
    range.first_group = a, range.end_group = z, range.first_row = first_row;
    slice.range = &range;
  }
  if (nodes->parsed()) return Nodes(schema, file_index, slice, block_rows);
  if (edges_cmd->parsed()) return Edges(schema, file_index, slice, timed, weighted, block_rows);
  if (assign->parsed()) return Assign(method, parts, seed, num_nodes, assignment, out_path);
  if (begin->parsed()) return Begin(output, force, owner_pid);
  if (meta->parsed()) return Meta(plan_path, out_path);
  if (write->parsed()) {
    int64_t memory_limit = 0;
    Status st = ParseByteSize(memory_text, &memory_limit);
    if (!st.ok() || memory_limit <= 0)
      return Fail(Status::InvalidArgument("--memory-limit '" + memory_text + "': e.g. 1G, 512M"));
    return Write(meta_path, staging, part, normalize, nodes_dir, units, spill_dir, memory_limit);
  }
  if (commit->parsed()) return Commit(meta_path, staging, output);
  return 1;
}
