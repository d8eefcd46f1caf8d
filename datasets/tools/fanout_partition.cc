// fanout-partition: turns a raw graph into a partitioned dataset folder that
// sampling servers open (meta.json + one RocksDB store per partition).
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/cpu.h"
#include "common/version.h"
#include "datasets/bounded_partition.h"
#include "datasets/formats.h"
#include "datasets/partition_store.h"
#include "datasets/partitioner.h"

using namespace fanout;            // NOLINT: a tool's main file
using namespace fanout::datasets;  // NOLINT

namespace {

int Fail(const Status& st) {
  std::fprintf(stderr, "fanout-partition: error: %s\n", st.ToString().c_str());
  return 1;
}

Status ParseFractions(const std::string& text, std::vector<double>* out) {
  out->clear();
  if (text.empty()) return Status::OK();
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      out->push_back(std::stod(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      return Status::InvalidArgument("--split-fractions: '" + item +
                                     "' is not a number (expected e.g. 0.8,0.1,0.1)");
    }
  }
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-partition: partition a raw graph into a Fanout dataset folder (meta.json + part-<k>/ "
      "RocksDB stores).\n"
      "Partition p owns the renumbered global ids [offset[p], offset[p+1]); the original ids are "
      "kept.\n\n"
      "Examples:\n"
      "  fanout-partition --format linqs --input datasets/data/cora --parts 2 --method metis "
      "--output /tmp/cora2\n"
      "  fanout-partition --format planetoid --input datasets/data/planetoid/cora --parts 2 "
      "--output /tmp/cora-planetoid\n"
      "  fanout-partition --format snap --input CA-GrQc.txt --undirected --parts 4 --method random "
      "--output /tmp/grqc\n"
      "  fanout-partition --format rmat --rmat-scale 22 --feature-dim 64 --parts 4 --direction out "
      "--output /tmp/rmat22\n"
      "  fanout-partition --format snap --input big.txt.gz --parts 16 --method hash --memory-limit "
      "4G --output /data/big\n"
      "  fanout-partition --format movielens --input datasets/data/movielens/ml-latest-small "
      "--undirected --parts 2 "
      "--output /tmp/ml\n"
      "  fanout-partition --format tables --schema datasets/data/shop/graph.json --parts 2 "
      "--method hash --output /tmp/shop\n\n"
      "Memory: random, range and hash partition in bounded memory: the edges are streamed (snap, "
      "ogb, rmat and\n"
      "homogeneous untimed tables are never held whole), spilled to disk and written partition by "
      "partition in slices that "
      "fit --memory-limit.\n"
      "METIS needs the whole graph in memory and refuses to start when its estimate exceeds the "
      "limit."};
  app.set_version_flag("--version", fanout::VersionLine("fanout-partition"));
  std::string input, format, method = "metis", output, direction = "in", dtype = "float32";
  std::string ogb_split, labels_path, fractions_text, memory_limit_text, spill_dir, assignment_path,
      string_id_memory_text;
  int parts = 1;
  int64_t chunk_nodes = 65536;
  uint64_t seed = 1;
  bool undirected = false, drop_dups = false, drop_loops = false, force = false, quiet = false,
       nodes_only = false;
  LoadOptions load;
  app.add_option("--input", input,
                 "Raw input: a file or folder, as the format needs (not used by rmat)");
  std::string schema;
  app.add_option(
      "--schema", schema,
      "tables: the JSON schema naming the node and edge tables (Parquet, or CSV optionally gzip; "
      "see docs/DATA.md); the same as --input for --format tables");
  app.add_option("--format", format,
                 std::string("Input format. ogb: ") + fanout::datasets::OgbFilesHelp() +
                     " ogb-hetero: " + fanout::datasets::OgbHeteroFilesHelp())
      ->required()
      ->check(CLI::IsMember(FormatNames()));
  app.add_option("--parts", parts, "Number of partitions K")
      ->required()
      ->check(CLI::Range(1, 4096));
  app.add_option("--method", method,
                 "Partitioner: metis (k-way, fewest cut edges; in memory), random (seeded, "
                 "balanced), range "
                 "(contiguous), hash (of the original id; a node's part never depends on the rest "
                 "of the graph), file (a given assignment: --assignment)")
      ->default_val("metis")
      ->check(CLI::IsMember({"metis", "random", "range", "hash", "file"}));
  app.add_option("--assignment", assignment_path,
                 "--method file: one part per line, node by node in the input's order (as "
                 "gpmetis writes it; '#' comments allowed)");
  app.add_option("--memory-limit", memory_limit_text,
                 "Peak memory allowed, e.g. 4G, 512M (default: 3/4 of the machine's or the "
                 "container's memory)");
  app.add_option("--string-id-memory", string_id_memory_text,
                 "Tables with string ids: the memory their id maps may take, e.g. 2G (default: a "
                 "quarter of --memory-limit); past it a node type's ids go to disk and edges find "
                 "their endpoints through a join in buckets");
  app.add_option("--spill-dir", spill_dir,
                 "Existing folder for the temporary spill files of random/range/hash (default: "
                 "beside the output); "
                 "about 24 bytes per edge, removed at the end");
  app.add_option("--output", output, "Output dataset folder (must not exist unless --force)")
      ->required();
  app.add_option(
         "--direction", direction,
         "Adjacency stored per node: in (sources of incoming edges, for message passing) or out")
      ->default_val("in")
      ->check(CLI::IsMember({"in", "out"}));
  app.add_flag("--undirected", undirected, "Add the reverse of every edge");
  app.add_flag("--drop-duplicates", drop_dups, "Keep only the first of equal (src, dst) edges");
  app.add_flag("--drop-self-loops", drop_loops, "Remove u -> u edges (kept by default)");
  app.add_option("--feature-dtype", dtype,
                 "Stored feature type: float32, float16, bfloat16 or int8 (symmetric, one scale "
                 "per feature column); rows travel in it and clients convert them")
      ->default_val("float32")
      ->check(CLI::IsMember({"float32", "float16", "bfloat16", "int8"}));
  bool feature_files = false, normalize = false;
  app.add_flag("--normalize-features", normalize,
               "Divide each node's feature row by the sum of its absolute values (PyG's "
               "NormalizeFeatures, as GCN-style models use bag-of-words features)");
  app.add_flag("--feature-file", feature_files,
               "Write each partition's feature rows to one flat file beside its store "
               "(part-<k>.features, checksummed per 4 KiB block, named and sized in meta.json) "
               "instead of the store's chunks: what fanout-server's disk tier (--features disk) "
               "reads; its memory tier loads the file");
  app.add_option("--chunk-nodes", chunk_nodes, "Nodes per stored chunk")
      ->default_val(65536)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--seed", seed,
                 "Seed for random partitioning, METIS, synthetic data and random splits")
      ->default_val(1);
  app.add_flag("--force", force, "Replace an existing output folder (atomically)");
  app.add_flag("--metis-nodes-only", nodes_only,
               "METIS: balance node counts only (default also balances stored edges)");
  app.add_flag("--quiet", quiet, "No progress output");
  app.add_option("--ogb-split", ogb_split,
                 "ogb: split folder under split/ (default: the only or first one)");
  app.add_option("--labels", labels_path,
                 "snap: a '<node> <label>' file (e.g. email-Eu-core-department-labels.txt)");
  app.add_flag("--edge-times", load.edge_times,
               "snap: the third column of each edge line is its timestamp (SNAP temporal networks: "
               "SRC DST UNIXTS); "
               "ogb: raw/edge_time.csv (or edge_year.csv), one integer per edge; movielens: the "
               "ratings' and tags' timestamps (has_genre edges time 0); rmat: synthetic "
               "timestamps in "
               "[0, 2^30). Stored per edge for temporal sampling; written in memory");
  app.add_option("--split-fractions", fractions_text,
                 "rmat, snap: seeded random train,val,test fractions, e.g. 0.8,0.1,0.1");
  app.add_option("--rmat-scale", load.rmat.scale, "rmat: 2^scale nodes")
      ->default_val(20)
      ->check(CLI::Range(1, 30));
  app.add_option("--rmat-edge-factor", load.rmat.edge_factor, "rmat: edges per node")
      ->default_val(16)
      ->check(CLI::Range(0, 1024));
  app.add_option("--feature-dim", load.feature_dim,
                 "rmat: synthetic float32 feature dimension (0 = none)")
      ->default_val(0)
      ->check(CLI::Range(0, 1 << 16));
  app.add_option("--rmat-node-types", load.rmat_node_types,
                 "rmat: a heterogeneous graph with this many node types (t0, t1, ...; node v has "
                 "type v % n) and an "
                 "edge type per pair of them (0 = homogeneous)")
      ->default_val(0)
      ->check(CLI::Range(0, 64));
  app.add_option("--num-classes", load.num_classes, "rmat: synthetic label classes (0 = none)")
      ->default_val(0)
      ->check(CLI::Range(0, 1 << 16));
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // keep stdout and stderr lines in order

  if (!schema.empty()) {
    if (format != "tables")
      return Fail(Status::InvalidArgument("--schema is for --format tables, not " + format));
    if (!input.empty() && input != schema)
      return Fail(Status::InvalidArgument("give the schema once: --schema or --input"));
    input = schema;
  }
  if (format == "tables" && input.empty())
    return Fail(Status::InvalidArgument("--format tables needs --schema graph.json"));
  if (format != "rmat" && input.empty())
    return Fail(Status::InvalidArgument("--input is required for format " + format));
  load.ogb_split = ogb_split;
  load.labels_path = labels_path;
  load.seed = seed;
  load.quiet = quiet;
  load.rmat.seed = 42;  // the benchmark graph's stream; --seed drives the synthetic data
  Status st = ParseFractions(fractions_text, &load.split_fractions);
  if (!st.ok()) return Fail(st);

  std::signal(SIGXFSZ,
              SIG_IGN);  // a file size limit is a write error (reported, cleaned up), not a kill
  // The memory limit counts resident memory: large blocks are mapped and
  // unmapped (glibc otherwise raises its mmap threshold after the first
  // large free and keeps later frees in the heap), freed heap tops go back,
  // and RocksDB's background threads share two arenas.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  mallopt(M_TRIM_THRESHOLD, 1 << 20);
  mallopt(M_ARENA_MAX, 2);
  int64_t memory_limit = 0;
  std::string memory_source;
  const int64_t usable = UsableMemoryBytes(&memory_source);
  if (!memory_limit_text.empty()) {
    st = ParseByteSize(memory_limit_text, &memory_limit);
    if (!st.ok()) return Fail(Status::InvalidArgument("--memory-limit: " + st.message()));
    std::printf("memory limit %s (--memory-limit)\n",
                FormatBytes(static_cast<double>(memory_limit)).c_str());
  } else {
    memory_limit = usable / 4 * 3;
    std::printf("memory limit %s (3/4 of %s, %s; --memory-limit to change)\n",
                FormatBytes(static_cast<double>(memory_limit)).c_str(), memory_source.c_str(),
                FormatBytes(static_cast<double>(usable)).c_str());
  }
  load.memory_limit_bytes = memory_limit;
  if (!string_id_memory_text.empty()) {
    st = ParseByteSize(string_id_memory_text, &load.string_id_memory_bytes);
    if (!st.ok()) return Fail(Status::InvalidArgument("--string-id-memory: " + st.message()));
  }

  PartitionOptions po;
  po.num_parts = parts;
  st = ParsePartitionMethod(method, &po.method);
  if (!st.ok()) return Fail(st);
  po.seed = seed;
  po.assignment_path = assignment_path;
  if (po.method == PartitionMethod::kFile && assignment_path.empty())
    return Fail(Status::InvalidArgument("--method file needs --assignment FILE"));
  if (po.method != PartitionMethod::kFile && !assignment_path.empty())
    return Fail(Status::InvalidArgument("--assignment is for --method file, not " + method));
  po.metis_balance_edges = !nodes_only;
  po.store_by_target = direction == "in";
  po.quiet = quiet;
  const bool metis = po.method == PartitionMethod::kMetis && parts > 1;

  WriteOptions wo;
  wo.incoming = direction == "in";
  st = ParseFeatureDType(dtype, &wo.feature_dtype);
  wo.feature_files = feature_files;
  if (!st.ok()) return Fail(st);
  wo.chunk_nodes = chunk_nodes;
  wo.overwrite = force;
  wo.method = method;
  wo.source_path = input;
  wo.quiet = quiet;
  nlohmann::json opts = {{"undirected", undirected},           {"drop_duplicates", drop_dups},
                         {"drop_self_loops", drop_loops},      {"seed", seed},
                         {"metis_balance_edges", !nodes_only}, {"feature_dtype", dtype},
                         {"normalize_features", normalize},    {"direction", direction}};
  if (format == "rmat")
    opts["rmat"] = {{"scale", load.rmat.scale},
                    {"edge_factor", load.rmat.edge_factor},
                    {"feature_dim", load.feature_dim},
                    {"num_classes", load.num_classes}};
  if (!fractions_text.empty()) opts["split_fractions"] = fractions_text;
  wo.options_json = opts.dump();

  EdgeOptions eo;
  eo.drop_self_loops = drop_loops;
  eo.make_undirected = undirected;
  eo.drop_duplicates = drop_dups;

  // METIS's peak beyond the loaded graph, per edge and per node (measured:
  // R-MAT scale 22, 67 M edges, 12.2 GiB; see docs/BENCHMARKS.md).
  constexpr double kMetisBytesPerEdge = 170, kMetisBytesPerNode = 64;
  auto metis_refusal = [&](double need, const std::string& what) {
    return Status::ResourceExhausted(
        "METIS needs the whole graph in memory: about " + FormatBytes(need) + " for " + what +
        ", more than the memory limit " + FormatBytes(static_cast<double>(memory_limit)) +
        ". Use --method hash, random or range, which partition in bounded memory (any graph size), "
        "or raise --memory-limit if this machine has the memory");
  };
  if (metis && format == "rmat") {  // the size is known before generating anything
    const double nn = std::ldexp(1.0, load.rmat.scale),
                 e = nn * load.rmat.edge_factor * (undirected ? 2 : 1);
    const double need =
        e * (16 + kMetisBytesPerEdge) + nn * (kMetisBytesPerNode + 4.0 * load.feature_dim);
    if (need > memory_limit)
      return Fail(metis_refusal(need, std::to_string(static_cast<int64_t>(e)) + " edges"));
  }

  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> notes;
  DatasetMeta meta;
  BoundedReport report;
  if (load.edge_times && format != "snap" && format != "rmat" && format != "ogb" &&
      format != "movielens")
    return Fail(Status::InvalidArgument(
        "--edge-times reads SNAP temporal edge lists (snap), an OGB folder's "
        "raw/edge_time.csv (ogb), MovieLens ratings' and tags' timestamps (movielens) or makes "
        "synthetic R-MAT timestamps (rmat), not " +
        format));
  bool streamed = !metis &&
                  (format == "snap" || format == "rmat" || format == "ogb" || format == "tables") &&
                  !drop_dups && !load.edge_times && load.rmat_node_types == 0;
  StreamedGraph g;
  // The features of a streamed OGB folder or table graph, converted to
  // float32, wait in a scratch file: beside the output (a name its
  // stale-temporary cleanup knows) or in --spill-dir.
  auto feature_scratch = [&]() {
    std::string out_dir = output;
    while (out_dir.size() > 1 && out_dir.back() == '/') out_dir.pop_back();
    std::error_code ec;
    const std::filesystem::path parent = std::filesystem::path(out_dir).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (spill_dir.empty()) return out_dir + ".tmp-" + std::to_string(getpid()) + "-features.f32";
    RemoveStaleSpillFiles(spill_dir);
    return spill_dir + "/" + SpillFilePrefix() + "features.f32";
  };
  if (streamed && format == "tables") {
    // Tables stream, with their edge times, weights and types (StreamTables
    // would say NotSupported before reading anything for what it cannot).
    st = StreamTables(input, load, eo, feature_scratch(), &g, &notes);
    if (st.code() == Status::Code::kNotSupported)
      streamed = false;
    else if (!st.ok())
      return Fail(st);
  }
  if (streamed) {
    if (format == "tables") {
      // Streamed above.
    } else if (format == "ogb") {
      st = StreamOgb(input, load, eo, feature_scratch(), &g, &notes);
    } else {
      st = format == "snap" ? StreamSnap(input, load, eo, &g, &notes) : StreamRmat(load, eo, &g);
    }
    if (!st.ok()) return Fail(st);
    if (normalize && g.feature_dim > 0) {
      auto row_of = g.feature_row;
      g.feature_row = [row_of, d = g.feature_dim](int64_t v, float* row) {
        row_of(v, row);
        NormalizeFeatureRow(row, d);
      };
    }
    for (const auto& n : notes) std::fprintf(stderr, "note: %s\n", n.c_str());
    std::printf(
        "streaming %s (%s): %lld nodes, %s edges, %lld features, %lld classes; partitioning in "
        "bounded memory\n",
        g.name.c_str(), format.c_str(), static_cast<long long>(g.num_nodes),
        g.num_edges >= 0 ? std::to_string(g.num_edges).c_str() : "(counted while streaming)",
        static_cast<long long>(g.feature_dim), static_cast<long long>(g.num_classes));
    BoundedOptions bo;
    bo.memory_limit_bytes = memory_limit;
    bo.spill_dir = spill_dir;
    st = WritePartitionedStream(g, po, wo, bo, output, &meta, &report);
    if (!st.ok()) return Fail(st);
    if (g.late_notes)
      for (const auto& n : g.late_notes()) std::fprintf(stderr, "note: %s\n", n.c_str());
    g = StreamedGraph();  // its scratch file goes now
  } else {
    auto ds = std::make_shared<RawDataset>();
    st = LoadDataset(format, input, load, ds.get(), &notes);
    if (!st.ok()) return Fail(st);
    for (const auto& n : notes) std::fprintf(stderr, "note: %s\n", n.c_str());
    notes.clear();
    std::string changed = ApplyEdgeOptions(eo, ds.get());
    if (normalize && ds->feature_dim > 0)
      for (int64_t v = 0; v < ds->num_nodes; ++v)
        NormalizeFeatureRow(ds->features.data() + v * ds->feature_dim, ds->feature_dim);
    std::printf("loaded %s (%s): %lld nodes, %lld edges, %lld features, %lld classes%s%s\n",
                ds->name.c_str(), format.c_str(), static_cast<long long>(ds->num_nodes),
                static_cast<long long>(ds->num_edges()), static_cast<long long>(ds->feature_dim),
                static_cast<long long>(ds->num_classes), changed.empty() ? "" : "; ",
                changed.c_str());
    if (ds->hetero()) {
      std::vector<int64_t> per_type(ds->node_types.size(), 0),
          per_edge_type(ds->edge_types.size(), 0);
      for (int32_t t : ds->node_type) per_type[t]++;
      for (int32_t e : ds->edge_type) per_edge_type[e]++;
      std::printf("node types:");
      for (size_t t = 0; t < per_type.size(); ++t)
        std::printf(" %s %lld (%lld features)%s", ds->node_types[t].c_str(),
                    static_cast<long long>(per_type[t]),
                    static_cast<long long>(ds->type_feature_dims[t]),
                    t + 1 < per_type.size() ? ";" : "\n");
      std::printf("edge types:");
      for (size_t e = 0; e < per_edge_type.size(); ++e)
        std::printf(" (%s, %s, %s) %lld%s", ds->node_types[ds->edge_types[e].src].c_str(),
                    ds->edge_types[e].rel.c_str(), ds->node_types[ds->edge_types[e].dst].c_str(),
                    static_cast<long long>(per_edge_type[e]),
                    e + 1 < per_edge_type.size() ? ";" : "\n");
    }
    if (metis || !ds->edge_times.empty() || ds->hetero()) {
      // Timestamps and types go through the in-memory writer: its layout
      // takes about 48 bytes per edge beyond the loaded graph.
      const double need = static_cast<double>(ResidentSetBytes()) +
                          ds->num_edges() * (metis ? kMetisBytesPerEdge : 48.0) +
                          ds->num_nodes * (metis ? kMetisBytesPerNode : 16.0);
      if (metis && need > memory_limit)
        return Fail(metis_refusal(need, std::to_string(ds->num_edges()) + " edges"));
      if (need > memory_limit)
        return Fail(Status::ResourceExhausted(
            "writing " + std::to_string(ds->num_edges()) +
            (ds->hetero() ? " typed" : " timestamped") + " edges in memory needs about " +
            FormatBytes(need) + ", more than the memory limit " +
            FormatBytes(static_cast<double>(memory_limit)) +
            " (edge timestamps and heterogeneous graphs are not partitioned in bounded memory); "
            "raise --memory-limit "
            "if this machine has it"));
      std::vector<int32_t> assignment;
      st = ComputePartition(*ds, po, &assignment, &notes);
      if (!st.ok()) return Fail(st);
      for (const auto& n : notes) std::fprintf(stderr, "note: %s\n", n.c_str());
      st = WritePartitionedDataset(*ds, assignment, parts, wo, output, &meta);
      if (!st.ok()) return Fail(st);
    } else {
      BoundedOptions bo;
      bo.memory_limit_bytes = memory_limit;
      bo.spill_dir = spill_dir;
      st = WritePartitionedStream(StreamOf(ds), po, wo, bo, output, &meta, &report);
      if (!st.ok()) return Fail(st);
    }
  }

  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%-6s %12s %14s %14s\n", "part", "nodes", "edges", "id range");
  for (int p = 0; p < parts; ++p)
    std::printf(
        "%-6d %12lld %14lld   [%lld, %lld)\n", p, static_cast<long long>(meta.stats.nodes[p]),
        static_cast<long long>(meta.stats.edges[p]), static_cast<long long>(meta.offsets[p]),
        static_cast<long long>(meta.offsets[p + 1]));
  std::printf(
      "method %s: edge cut %lld of %lld edges (%.4f), node balance %.3f, edge balance %.3f\n",
      method.c_str(), static_cast<long long>(meta.stats.cut_edges),
      static_cast<long long>(meta.num_edges), meta.stats.edge_cut_fraction, meta.stats.node_balance,
      meta.stats.edge_balance);
  if (report.slices > 0)
    std::printf("bounded memory: spilled %s, read back %s in %lld slice(s); store %s\n",
                FormatBytes(static_cast<double>(report.spill_bytes)).c_str(),
                FormatBytes(static_cast<double>(report.spill_read_bytes)).c_str(),
                static_cast<long long>(report.slices),
                FormatBytes(static_cast<double>(report.store_bytes)).c_str());
  std::printf("wrote %s in %.1f s (peak RSS %.2f GiB, limit %.2f GiB)\n", output.c_str(), secs,
              PeakResidentSetBytes() / double(1 << 30), memory_limit / double(1 << 30));
  return 0;
}
