// fanout-gpu-check: what only a GPU machine can show, in one run, without
// LibTorch (so that it can be carried to a machine that has none of our
// dependencies): the device, the cache's gather kernel beside a
// device-to-device copy, and a loader-shaped run with CUDA output through the
// data plane (sampling over the data plane, x gathered into device memory:
// hits from the GPU cache, misses straight in where UCX moves CUDA memory,
// else staged through pinned host memory), checked against host rows.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "bench/bench_util.h"
#include "cache/gpu_feature_cache.h"
#include "client/cluster.h"
#include "client/device_features.h"
#include "common/random.h"
#include "rpc/data_plane.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

void Check(const fanout::Status& st, const char* what) {
  if (!st.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, st.ToString().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-gpu-check: the GPU cache's gather kernel and a loader run with CUDA output through "
      "the data\n"
      "plane, on a machine with an NVIDIA GPU (exits 0 with a note where there is none)."};
  int scale = 18, device = 0;
  double seconds = 10, cached_fraction = 0.2;
  std::string work, json_path;
  app.add_option("--scale", scale, "R-MAT scale of the loader run's graph")
      ->default_val(18)
      ->check(CLI::Range(10, 24));
  app.add_option("--seconds", seconds, "Seconds of the loader run")->default_val(10.0);
  app.add_option("--cached-fraction", cached_fraction,
                 "Share of the nodes in the GPU cache (highest degree first)")
      ->default_val(0.2)
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--device", device, "CUDA device")->default_val(0);
  app.add_option("--work-dir", work, "Keep the datasets here (default: temporary, removed)");
  app.add_option("--json", json_path, "Write the results as a JSON array to this file");
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  setenv("UCX_NET_DEVICES", "lo", 0);

  nlohmann::json cases = nlohmann::json::array();
  const int devices = fanout::cache::CudaDeviceCount();
  const fanout::rpc::DataPlaneInfo dp = fanout::rpc::QueryDataPlane();
  std::printf("CUDA devices: %d; UCX data plane: %s (memory types:", devices,
              dp.available ? dp.ucx_version.c_str() : ("unavailable: " + dp.error).c_str());
  for (const auto& m : dp.memory_types) std::printf(" %s", m.c_str());
  std::printf("; CUDA %s)\n",
              dp.cuda ? "yes: misses land in device memory" : "no: misses are staged");
  cases.push_back({{"case", "environment"},
                   {"cuda_devices", devices},
                   {"ucx", dp.ucx_version},
                   {"ucx_memory_types", dp.memory_types},
                   {"ucx_cuda", dp.cuda}});
  if (devices == 0) {
    std::printf("no CUDA device here: nothing to check (run this on the GPU machine)\n");
    fanout::bench::WriteJson(json_path, cases);
    return 0;
  }

  // The gather kernel beside a device-to-device copy of the same bytes.
  for (int64_t dim : {int64_t{128}, int64_t{602}}) {
    double gather = 0, d2d = 0;
    Check(fanout::cache::MeasureGatherBandwidth(int64_t{1} << 21, dim, 65536, 50, device, &gather,
                                                &d2d),
          "gather bandwidth");
    std::printf(
        "gpu_gather dim %4ld: %7.1f GB/s beside a device-to-device copy at %7.1f GB/s (%.2fx)\n",
        static_cast<long>(dim), gather / 1e9, d2d / 1e9, gather / d2d);
    cases.push_back({{"case", "gpu_gather"},
                     {"rows", int64_t{1} << 21},
                     {"feature_dim", dim},
                     {"batch_rows", 65536},
                     {"gather_bytes_per_s", gather},
                     {"d2d_bytes_per_s", d2d},
                     {"ratio", gather / d2d}});
  }

  // A loader-shaped run: [15, 10, 5], batch 1024, 2 servers, x on the device.
  bool own = false;
  work = fanout::bench::WorkDir(work, "fanout-gpu-check", &own);
  std::string dir = work + "/rmat" + std::to_string(scale) + "-2";
  fanout::bench::EnsureRmatDataset(dir, scale, 2, 128);
  auto s0 = fanout::bench::StartServerProcess(dir, 0, false),
       s1 = fanout::bench::StartServerProcess(dir, 1, false);
  for (const char* mode : {"auto", "tcp"}) {
    fanout::client::ClusterSpec spec;
    spec.replicas = {{s0.rpc}, {s1.rpc}};
    spec.has_data_plane = true;
    Check(fanout::rpc::ParseDataPlaneMode(mode, &spec.data_plane), "data plane mode");
    std::shared_ptr<fanout::client::Cluster> cluster;
    Check(fanout::client::Cluster::Connect(spec, {}, &cluster), "cluster");
    std::unique_ptr<fanout::client::Session> session, check;
    Check(cluster->NewSession(&session), "session");
    Check(cluster->NewSession(&check), "session");
    const int64_t n = cluster->num_nodes(), d = cluster->feature_dim();
    // The hot set: the highest-degree nodes.
    std::vector<int64_t> all(n), deg(n);
    std::iota(all.begin(), all.end(), 0);
    Check(session->Degrees(all, deg.data()), "degrees");
    std::sort(all.begin(), all.end(),
              [&](int64_t a, int64_t b) { return deg[a] > deg[b] || (deg[a] == deg[b] && a < b); });
    fanout::cache::CacheOptions co;
    co.num_nodes = n;
    co.feature_dim = d;
    co.capacity_rows = static_cast<int64_t>(cached_fraction * static_cast<double>(n));
    std::unique_ptr<fanout::cache::GpuFeatureCache> gpu;
    Check(fanout::cache::GpuFeatureCache::Create(co, device, &gpu), "GPU cache");
    std::vector<int64_t> hot(all.begin(), all.begin() + co.capacity_rows);
    std::vector<float> rows(hot.size() * d);
    Check(session->Features(hot, rows.data()), "hot rows");
    Check(gpu->Insert(hot, rows.data(), nullptr), "filling the GPU cache");
    fanout::client::DeviceFeatureFetcher fetcher(gpu.get());
    Check(fetcher.EnsureStream(), "the fetcher's stream");
    fanout::cache::DeviceBuffer out;
    fanout::sampler::MultiHopOptions mo;
    mo.fanouts = {15, 10, 5};
    fanout::SplitMix64 rng(7);
    int64_t batches = 0, bytes = 0, checked = 0;
    double sample_s = 0, fetch_s = 0;
    auto start = Clock::now();
    const auto before = session->stats();
    while (Clock::now() - start < std::chrono::duration<double>(seconds)) {
      std::vector<int64_t> seeds(1024);
      for (auto& v : seeds) v = static_cast<int64_t>(fanout::DrawBelow(rng.Next(), n));
      fanout::sampler::SampledSubgraph sub;
      auto t0 = Clock::now();
      Check(session->Sample(seeds, static_cast<uint64_t>(batches), mo, &sub), "sampling");
      auto t1 = Clock::now();
      const size_t m = sub.n_id.size();
      fanout::ArrayView<const int64_t> ids(sub.n_id.data(), m);
      // As the loader does: each batch's buffer from the stream-ordered pool,
      // filled on the fetcher's own stream (the last one goes back to the pool).
      Check(fanout::cache::DeviceBuffer::AllocateAsync(m * d * 4, device, fetcher.stream(), &out),
            "output buffer");
      Check(fetcher.Fetch(*session, ids, static_cast<float*>(out.data()), fetcher.stream()),
            "x on the device");
      auto t2 = Clock::now();
      sample_s += std::chrono::duration<double>(t1 - t0).count();
      fetch_s += std::chrono::duration<double>(t2 - t1).count();
      if (batches < 3) {  // the device rows equal the host rows, bit for bit
        std::vector<float> got(m * d), want(m * d);
        Check(out.CopyToHost(got.data(), got.size() * 4, fetcher.stream()), "copy back");
        Check(check->Features(ids, want.data()), "host rows");
        if (std::memcmp(got.data(), want.data(), got.size() * 4) != 0) {
          std::fprintf(stderr, "MISMATCH: batch %ld's device rows differ from the host rows\n",
                       static_cast<long>(batches));
          return 1;
        }
        ++checked;
      }
      bytes += static_cast<int64_t>(m * d * 4);
      ++batches;
    }
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    const auto after = session->stats();
    const auto& fs_ = fetcher.stats();
    std::printf(
        "loader_cuda %-4s: %.2f GB/s of x into device memory, %.1f batches/s (sample %.0f%%, x "
        "%.0f%%); "
        "hit rate %.2f, direct %.0f MB, staged %.0f MB, ucx %.0f MB, thrift %.0f MB; %ld batches "
        "checked\n",
        mode, bytes / secs / 1e9, batches / secs, 100 * sample_s / secs, 100 * fetch_s / secs,
        fs_.rows ? static_cast<double>(fs_.hit_rows) / fs_.rows : 0.0, fs_.direct_bytes / 1e6,
        fs_.staged_bytes / 1e6, (after.ucx_bytes - before.ucx_bytes) / 1e6,
        (after.thrift_bytes - before.thrift_bytes) / 1e6, static_cast<long>(checked));
    if (!fetcher.last_refusal().empty())
      std::printf("  direct route refused: %s\n", fetcher.last_refusal().c_str());
    cases.push_back({{"case", "loader_cuda"},
                     {"path", mode},
                     {"scale", scale},
                     {"batches", batches},
                     {"x_bytes_per_s", bytes / secs},
                     {"batches_per_s", batches / secs},
                     {"hit_rate", fs_.rows ? static_cast<double>(fs_.hit_rows) / fs_.rows : 0.0},
                     {"direct_bytes", fs_.direct_bytes},
                     {"staged_bytes", fs_.staged_bytes},
                     {"ucx_bytes", after.ucx_bytes - before.ucx_bytes},
                     {"thrift_bytes", after.thrift_bytes - before.thrift_bytes},
                     {"checked_batches", checked},
                     {"direct_refusal", fetcher.last_refusal()}});
  }
  int rc0 = fanout::bench::StopServerProcess(&s0), rc1 = fanout::bench::StopServerProcess(&s1);
  if (own) fs::remove_all(work);
  fanout::bench::WriteJson(json_path, cases);
  return rc0 == 0 && rc1 == 0 ? 0 : 1;
}
