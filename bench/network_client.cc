// fanout-bench-network-client: the 2-server loader's side of `./run bench
// network` (bench/network_bench.py sets up the shaped links and the servers).
//
// Connects a cluster of the given servers (one replica per partition) over
// Thrift or UCX, optionally puts a client feature cache of --cache-fraction
// of the nodes (the highest-degree ones, filled before the clock starts) in
// front of it, and runs the loader (fanouts [15, 10, 5], batch 1024, features,
// 2 workers) for --seconds after one warm-up batch. The bytes the links
// carried in that window are read from the counters of the interfaces named
// by --count-dev (their rx_bytes: what reached this side), so that
// link_bytes_per_s counts every byte on the wire (headers, requests' replies,
// retransmissions), not what Fanout thinks it moved.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/bench_util.h"
#include "bench/loader_case.h"
#include "cache/feature_cache.h"
#include "client/batch_loader.h"
#include "client/cached_source.h"
#include "client/cluster.h"

namespace {

int64_t RxBytes(const std::vector<std::string>& devs) {
  int64_t sum = 0;
  for (const std::string& d : devs) {
    std::ifstream f("/sys/class/net/" + d + "/statistics/rx_bytes");
    int64_t v = 0;
    if (!(f >> v)) {
      std::fprintf(stderr, "fanout-bench-network-client: cannot read the counters of %s\n",
                   d.c_str());
      std::exit(1);
    }
    sum += v;
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-bench-network-client: the loader through shaped links, with bytes counted on the "
      "links (run by bench/network_bench.py; see bench/network_client.cc)"};
  std::vector<std::string> servers, count_devs;
  std::string path = "thrift", json;
  double cache_fraction = 0, seconds = 10, link_bytes_per_s = 0;
  app.add_option("--servers", servers, "HOST:PORT of partition 0, 1, ... (comma-separated)")
      ->required()
      ->delimiter(',');
  app.add_option("--path", path, "thrift or ucx")
      ->check(CLI::IsMember({"thrift", "ucx"}))
      ->default_val("thrift");
  app.add_option("--cache-fraction", cache_fraction, "Nodes held in the client feature cache")
      ->check(CLI::Range(0.0, 1.0))
      ->default_val(0);
  app.add_option("--seconds", seconds, "Measured seconds")->default_val(10);
  app.add_option("--count-dev", count_devs, "Interfaces whose rx_bytes count the links' bytes")
      ->required()
      ->delimiter(',');
  app.add_option("--link-bytes-per-s", link_bytes_per_s,
                 "The links' capacity towards this side, in bytes/s (for link_utilisation)")
      ->required();
  app.add_option("--json", json, "Write the case here");
  CLI11_PARSE(app, argc, argv);
  namespace fc = fanout::client;
  fc::ClusterSpec spec;
  for (const std::string& s : servers) spec.replicas.push_back({s});
  fanout::rpc::RpcOptions ro;
  ro.data_plane =
      path == "ucx" ? fanout::rpc::DataPlaneMode::kUcx : fanout::rpc::DataPlaneMode::kTcp;
  ro.local_sampling = false;
  std::shared_ptr<fc::Cluster> cluster;
  fanout::Status st = fc::Cluster::Connect(spec, ro, &cluster);
  if (!st.ok()) {
    std::fprintf(stderr, "fanout-bench-network-client: %s\n", st.ToString().c_str());
    return 1;
  }
  const int64_t n = cluster->num_nodes(), d = cluster->feature_dim();
  std::shared_ptr<fc::Source> source = cluster;
  int64_t cached_rows = 0;
  if (cache_fraction > 0) {
    std::unique_ptr<fc::Session> plain;
    if (!cluster->NewSession(&plain).ok()) return 1;
    fanout::cache::CacheOptions co;
    co.num_nodes = n;
    co.feature_dim = d;
    co.capacity_rows = fanout::cache::CacheOptions::RowsFromFraction(cache_fraction, n);
    co.policy = fanout::cache::Policy::kStatic;
    std::vector<int64_t> hot;
    std::unique_ptr<fanout::cache::FeatureCache> cache;
    if (!fc::SelectHotByDegree(*plain, n, co.capacity_rows, &hot).ok() ||
        !fanout::cache::FeatureCache::Create(co, &cache).ok() ||
        !fc::FillCache(*plain, hot, cache.get()).ok()) {
      std::fprintf(stderr, "fanout-bench-network-client: the cache could not be filled\n");
      return 1;
    }
    cached_rows = co.capacity_rows;
    source = std::make_shared<fc::CachedSource>(
        cluster, std::shared_ptr<fanout::cache::FeatureCache>(std::move(cache)));
  }
  fc::LoaderOptions lo = fanout::bench::LoaderCaseOptions(1024, {15, 10, 5}, true);
  lo.shuffle = true;  // each epoch's seeds in a new order
  lo.seed = 11;
  const std::vector<int64_t> seeds = fanout::bench::RandomIds(256 * 1024, 0, n, 5);
  fc::BatchLoader loader(source, seeds, lo);
  fc::Batch b;
  loader.Next(&b);  // warm-up: connections, buffers
  const fc::LoaderStats s0 = loader.stats();
  const int64_t rx0 = RxBytes(count_devs);
  const fanout::bench::TimedBatches timed = fanout::bench::TakeBatches(loader, seconds);
  const int64_t batches = timed.batches, edges = timed.edges;
  const double secs = timed.seconds;
  const int64_t rx = RxBytes(count_devs) - rx0;
  const fc::LoaderStats s1 = loader.stats();
  const double link_rate = static_cast<double>(rx) / secs;
  const nlohmann::json out = {
      {"path", path},
      {"cache_fraction", cache_fraction},
      {"cached_rows", cached_rows},
      {"seconds", secs},
      {"batches", batches},
      {"batches_per_s", batches / secs},
      {"edges_per_batch", batches ? static_cast<double>(edges) / batches : 0.0},
      {"link_bytes", rx},
      {"link_bytes_per_s", link_rate},
      {"bytes_per_batch", batches ? static_cast<double>(rx) / batches : 0.0},
      {"feature_bytes_per_batch",
       batches ? static_cast<double>(s1.feature_bytes - s0.feature_bytes) / batches : 0.0},
      {"cache_hit_rate", s1.cache_lookups > s0.cache_lookups
                             ? static_cast<double>(s1.cache_hits - s0.cache_hits) /
                                   static_cast<double>(s1.cache_lookups - s0.cache_lookups)
                             : 0.0},
      {"link_capacity_bytes_per_s", link_bytes_per_s},
      {"link_utilisation", link_bytes_per_s > 0 ? link_rate / link_bytes_per_s : 0.0}};
  std::printf("%s\n", out.dump().c_str());
  fanout::bench::WriteJson(json, nlohmann::json::array({out}));
  return 0;
}
