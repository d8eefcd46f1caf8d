// fanout-bench-dataplane: feature lookups over every path a reply can take,
// beside the limit measured in the same run.
//   feature_lookup   random 128-float32 rows of the R-MAT scale-20 graph
//                    (server gather included), 512 KiB and 32 MiB replies, 1
//                    and 2 client threads, over thrift, ucx_shm (UCX_TLS=all:
//                    rendezvous through shared memory into the client's
//                    buffer), ucx_tcp (UCX_TLS=tcp), plain_socket, local (a
//                    cluster session gathering the rows itself from the
//                    server's sealed export, mapped read-only), and
//                    gather_memcpy (the same gather plus one memcpy in one
//                    process: the limit)
//   loader_features  NodeLoader with features ([15,10,5], batch 1024, 2
//                    servers) over thrift, ucx_shm and local (data_plane
//                    "auto": both servers co-located, sampled and gathered in
//                    the client): feature bytes delivered/s
//   loader_colocated the same loader over local beside the same loader on
//                    LocalSource (the whole dataset in this process):
//                    batches/s, ratio = median of alternating pairs
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
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench/bench_util.h"
#include "bench/plain_server.h"
#include "client/cluster.h"
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
  CLI::App app{
      "fanout-bench-dataplane: feature replies over Thrift, UCX (shared memory, tcp) and plain "
      "sockets,\n"
      "beside an in-process gather plus memcpy (the limit), and NodeLoader over Thrift and UCX."};
  int scale = 20, max_threads = 2, rounds = 3;
  double seconds = 1.0, loader_seconds = 4.0;
  std::string work, json_path;
  std::vector<std::string> only_paths;
  app.add_option("--scale", scale, "R-MAT scale")->default_val(20)->check(CLI::Range(10, 24));
  app.add_option("--seconds", seconds, "Seconds per measurement")->default_val(1.0);
  app.add_option("--rounds", rounds, "Path/limit alternations per case (median of the ratios)")
      ->default_val(3)
      ->check(CLI::Range(1, 20));
  app.add_option("--loader-seconds", loader_seconds, "Seconds per loader run")->default_val(4.0);
  app.add_option("--threads", max_threads, "Client threads: 1..N")
      ->default_val(2)
      ->check(CLI::Range(1, 16));
  app.add_option("--work-dir", work, "Keep the datasets here (default: temporary, removed)");
  app.add_option("--json", json_path, "Write the cases as a JSON array to this file");
  app.add_option("--paths", only_paths, "Measure only these paths (the limit is always measured)")
      ->check(CLI::IsMember({"thrift", "ucx_shm", "ucx_tcp", "plain_socket", "local"}));
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

  // Per path and thread: a UCX channel (its context read UCX_TLS when made);
  // replies are received into the thread's ordinary buffer.
  struct Channels {
    std::vector<std::unique_ptr<fanout::rpc::DataPlaneChannel>> chs;
  };
  auto make_channels = [&](const char* tls, int threads) {
    setenv("UCX_TLS", tls, 1);
    std::shared_ptr<fanout::rpc::DataPlaneContext> ctx;
    Check(fanout::rpc::DataPlaneContext::Create(&ctx), "UCX context");
    Channels c;
    c.chs.resize(threads);
    for (auto& ch : c.chs) {
      Check(fanout::rpc::DataPlaneChannel::Create(ctx, ro, &ch), "UCX channel");
      int peer = -1;
      Check(ch->Connect(host, info.data_port, server.rpc, &peer), "data plane connect");
    }
    unsetenv("UCX_TLS");
    return c;
  };

  nlohmann::json cases = nlohmann::json::array();
  for (int64_t rows : {int64_t{1024}, int64_t{65536}}) {
    if (no_lookup) break;
    const size_t reply = static_cast<size_t>(rows) * row;
    for (int threads = 1; threads <= max_threads; ++threads) {
      std::vector<std::vector<char>> dst(threads, std::vector<char>(reply)),
          scratch(threads, std::vector<char>(reply));
      auto ids_for = [&](int t, int64_t i) {
        return fanout::bench::RandomIds(rows, d.node_begin, d.node_end, 7919 * t + i);
      };
      // The limit: the server's gather plus one memcpy, in this process.
      auto limit = [&] {
        return Measure(threads, seconds, [&](int t, int64_t i) -> int64_t {
          auto ids = ids_for(t, i);
          char* s = scratch[t].data();
          for (int64_t k = 0; k < rows; ++k) {
            if (k + 8 < rows)
              __builtin_prefetch(d.features.data() + (ids[k + 8] - d.node_begin) * row);
            std::memcpy(s + k * row, d.features.data() + (ids[k] - d.node_begin) * row, row);
          }
          std::memcpy(dst[t].data(), s, reply);
          return static_cast<int64_t>(reply);
        });
      };
      std::vector<std::unique_ptr<fanout::rpc::RpcClient>> thrift(threads);
      for (auto& c : thrift)
        Check(fanout::rpc::RpcClient::Connect(host, port, ro, &c), "thrift connect");
      auto shm = make_channels("all", threads);
      auto tcp = make_channels("tcp", threads);
      // The same-host path as a loader takes it: a cluster ("auto") whose
      // one partition's export maps here; each thread a session of it.
      fanout::client::ClusterSpec local_spec;
      local_spec.replicas = {{server.rpc}};
      std::shared_ptr<fanout::client::Cluster> local_cluster;
      Check(fanout::client::Cluster::Connect(local_spec, ro, &local_cluster), "local cluster");
      if (local_cluster->local(0) == nullptr) {
        std::fprintf(stderr, "the server's export did not map here (see the log above)\n");
        return 1;
      }
      std::vector<std::unique_ptr<fanout::client::Session>> local(threads);
      for (auto& s : local) Check(local_cluster->NewSession(&s), "local session");
      std::vector<int> fds(threads);
      for (auto& fd : fds) fd = fanout::bench::ConnectPlain(plain.port());
      auto ucx = [&](Channels& c) {
        return Measure(threads, seconds, [&](int t, int64_t i) -> int64_t {
          auto ids = ids_for(t, i);
          fanout::rpc::DataRequest req;
          req.method = fanout::rpc::DataMethod::kFeatures;
          req.ids = ids;
          const fanout::rpc::ReplySink sink = fanout::rpc::ReplySink::Fixed(dst[t].data(), reply);
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
          {"ucx_tcp", [&] { return ucx(tcp); }},
          {"local",
           [&] {
             return Measure(threads, seconds, [&](int t, int64_t i) -> int64_t {
               Check(local[t]->Features(ids_for(t, i), reinterpret_cast<float*>(dst[t].data())),
                     "local lookup");
               return static_cast<int64_t>(reply);
             });
           }},
          {"plain_socket",
           [&] {
             return Measure(threads, seconds, [&](int t, int64_t i) -> int64_t {
               auto ids = ids_for(t, i);
               uint32_t n = static_cast<uint32_t>(ids.size());
               if (!fanout::bench::WriteAll(fds[t], &n, 4) ||
                   !fanout::bench::WriteAll(fds[t], ids.data(), n * 8) ||
                   !fanout::bench::ReadAll(fds[t], dst[t].data(), reply))
                 std::abort();
               return static_cast<int64_t>(reply);
             });
           }},
      };
      std::vector<double> limits;
      for (auto& p : paths) {
        if (!only_paths.empty() &&
            std::find(only_paths.begin(), only_paths.end(), p.name) == only_paths.end())
          continue;
        std::vector<double> ratios, rates;
        for (int r = 0; r < rounds; ++r) {
          double a = p.run(), b = limit();
          rates.push_back(a);
          limits.push_back(b);
          ratios.push_back(a / b);
        }
        double rate = fanout::bench::Median(rates), ratio = fanout::bench::Median(ratios);
        std::printf(
            "feature_lookup %5zu KiB replies, %d thread(s): %-12s %6.2f GB/s  %.3fx the "
            "gather+memcpy limit "
            "(ratios %.3f..%.3f)\n",
            reply / 1024, threads, p.name, rate / 1e9, ratio,
            *std::min_element(ratios.begin(), ratios.end()),
            *std::max_element(ratios.begin(), ratios.end()));
        cases.push_back({{"case", "feature_lookup"},
                         {"path", p.name},
                         {"reply_bytes", reply},
                         {"threads", threads},
                         {"bytes_per_s", rate},
                         {"ratio", ratio},
                         {"ratio_min", *std::min_element(ratios.begin(), ratios.end())},
                         {"ratio_max", *std::max_element(ratios.begin(), ratios.end())}});
      }
      double lim = fanout::bench::Median(limits);
      std::printf("feature_lookup %5zu KiB replies, %d thread(s): %-12s %6.2f GB/s  (the limit)\n",
                  reply / 1024, threads, "gather_memcpy", lim / 1e9);
      cases.push_back({{"case", "feature_lookup"},
                       {"path", "gather_memcpy"},
                       {"reply_bytes", reply},
                       {"threads", threads},
                       {"bytes_per_s", lim},
                       {"ratio", 1.0}});
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
  auto s0 = fanout::bench::StartServerProcess(dir2, 0, false),
       s1 = fanout::bench::StartServerProcess(dir2, 1, false);
  fanout::SplitMix64 rng(2024);
  std::vector<int64_t> seeds(int64_t{1} << scale);
  for (auto& v : seeds) v = static_cast<int64_t>(fanout::DrawBelow(rng.Next(), seeds.size()));
  // One loader run over a path: feature bytes/s, batches/s, bytes by path.
  struct LoaderRun {
    double rate = 0, batches_per_s = 0, ucx_mb = 0, thrift_mb = 0, local_mb = 0;
  };
  std::shared_ptr<fanout::client::LocalSource> in_process;
  auto run_loader = [&](const std::string& path) {
    std::shared_ptr<fanout::client::Source> source;
    if (path == "in_process") {
      if (!in_process) Check(fanout::client::LocalSource::Open(dir2, &in_process), "LocalSource");
      source = in_process;
    } else {
      fanout::client::ClusterSpec spec;
      spec.replicas = {{s0.rpc}, {s1.rpc}};
      spec.has_data_plane = true;
      spec.data_plane = path == "thrift"    ? fanout::rpc::DataPlaneMode::kTcp
                        : path == "ucx_shm" ? fanout::rpc::DataPlaneMode::kUcx
                                            : fanout::rpc::DataPlaneMode::kAuto;
      setenv("UCX_TLS", "all", 1);
      std::shared_ptr<fanout::client::Cluster> cluster;
      Check(fanout::client::Cluster::Connect(spec, ro, &cluster), "cluster");
      unsetenv("UCX_TLS");
      if (path == "local" && (cluster->local(0) == nullptr || cluster->local(1) == nullptr)) {
        std::fprintf(stderr, "the servers' exports did not map here (see the log above)\n");
        std::exit(1);
      }
      source = cluster;
    }
    fanout::client::LoaderOptions o;
    o.batch_size = 1024;
    o.fanouts = {15, 10, 5};
    o.shuffle = false;
    o.labels = false;
    o.rank = 0;
    o.world_size = 1;
    fanout::client::NodeLoader loader(source, seeds, o);
    fanout::client::MiniBatch b;
    loader.Next(&b);  // warm-up
    auto before = loader.stats();
    auto start = Clock::now();
    int64_t batches = 0;
    while (Clock::now() - start < std::chrono::duration<double>(loader_seconds) && loader.Next(&b))
      ++batches;
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    auto after = loader.stats();
    LoaderRun r;
    r.rate = (after.feature_bytes - before.feature_bytes) / secs;
    r.batches_per_s = batches / secs;
    r.ucx_mb = (after.ucx_bytes - before.ucx_bytes) / 1e6;
    r.thrift_mb = (after.thrift_bytes - before.thrift_bytes) / 1e6;
    r.local_mb = (after.local_bytes - before.local_bytes) / 1e6;
    return r;
  };
  auto want = [&](const char* name) {
    return only_paths.empty() ||
           std::find(only_paths.begin(), only_paths.end(), name) != only_paths.end();
  };
  auto min_of = [](const std::vector<double>& v) {
    return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
  };
  auto max_of = [](const std::vector<double>& v) {
    return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
  };
  // Each path alternated with Thrift (ABAB...): the median of the per-pair ratios.
  struct PathRuns {
    std::vector<double> rates, bps, ratios;
  };
  std::map<std::string, PathRuns> runs;
  for (int r = 0; r < rounds; ++r) {
    LoaderRun t = run_loader("thrift");
    runs["thrift"].rates.push_back(t.rate);
    runs["thrift"].bps.push_back(t.batches_per_s);
    std::printf(
        "loader_features round %d thrift   %6.2f GB/s of features, %.1f batches/s (thrift %.0f "
        "MB)\n",
        r + 1, t.rate / 1e9, t.batches_per_s, t.thrift_mb);
    for (const char* path : {"ucx_shm", "local"}) {
      if (!want(path)) continue;
      LoaderRun u = run_loader(path);
      PathRuns& pr = runs[path];
      pr.rates.push_back(u.rate);
      pr.bps.push_back(u.batches_per_s);
      if (t.rate > 0) pr.ratios.push_back(u.rate / t.rate);
      std::printf(
          "loader_features round %d %-8s %6.2f GB/s of features, %.1f batches/s (ucx %.0f MB, "
          "thrift %.0f MB, "
          "local %.0f MB)\n",
          r + 1, path, u.rate / 1e9, u.batches_per_s, u.ucx_mb, u.thrift_mb, u.local_mb);
    }
  }
  for (const char* path : {"thrift", "ucx_shm", "local"}) {
    if (!runs.count(path)) continue;
    const PathRuns& pr = runs[path];
    const bool base = std::string(path) == "thrift";
    const double ratio = base ? 1.0 : fanout::bench::Median(pr.ratios);
    std::printf(
        "loader_features %-8s %6.2f GB/s of features (median of %d), %.3fx thrift (pairs "
        "%.3f..%.3f)\n",
        path, fanout::bench::Median(pr.rates) / 1e9, rounds, ratio, base ? 1.0 : min_of(pr.ratios),
        base ? 1.0 : max_of(pr.ratios));
    nlohmann::json c = {{"case", "loader_features"},
                        {"path", path},
                        {"reply_bytes", 0},
                        {"threads", 2},
                        {"bytes_per_s", fanout::bench::Median(pr.rates)},
                        {"batches_per_s", fanout::bench::Median(pr.bps)},
                        {"ratio_to_thrift", ratio}};
    if (!base) {
      c["ratio_min"] = min_of(pr.ratios);
      c["ratio_max"] = max_of(pr.ratios);
    }
    cases.push_back(c);
  }
  // loader_colocated: the local path beside the in-process limit (LocalSource
  // holds the whole dataset here, arrays in this process's own memory with
  // transparent huge pages; the exports are 4 KiB-page shared memory where
  // the kernel's shmem_enabled is "never").
  if (want("local")) {
    std::vector<double> local_bps, limit_bps, ratios;
    for (int r = 0; r < rounds; ++r) {
      LoaderRun a = run_loader("local"), b = run_loader("in_process");
      local_bps.push_back(a.batches_per_s);
      limit_bps.push_back(b.batches_per_s);
      if (b.batches_per_s > 0) ratios.push_back(a.batches_per_s / b.batches_per_s);
      std::printf(
          "loader_colocated round %d local %.1f batches/s, in process %.1f batches/s: %.3fx\n",
          r + 1, a.batches_per_s, b.batches_per_s, ratios.empty() ? 0.0 : ratios.back());
    }
    const double ratio = fanout::bench::Median(ratios);
    std::printf(
        "loader_colocated local %.1f batches/s, LocalSource %.1f batches/s: %.3fx (pairs "
        "%.3f..%.3f)\n",
        fanout::bench::Median(local_bps), fanout::bench::Median(limit_bps), ratio, min_of(ratios),
        max_of(ratios));
    cases.push_back({{"case", "loader_colocated"},
                     {"path", "local"},
                     {"threads", 2},
                     {"batches_per_s", fanout::bench::Median(local_bps)},
                     {"limit_batches_per_s", fanout::bench::Median(limit_bps)},
                     {"ratio", ratio},
                     {"ratio_min", min_of(ratios)},
                     {"ratio_max", max_of(ratios)}});
  }
  int rc0 = fanout::bench::StopServerProcess(&s0), rc1 = fanout::bench::StopServerProcess(&s1);
  if (own) fs::remove_all(work);
  fanout::bench::WriteJson(json_path, cases);
  return rc0 == 0 && rc1 == 0 ? 0 : 1;
}
