// fanout-bench-scale (`./run bench scale`; not in CI: tens of GB of disk and
// about an hour): a billion-edge graph end to end on one machine, each step
// measured, written to build/bench/scale.json.
//
//   partition      fanout-partition: R-MAT --scale (26: 67 M nodes, 1.07 G
//                  edges at edge factor 16) with --feature-dim float32
//                  features (64), 2 partitions by hash in bounded memory
//                  (--memory-limit), features to feature files (the disk
//                  tier's): seconds, peak RSS, bytes written.
//   serve          2 fanout-servers, features on disk (a cache of
//                  --cache-fraction of each partition's feature bytes), 32-bit
//                  neighbor ids, edge ids on demand, each under
//                  --server-memory-limit: seconds to ready, RSS per server,
//                  bytes of topology held per stored edge.
//   loader         a NodeLoader ([15,10,5], batch 1024, features, 4 workers,
//                  Thrift) for --batches batches after warm-up: batches/s,
//                  sampled edges/s, feature rows/s, the servers' cache hit
//                  rate and disk reads/s.
//   sampler_scale  fanout-bench-sampler on the same generator at --scale and
//                  at scale 20, 32-bit ids, 1 thread, each as a ratio to
//                  random 8-byte reads over an array of its own size, and
//                  each as sampled edges/s per thread and cycles per edge
//                  (the absolute figures: relative = ratio_1e9 /
//                  ratio_scale20 divides ratios against two different
//                  probes, so it rises where the larger probe merely slowed;
//                  read it beside edges_per_s_* and cycles_per_edge_*).
//
// Before anything it checks free disk (the store, the feature files and the
// spill, printed) and memory, and says what it needs; it prints progress;
// the dataset and spill go unless --keep.
#include <sys/statvfs.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench/bench_util.h"
#include "client/cluster.h"
#include "client/loader.h"
#include "datasets/bounded_partition.h"
#include "storage/feature_file.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using fanout::datasets::FormatBytes;

namespace {

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

using fanout::bench::ChildResult;
using fanout::bench::RunChild;

nlohmann::json Stats(int admin_port) { return fanout::bench::AdminStats(admin_port, 30); }

int64_t FreeDiskBytes(const std::string& dir) {
  struct statvfs s {};
  if (statvfs(dir.c_str(), &s) != 0) return -1;
  return static_cast<int64_t>(s.f_bavail) * static_cast<int64_t>(s.f_frsize);
}

// The sampler benchmark at `scale`, 32-bit ids, 1 thread, a probe of the
// graph's own size: the median ratio of [15,10,5] and its rates.
bool SamplerRatio(int scale, int rounds, const std::string& out_json, nlohmann::json* row) {
  const std::string bin = fanout::bench::BinDir() + "/fanout-bench-sampler";
  ChildResult r =
      RunChild({bin, "--scale", std::to_string(scale), "--index-bits", "32", "--probe-bytes", "own",
                "--threads", "1", "--rounds", std::to_string(rounds), "--json", out_json});
  if (r.exit_code != 0) return false;
  std::ifstream f(out_json);
  const nlohmann::json cases = nlohmann::json::parse(f);
  for (const auto& c : cases)
    if (c["case"] == "multihop" && c["fanout"] == std::vector<int64_t>{15, 10, 5}) {
      *row = c;
      (*row)["peak_rss_bytes"] = r.peak_rss;
      return true;
    }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-bench-scale: a billion-edge R-MAT graph partitioned in bounded memory, served by 2 "
      "servers with features on disk, a distributed loader through them, and the in-process "
      "sampler at that size beside scale 20 (build/bench/scale.json; docs/BENCHMARKS.md). Not in "
      "CI: it needs tens of GB of disk and about an hour."};
  int scale = 26, feature_dim = 64, batches = 30, warm = 5, rounds = 3;
  int64_t edge_factor = 16;
  double cache_fraction = 0.1;
  std::string work, json, partition_limit = "8G", server_limit = "9G";
  bool keep = false, skip_sampler = false;
  app.add_option("--scale", scale, "R-MAT scale (26: 1.07e9 edges)")
      ->default_val(26)
      ->check(CLI::Range(16, 30));
  app.add_option("--edge-factor", edge_factor, "Edges per node")->default_val(16);
  app.add_option("--feature-dim", feature_dim, "float32 features per node")->default_val(64);
  app.add_option("--batches", batches, "Timed loader batches")->default_val(30);
  app.add_option("--warm-batches", warm, "Loader batches before timing")->default_val(5);
  app.add_option("--rounds", rounds, "sampler_scale's probe/workload alternations")->default_val(3);
  app.add_option("--cache-fraction", cache_fraction,
                 "Each server's feature cache, as a share of its partition's feature bytes")
      ->default_val(0.1);
  app.add_option("--partition-memory-limit", partition_limit, "fanout-partition --memory-limit")
      ->default_val("8G");
  app.add_option("--server-memory-limit", server_limit,
                 "Each server's --memory-limit (both run on this host)")
      ->default_val("9G");
  app.add_option("--work", work,
                 "Folder for the dataset and spill (default build/bench/scale-work); its file "
                 "system needs the space printed");
  app.add_flag("--keep", keep, "Keep the dataset afterwards (a later run reuses it)");
  app.add_flag("--skip-sampler", skip_sampler, "Leave out sampler_scale");
  app.add_option("--json", json, "Write the cases as a JSON array here");
  CLI11_PARSE(app, argc, argv);
  if (work.empty()) work = fanout::bench::BinDir() + "/../bench/scale-work";
  fs::create_directories(work);
  const std::string data =
      work + "/rmat" + std::to_string(scale) + "-f" + std::to_string(feature_dim);

  // ---- What it needs ----
  const int64_t n = int64_t{1} << scale, e = n * edge_factor;
  const int64_t row = feature_dim * 4;
  const int64_t store = e * 16 + n * (8 + 8 + 8) + (int64_t{1} << 30);  // adj, degrees, orig, heat
  const int64_t features = fanout::storage::FeatureFileGeometry::For(n, row).FileBytes();
  const int64_t spill = e * 24;
  const int64_t disk_need = fs::exists(data + "/meta.json") ? 0 : store + features + spill;
  const int64_t free_disk = FreeDiskBytes(work);
  std::printf(
      "scale %d: %lld nodes, %lld edges, %lld-dim float32 features\n"
      "disk: the stores about %s, the feature files %s, the spill %s while partitioning: %s "
      "needed, %s free under %s\n",
      scale, static_cast<long long>(n), static_cast<long long>(e),
      static_cast<long long>(feature_dim), FormatBytes(double(store)).c_str(),
      FormatBytes(double(features)).c_str(), FormatBytes(double(spill)).c_str(),
      FormatBytes(double(disk_need)).c_str(), FormatBytes(double(free_disk)).c_str(), work.c_str());
  if (free_disk >= 0 && disk_need > free_disk) {
    std::fprintf(stderr,
                 "fanout-bench-scale: not enough free disk: %s needed, %s free under %s (give "
                 "--work on a larger file system, or a smaller --scale)\n",
                 FormatBytes(double(disk_need)).c_str(), FormatBytes(double(free_disk)).c_str(),
                 work.c_str());
    return 2;
  }
  int64_t part_limit = 0, serve_limit = 0;
  if (!fanout::datasets::ParseByteSize(partition_limit, &part_limit).ok() ||
      !fanout::datasets::ParseByteSize(server_limit, &serve_limit).ok()) {
    std::fprintf(stderr, "fanout-bench-scale: bad memory limit\n");
    return 2;
  }
  std::string source;
  const int64_t memory = fanout::datasets::UsableMemoryBytes(&source);
  // The sampler case holds the whole graph's compact CSR in one process.
  const int64_t sampler_need = e * 4 + (n + 1) * 8 + (int64_t{1} << 30);
  const int64_t mem_need = std::max({part_limit, 2 * serve_limit, skip_sampler ? 0 : sampler_need});
  std::printf(
      "memory: partitioning under %s, 2 servers under %s each, the sampler case %s: %s "
      "needed at once, %s here (%s)\n",
      FormatBytes(double(part_limit)).c_str(), FormatBytes(double(serve_limit)).c_str(),
      FormatBytes(double(sampler_need)).c_str(), FormatBytes(double(mem_need)).c_str(),
      FormatBytes(double(memory)).c_str(), source.c_str());
  if (mem_need > memory) {
    std::fprintf(stderr, "fanout-bench-scale: not enough memory (%s needed, %s here)\n",
                 FormatBytes(double(mem_need)).c_str(), FormatBytes(double(memory)).c_str());
    return 2;
  }
  std::fflush(stdout);
  nlohmann::json cases = nlohmann::json::array();
  const auto cleanup = [&] {
    if (!keep) {
      std::error_code ec;
      fs::remove_all(data, ec);
    }
  };

  // ---- partition ----
  if (!fs::exists(data + "/meta.json")) {
    std::printf("\n== partition: fanout-partition (its progress below)\n");
    std::fflush(stdout);
    ChildResult r = RunChild({fanout::bench::BinDir() + "/fanout-partition",
                              "--format",
                              "rmat",
                              "--rmat-scale",
                              std::to_string(scale),
                              "--rmat-edge-factor",
                              std::to_string(edge_factor),
                              "--feature-dim",
                              std::to_string(feature_dim),
                              "--parts",
                              "2",
                              "--method",
                              "hash",
                              "--feature-file",
                              "--memory-limit",
                              partition_limit,
                              "--spill-dir",
                              work,
                              "--output",
                              data});
    if (r.exit_code != 0) {
      std::fprintf(stderr, "fanout-bench-scale: fanout-partition failed (exit %d)\n", r.exit_code);
      cleanup();
      return 1;
    }
    std::printf("partition: %.0f s, peak RSS %s (limit %s), %s written\n", r.wall_s,
                FormatBytes(double(r.peak_rss)).c_str(), partition_limit.c_str(),
                FormatBytes(double(r.write_bytes)).c_str());
    cases.push_back({{"case", "partition"},
                     {"edges", e},
                     {"seconds", r.wall_s},
                     {"peak_rss_bytes", r.peak_rss},
                     {"memory_limit_bytes", part_limit},
                     {"bytes_written", r.write_bytes}});
  } else {
    std::printf("\n== partition: reusing %s (a --keep run's)\n", data.c_str());
  }

  // ---- serve ----
  std::printf("\n== serve: 2 servers, features on disk\n");
  std::fflush(stdout);
  const int64_t cache = static_cast<int64_t>(cache_fraction * double(n / 2 * row));
  std::vector<fanout::bench::ServerProcess> servers;
  nlohmann::json serve = {{"case", "serve"}, {"edges", e}};
  std::vector<double> ready_s;
  std::vector<int64_t> rss;
  double bytes_per_edge = 0;
  for (int p = 0; p < 2; ++p) {  // one after the other: their loads' peaks do not add up
    const auto t0 = Clock::now();
    servers.push_back(fanout::bench::StartServerProcess(
        data, p, true,
        {"--features", "disk", "--feature-memory", std::to_string(cache), "--edge-ids", "on-demand",
         "--memory-limit", server_limit, "--local-socket", "off"}));
    ready_s.push_back(Since(t0));
    std::printf("server %d ready in %.1f s: %s", p, ready_s.back(),
                servers.back().ready_line.c_str());
    std::fflush(stdout);
  }
  int64_t topology = 0, edges_held = 0;
  for (int p = 0; p < 2; ++p) {
    const nlohmann::json s = Stats(servers[p].admin_port);
    rss.push_back(s["memory"]["rss_bytes"].get<int64_t>());
    topology += s["tiers"]["topology_bytes"].get<int64_t>();
    edges_held += s["partition"]["num_edges"].get<int64_t>();
  }
  bytes_per_edge = edges_held > 0 ? double(topology) / edges_held : 0;
  serve["ready_s"] = ready_s;
  serve["rss_bytes"] = rss;
  serve["memory_limit_bytes"] = serve_limit;
  serve["bytes_per_edge"] = bytes_per_edge;
  serve["cache_bytes"] = cache;
  std::printf(
      "serve: ready in %.1f / %.1f s, RSS %s / %s (limit %s each), %.2f bytes of topology "
      "per stored edge\n",
      ready_s[0], ready_s[1], FormatBytes(double(rss[0])).c_str(),
      FormatBytes(double(rss[1])).c_str(), server_limit.c_str(), bytes_per_edge);
  const size_t serve_index = cases.size();
  cases.push_back(serve);

  // ---- loader ----
  std::printf("\n== loader: [15,10,5], batch 1024, features on, %d batches\n", batches);
  std::fflush(stdout);
  {
    fanout::client::ClusterSpec spec;
    spec.replicas = {{servers[0].rpc}, {servers[1].rpc}};
    spec.has_data_plane = true;
    spec.data_plane = fanout::rpc::DataPlaneMode::kTcp;
    std::shared_ptr<fanout::client::Cluster> c;
    fanout::Status st = fanout::client::Cluster::Connect(spec, {}, &c);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-bench-scale: %s\n", st.ToString().c_str());
      for (auto& s : servers) fanout::bench::StopServerProcess(&s);
      cleanup();
      return 1;
    }
    fanout::client::LoaderOptions o;
    o.batch_size = 1024;
    o.fanouts = {15, 10, 5};
    o.features = true;
    o.labels = false;
    o.edge_ids = false;
    o.num_workers = 4;
    o.prefetch = 8;
    o.rank = 0;
    o.world_size = 1;
    // Seeds: a sample of the nodes (an epoch of 67 M seeds is not needed).
    std::vector<int64_t> seeds =
        fanout::bench::RandomIds((batches + warm + 8) * 1024, 0, c->num_nodes(), 7);
    fanout::client::NodeLoader loader(c, seeds, o);
    fanout::client::MiniBatch b;
    for (int i = 0; i < warm; ++i) loader.Next(&b);
    auto counters = [&](int64_t* lookups, int64_t* hits, int64_t* reads) {
      *lookups = *hits = *reads = 0;
      for (auto& s : servers) {
        const auto d = Stats(s.admin_port)["tiers"]["disk"];
        *lookups += d["lookups"].get<int64_t>();
        *hits += d["hot_hits"].get<int64_t>() + d["cache_hits"].get<int64_t>();
        *reads += d["block_reads"].get<int64_t>();
      }
    };
    int64_t l0, h0, r0, l1, h1, r1, edges = 0, rows = 0;
    counters(&l0, &h0, &r0);
    const auto t0 = Clock::now();
    for (int i = 0; i < batches; ++i) {
      if (!loader.Next(&b)) break;
      edges += b.edge_index.size(1);
      rows += b.n_id.size(0);
      if ((i + 1) % 10 == 0) {
        std::printf("  %d batches, %.2f batches/s\n", i + 1, (i + 1) / Since(t0));
        std::fflush(stdout);
      }
    }
    const double secs = Since(t0);
    counters(&l1, &h1, &r1);
    const double hit_rate = l1 > l0 ? double(h1 - h0) / double(l1 - l0) : 0;
    cases.push_back({{"case", "loader"},
                     {"batches", batches},
                     {"batches_per_s", batches / secs},
                     {"edges_per_s", edges / secs},
                     {"rows_per_s", rows / secs},
                     {"hit_rate", hit_rate},
                     {"disk_reads_per_s", (r1 - r0) / secs}});
    std::printf(
        "loader: %.2f batches/s, %.2f M sampled edges/s, %.2f M feature rows/s, hit rate "
        "%.3f, %.0f disk reads/s\n",
        batches / secs, edges / secs / 1e6, rows / secs / 1e6, hit_rate, (r1 - r0) / secs);
  }
  // Each server's peak, after the loader: under its limit?
  for (int p = 0; p < 2; ++p) {
    const nlohmann::json s = Stats(servers[p].admin_port);
    const int64_t peak = s["memory"].value("peak_rss_bytes", int64_t{0});
    cases[serve_index]["peak_rss_bytes"].push_back(peak);
    std::printf("server %d: peak RSS %s (limit %s)\n", p, FormatBytes(double(peak)).c_str(),
                server_limit.c_str());
  }
  for (auto& s : servers) fanout::bench::StopServerProcess(&s);
  cleanup();

  // ---- sampler_scale ----
  if (!skip_sampler) {
    std::printf("\n== sampler_scale: the in-process sampler at scale %d and at scale 20\n", scale);
    std::fflush(stdout);
    nlohmann::json big, small;
    const std::string tmp = work + "/sampler-";
    if (!SamplerRatio(scale, rounds, tmp + "big.json", &big) ||
        !SamplerRatio(20, rounds, tmp + "small.json", &small)) {
      std::fprintf(stderr, "fanout-bench-scale: fanout-bench-sampler failed\n");
      return 1;
    }
    const double r_big = big["ratio"], r_small = small["ratio"];
    cases.push_back({{"case", "sampler_scale"},
                     {"edges", e},
                     {"ratio_1e9", r_big},
                     {"ratio_scale20", r_small},
                     {"relative", r_small > 0 ? r_big / r_small : 0},
                     {"edges_per_s_1e9", big["edges_per_s"]},
                     {"edges_per_s_scale20", small["edges_per_s"]},
                     {"probe_bytes_1e9", big["probe_bytes"]},
                     {"probe_bytes_scale20", small["probe_bytes"]},
                     {"cycles_per_edge_1e9", big["cycles_per_edge"]},
                     {"cycles_per_edge_scale20", small["cycles_per_edge"]}});
    const double eps_big = big["edges_per_s"], eps_small = small["edges_per_s"];
    std::printf(
        "sampler_scale: %lld edges: %.2f M edges/s per thread, ratio %.3f (probe %.2f GiB); scale "
        "20: %.2f M edges/s, ratio %.3f (probe %.3f GiB); relative ratio %.3f, edges/s %.3f\n",
        static_cast<long long>(e), eps_big / 1e6, r_big,
        big["probe_bytes"].get<double>() / (1 << 30), eps_small / 1e6, r_small,
        small["probe_bytes"].get<double>() / (1 << 30), r_small > 0 ? r_big / r_small : 0,
        eps_small > 0 ? eps_big / eps_small : 0);
    std::error_code ec;
    fs::remove(tmp + "big.json", ec);
    fs::remove(tmp + "small.json", ec);
  }
  std::printf("\n%s\n", cases.dump(1).c_str());
  fanout::bench::WriteJson(json, cases);
  return 0;
}
