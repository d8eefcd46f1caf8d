// fanout-bench-dataplane: feature lookups over every path a reply can take,
// beside the limit measured in the same run.
//   feature_lookup   random 128-float32 rows of the R-MAT scale-20 graph
//                    (server gather included), 512 KiB and 32 MiB replies, 1
//                    and 2 client threads, over thrift, ucx_shm (UCX_TLS=all),
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

// Runs fn(thread, iteration) -> bytes on `threads` pinned threads for ~seconds; bytes/s.
template <typename Fn>
double Measure(int threads, double seconds, Fn fn) {
  std::atomic<int64_t> bytes{0};
  std::vector<std::thread> ts;
  auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      (void)fanout::PinThisThread(t);
      int64_t b = 0, i = 0;
      auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
      while (Clock::now() < deadline) b += fn(t, i++);
      bytes += b;
    });
  }
  for (auto& th : ts) th.join();
  return bytes.load() / std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<int64_t> RandomIds(int64_t n, int64_t lo, int64_t hi, uint64_t seed) {
  fanout::SplitMix64 rng(seed);
  std::vector<int64_t> v(n);
  for (auto& x : v) x = lo + static_cast<int64_t>(fanout::DrawBelow(rng.Next(), hi - lo));
  return v;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
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
      ->check(CLI::IsMember({"thrift", "ucx_shm", "ucx_tcp", "plain_socket"}));
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

  // Per path and thread: a UCX channel (its context read UCX_TLS when made).
  auto make_channels = [&](const char* tls, int threads) {
    setenv("UCX_TLS", tls, 1);
    std::shared_ptr<fanout::rpc::DataPlaneContext> ctx;
    Check(fanout::rpc::DataPlaneContext::Create(&ctx), "UCX context");
    std::vector<std::unique_ptr<fanout::rpc::DataPlaneChannel>> chs(threads);
    for (auto& ch : chs) {
      Check(fanout::rpc::DataPlaneChannel::Create(ctx, ro, &ch), "UCX channel");
      int peer = -1;
      Check(ch->Connect(host, info.data_port, server.rpc, &peer), "data plane connect");
    }
    unsetenv("UCX_TLS");
    return chs;
  };

  nlohmann::json cases = nlohmann::json::array();
  for (int64_t rows : {int64_t{1024}, int64_t{65536}}) {
    if (no_lookup) break;
    const size_t reply = static_cast<size_t>(rows) * row;
    for (int threads = 1; threads <= max_threads; ++threads) {
      std::vector<std::vector<char>> dst(threads, std::vector<char>(reply)), scratch(threads, std::vector<char>(reply));
      auto ids_for = [&](int t, int64_t i) { return RandomIds(rows, d.node_begin, d.node_end, 7919 * t + i); };
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
      auto shm = make_channels("all", threads);
      auto tcp = make_channels("tcp", threads);
      std::vector<int> fds(threads);
      for (auto& fd : fds) fd = fanout::bench::ConnectPlain(plain.port());
      auto ucx = [&](std::vector<std::unique_ptr<fanout::rpc::DataPlaneChannel>>& chs) {
        return Measure(threads, seconds, [&](int t, int64_t i) -> int64_t {
          auto ids = ids_for(t, i);
          fanout::rpc::DataRequest req;
          req.method = fanout::rpc::DataMethod::kFeatures;
          req.ids = ids;
          fanout::rpc::ReplySink sink;
          sink.data = dst[t].data();
          sink.bytes = reply;
          Check(chs[t]->Call(0, req, sink), "data-plane lookup");
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
        double rate = Median(rates), ratio = Median(ratios);
        std::printf("feature_lookup %5zu KiB replies, %d thread(s): %-12s %6.2f GB/s  %.3fx the gather+memcpy limit "
                    "(ratios %.3f..%.3f)\n",
                    reply / 1024, threads, p.name, rate / 1e9, ratio, *std::min_element(ratios.begin(), ratios.end()),
                    *std::max_element(ratios.begin(), ratios.end()));
        cases.push_back({{"case", "feature_lookup"}, {"path", p.name}, {"reply_bytes", reply}, {"threads", threads},
                         {"bytes_per_s", rate}, {"ratio", ratio},
                         {"ratio_min", *std::min_element(ratios.begin(), ratios.end())},
                         {"ratio_max", *std::max_element(ratios.begin(), ratios.end())}});
      }
      double lim = Median(limits);
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
  double loader_thrift = 0;
  for (const char* path : {"thrift", "ucx_shm"}) {
    if (!only_paths.empty() && std::find(only_paths.begin(), only_paths.end(), path) == only_paths.end()) continue;
    fanout::client::ClusterSpec spec;
    spec.replicas = {{s0.rpc}, {s1.rpc}};
    spec.has_data_plane = true;
    spec.data_plane = std::string(path) == "thrift" ? fanout::rpc::DataPlaneMode::kTcp : fanout::rpc::DataPlaneMode::kUcx;
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
    double rate = (after.feature_bytes - before.feature_bytes) / secs;
    if (std::string(path) == "thrift") loader_thrift = rate;
    std::printf("loader_features %-8s %6.2f GB/s of features, %.1f batches/s (ucx %.0f MB, thrift %.0f MB)%s\n", path,
                rate / 1e9, batches / secs, (after.ucx_bytes - before.ucx_bytes) / 1e6,
                (after.thrift_bytes - before.thrift_bytes) / 1e6,
                loader_thrift > 0 && std::string(path) != "thrift"
                    ? (", " + std::to_string(rate / loader_thrift).substr(0, 5) + "x thrift").c_str()
                    : "");
    cases.push_back({{"case", "loader_features"}, {"path", path}, {"reply_bytes", 0}, {"threads", o.num_workers},
                     {"bytes_per_s", rate}, {"batches_per_s", batches / secs},
                     {"ratio_to_thrift", loader_thrift > 0 ? rate / loader_thrift : 1.0}});
  }
  int rc0 = fanout::bench::StopServerProcess(&s0), rc1 = fanout::bench::StopServerProcess(&s1);
  if (own) fs::remove_all(work);
  fanout::bench::WriteJson(json_path, cases);
  return rc0 == 0 && rc1 == 0 ? 0 : 1;
}
