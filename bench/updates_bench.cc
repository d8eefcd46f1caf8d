// fanout-bench-updates: a live partition's write path (docs/DESIGN.md "Live
// updates"), beside the machine's own limit measured in the same run.
//
// - ingest: writers stream durable edge inserts in batches of --batch (1,000)
//   to one live fanout-server over Thrift (apply_updates: decode, check, log
//   with group commit and fdatasync, apply, publish). Reported: updates_per_s,
//   per_core (updates per CPU-second of the server process), and, measured in
//   alternating rounds on the same file system, the update log alone: the
//   same writers appending records of the same size to an UpdateLog in this
//   process (`log_limit_per_s`: the disk's and fsync's bound on durable
//   batches of this size), with `ratio` = updates_per_s / log_limit_per_s.
// - visibility: one edge per batch; from its acknowledgement to the first
//   sample (fanout -1, the newest version) of its row that holds it
//   (`p50_ms`, `p99_ms`).
// Medians of --rounds rounds. Not measured yet: sampling during ingest,
// compaction and recovery (issue 50).
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "bench/bench_util.h"
#include "live/update_log.h"
#include "live/updates.h"
#include "rpc/rpc_client.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// CPU seconds (user + system) of process `pid` so far.
double CpuSeconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

fanout::live::UpdateBatch RandomEdges(std::mt19937_64& rng, int64_t n, int64_t count) {
  fanout::live::UpdateBatch b;
  b.add_edges.resize(static_cast<size_t>(count));
  for (auto& e : b.add_edges) {
    e.src = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
    e.dst = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-bench-updates: durable edge inserts into a live partition beside the update log's "
      "own limit, and acknowledgement-to-visible latency (see bench/updates_bench.cc)"};
  int scale = 18, writers = 4, rounds = 3;
  int64_t batch = 1000;
  double seconds = 5;
  int visibility_samples = 500;
  std::string work, json;
  app.add_option("--scale", scale, "R-MAT scale of the dataset")->default_val(18);
  app.add_option("--writers", writers, "Concurrent writer connections")->default_val(4);
  app.add_option("--batch", batch, "Edges per update batch")->default_val(1000);
  app.add_option("--seconds", seconds, "Seconds per measured round")->default_val(5);
  app.add_option("--rounds", rounds, "Rounds (ingest and the log alone alternate)")->default_val(3);
  app.add_option("--visibility-samples", visibility_samples, "Updates timed for visibility")
      ->default_val(500);
  app.add_option("--work", work, "Folder for the dataset and logs (default: temporary, removed)");
  app.add_option("--json", json, "Write the cases as a JSON array here");
  CLI11_PARSE(app, argc, argv);
  bool own = false;
  work = fanout::bench::WorkDir(work, "fanout-bench-updates", &own);
  const std::string dir = work + "/rmat" + std::to_string(scale);
  fanout::bench::EnsureRmatDataset(dir, scale, 1, 16);
  const std::string live_dir = work + "/live";
  fs::remove_all(live_dir);
  std::fprintf(stderr, "[updates] starting a live server on R-MAT scale %d\n", scale);
  fanout::bench::ServerProcess server =
      fanout::bench::StartServerProcess(dir, 0, false, {"--live-dir", live_dir});
  std::vector<std::unique_ptr<fanout::rpc::RpcClient>> clients;
  for (int w = 0; w < writers + 1; ++w) {
    std::unique_ptr<fanout::rpc::RpcClient> c;
    fanout::Status st = fanout::rpc::RpcClient::Connect(server.rpc, {}, &c);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-bench-updates: %s\n", st.ToString().c_str());
      return 1;
    }
    clients.push_back(std::move(c));
  }
  fanout::rpc::RemotePartitionInfo info;
  if (!clients[0]->Info(&info).ok()) return 1;
  const int64_t n = info.num_nodes_total;
  // Each writer's batches, made before the clock starts.
  std::vector<std::vector<std::string>> encoded(static_cast<size_t>(writers));
  for (int w = 0; w < writers; ++w) {
    std::mt19937_64 rng(static_cast<uint64_t>(w) + 1);
    for (int i = 0; i < 64; ++i)
      encoded[w].push_back(fanout::live::EncodeUpdateBatch(RandomEdges(rng, n, batch)));
  }
  std::vector<double> ingest, per_core, limit;
  std::atomic<bool> failed{false};
  for (int r = 0; r < rounds; ++r) {
    // The server.
    const double cpu0 = CpuSeconds(server.pid);
    const double batches_per_s = fanout::bench::Measure(writers, seconds, [&](int t, int64_t i) {
      int64_t version = 0;
      fanout::Status st = clients[t]->ApplyUpdates(
          encoded[t][static_cast<size_t>(i) % encoded[t].size()], &version);
      if (!st.ok()) {
        if (!failed.exchange(true)) std::fprintf(stderr, "[updates] %s\n", st.ToString().c_str());
        return int64_t{0};
      }
      return int64_t{1};
    });
    const double cpu = CpuSeconds(server.pid) - cpu0;
    const double ups = batches_per_s * static_cast<double>(batch);
    ingest.push_back(ups);
    per_core.push_back(cpu > 0 ? ups * seconds / cpu : 0);
    // The update log alone, on the same file system, the same record sizes.
    const std::string probe_path = work + "/probe.log";
    fs::remove(probe_path);
    std::unique_ptr<fanout::live::UpdateLog> log;
    fanout::live::LogReplayReport rep;
    if (!fanout::live::UpdateLog::Open(probe_path, {}, {}, &rep, &log).ok()) return 1;
    const double records_per_s = fanout::bench::Measure(writers, seconds, [&](int t, int64_t i) {
      uint64_t seq = 0;
      return log->Append(encoded[t][static_cast<size_t>(i) % encoded[t].size()], &seq).ok()
                 ? int64_t{1}
                 : int64_t{0};
    });
    log.reset();
    fs::remove(probe_path);
    limit.push_back(records_per_s * static_cast<double>(batch));
    std::fprintf(stderr,
                 "[updates] round %d: ingest %.0f updates/s (%.0f per server CPU-second), the log "
                 "alone %.0f/s\n",
                 r + 1, ups, per_core.back(), limit.back());
  }
  if (failed) return 1;
  // Visibility: one edge per batch, then samples of its row until it shows.
  std::vector<double> lat_ms;
  std::mt19937_64 rng(99);
  for (int i = 0; i < visibility_samples; ++i) {
    fanout::live::UpdateBatch b;
    const int64_t u = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
    const int64_t v = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
    b.add_edges = {{u, v}};
    int64_t version = 0;
    if (!clients[writers]->ApplyUpdates(fanout::live::EncodeUpdateBatch(b), &version).ok())
      return 1;
    const auto acked = Clock::now();
    fanout::rpc::SampleCall call;
    call.fanout = -1;
    const std::vector<int64_t> ids{u};
    for (;;) {
      fanout::rpc::SampleReply r;
      if (!clients[0]->Sample(fanout::ArrayView<const int64_t>(ids), call, &r).ok()) return 1;
      auto nb = r.Neighbors();
      if (r.version >= version && std::find(nb.begin(), nb.end(), v) != nb.end()) break;
    }
    lat_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - acked).count());
  }
  std::sort(lat_ms.begin(), lat_ms.end());
  auto pct = [&](double q) {
    return lat_ms.empty() ? 0.0 : lat_ms[static_cast<size_t>(q * (lat_ms.size() - 1))];
  };
  const double ingest_m = fanout::bench::Median(ingest), limit_m = fanout::bench::Median(limit);
  const nlohmann::json cases =
      nlohmann::json::array({{{"case", "ingest"},
                              {"scale", scale},
                              {"writers", writers},
                              {"batch", batch},
                              {"updates_per_s", ingest_m},
                              {"per_core", fanout::bench::Median(per_core)},
                              {"log_limit_per_s", limit_m},
                              {"ratio", limit_m > 0 ? ingest_m / limit_m : 0},
                              {"rounds", rounds},
                              {"cpus", fanout::UsableCpuCount()}},
                             {{"case", "visibility"},
                              {"samples", visibility_samples},
                              {"p50_ms", pct(0.5)},
                              {"p99_ms", pct(0.99)}}});
  std::printf("%s\n", cases.dump(2).c_str());
  fanout::bench::WriteJson(json, cases);
  clients.clear();
  fanout::bench::StopServerProcess(&server);
  if (own) fs::remove_all(work);
  return 0;
}
