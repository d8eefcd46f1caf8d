// fanout-bench-cache: the client feature cache on the R-MAT benchmark graph
// (scale 20, 2 partitions, 128-dim float32 features) behind 2 fanout-server
// processes, fanouts [15,10,5], batches of 1024 uniform seeds. For 5%, 10%
// and 20% of nodes cached and each policy (static by degree, static by
// pre-sampling, SIEVE started from the degree set): hit rate and bytes fetched
// from the servers, beside the uncached bytes and the oracle hit rate (a
// static cache holding the nodes actually accessed most in the measured run).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "bench/bench_util.h"
#include "bench/two_servers.h"
#include "cache/gpu_feature_cache.h"
#include "client/cached_source.h"
#include "client/cluster.h"
#include "client/loader.h"
#include "common/random.h"

namespace fs = std::filesystem;

namespace {

struct Run {
  int64_t lookups = 0, hits = 0, bytes_fetched = 0;
};

// The measured run: `batches` loader batches (identical in every run).
Run Measure(std::shared_ptr<fanout::client::Source> source, const std::vector<int64_t>& seeds,
            int64_t batches,
            const std::function<void(const fanout::client::MiniBatch&)>& each = nullptr) {
  fanout::client::LoaderOptions o;
  o.batch_size = 1024;
  o.fanouts = {15, 10, 5};
  o.shuffle = false;
  o.labels = false;
  o.seed = 4242;
  o.rank = 0;
  o.world_size = 1;
  std::vector<int64_t> mine(seeds.begin(), seeds.begin() + batches * 1024);
  fanout::client::NodeLoader loader(source, mine, o);
  fanout::client::MiniBatch b;
  while (loader.Next(&b))
    if (each) each(b);
  auto s = loader.stats();
  return Run{s.cache_lookups, s.cache_hits, s.feature_bytes};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fanout-bench-cache: feature cache hit rates and bytes fetched, beside the oracle."};
  int scale = 20;
  int64_t batches = 40;
  std::string work, json_path;
  app.add_option("--scale", scale, "R-MAT scale")->default_val(20)->check(CLI::Range(8, 24));
  app.add_option("--batches", batches, "Batches in the measured run (and in pre-sampling)")
      ->default_val(40);
  app.add_option("--work-dir", work, "Keep the dataset here (default: temporary, removed)");
  app.add_option("--json", json_path, "Write the cases as a JSON array to this file");
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  bool own = false;
  work = fanout::bench::WorkDir(work, "fanout-bench-cache", &own);
  std::string dir = work + "/rmat" + std::to_string(scale) + "-2";
  fanout::bench::EnsureRmatDataset(dir, scale, 2, 128);
  fanout::bench::TwoServers servers;
  std::shared_ptr<fanout::client::Cluster> cluster;
  fanout::Status st = fanout::bench::StartTwoServers(dir, &servers, &cluster);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  const int64_t n = cluster->num_nodes(), d = cluster->feature_dim();
  fanout::SplitMix64 rng(99);
  std::vector<int64_t> seeds(static_cast<size_t>(batches * 1024));
  for (auto& v : seeds)
    v = static_cast<int64_t>(fanout::DrawBelow(rng.Next(), static_cast<uint64_t>(n)));

  // Uncached run: the bytes to beat, and the access counts for the oracle.
  std::vector<int64_t> count(static_cast<size_t>(n), 0);
  int64_t accesses = 0;
  Run uncached = Measure(cluster, seeds, batches, [&](const fanout::client::MiniBatch& b) {
    const int64_t* ids = b.n_id.data_ptr<int64_t>();
    for (int64_t i = 0; i < b.n_id.size(0); ++i) count[ids[i]]++;
    accesses += b.n_id.size(0);
  });
  std::vector<int64_t> sorted = count;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  std::printf("measured run: %lld batches, %lld feature rows (%.2f GB) fetched without a cache\n",
              static_cast<long long>(batches), static_cast<long long>(accesses),
              uncached.bytes_fetched / 1e9);

  std::unique_ptr<fanout::client::Session> plain;
  if (!cluster->NewSession(&plain).ok()) return 1;
  nlohmann::json cases = nlohmann::json::array();
  std::printf("%-10s %8s %9s %9s %8s %14s %10s\n", "policy", "cached", "hit rate", "oracle",
              "vs oracle", "bytes fetched", "reduction");
  for (double fraction : {0.05, 0.10, 0.20}) {
    const int64_t cap = fanout::cache::CacheOptions::RowsFromFraction(fraction, n);
    int64_t top = 0;
    for (int64_t i = 0; i < cap; ++i) top += sorted[i];
    const double oracle = static_cast<double>(top) / accesses;
    std::vector<int64_t> by_degree, by_presampling;
    if (!fanout::client::SelectHotByDegree(*plain, n, cap, &by_degree).ok()) return 1;
    fanout::sampler::MultiHopOptions mo;
    mo.fanouts = {15, 10, 5};
    mo.sampling.with_edge_ids = false;
    std::vector<int64_t> all(static_cast<size_t>(n));
    for (int64_t v = 0; v < n; ++v) all[v] = v;
    // Pre-sampling: as many batches as the measured run, other seeds.
    if (!fanout::client::SelectHotByPresampling(*plain, n, all, mo, 1024, batches, /*seed=*/7, cap,
                                                &by_presampling)
             .ok())
      return 1;
    struct Case {
      const char* name;
      fanout::cache::Policy policy;
      const std::vector<int64_t>* hot;
    };
    for (const Case& c : {Case{"degree", fanout::cache::Policy::kStatic, &by_degree},
                          Case{"presample", fanout::cache::Policy::kStatic, &by_presampling},
                          Case{"sieve", fanout::cache::Policy::kSieve, &by_degree}}) {
      fanout::cache::CacheOptions co;
      co.num_nodes = n;
      co.feature_dim = d;
      co.capacity_rows = cap;
      co.policy = c.policy;
      std::unique_ptr<fanout::cache::FeatureCache> fc;
      if (!fanout::cache::FeatureCache::Create(co, &fc).ok()) return 1;
      if (!fanout::client::FillCache(*plain, *c.hot, fc.get()).ok()) return 1;
      auto cached = std::make_shared<fanout::client::CachedSource>(
          cluster, std::shared_ptr<fanout::cache::FeatureCache>(std::move(fc)));
      Run r = Measure(cached, seeds, batches);
      double hit = r.lookups ? static_cast<double>(r.hits) / r.lookups : 0;
      std::printf(
          "%-10s %7.0f%% %9.3f %9.3f %8.3f %11.2f GB %9.2fx\n", c.name, fraction * 100, hit, oracle,
          hit / oracle, r.bytes_fetched / 1e9,
          static_cast<double>(uncached.bytes_fetched) / std::max<int64_t>(1, r.bytes_fetched));
      cases.push_back({{"case", "cache"},
                       {"policy", c.name},
                       {"cached_fraction", fraction},
                       {"capacity_rows", cap},
                       {"hit_rate", hit},
                       {"oracle_hit_rate", oracle},
                       {"bytes_fetched", r.bytes_fetched},
                       {"bytes_fetched_uncached", uncached.bytes_fetched},
                       {"cache_memory_bytes", cached->cache().memory_bytes()}});
    }
  }
  if (fanout::cache::CudaDeviceCount() > 0) {
    double gather = 0, d2d = 0;
    fanout::Status gs =
        fanout::cache::MeasureGatherBandwidth(n / 10, d, 65536, 50, 0, &gather, &d2d);
    if (gs.ok()) {
      std::printf(
          "GPU gather kernel: %.1f GB/s beside a device-to-device copy of the same bytes at %.1f "
          "GB/s (%.2fx)\n",
          gather / 1e9, d2d / 1e9, gather / d2d);
      cases.push_back({{"case", "gpu_gather"},
                       {"rows", n / 10},
                       {"feature_dim", d},
                       {"batch_rows", 65536},
                       {"gather_bytes_per_s", gather},
                       {"d2d_bytes_per_s", d2d},
                       {"ratio", gather / d2d}});
    } else {
      std::printf("GPU gather kernel: %s\n", gs.ToString().c_str());
    }
  } else {
    std::printf("no CUDA device here: the GPU gather kernel was not measured\n");
  }
  servers.Stop();
  if (own) fs::remove_all(work);
  fanout::bench::WriteJson(json_path, cases);
  return 0;
}
