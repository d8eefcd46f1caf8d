// fanout-bench-disk (`./run bench disk`, build/bench/disk.json): the disk
// feature tier against the device it reads, measured in the same run.
//
// Data: R-MAT (--scale, 22 by default) with --feature-dim float32 features
// (64), 2 partitions by range, feature rows in feature files
// (fanout-partition --feature-file); kept in --data between runs.
//
//   feature_lookup_disk  (threads 1 and 2): random rows of partition 0
//       through DiskFeatures with no cache (every row a block read), against
//       the device's limit: raw io_uring O_DIRECT reads of the same block
//       size, at the same queue depth, over the same file (no checksum, no
//       copy), alternated, median of --rounds. ratio = the tier's block
//       reads/s over the raw reads/s; cpu_per_read_ratio = the CPU seconds
//       this process spent per block read through the tier over the same for
//       the raw reads (a fast device's rate is bound by it, not by the
//       device).
//   loader_disk: a NodeLoader ([15,10,5], batch 1024, features, 4 workers,
//       Thrift) through 2 servers with features on disk and a cache of
//       --cache-fraction of their rows, against (a) the device's limit at the
//       same read size with as many reads in flight as the servers can have
//       (2 threads per file x the queue depth): device_ratio = the servers'
//       disk reads/s over it; (b) the best static set of the same rows for
//       the same access trace (the measured batches' rows, per partition):
//       hit_ratio_to_oracle = the servers' hit rate over the oracle's; (c) the
//       same loader with the features in memory: memory_ratio.
//   colocated_disk: the same loader reading the disk tier itself (the
//       servers share this host: data_plane auto) against the RPC loader of
//       loader_disk, same cache size; rpc_per_batch: requests the servers
//       saw per batch (0: none).
#include <liburing.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <unordered_map>

#include "bench/bench_util.h"
#include "bench/device_limits.h"
#include "client/cluster.h"
#include "client/loader.h"
#include "common/cpu.h"
#include "datasets/partition_store.h"
#include "storage/disk_features.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using fanout::bench::Median;

namespace {

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds this process has used (every thread, user and system).
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// httplib's default read timeout.
nlohmann::json Stats(int admin_port) { return fanout::bench::AdminStats(admin_port, 5); }

struct TierCounters {
  int64_t lookups = 0, hits = 0, reads = 0, requests = 0, held_rows = 0;
};
TierCounters Counters(const nlohmann::json& s) {
  TierCounters c;
  const auto& d = s["tiers"]["disk"];
  if (!d.is_object()) return c;
  c.lookups = d["lookups"];
  c.hits = d["hot_hits"].get<int64_t>() + d["cache_hits"].get<int64_t>();
  c.reads = d["block_reads"];
  c.held_rows = d["hot_rows"].get<int64_t>() + d["cache_slots"].get<int64_t>();
  // Requests that fetch data (not pings, infos or reports of local work).
  for (const char* m : {"sample_neighbors", "lookup_features", "lookup_labels"})
    if (s["totals"]["by_method"].contains(m))
      c.requests += s["totals"]["by_method"][m].get<int64_t>();
  return c;
}

int g_workers = 4;

fanout::client::LoaderOptions LoaderCase() {
  fanout::client::LoaderOptions o;
  o.batch_size = 1024;
  o.fanouts = {15, 10, 5};
  o.shuffle = true;
  o.features = true;
  o.labels = false;
  o.edge_ids = false;
  o.num_workers = g_workers;
  o.prefetch = 2 * g_workers;
  o.rank = 0;
  o.world_size = 1;
  return o;
}

struct LoaderRun {
  double batches_per_s = 0;
  int64_t batches = 0;
  double seconds = 0;
};

// `warm` batches, then `batches` timed; `each` sees the timed ones.
LoaderRun RunLoader(std::shared_ptr<fanout::client::Source> source, int64_t num_nodes, int warm,
                    int batches, uint64_t seed,
                    const std::function<void(const fanout::client::MiniBatch&)>& each = nullptr) {
  std::vector<int64_t> seeds(static_cast<size_t>(num_nodes));
  for (int64_t i = 0; i < num_nodes; ++i) seeds[i] = i;
  fanout::client::LoaderOptions o = LoaderCase();
  o.seed = seed;
  fanout::client::NodeLoader loader(source, seeds, o);
  fanout::client::MiniBatch b;
  for (int i = 0; i < warm; ++i) loader.Next(&b);
  LoaderRun r;
  const auto t0 = Clock::now();
  while (r.batches < batches) {
    if (!loader.Next(&b)) continue;
    ++r.batches;
    if (each) each(b);
  }
  r.seconds = Since(t0);
  r.batches_per_s = r.batches / r.seconds;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-bench-disk: the disk feature tier (io_uring, O_DIRECT, hot set + SIEVE cache) "
      "against the device's own random-read limit, the best static cache, the memory tier and "
      "the co-located reader, in one run (docs/BENCHMARKS.md, \"Memory tiers\")."};
  int scale = 22, feature_dim = 64, rounds = 3, batches = 150, warm = 10;
  double seconds = 3, cache_fraction = 0.2;
  std::string data, json;
  int depth = 32;
  app.add_option("--scale", scale, "R-MAT scale")->default_val(22)->check(CLI::Range(10, 28));
  app.add_option("--feature-dim", feature_dim, "Features per node (float32)")->default_val(64);
  app.add_option("--seconds", seconds, "Seconds per feature_lookup_disk measurement")
      ->default_val(3);
  app.add_option("--rounds", rounds, "Alternations of workload and limit (medians)")
      ->default_val(3);
  app.add_option("--batches", batches,
                 "Timed loader batches per run (the oracle's trace: a short one flatters it, as "
                 "it fits the trace's noise)")
      ->default_val(150);
  app.add_option("--warm-batches", warm, "Loader batches before timing (the caches warm)")
      ->default_val(10);
  app.add_option("--cache-fraction", cache_fraction, "loader_disk's cache: this share of rows")
      ->default_val(0.2)
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--queue-depth", depth, "Reads in flight per reading thread")->default_val(32);
  double hot_fraction = 0.9;
  app.add_option("--hot-fraction", hot_fraction, "The servers' --feature-hot-fraction")
      ->default_val(0.9);
  app.add_option("--workers", g_workers,
                 "Loader workers (sessions, batches in flight; a loader bound by the device wants "
                 "more than one bound by the CPU)")
      ->default_val(4);
  std::string remote_path = "thrift";
  app.add_option("--remote-path", remote_path, "loader_disk's path to the servers: thrift or ucx")
      ->default_val("thrift")
      ->check(CLI::IsMember({"thrift", "ucx"}));
  bool skip_lookup = false;
  app.add_flag("--skip-lookup", skip_lookup, "Only the loader cases (not feature_lookup_disk)");
  bool skip_loader = false;
  app.add_flag("--skip-loader", skip_loader,
               "Only feature_lookup_disk (not loader_disk and colocated_disk)");
  app.add_option(
      "--data", data,
      "Dataset folder (made once, reused; default build/bench/data/rmat<scale>-f<dim>-files)");
  app.add_option("--json", json, "Write the cases as a JSON array here");
  CLI11_PARSE(app, argc, argv);
  if (data.empty())
    data = fanout::bench::BinDir() + "/../bench/data/rmat" + std::to_string(scale) + "-f" +
           std::to_string(feature_dim) + "-files";
  if (!fs::exists(data + "/meta.json")) {
    fs::create_directories(fs::path(data).parent_path());
    std::printf("partitioning R-MAT scale %d (%d-dim features) into 2 with feature files ...\n",
                scale, feature_dim);
    const std::string cmd =
        fanout::bench::BinDir() + "/fanout-partition --quiet --format rmat --rmat-scale " +
        std::to_string(scale) + " --feature-dim " + std::to_string(feature_dim) +
        " --parts 2 --method range --feature-file --output " + data + " > /dev/null";
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "fanout-partition failed: %s\n", cmd.c_str());
      return 1;
    }
  }
  fanout::datasets::DatasetMeta meta;
  fanout::Status st = fanout::datasets::ReadDatasetMeta(data, &meta);
  if (!st.ok() || !meta.has_feature_files()) {
    std::fprintf(stderr, "%s: %s\n", data.c_str(),
                 st.ok() ? "no feature files" : st.ToString().c_str());
    return 1;
  }
  std::vector<std::string> files = {data + "/" + meta.feature_files[0].file,
                                    data + "/" + meta.feature_files[1].file};
  std::shared_ptr<const fanout::storage::FeatureFile> file0;
  st = fanout::datasets::OpenPartitionFeatureFile(data, meta, 0, &file0);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  const int64_t block = file0->geometry().block_bytes, row_bytes = file0->geometry().row_bytes;
  std::printf("dataset %s: %lld nodes, %lld edges, rows of %lld bytes, %lld to a %lld-byte block\n",
              data.c_str(), static_cast<long long>(meta.num_nodes),
              static_cast<long long>(meta.num_edges), static_cast<long long>(row_bytes),
              static_cast<long long>(file0->geometry().rows_per_block),
              static_cast<long long>(block));
  nlohmann::json cases = nlohmann::json::array();

  // ---- feature_lookup_disk ----
  if (!skip_lookup) {
    fanout::storage::DiskCacheOptions none;
    none.budget_bytes = 0;
    none.queue_depth = depth;
    std::unique_ptr<fanout::storage::DiskFeatures> tier;
    st = fanout::storage::DiskFeatures::Create(file0, none, {}, &tier);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
    const int64_t rows = file0->geometry().rows;
    for (int threads = 1; threads <= 2; ++threads) {
      std::vector<double> ratios, row_rates, limits, cpu_ratios, tier_cpu, raw_cpu;
      for (int r = 0; r < rounds; ++r) {
        const fanout::bench::RawRate raw =
            fanout::bench::RawReads({files[0]}, block, depth, threads, seconds);
        const double limit = raw.per_s;
        const double cpu0 = ProcessCpuSeconds();
        std::atomic<int64_t> got_rows{0}, got_reads{0};
        std::vector<std::thread> ts;
        const auto t0 = Clock::now();
        for (int t = 0; t < threads; ++t)
          ts.emplace_back([&, t] {
            std::unique_ptr<fanout::storage::BlockReader> reader;
            if (!tier->NewReader(&reader).ok()) return;
            std::mt19937_64 rng(r * 16 + t + 7);
            std::vector<int64_t> ids(512);
            std::vector<char> out(ids.size() * row_bytes);
            int64_t n = 0;
            while (Since(t0) < seconds) {
              for (int64_t& id : ids)
                id = static_cast<int64_t>(rng() % static_cast<uint64_t>(rows));
              if (!tier->Gather(ids.data(), static_cast<int64_t>(ids.size()), out.data(),
                                reader.get())
                       .ok())
                return;
              n += static_cast<int64_t>(ids.size());
            }
            got_rows += n;
            got_reads += reader->stats().reads;
          });
        for (auto& t : ts) t.join();
        const double secs = Since(t0);
        const double reads_per_s = got_reads / secs;
        const double per_read = got_reads > 0 ? (ProcessCpuSeconds() - cpu0) / got_reads : 0;
        tier_cpu.push_back(per_read);
        raw_cpu.push_back(raw.cpu_per_read);
        cpu_ratios.push_back(raw.cpu_per_read > 0 ? per_read / raw.cpu_per_read : 0);
        ratios.push_back(reads_per_s / limit);
        row_rates.push_back(got_rows / secs);
        limits.push_back(limit);
        std::printf(
            "feature_lookup_disk %d thread(s) round %d: tier %.0f block reads/s (%.0f rows/s), "
            "device %.0f reads/s: ratio %.3f; CPU per read %.2f us against the raw reads' %.2f us "
            "(%.2fx)\n",
            threads, r + 1, reads_per_s, got_rows / secs, limit, reads_per_s / limit,
            per_read * 1e6, raw.cpu_per_read * 1e6, cpu_ratios.back());
      }
      cases.push_back({{"case", "feature_lookup_disk"},
                       {"threads", threads},
                       {"ratio", Median(ratios)},
                       {"rows_per_s", Median(row_rates)},
                       {"device_reads_per_s", Median(limits)},
                       {"queue_depth", depth},
                       {"read_bytes", block},
                       {"ratio_rounds", ratios},
                       {"cpu_per_read_s", Median(tier_cpu)},
                       {"raw_cpu_per_read_s", Median(raw_cpu)},
                       {"cpu_per_read_ratio", Median(cpu_ratios)}});
    }
  }

  if (skip_loader) {
    std::printf("\n%s\n", cases.dump(1).c_str());
    fanout::bench::WriteJson(json, cases);
    return 0;
  }

  // ---- loader_disk and colocated_disk ----
  const int64_t rows_per_part = meta.num_nodes / 2;
  const int64_t cache_bytes =
      static_cast<int64_t>(cache_fraction * static_cast<double>(rows_per_part * row_bytes));
  auto start = [&](const std::vector<std::string>& extra) {
    std::vector<fanout::bench::ServerProcess> s;
    for (int p = 0; p < 2; ++p)
      s.push_back(fanout::bench::StartServerProcess(data, p, true, extra));
    return s;
  };
  auto connect = [&](const std::vector<fanout::bench::ServerProcess>& s, bool rpc) {
    fanout::client::ClusterSpec spec;
    spec.replicas = {{s[0].rpc}, {s[1].rpc}};
    spec.has_data_plane = true;
    spec.data_plane = !rpc                      ? fanout::rpc::DataPlaneMode::kAuto
                      : remote_path == "thrift" ? fanout::rpc::DataPlaneMode::kTcp
                                                : fanout::rpc::DataPlaneMode::kUcx;
    std::shared_ptr<fanout::client::Cluster> c;
    fanout::Status cs = fanout::client::Cluster::Connect(spec, {}, &c);
    if (!cs.ok()) {
      std::fprintf(stderr, "%s\n", cs.ToString().c_str());
      std::exit(1);
    }
    return c;
  };
  std::vector<double> device_ratios, hit_ratios, memory_ratios, colocated_ratios, hit_rates,
      reads_per_s_all, rpc_per_batch_all;
  for (int r = 0; r < rounds; ++r) {
    const uint64_t seed = 100 + r;
    // Disk tier, over RPC: the servers' reads, hit rate and the trace.
    auto disk = start({"--features", "disk", "--feature-memory", std::to_string(cache_bytes),
                       "--feature-hot-fraction", std::to_string(hot_fraction),
                       "--feature-queue-depth", std::to_string(depth), "--edge-ids", "on-demand"});
    std::vector<std::unordered_map<int64_t, int64_t>> trace(2);
    TierCounters before[2], after[2];
    LoaderRun over_rpc;
    {
      auto c = connect(disk, true);
      // Warm-up inside RunLoader; the counters from the first timed batch on.
      int seen = 0;
      std::vector<int64_t> offsets = {0, rows_per_part, meta.num_nodes};
      over_rpc = RunLoader(c, meta.num_nodes, warm, batches, seed, [&](const auto& b) {
        if (seen++ == 0)
          for (int p = 0; p < 2; ++p) before[p] = Counters(Stats(disk[p].admin_port));
        const int64_t* n = b.n_id.template data_ptr<int64_t>();
        for (int64_t i = 0; i < b.n_id.size(0); ++i) trace[n[i] >= rows_per_part][n[i]]++;
      });
      for (int p = 0; p < 2; ++p) after[p] = Counters(Stats(disk[p].admin_port));
    }
    // The counters cover batches 2..N of the timed ones (the first opened the
    // window); the trace all N: close enough for rates, and the oracle sees
    // at least as much repetition.
    int64_t lookups = 0, hits = 0, reads = 0;
    double oracle_hits = 0, oracle_total = 0;
    for (int p = 0; p < 2; ++p) {
      lookups += after[p].lookups - before[p].lookups;
      hits += after[p].hits - before[p].hits;
      reads += after[p].reads - before[p].reads;
      std::vector<int64_t> freq;
      for (const auto& kv : trace[p]) freq.push_back(kv.second);
      std::sort(freq.rbegin(), freq.rend());
      const int64_t held = after[p].held_rows;
      for (size_t i = 0; i < freq.size(); ++i) {
        oracle_total += freq[i];
        if (static_cast<int64_t>(i) < held) oracle_hits += freq[i];
      }
    }
    const double hit_rate = lookups > 0 ? double(hits) / lookups : 0;
    const double oracle = oracle_total > 0 ? oracle_hits / oracle_total : 0;
    const double loader_reads = reads / (over_rpc.seconds * (batches - 1) / batches);
    // Co-located: the same servers, the loader reading the tier itself.
    LoaderRun here;
    double rpc_per_batch = 0;
    {
      auto c = connect(disk, false);
      int64_t req0 = 0;
      int seen = 0;
      here = RunLoader(c, meta.num_nodes, warm, batches, seed, [&](const auto&) {
        if (seen++ == 0)
          req0 = Counters(Stats(disk[0].admin_port)).requests +
                 Counters(Stats(disk[1].admin_port)).requests;
      });
      const int64_t req1 = Counters(Stats(disk[0].admin_port)).requests +
                           Counters(Stats(disk[1].admin_port)).requests;
      rpc_per_batch = double(req1 - req0) / (batches - 1);
    }
    for (auto& s : disk) fanout::bench::StopServerProcess(&s);
    // The device at the same read size, as many reads in flight as the two
    // servers' reading threads can have.
    const double device = fanout::bench::RawReads(files, block, depth, 4, seconds).per_s;
    // The memory tier.
    auto mem = start({"--features", "memory", "--edge-ids", "on-demand"});
    LoaderRun in_memory;
    {
      auto c = connect(mem, true);
      in_memory = RunLoader(c, meta.num_nodes, warm, batches, seed);
    }
    for (auto& s : mem) fanout::bench::StopServerProcess(&s);
    std::printf(
        "round %d: loader over RPC, disk tier %.2f batches/s, memory tier %.2f batches/s; "
        "co-located %.2f batches/s (%.2f requests/batch); disk reads %.0f/s, device %.0f/s "
        "(ratio %.3f); hit rate %.3f, oracle %.3f (ratio %.3f)\n",
        r + 1, over_rpc.batches_per_s, in_memory.batches_per_s, here.batches_per_s, rpc_per_batch,
        loader_reads, device, loader_reads / device, hit_rate, oracle,
        oracle > 0 ? hit_rate / oracle : 0);
    device_ratios.push_back(loader_reads / device);
    hit_ratios.push_back(oracle > 0 ? hit_rate / oracle : 0);
    hit_rates.push_back(hit_rate);
    memory_ratios.push_back(over_rpc.batches_per_s / in_memory.batches_per_s);
    colocated_ratios.push_back(here.batches_per_s / over_rpc.batches_per_s);
    reads_per_s_all.push_back(loader_reads);
    rpc_per_batch_all.push_back(rpc_per_batch);
  }
  cases.push_back({{"case", "loader_disk"},
                   {"device_ratio", Median(device_ratios)},
                   {"hit_rate", Median(hit_rates)},
                   {"hit_ratio_to_oracle", Median(hit_ratios)},
                   {"memory_ratio", Median(memory_ratios)},
                   {"cache_fraction", cache_fraction},
                   {"disk_reads_per_s", Median(reads_per_s_all)},
                   {"device_ratio_rounds", device_ratios},
                   {"hit_ratio_to_oracle_rounds", hit_ratios}});
  cases.push_back({{"case", "colocated_disk"},
                   {"ratio", Median(colocated_ratios)},
                   {"rpc_per_batch", Median(rpc_per_batch_all)},
                   {"ratio_rounds", colocated_ratios}});
  std::printf("\n%s\n", cases.dump(1).c_str());
  fanout::bench::WriteJson(json, cases);
  return 0;
}
