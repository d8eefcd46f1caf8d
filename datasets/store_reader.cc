#include <fcntl.h>
#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/cpu.h"
#include "datasets/detail/chunk_codec.h"
#include "datasets/detail/chunks.h"
#include "datasets/partition_store.h"

namespace fanout::datasets {

Status ReadDatasetMeta(const std::string& dir, DatasetMeta* out) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::NotFound(dir + ": no such dataset folder");
  std::string path = dir + "/meta.json";
  std::ifstream f(path);
  if (!f)
    return Status::NotFound(path +
                            ": missing; not a Fanout dataset folder (or an unfinished write)");
  std::stringstream ss;
  ss << f.rdbuf();
  return DatasetMeta::FromJson(ss.str(), path, out);
}

sampler::CsrGraph PartitionData::Graph() const {
  return View().Graph();  // OpenPartition checked the arrays
}

int64_t PartitionData::RawBytes() const { return View().RawBytes(); }

Status PartitionArrayBytes(const DatasetMeta& meta, int part, int64_t* bytes) {
  if (part < 0 || part >= meta.num_parts)
    return Status::InvalidArgument("partition " + std::to_string(part) + " is not in [0, " +
                                   std::to_string(meta.num_parts) + ")");
  if (static_cast<int>(meta.stats.edges.size()) != meta.num_parts)
    return Status::InvalidArgument("meta.json of dataset " + meta.name +
                                   " does not record each partition's edge count (\"partitions\")");
  const int64_t n = meta.offsets[part + 1] - meta.offsets[part];
  const int64_t e = meta.stats.edges[part];
  *bytes = (n + 1) * 8 + e * 8 * 2 + n * meta.feature_dim * FeatureDTypeSize(meta.feature_dtype) +
           (meta.has_labels ? n * 8 : 0) + (meta.has_split ? n : 0) + n * 8 +
           (meta.has_edge_times ? e * 8 : 0) + (meta.hetero.empty() ? 0 : e * 4) +
           (meta.has_edge_weights ? e * 4 : 0);
  return Status::OK();
}

float PartitionData::Feature(int64_t row, int64_t j) const {
  const int64_t d = meta.feature_dim;
  const char* r = reinterpret_cast<const char*>(features.data()) +
                  row * d * FeatureDTypeSize(meta.feature_dtype);
  return DecodeFeature(meta.feature_dtype, meta.feature_scales.data(), r, j);
}

namespace {

// One kind of chunk and where its payloads go.
struct ChunkSink {
  const char* prefix;
  // Consumes one verified payload of chunk c (cn nodes); returns an error text or "".
  std::function<std::string(int64_t c, int64_t cn, const char* p, size_t n)> take;
};

// Where the per-edge chunk kinds have got to (each chunk appends its edges).
struct EdgeCursors {
  int64_t adj = 0, time = 0, type = 0, weight = 0;
};

// Opens the partition's RocksDB folder read-only for one sequential pass,
// after asking the kernel to start reading its table files.
Status OpenPartitionDb(const std::string& path, std::unique_ptr<rocksdb::DB>* db) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return Status::Corruption(path + ": missing partition folder");
  // Start the kernel reading every table file now, at disk speed, ahead of
  // the in-place (mmap) reads, which would otherwise fault in pages a few at
  // a time.
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    if (entry.path().extension() != ".sst") continue;
    int fd = ::open(entry.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
    ::close(fd);
  }
  rocksdb::Options opts;
  opts.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  opts.paranoid_checks = true;
  // Values are read into buffers (pread), not mapped: a mapped store's pages
  // count in the process's RSS while it loads (a whole partition's worth, on
  // top of the arrays), and a server under --memory-limit must not pass it
  // to load. The copy costs less than the checksum.
  opts.allow_mmap_reads = false;
  opts.advise_random_on_open = false;  // one sequential pass: keep kernel readahead on
  rocksdb::BlockBasedTableOptions table;
  table.no_block_cache = true;  // one sequential pass; caching would double the memory
  opts.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocksdb::DB* raw = nullptr;
  rocksdb::Status rs = rocksdb::DB::OpenForReadOnly(opts, path, &raw);
  if (!rs.ok())
    return Status::Corruption(path + ": cannot open the partition database: " + rs.ToString());
  db->reset(raw);
  return Status::OK();
}

// Reads and checks the partition's 'info' record against meta.json: the
// dataset, the partition number and its node range. Sets d's range.
Status ReadPartitionInfo(rocksdb::DB* db, const rocksdb::ReadOptions& ro, const std::string& path,
                         const std::string& dir, int part, PartitionData* d, int64_t* num_edges) {
  const DatasetMeta& meta = d->meta;
  std::string value;
  rocksdb::Status rs = db->Get(ro, "info", &value);
  if (!rs.ok()) return Status::Corruption(path + ": missing 'info' record: " + rs.ToString());
  size_t payload = 0;
  if (!detail::CheckChunk(value.data(), value.size(), true, &payload))
    return Status::Corruption(path + ": 'info' record fails its checksum");
  nlohmann::json info;
  try {
    info = nlohmann::json::parse(value.substr(0, payload));
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": 'info' record is not JSON: " + e.what());
  }
  try {
    if (info.at("dataset_id").get<std::string>() != meta.dataset_id)
      return Status::Corruption(path + " belongs to another dataset than " + dir + "/meta.json");
    if (info.at("part").get<int>() != part)
      return Status::Corruption(path + " holds partition " + info["part"].dump());
    d->node_begin = info.at("node_begin").get<int64_t>();
    d->node_end = info.at("node_end").get<int64_t>();
    if (d->node_begin != meta.offsets[part] || d->node_end != meta.offsets[part + 1])
      return Status::Corruption(path + ": node range disagrees with meta.json partition_offsets");
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": 'info' record lacks a field: " + e.what());
  }
  *num_edges = info.value("num_edges", int64_t{0});
  return Status::OK();
}

// Sizes d's arrays for its node range and num_edges; huge pages for the
// arrays the sampler reads at random (advised before first touch).
void SizePartitionArrays(int64_t num_edges, const OpenOptions& o, bool narrow, PartitionData* d) {
  const DatasetMeta& meta = d->meta;
  const int64_t n = d->node_end - d->node_begin;
  const size_t feature_bytes =
      static_cast<size_t>(n * meta.feature_dim * FeatureDTypeSize(meta.feature_dtype));
  d->num_edges = num_edges;
  ReserveHuge(&d->indptr, n + 1);
  d->indptr.assign(n + 1, 0);
  if (narrow) {
    ReserveHuge(&d->indices32, num_edges);
    d->indices32.resize(num_edges);
  } else {
    ReserveHuge(&d->indices, num_edges);
    d->indices.resize(num_edges);
  }
  if (o.edge_ids) {
    ReserveHuge(&d->edge_ids, num_edges);
    d->edge_ids.resize(num_edges);
  }
  if (meta.feature_dim > 0 && o.features) {
    ReserveHuge(&d->features, feature_bytes);
    d->features.resize(feature_bytes);
  }
  if (meta.has_labels) d->labels.resize(n);
  if (meta.has_split) d->split.resize(n);
  d->original_ids.resize(n);
  if (o.heat && meta.has_heat) d->heat.resize(n);
  if (meta.has_edge_times) d->edge_times.resize(num_edges);
  if (meta.has_edge_weights) d->edge_weights.resize(num_edges);
  if (!meta.hetero.empty()) d->edge_types.resize(num_edges);
}

// One sink per chunk kind the dataset has (datasets/detail/chunks.h decodes
// each), writing into d; the adjacency first.
std::vector<ChunkSink> PartitionSinks(int64_t num_edges, bool features, bool heat, PartitionData* d,
                                      EdgeCursors* at) {
  const DatasetMeta& meta = d->meta;
  // The lambdas capture these scalars and pointers (copies; not meta).
  const int64_t cnodes = meta.chunk_nodes, num_nodes = meta.num_nodes;
  const auto num_types = meta.hetero.num_edge_types();
  std::vector<ChunkSink> sinks;
  sinks.push_back({"adj", [=](int64_t c, int64_t cn, const char* p, size_t sz) {
                     return detail::DecodeAdjChunk(p, sz, cn, c * cnodes, num_nodes, &at->adj, d);
                   }});
  if (meta.feature_dim > 0 && features && !meta.has_feature_files())
    sinks.push_back({"feat", [=](int64_t c, int64_t cn, const char* p, size_t sz) {
                       return detail::DecodeFeatureChunk(p, sz, cn, c * cnodes, d);
                     }});
  if (meta.has_labels)
    sinks.push_back({"label", [=](int64_t c, int64_t cn, const char* p, size_t sz) {
                       return detail::DecodeInt64Chunk(p, sz, cn, c * cnodes, d->labels.data());
                     }});
  if (meta.has_names)
    sinks.push_back({"name", [=](int64_t, int64_t cn, const char* p, size_t sz) {
                       return detail::DecodeNameChunk(p, sz, cn, &d->original_names);
                     }});
  if (heat && meta.has_heat)
    sinks.push_back({"heat", [=](int64_t c, int64_t cn, const char* p, size_t sz) {
                       return detail::DecodeInt64Chunk(p, sz, cn, c * cnodes, d->heat.data());
                     }});
  sinks.push_back({"orig", [=](int64_t c, int64_t cn, const char* p, size_t sz) {
                     return detail::DecodeInt64Chunk(p, sz, cn, c * cnodes, d->original_ids.data());
                   }});
  if (meta.has_edge_times)  // each chunk's edges, in adj order
    sinks.push_back({"etime", [=](int64_t, int64_t, const char* p, size_t sz) {
                       return detail::DecodeEdgeTimeChunk(p, sz, num_edges, &at->time,
                                                          d->edge_times.data());
                     }});
  if (meta.has_edge_weights)  // as etime
    sinks.push_back({"eweight", [=](int64_t, int64_t, const char* p, size_t sz) {
                       return detail::DecodeEdgeWeightChunk(p, sz, num_edges, &at->weight,
                                                            d->edge_weights.data());
                     }});
  if (!meta.hetero.empty())  // as etime
    sinks.push_back({"etype", [=](int64_t, int64_t, const char* p, size_t sz) {
                       return detail::DecodeEdgeTypeChunk(p, sz, num_edges, num_types, &at->type,
                                                          d->edge_types.data());
                     }});
  if (meta.has_split)
    sinks.push_back({"split", [=](int64_t c, int64_t cn, const char* p, size_t sz) {
                       return detail::DecodeSplitChunk(p, sz, cn, c * cnodes, d->split.data());
                     }});
  return sinks;
}

// Reads every chunk of one kind in order with its own iterator: each present
// exactly once, checksummed (when asked), decoded by the sink.
Status ReadChunks(rocksdb::DB* db, const rocksdb::ReadOptions& ro, const std::string& path,
                  const ChunkSink& sink, int64_t n, int64_t cnodes, bool verify_checksums) {
  const int64_t num_chunks = (n + cnodes - 1) / cnodes;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
  const std::string prefix = std::string(sink.prefix) + "/";
  it->Seek(prefix);
  for (int64_t c = 0; c < num_chunks; ++c) {
    const std::string key = detail::ChunkKey(sink.prefix, c);
    if (!it->Valid() || it->key().ToString() != key) {
      if (!it->status().ok())
        return Status::Corruption(path + ": reading " + key + ": " + it->status().ToString());
      return Status::Corruption(path + ": chunk " + key + " is missing (truncated store?)");
    }
    rocksdb::Slice v = it->value();
    size_t psize = 0;
    if (!detail::CheckChunk(v.data(), v.size(), verify_checksums, &psize))
      return Status::Corruption(path + ": chunk " + key + " fails its checksum");
    const int64_t cn = std::min(cnodes, n - c * cnodes);
    const std::string err = sink.take(c, cn, v.data(), psize);
    if (!err.empty()) return Status::Corruption(path + ": chunk " + key + " " + err);
    it->Next();
  }
  if (it->Valid() && it->key().starts_with(prefix))
    return Status::Corruption(path + ": unexpected extra chunk " + it->key().ToString());
  if (!it->status().ok()) return Status::Corruption(path + ": " + it->status().ToString());
  return Status::OK();
}

// After every chunk is read: each per-edge kind covered every edge, and a
// heterogeneous partition's rows are ordered by edge type (sampling finds a
// type's run by that order) with types belonging to the row's node type.
Status CheckPartitionEdges(const std::string& path, int64_t num_edges, const EdgeCursors& at,
                           const PartitionData& d) {
  const DatasetMeta& meta = d.meta;
  if (at.adj != num_edges)
    return Status::Corruption(path + ": adjacency holds " + std::to_string(at.adj) +
                              " edges, 'info' says " + std::to_string(num_edges));
  if (meta.has_edge_times && at.time != num_edges)
    return Status::Corruption(path + ": etime chunks hold " + std::to_string(at.time) +
                              " timestamps for " + std::to_string(num_edges) + " edges");
  if (meta.has_edge_weights && at.weight != num_edges)
    return Status::Corruption(path + ": eweight chunks hold " + std::to_string(at.weight) +
                              " weights for " + std::to_string(num_edges) + " edges");
  if (meta.hetero.empty()) return Status::OK();
  if (at.type != num_edges)
    return Status::Corruption(path + ": etype chunks hold " + std::to_string(at.type) +
                              " edge types for " + std::to_string(num_edges) + " edges");
  const int64_t n = d.node_end - d.node_begin;
  for (int64_t r = 0; r < n; ++r) {
    const int32_t row_type = meta.hetero.NodeTypeOf(d.node_begin + r);
    for (int64_t e = d.indptr[r]; e < d.indptr[r + 1]; ++e) {
      if (e > d.indptr[r] && d.edge_types[e] < d.edge_types[e - 1])
        return Status::Corruption(path + ": the edges of node " + std::to_string(d.node_begin + r) +
                                  " are not ordered by edge type");
      if (meta.hetero.RowType(d.edge_types[e]) != row_type)
        return Status::Corruption(path + ": node " + std::to_string(d.node_begin + r) + " (type " +
                                  meta.hetero.node_types[row_type] + ") stores an edge of type " +
                                  meta.hetero.EdgeTypeName(d.edge_types[e]));
    }
  }
  return Status::OK();
}

}  // namespace

Status OpenPartition(const std::string& dir_in, int part, const OpenOptions& o,
                     PartitionData* out) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  DatasetMeta meta;
  FANOUT_RETURN_IF_ERROR(ReadDatasetMeta(dir, &meta));
  if (o.expected_num_parts >= 0 && meta.num_parts != o.expected_num_parts)
    return Status::InvalidArgument(dir + " has " + std::to_string(meta.num_parts) +
                                   " partitions, expected " + std::to_string(o.expected_num_parts));
  if (part < 0 || part >= meta.num_parts)
    return Status::InvalidArgument("partition " + std::to_string(part) + " is outside [0, " +
                                   std::to_string(meta.num_parts) + ") of " + dir);
  const std::string path = dir + "/part-" + std::to_string(part);
  std::unique_ptr<rocksdb::DB> db;
  FANOUT_RETURN_IF_ERROR(OpenPartitionDb(path, &db));
  rocksdb::ReadOptions ro;
  ro.verify_checksums = o.verify_checksums;
  ro.fill_cache = false;
  ro.readahead_size = 16 << 20;
  ro.async_io = false;

  if (o.index_bits != 0 && o.index_bits != 32 && o.index_bits != 64)
    return Status::InvalidArgument("neighbor ids are held in 32 or 64 bits, not " +
                                   std::to_string(o.index_bits));
  const bool fits32 = meta.num_nodes <= int64_t{INT32_MAX};
  if (o.index_bits == 32 && !fits32)
    return Status::InvalidArgument(dir + " has " + std::to_string(meta.num_nodes) +
                                   " nodes: its neighbor ids do not fit 32 bits");
  const bool narrow = o.index_bits == 32 || (o.index_bits == 0 && fits32);
  PartitionData& d = *out;
  d = PartitionData();
  d.meta = meta;
  d.part = part;
  int64_t num_edges = 0;
  FANOUT_RETURN_IF_ERROR(ReadPartitionInfo(db.get(), ro, path, dir, part, &d, &num_edges));
  SizePartitionArrays(num_edges, o, narrow, &d);

  // Each kind of chunk is read by its own iterator on its own thread: the
  // adjacency and the features are each about half of the bytes, and the
  // checksum + copy work of one core is slower than the disk.
  EdgeCursors at;
  const std::vector<ChunkSink> sinks = PartitionSinks(num_edges, o.features, o.heat, &d, &at);
  const int64_t n = d.node_end - d.node_begin;
  std::vector<Status> results(sinks.size());
  {
    std::vector<std::thread> threads;
    for (size_t i = 1; i < sinks.size(); ++i)
      threads.emplace_back([&, i] {
        results[i] =
            ReadChunks(db.get(), ro, path, sinks[i], n, meta.chunk_nodes, o.verify_checksums);
      });
    results[0] = ReadChunks(db.get(), ro, path, sinks[0], n, meta.chunk_nodes,
                            o.verify_checksums);  // the adjacency
    for (auto& t : threads) t.join();
  }
  for (const Status& r : results) FANOUT_RETURN_IF_ERROR(r);
  FANOUT_RETURN_IF_ERROR(CheckPartitionEdges(path, num_edges, at, d));
  if (o.features && meta.feature_dim > 0 && meta.has_feature_files()) {
    std::shared_ptr<const storage::FeatureFile> file;
    FANOUT_RETURN_IF_ERROR(OpenPartitionFeatureFile(dir, meta, part, &file));
    FANOUT_RETURN_IF_ERROR(file->ReadAll(reinterpret_cast<char*>(d.features.data())));
  }
  return Status::OK();
}

Status OpenPartitionFeatureFile(const std::string& dir, const DatasetMeta& meta, int part,
                                std::shared_ptr<const storage::FeatureFile>* out) {
  if (!meta.has_feature_files())
    return Status::NotFound(dir +
                            " keeps its features in the store, not in feature files "
                            "(write them with fanout-partition --feature-file)");
  if (part < 0 || part >= meta.num_parts)
    return Status::InvalidArgument("partition " + std::to_string(part) + " is outside [0, " +
                                   std::to_string(meta.num_parts) + ") of " + dir);
  const DatasetMeta::FeatureFileEntry& e = meta.feature_files[static_cast<size_t>(part)];
  storage::FeatureFile::Expect x;
  x.dataset_id = meta.dataset_id;
  x.partition = part;
  x.node_begin = meta.offsets[part];
  x.rows = meta.offsets[part + 1] - meta.offsets[part];
  x.feature_dim = meta.feature_dim;
  x.dtype = meta.feature_dtype;
  const std::string path = dir + "/" + e.file;
  std::shared_ptr<const storage::FeatureFile> f;
  FANOUT_RETURN_IF_ERROR(storage::FeatureFile::Open(path, x, &f));
  if (f->geometry().FileBytes() != e.bytes)
    return Status::Corruption(path + ": " + std::to_string(f->geometry().FileBytes()) +
                              " bytes, meta.json says " + std::to_string(e.bytes));
  *out = std::move(f);
  return Status::OK();
}

Status ReadPartitionEdgeIds(const std::string& dir_in, int part, int64_t expected_edges,
                            bool verify_checksums, std::vector<int64_t>* out) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  DatasetMeta meta;
  FANOUT_RETURN_IF_ERROR(ReadDatasetMeta(dir, &meta));
  if (part < 0 || part >= meta.num_parts)
    return Status::InvalidArgument("partition " + std::to_string(part) + " is outside [0, " +
                                   std::to_string(meta.num_parts) + ") of " + dir);
  const std::string path = dir + "/part-" + std::to_string(part);
  std::unique_ptr<rocksdb::DB> db;
  FANOUT_RETURN_IF_ERROR(OpenPartitionDb(path, &db));
  rocksdb::ReadOptions ro;
  ro.verify_checksums = verify_checksums;
  ro.fill_cache = false;
  ro.readahead_size = 16 << 20;
  PartitionData info;  // its range, from the 'info' record
  info.meta = meta;
  int64_t num_edges = 0;
  FANOUT_RETURN_IF_ERROR(ReadPartitionInfo(db.get(), ro, path, dir, part, &info, &num_edges));
  if (num_edges != expected_edges)
    return Status::Corruption(path + " now holds " + std::to_string(num_edges) +
                              " edges, not the " + std::to_string(expected_edges) +
                              " loaded (the store changed under the server?)");
  std::vector<int64_t> ids;
  ReserveHuge(&ids, num_edges);
  ids.resize(num_edges);
  int64_t at = 0;
  ChunkSink sink{"adj", [&](int64_t, int64_t cn, const char* p, size_t sz) {
                   return detail::DecodeAdjEdgeIds(p, sz, cn, num_edges, &at, ids.data());
                 }};
  FANOUT_RETURN_IF_ERROR(ReadChunks(db.get(), ro, path, sink, info.node_end - info.node_begin,
                                    meta.chunk_nodes, verify_checksums));
  if (at != num_edges)
    return Status::Corruption(path + ": adjacency holds " + std::to_string(at) +
                              " edge ids, 'info' says " + std::to_string(num_edges));
  *out = std::move(ids);
  return Status::OK();
}

}  // namespace fanout::datasets
