// fanout-bench-dataplane: feature lookups over every path a reply can take,
// beside the limit measured in the same run.
//   feature_lookup   random 128-float32 rows of the R-MAT scale-20 graph
//                    (server gather included), 512 KiB and 32 MiB replies, 1
//                    and 2 client threads, over thrift, ucx_shm (UCX_TLS=all,
//                    destination in a DataRegion: the server writes the rows
//                    there itself), ucx_shm_rndv (UCX_TLS=all, destination in
//                    ordinary memory: rendezvous through shared memory),
//                    ucx_tcp (UCX_TLS=tcp), plain_socket, and gather_memcpy
//                    (the same gather plus one memcpy in one process: the limit)
//   loader_features  NodeLoader with features ([15,10,5], batch 1024, 2
//                    servers) over thrift and ucx_shm: feature bytes delivered/s
// Each case alternates its path with the limit several times (ABAB) and
// reports the median of the per-pair ratios.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench/bench_util.h"
#include "bench/plain_server.h"
#include "client/cluster.h"
#include "client/region_pool.h"
#include "client/loader.h"
#include "common/cpu.h"
#include "common/random.h"
#include "datasets/partition_store.h"
#include "rpc/data_plane.h"
#include "rpc/rpc_client.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using fanout::Status;

namespace {

void Check(const Status& st, const char* what) {
  if (!st.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, st.ToString().c_str());
    std::exit(1);
  }
}

// Client threads pinned to CPUs 0..threads-1 (the server and the limit share the machine).
template <typename Fn>
double Measure(int threads, double seconds, Fn fn) {
  return fanout::bench::Measure(threads, seconds, fn, /*pin=*/true);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fanout-bench-dataplane: feature replies over Thrift, UCX (shared memory, tcp) and plain sockets,\n"
               "beside an in-process gather plus memcpy (the limit), and NodeLoader over Thrift and UCX."};
  int scale = 20, max_threads = 2, rounds = 3;
  double seconds = 1.0, loader_seconds = 4.0;
  std::string work, json_path;
  std::vector<std::string> only_paths;
  app.add_option("--scale", scale, "R-MAT scale")->default_val(20)->check(CLI::Range(10, 24));
  app.add_option("--seconds", seconds, "Seconds per measurement")->default_val(1.0);
  app.add_option("--rounds", rounds, "Path/limit alternations per case (median of the ratios)")->default_val(3)
      ->check(CLI::Range(1, 20));
  app.add_option("--loader-seconds", loader_seconds, "Seconds per loader run")->default_val(4.0);
  app.add_option("--threads", max_threads, "Client threads: 1..N")->default_val(2)->check(CLI::Range(1, 16));
  app.add_option("--work-dir", work, "Keep the datasets here (default: temporary, removed)");
  app.add_option("--json", json_path, "Write the cases as a JSON array to this file");
  app.add_option("--paths", only_paths, "Measure only these paths (the limit is always measured)")
      ->check(CLI::IsMember({"thrift", "ucx_shm", "ucx_shm_rndv", "ucx_tcp", "plain_socket"}));
  bool no_loader = false, no_lookup = false;
  app.add_flag("--no-loader", no_loader, "Skip the loader_features case");
  app.add_flag("--no-lookup", no_lookup, "Skip the feature_lookup cases");
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  setenv("UCX_NET_DEVICES", "lo", 0);  // loopback only, unless the caller says otherwise
  if (!fanout::rpc::DataPlaneBuilt()) {
    std::fprintf(stderr, "this build has no UCX data plane (FANOUT_WITH_UCX)\n");
    return 1;
  }

  bool own = false;
  work = fanout::bench::WorkDir(work, "fanout-bench-dataplane", &own);
  std::string dir = work + "/rmat" + std::to_string(scale);
  fanout::bench::EnsureRmatDataset(dir, scale, 1, 128);
  auto server = fanout::bench::StartServerProcess(dir, 0, /*admin=*/false);
  std::printf("%s", server.ready_line.c_str());
  std::string host;
  int port = 0;
  Check(fanout::rpc::ParseAddress(server.rpc, &host, &port), "server address");
  fanout::rpc::RpcOptions ro;
  std::unique_ptr<fanout::rpc::RpcClient> probe;
  Check(fanout::rpc::RpcClient::Connect(host, port, ro, &probe), "connect");
  fanout::rpc::RemotePartitionInfo info;
  Check(probe->Info(&info), "partition_info");
  if (info.data_port <= 0) {
    std::fprintf(stderr, "the server offers no data plane\n");
    return 1;
  }

  fanout::datasets::PartitionData d;
  Check(fanout::datasets::OpenPartition(dir, 0, {}, &d), "open partition");
  const size_t row = static_cast<size_t>(d.meta.feature_dim) * 4;
  fanout::bench::PlainServer plain(d);

  // Per path and thread: a UCX channel (its context read UCX_TLS when made)
  // and a destination of `reply` bytes in a DataRegion of that context, where
  // a server on this host writes the rows itself (placement); with
  // `place` false the destination is ordinary memory (replies by rendezvous).
  struct Channels {
    std::vector<std::unique_ptr<fanout::rpc::DataPlaneChannel>> chs;
    std::vector<std::shared_ptr<fanout::rpc::DataRegion>> regions;
  };
  auto make_channels = [&](const char* tls, int threads, size_t reply, bool place) {
    setenv("UCX_TLS", tls, 1);
    std::shared_ptr<fanout::rpc::DataPlaneContext> ctx;
    Check(fanout::rpc::DataPlaneContext::Create(&ctx), "UCX context");
    Channels c;
    c.chs.resize(threads);
    for (auto& ch : c.chs) {
      Check(fanout::rpc::DataPlaneChannel::Create(ctx, ro, &ch), "UCX channel");
      int peer = -1;
      Check(ch->Connect(host, info.data_port, server.rpc, &peer), "data plane connect");
      if (!place) continue;
      c.regions.emplace_back();
      Check(ctx->AllocateRegion(reply, &c.regions.back()), "data-plane region");
      std::memset(c.regions.back()->data(), 0, reply);
    }
    unsetenv("UCX_TLS");
    return c;
  };

  nlohmann::json cases = nlohmann::json::array();
  for (int64_t rows : {int64_t{1024}, int64_t{65536}}) {
    if (no_lookup) break;
    const size_t reply = static_cast<size_t>(rows) * row;
    for (int threads = 1; threads <= max_threads; ++threads) {
      std::vector<std::vector<char>> dst(threads, std::vector<char>(reply)), scratch(threads, std::vector<char>(reply));
      auto ids_for = [&](int t, int64_t i) { return fanout::bench::RandomIds(rows, d.node_begin, d.node_end, 7919 * t + i); };
      // The limit: the server's gather plus one memcpy, in this process.
      auto limit = [&] {
        return Measure(threads, seconds, [&](int t, int64_t i) -> int64_t {
          auto ids = ids_for(t, i);
          char* s = scratch[t].data();
          for (int64_t k = 0; k < rows; ++k) {
            if (k + 8 < rows) __builtin_prefetch(d.features.data() + (ids[k + 8] - d.node_begin) * row);
            std::memcpy(s + k * row, d.features.data() + (ids[k] - d.node_begin) * row, row);
          }
          std::memcpy(dst[t].data(), s, reply);
          return static_cast<int64_t>(reply);
        });
      };
      std::vector<std::unique_ptr<fanout::rpc::RpcClient>> thrift(threads);
      for (auto& c : thrift) Check(fanout::rpc::RpcClient::Connect(host, port, ro, &c), "thrift connect");
      auto shm = make_channels("all", threads, reply, true);
      auto shm_rndv = make_channels("all", threads, reply, false);
      auto tcp = make_channels("tcp", threads, reply, true);
      std::vector<int> fds(threads);
      for (auto& fd : fds) fd = fanout::bench::ConnectPlain(plain.port());
      auto ucx = [&](Channels& c) {
        return Measure(threads, seconds, [&](int t, int64_t i) -> int64_t {
          auto ids = ids_for(t, i);
          fanout::rpc::DataRequest req;
          req.method = fanout::rpc::DataMethod::kFeatures;
          req.ids = ids;
          fanout::rpc::ReplySink sink;
          sink.data = c.regions.empty() ? dst[t].data() : c.regions[t]->data();
          sink.bytes = reply;
          Check(c.chs[t]->Call(0, req, sink), "data-plane lookup");
          return static_cast<int64_t>(reply);
        });
      };
      struct Path {
        const char* name;
        std::function<double()> run;
      };
      std::vector<Path> paths = {
          {"thrift",
           [&] {
             return Measure(threads, seconds, [&](int t, int64_t i) -> int64_t {
               thread_local std::string rows_out;
               Check(thrift[t]->Features(ids_for(t, i), &rows_out), "thrift lookup");
               return static_cast<int64_t>(rows_out.size());
             });
           }},
          {"ucx_shm", [&] { return ucx(shm); }},
          {"ucx_shm_rndv", [&] { return ucx(shm_rndv); }},
          {"ucx_tcp", [&] { return ucx(tcp); }},
          {"plain_socket",
           [&] {
             return Measure(threads, seconds, [&](int t, int64_t i) -> int64_t {
               auto ids = ids_for(t, i);
               uint32_t n = static_cast<uint32_t>(ids.size());
               if (!fanout::bench::WriteAll(fds[t], &n, 4) || !fanout::bench::WriteAll(fds[t], ids.data(), n * 8) ||
                   !fanout::bench::ReadAll(fds[t], dst[t].data(), reply))
                 std::abort();
               return static_cast<int64_t>(reply);
             });
           }},
      };
      std::vector<double> limits;
      for (auto& p : paths) {
        if (!only_paths.empty() && std::find(only_paths.begin(), only_paths.end(), p.name) == only_paths.end())
          continue;
        std::vector<double> ratios, rates;
        for (int r = 0; r < rounds; ++r) {
          double a = p.run(), b = limit();
          rates.push_back(a);
          limits.push_back(b);
          ratios.push_back(a / b);
        }
        double rate = fanout::bench::Median(rates), ratio = fanout::bench::Median(ratios);
        std::printf("feature_lookup %5zu KiB replies, %d thread(s): %-12s %6.2f GB/s  %.3fx the gather+memcpy limit "
                    "(ratios %.3f..%.3f)\n",
                    reply / 1024, threads, p.name, rate / 1e9, ratio, *std::min_element(ratios.begin(), ratios.end()),
                    *std::max_element(ratios.begin(), ratios.end()));
        cases.push_back({{"case", "feature_lookup"}, {"path", p.name}, {"reply_bytes", reply}, {"threads", threads},
                         {"bytes_per_s", rate}, {"ratio", ratio},
                         {"ratio_min", *std::min_element(ratios.begin(), ratios.end())},
                         {"ratio_max", *std::max_element(ratios.begin(), ratios.end())}});
      }
      double lim = fanout::bench::Median(limits);
      std::printf("feature_lookup %5zu KiB replies, %d thread(s): %-12s %6.2f GB/s  (the limit)\n", reply / 1024,
                  threads, "gather_memcpy", lim / 1e9);
      cases.push_back({{"case", "feature_lookup"}, {"path", "gather_memcpy"}, {"reply_bytes", reply},
                       {"threads", threads}, {"bytes_per_s", lim}, {"ratio", 1.0}});
      for (int fd : fds) close(fd);
    }
  }
  fanout::bench::StopServerProcess(&server);

  if (no_loader) {
    if (own) fs::remove_all(work);
    fanout::bench::WriteJson(json_path, cases);
    return 0;
  }
  // NodeLoader with features through 2 servers, over each path.
  std::string dir2 = work + "/rmat" + std::to_string(scale) + "-2";
  fanout::bench::EnsureRmatDataset(dir2, scale, 2, 128);
  auto s0 = fanout::bench::StartServerProcess(dir2, 0, false), s1 = fanout::bench::StartServerProcess(dir2, 1, false);
  fanout::SplitMix64 rng(2024);
  std::vector<int64_t> seeds(int64_t{1} << scale);
  for (auto& v : seeds) v = static_cast<int64_t>(fanout::DrawBelow(rng.Next(), seeds.size()));
  // One loader run over a path: feature bytes/s, batches/s, bytes by path.
  struct LoaderRun {
    double rate = 0, batches_per_s = 0, ucx_mb = 0, thrift_mb = 0, placed_mb = 0;
    int64_t regions_made = 0, regions_reused = 0;
  };
  auto run_loader = [&](const std::string& path) {
    fanout::client::ClusterSpec spec;
    spec.replicas = {{s0.rpc}, {s1.rpc}};
    spec.has_data_plane = true;
    spec.data_plane = path == "thrift" ? fanout::rpc::DataPlaneMode::kTcp : fanout::rpc::DataPlaneMode::kUcx;
    setenv("UCX_TLS", "all", 1);
    std::shared_ptr<fanout::client::Cluster> cluster;
    Check(fanout::client::Cluster::Connect(spec, ro, &cluster), "cluster");
    unsetenv("UCX_TLS");
    fanout::client::LoaderOptions o;
    o.batch_size = 1024;
    o.fanouts = {15, 10, 5};
    o.shuffle = false;
    o.labels = false;
    o.rank = 0;
    o.world_size = 1;
    fanout::client::NodeLoader loader(cluster, seeds, o);
    fanout::client::MiniBatch b;
    loader.Next(&b);  // warm-up
    auto before = loader.stats();
    auto start = Clock::now();
    int64_t batches = 0;
    while (Clock::now() - start < std::chrono::duration<double>(loader_seconds) && loader.Next(&b)) ++batches;
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    auto after = loader.stats();
    LoaderRun r;
    r.rate = (after.feature_bytes - before.feature_bytes) / secs;
    r.batches_per_s = batches / secs;
    r.ucx_mb = (after.ucx_bytes - before.ucx_bytes) / 1e6;
    r.thrift_mb = (after.thrift_bytes - before.thrift_bytes) / 1e6;
    r.placed_mb = (after.placed_bytes - before.placed_bytes) / 1e6;
    if (auto pool = cluster->feature_buffers()) {
      r.regions_made = pool->stats().allocated;
      r.regions_reused = pool->stats().reused;
    }
    return r;
  };
  // Thrift and UCX alternated (ABAB...): the median of the per-pair ratios.
  const bool want_thrift = only_paths.empty() ||
                           std::find(only_paths.begin(), only_paths.end(), "thrift") != only_paths.end();
  const bool want_ucx = only_paths.empty() ||
                        std::find(only_paths.begin(), only_paths.end(), "ucx_shm") != only_paths.end();
  std::vector<double> thrift_rates, ucx_rates, ratios, thrift_bps, ucx_bps;
  for (int r = 0; r < rounds; ++r) {
    LoaderRun t, u;
    if (want_thrift) {
      t = run_loader("thrift");
      thrift_rates.push_back(t.rate);
      thrift_bps.push_back(t.batches_per_s);
      std::printf("loader_features round %d thrift   %6.2f GB/s of features, %.1f batches/s (thrift %.0f MB)\n", r + 1,
                  t.rate / 1e9, t.batches_per_s, t.thrift_mb);
    }
    if (want_ucx) {
      u = run_loader("ucx_shm");
      ucx_rates.push_back(u.rate);
      ucx_bps.push_back(u.batches_per_s);
      std::printf("loader_features round %d ucx_shm  %6.2f GB/s of features, %.1f batches/s (ucx %.0f MB of which placed "
                  "%.0f MB, thrift %.0f MB; x regions: %lld made, %lld reused)\n",
                  r + 1, u.rate / 1e9, u.batches_per_s, u.ucx_mb, u.placed_mb, u.thrift_mb,
                  static_cast<long long>(u.regions_made), static_cast<long long>(u.regions_reused));
    }
    if (want_thrift && want_ucx && t.rate > 0) ratios.push_back(u.rate / t.rate);
  }
  const double ratio = fanout::bench::Median(ratios);
  auto min_of = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); };
  auto max_of = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
  if (want_thrift) {
    std::printf("loader_features thrift   %6.2f GB/s of features (median of %d)\n", fanout::bench::Median(thrift_rates) / 1e9, rounds);
    cases.push_back({{"case", "loader_features"}, {"path", "thrift"}, {"reply_bytes", 0}, {"threads", 2},
                     {"bytes_per_s", fanout::bench::Median(thrift_rates)}, {"batches_per_s", fanout::bench::Median(thrift_bps)},
                     {"ratio_to_thrift", 1.0}});
  }
  if (want_ucx) {
    std::printf("loader_features ucx_shm  %6.2f GB/s of features (median of %d)%s\n", fanout::bench::Median(ucx_rates) / 1e9, rounds,
                ratios.empty() ? ""
                               : (", " + std::to_string(ratio).substr(0, 5) + "x thrift (pairs " +
                                  std::to_string(min_of(ratios)).substr(0, 5) + ".." +
                                  std::to_string(max_of(ratios)).substr(0, 5) + ")")
                                     .c_str());
    cases.push_back({{"case", "loader_features"}, {"path", "ucx_shm"}, {"reply_bytes", 0}, {"threads", 2},
                     {"bytes_per_s", fanout::bench::Median(ucx_rates)}, {"batches_per_s", fanout::bench::Median(ucx_bps)},
                     {"ratio_to_thrift", ratio}, {"ratio_min", min_of(ratios)}, {"ratio_max", max_of(ratios)}});
  }
  int rc0 = fanout::bench::StopServerProcess(&s0), rc1 = fanout::bench::StopServerProcess(&s1);
  if (own) fs::remove_all(work);
  fanout::bench::WriteJson(json_path, cases);
  return rc0 == 0 && rc1 == 0 ? 0 : 1;
}
