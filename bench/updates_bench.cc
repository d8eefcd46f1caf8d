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
// - sample_during_ingest: a 2-partition R-MAT graph served twice on this host,
//   a static pair and a live pair (--live-dir), both read by the same path, one
//   case per --paths entry (Thrift, and the UCX data plane, required), so that
//   the ratio is the cost of liveness and not of a path (a live server offers
//   no same-host export, so the static pair's is off too). The 2-server loader (fanouts
//   [15, 10, 5], batch 1024, features, 2 workers, snapshot "latest": each
//   batch pinned at the newest versions) samples the static pair, then the
//   live pair while writers (4 threads, batches of --batch) stream edges to
//   it at half the ingest case's rate, alternating rounds. Reported: the
//   loader's sampled edges/s on each (`static_edges_per_s`,
//   `live_edges_per_s`), `ratio` = live / static, the write rate reached
//   (`write_updates_per_s`, against `target_updates_per_s`) and the live
//   pair's delta at the end; and the live pair again right after, the delta in
//   place and no writer (`live_quiet_edges_per_s`, `quiet_ratio`): what the
//   merged rows cost apart from the writes' CPU.
// - recovery: --kills kill -9s of a live server in the middle of ingest (a
//   writer streaming batches of 100 edges for 50-300 ms each time). After
//   each restart every edge of every acknowledged batch is asked for
//   (has_edges, at the newest version): `acknowledged` batches, `lost`
//   (batches with an edge missing; the target is 0), and `ready_s` (start to
//   ready, replay included: median and max).
// - compaction: one partition served twice, static and live (compaction only
//   when asked, the generation before released at once). --compact-fraction
//   (0.1) of the base's edges are added to the live one in batches of
//   --batch, then compacted (`seconds`, `edges`); then, the generation before
//   released, each server's resident memory (VmRSS): `rss_ratio` = live /
//   static (`live_rss_before` with the delta in place). Then alternating
//   rounds: the 1-server loader (fanouts [15, 10, 5], batch 1024, features)
//   on the static server, then on the live one while a thread compacts it
//   over and over (a batch of --batch edges, then `compact`, as fanout-ctl
//   compact asks): `ratio` = live-while-compacting / static edges/s, with
//   `compactions` and `busy` (the share of the round a compaction ran).
// - read_path: the read path over merged rows, in this process on one thread
//   (no RPC, no writer): R-MAT --scale as one partition, --compact-fraction
//   of its edges added at random in batches of --batch (most rows changed),
//   then alternating rounds of 3-hop frontiers (1,024 uniform seeds, fanouts
//   [15, 10, 5], each hop's nodes the previous hop's distinct neighbors, no
//   edge ids, as the loader asks) sampled through the static sampler on the
//   base and through VersionedPartition::SampleHop at the newest version.
//   Reported: each one's sampled edges per second of its hops
//   (`static_edges_per_s`, `live_edges_per_s`), `ratio` = live / static
//   (the median of the rounds' ratios) and `rows_changed` (the share of
//   rows with a delta). The same rounds with LABOR hops, on the base and
//   through VersionedPartition::SampleAnyHop (the path of every sampler but
//   the uniform hop: a changed row merged and sampled by a call of its
//   own): `labor_static_edges_per_s`, `labor_live_edges_per_s`,
//   `labor_ratio`.
// - restart: start to ready of a live server whose log holds
//   --compact-fraction of the base's edges (added in batches of --batch):
//   replaying the whole log over the dataset's base (`replay_ready_s`), and
//   after a compaction wrote its base to the live folder and cut the log
//   (`base_ready_s`), beside a static server's start on the same store
//   (`static_ready_s`: the store's own load, what no live start can beat);
//   alternating within rounds. Also the bytes: the log before
//   (`log_bytes`), the base file and the log after (`base_file_bytes`,
//   `log_bytes_after`), and the base file's write (`base_write_s`).
// Medians of --rounds rounds.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "bench/bench_util.h"
#include "bench/loader_case.h"
#include "client/batch_loader.h"
#include "client/cluster.h"
#include "client/update_writer.h"
#include "datasets/rmat.h"
#include "live/update_log.h"
#include "live/updates.h"
#include "live/versioned_partition.h"
#include "rpc/data_plane.h"
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

// Case sample_during_ingest (see the top of the file).
nlohmann::json SampleDuringIngest(const std::string& work, int scale, int64_t batch,
                                  double ingest_per_s, double seconds, int rounds, bool ucx) {
  namespace fc = fanout::client;
  const std::string dir = work + "/rmat" + std::to_string(scale) + "-2parts";
  fanout::bench::EnsureRmatDataset(dir, scale, 2, 16);
  const std::string live_dir = work + "/live-2parts";
  fs::remove_all(live_dir);
  std::vector<fanout::bench::ServerProcess> fixed, live;
  for (int p = 0; p < 2; ++p) {
    fixed.push_back(fanout::bench::StartServerProcess(dir, p, false, {"--local-socket", "off"}));
    live.push_back(fanout::bench::StartServerProcess(dir, p, true, {"--live-dir", live_dir}));
  }
  fanout::rpc::RpcOptions ro;
  // Both pairs by the same path: Thrift, or the UCX data plane (required:
  // no silent fallback to Thrift; no export, which a live server offers none of).
  ro.data_plane = ucx ? fanout::rpc::DataPlaneMode::kUcx : fanout::rpc::DataPlaneMode::kTcp;
  ro.local_sampling = false;
  auto connect = [&](const std::vector<fanout::bench::ServerProcess>& s) {
    fc::ClusterSpec spec;
    spec.replicas = {{s[0].rpc}, {s[1].rpc}};
    std::shared_ptr<fc::Cluster> c;
    fanout::Status st = fc::Cluster::Connect(spec, ro, &c);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-bench-updates: %s\n", st.ToString().c_str());
      std::exit(1);
    }
    return std::make_pair(c, spec);
  };
  auto [fixed_cluster, fixed_spec] = connect(fixed);
  auto [live_cluster, live_spec] = connect(live);
  const int64_t n = fixed_cluster->num_nodes();
  const std::vector<int64_t> seeds = fanout::bench::RandomIds(64 * 1024, 0, n, 7);
  fc::LoaderOptions lo = fanout::bench::LoaderCaseOptions(1024, {15, 10, 5}, true);
  lo.shuffle = true;  // each epoch's seeds in a new order
  auto run = [&](std::shared_ptr<fc::Cluster> c) {
    fc::BatchLoader loader(c, seeds, lo);
    fc::Batch b;
    loader.Next(&b);  // warm-up
    return fanout::bench::TakeBatches(loader, seconds).edges_per_s();
  };
  // Writers at half the ingest rate, paced, over the whole of each live round.
  const int kWriters = 4;
  const double target = ingest_per_s / 2;
  std::vector<std::unique_ptr<fc::UpdateWriter>> writers(kWriters);
  for (auto& w : writers) {
    fanout::Status st = fc::UpdateWriter::Connect(live_spec, ro, &w);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-bench-updates: %s\n", st.ToString().c_str());
      std::exit(1);
    }
  }
  std::vector<double> fixed_eps, live_eps, quiet_eps, write_rates;
  std::atomic<bool> write_failed{false};
  for (int r = 0; r < rounds; ++r) {
    fixed_eps.push_back(run(fixed_cluster));
    std::atomic<bool> stop{false};
    std::atomic<int64_t> written{0};
    std::vector<std::thread> threads;
    const auto w0 = Clock::now();
    for (int t = 0; t < kWriters; ++t)
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(static_cast<uint64_t>(r * kWriters + t) + 1000);
        const double per_batch_s = static_cast<double>(batch) / (target / kWriters);
        auto next = Clock::now();
        while (!stop.load()) {
          fanout::live::UpdateBatch b = RandomEdges(rng, n, batch);
          fc::GraphUpdates u;
          u.add_edges = std::move(b.add_edges);
          std::vector<int64_t> versions;
          fanout::Status st = writers[t]->Apply(u, false, &versions);
          if (!st.ok()) {
            if (!write_failed.exchange(true))
              std::fprintf(stderr, "[updates] writer: %s\n", st.ToString().c_str());
            return;
          }
          written += batch;
          next += std::chrono::duration_cast<Clock::duration>(
              std::chrono::duration<double>(per_batch_s));
          std::this_thread::sleep_until(next);
        }
      });
    live_eps.push_back(run(live_cluster));
    stop = true;
    for (auto& t : threads) t.join();
    write_rates.push_back(static_cast<double>(written.load()) /
                          std::chrono::duration<double>(Clock::now() - w0).count());
    quiet_eps.push_back(run(live_cluster));  // the delta in place, no writer
    std::fprintf(stderr,
                 "[updates] sample_during_ingest round %d: static %.0f edges/s, live %.0f edges/s "
                 "while writing %.0f updates/s (target %.0f), live %.0f edges/s after\n",
                 r + 1, fixed_eps.back(), live_eps.back(), write_rates.back(), target,
                 quiet_eps.back());
  }
  nlohmann::json delta = nlohmann::json::array();
  for (const auto& s : live) {
    const nlohmann::json st = fanout::bench::AdminStats(s.admin_port, 10);
    if (st.contains("live")) delta.push_back(st["live"]["delta"]);
  }
  writers.clear();
  fixed_cluster.reset();
  live_cluster.reset();
  for (auto& s : fixed) fanout::bench::StopServerProcess(&s);
  for (auto& s : live) fanout::bench::StopServerProcess(&s);
  fs::remove_all(live_dir);
  const double fm = fanout::bench::Median(fixed_eps), lm = fanout::bench::Median(live_eps);
  return {{"case", "sample_during_ingest"},
          {"scale", scale},
          {"parts", 2},
          {"path", ucx ? "ucx" : "thrift"},
          {"fanouts", {15, 10, 5}},
          {"batch_size", 1024},
          {"static_edges_per_s", fm},
          {"live_edges_per_s", lm},
          {"ratio", fm > 0 ? lm / fm : 0},
          {"live_quiet_edges_per_s", fanout::bench::Median(quiet_eps)},
          {"quiet_ratio", fm > 0 ? fanout::bench::Median(quiet_eps) / fm : 0},
          {"target_updates_per_s", target},
          {"write_updates_per_s", fanout::bench::Median(write_rates)},
          {"write_failed", write_failed.load()},
          {"live_delta_at_end", delta},
          {"rounds", rounds}};
}

// Case read_path (see the top of the file).
nlohmann::json ReadPath(int scale, int64_t batch, double fraction, double seconds, int rounds) {
  namespace sp = fanout::sampler;
  fanout::datasets::RmatOptions ro;
  ro.scale = scale;
  sp::CsrArrays csr;
  fanout::Status st = fanout::datasets::GenerateRmat(ro, &csr);
  if (!st.ok()) {
    std::fprintf(stderr, "fanout-bench-updates: %s\n", st.ToString().c_str());
    std::exit(1);
  }
  const int64_t n = csr.num_nodes();
  sp::PartitionView view;
  view.node_end = n;
  view.indptr = fanout::ArrayView<const int64_t>(csr.indptr);
  view.indices = fanout::ArrayView<const int64_t>(csr.indices);
  fanout::live::LiveShape shape;
  shape.num_nodes_total = n;
  shape.base_edges_total = csr.num_edges();
  int64_t max_degree = 0;
  for (int64_t v = 0; v < n; ++v)
    max_degree = std::max(max_degree, csr.indptr[v + 1] - csr.indptr[v]);
  fanout::live::VersionedPartition vp(view, shape, nullptr, max_degree);
  const int64_t to_add = static_cast<int64_t>(fraction * static_cast<double>(csr.num_edges()));
  std::mt19937_64 rng(5);
  uint64_t seq = 0;
  for (int64_t added = 0; added < to_add; added += batch) {
    const fanout::live::UpdateBatch b = RandomEdges(rng, n, std::min(batch, to_add - added));
    vp.Apply(++seq, b);
    vp.Publish(seq);
  }
  const double rows_changed = static_cast<double>(vp.Stats().rows_touched) / static_cast<double>(n);
  const sp::CsrGraph graph = view.Graph();
  sp::SamplingOptions so;
  so.with_edge_ids = false;
  const int64_t fanouts[3] = {15, 10, 5};
  sp::HopSampler hs;
  // LABOR hops: on the base, and over merged rows through SampleAnyHop (the
  // path of every sampler but the uniform hop).
  sp::SamplingOptions labor = so;
  labor.labor = true;
  std::shared_ptr<const fanout::live::Generation> gen;
  st = vp.GenerationFor(seq, &gen);
  if (!st.ok()) {
    std::fprintf(stderr, "fanout-bench-updates: read_path: %s\n", st.ToString().c_str());
    std::exit(1);
  }
  auto labor_hop = [&](fanout::ArrayView<const int64_t> ids, int64_t fanout, int hop, uint64_t seed,
                       bool live, sp::OneHopResult* out) {
    if (!live) return hs.Sample(graph, ids, fanout, hop, seed, labor, nullptr, out);
    return vp.SampleAnyHop(
        *gen, seq, ids,
        [&](const fanout::live::RowArrays& a, fanout::ArrayView<const int64_t> nodes,
            fanout::ArrayView<const int64_t>, sp::OneHopResult* o) {
          sp::SamplingOptions on = labor;
          on.node_offset = a.node_offset;
          return hs.Sample(*a.graph, nodes, fanout, hop, seed, on, nullptr, o);
        },
        out);
  };
  // One round of one path: frontiers from seed batch after seed batch for
  // `seconds`; edges per second of the sampling calls alone.
  auto run = [&](bool live, uint64_t round, bool use_labor) {
    double busy = 0;
    int64_t edges = 0;
    sp::OneHopResult out;
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(seconds));
    for (uint64_t k = 0; Clock::now() < end; ++k) {
      std::vector<int64_t> nodes = fanout::bench::RandomIds(1024, 0, n, round * 100000 + k);
      for (int h = 0; h < 3; ++h) {
        const auto t0 = Clock::now();
        const fanout::ArrayView<const int64_t> ids(nodes);
        fanout::Status s = use_labor ? labor_hop(ids, fanouts[h], h, k, live, &out)
                           : live    ? vp.SampleHop(ids, fanouts[h], h, k, so, seq, &out, &hs)
                                     : hs.Sample(graph, ids, fanouts[h], h, k, so, nullptr, &out);
        busy += std::chrono::duration<double>(Clock::now() - t0).count();
        if (!s.ok()) {
          std::fprintf(stderr, "fanout-bench-updates: read_path: %s\n", s.ToString().c_str());
          std::exit(1);
        }
        edges += static_cast<int64_t>(out.neighbors.size());
        nodes.assign(out.neighbors.begin(), out.neighbors.end());
        std::sort(nodes.begin(), nodes.end());
        nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
      }
    }
    return busy > 0 ? static_cast<double>(edges) / busy : 0;
  };
  std::vector<double> fixed, live, ratios, labor_fixed, labor_live, labor_ratios;
  for (int r = 0; r < rounds; ++r) {
    fixed.push_back(run(false, static_cast<uint64_t>(r), false));
    live.push_back(run(true, static_cast<uint64_t>(r), false));
    ratios.push_back(fixed.back() > 0 ? live.back() / fixed.back() : 0);
    labor_fixed.push_back(run(false, static_cast<uint64_t>(r), true));
    labor_live.push_back(run(true, static_cast<uint64_t>(r), true));
    labor_ratios.push_back(labor_fixed.back() > 0 ? labor_live.back() / labor_fixed.back() : 0);
    std::fprintf(stderr,
                 "[updates] read_path round %d: static %.0f edges/s, live %.0f edges/s over %.0f%% "
                 "changed rows (%.3f); LABOR static %.0f, live %.0f (%.3f)\n",
                 r + 1, fixed.back(), live.back(), 100 * rows_changed, ratios.back(),
                 labor_fixed.back(), labor_live.back(), labor_ratios.back());
  }
  return {{"case", "read_path"},
          {"scale", scale},
          {"added_edges", to_add},
          {"rows_changed", rows_changed},
          {"fanouts", {15, 10, 5}},
          {"seeds", 1024},
          {"static_edges_per_s", fanout::bench::Median(fixed)},
          {"live_edges_per_s", fanout::bench::Median(live)},
          {"ratio", fanout::bench::Median(ratios)},
          {"labor_static_edges_per_s", fanout::bench::Median(labor_fixed)},
          {"labor_live_edges_per_s", fanout::bench::Median(labor_live)},
          {"labor_ratio", fanout::bench::Median(labor_ratios)},
          {"threads", 1},
          {"rounds", rounds}};
}

// Resident bytes of process `pid` (VmRSS).
int64_t RssBytes(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return 0;
}

// Case compaction (see the top of the file).
nlohmann::json CompactionCase(const std::string& dataset, const std::string& work, int64_t batch,
                              double fraction, double seconds, int rounds) {
  namespace fc = fanout::client;
  const std::string live_dir = work + "/live-compaction";
  fs::remove_all(live_dir);
  // Both without a UCX data plane (a live server has none): the memory
  // compared is the graph's, not UCX's buffers.
  fanout::bench::ServerProcess fixed = fanout::bench::StartServerProcess(
      dataset, 0, false, {"--local-socket", "off", "--data-plane", "off"});
  fanout::bench::ServerProcess live =
      fanout::bench::StartServerProcess(dataset, 0, true,
                                        {"--live-dir", live_dir, "--live-compact-ratio", "0",
                                         "--live-compact-mib", "0", "--live-retain-s", "0"});
  auto die = [](const fanout::Status& st) {
    std::fprintf(stderr, "fanout-bench-updates: compaction: %s\n", st.ToString().c_str());
    std::exit(1);
  };
  std::unique_ptr<fanout::rpc::RpcClient> writer, compactor;
  fanout::rpc::RpcOptions long_calls;
  long_calls.call_timeout_ms = 600000;
  fanout::Status st = fanout::rpc::RpcClient::Connect(live.rpc, {}, &writer);
  if (st.ok()) st = fanout::rpc::RpcClient::Connect(live.rpc, long_calls, &compactor);
  if (!st.ok()) die(st);
  fanout::rpc::RemotePartitionInfo info;
  if (!(st = writer->Info(&info)).ok()) die(st);
  const int64_t n = info.num_nodes_total, base_edges = info.num_edges;
  const int64_t want = static_cast<int64_t>(fraction * static_cast<double>(base_edges));
  std::mt19937_64 rng(23);
  int64_t added = 0;
  while (added < want) {
    int64_t version = 0;
    fanout::live::UpdateBatch b = RandomEdges(rng, n, std::min(batch, want - added));
    if (!(st = writer->ApplyUpdates(fanout::live::EncodeUpdateBatch(b), &version)).ok()) die(st);
    added += static_cast<int64_t>(b.add_edges.size());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int64_t live_rss_before = RssBytes(live.pid);
  // The first compaction, on its own.
  int64_t version = 0, edges = 0;
  double first_s = 0;
  if (!(st = compactor->Compact(&version, &edges, &first_s)).ok()) die(st);
  // The generation before released (the next poll, retention 0), then memory.
  for (int i = 0; i < 100; ++i) {
    const nlohmann::json s = fanout::bench::AdminStats(live.admin_port, 10);
    if (s["live"]["compaction"]["retained_version"] == -1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int64_t live_rss = RssBytes(live.pid), fixed_rss = RssBytes(fixed.pid);
  std::fprintf(stderr,
               "[updates] compaction: %lld edges added to %lld, compacted in %.2f s; resident "
               "%.0f MiB live (%.0f MiB before), %.0f MiB static\n",
               static_cast<long long>(added), static_cast<long long>(base_edges), first_s,
               live_rss / 1048576.0, live_rss_before / 1048576.0, fixed_rss / 1048576.0);
  // Sampling while it compacts, beside the static server.
  fanout::rpc::RpcOptions ro;
  ro.data_plane = fanout::rpc::DataPlaneMode::kTcp;
  ro.local_sampling = false;
  auto connect = [&](const fanout::bench::ServerProcess& s) {
    fc::ClusterSpec spec;
    spec.replicas = {{s.rpc}};
    std::shared_ptr<fc::Cluster> c;
    fanout::Status cst = fc::Cluster::Connect(spec, ro, &c);
    if (!cst.ok()) die(cst);
    return c;
  };
  std::shared_ptr<fc::Cluster> fixed_cluster = connect(fixed), live_cluster = connect(live);
  const std::vector<int64_t> seeds = fanout::bench::RandomIds(64 * 1024, 0, n, 7);
  fc::LoaderOptions lo = fanout::bench::LoaderCaseOptions(1024, {15, 10, 5}, true);
  lo.shuffle = true;
  auto run = [&](std::shared_ptr<fc::Cluster> c) {
    fc::BatchLoader loader(c, seeds, lo);
    fc::Batch b;
    loader.Next(&b);  // warm-up
    return fanout::bench::TakeBatches(loader, seconds).edges_per_s();
  };
  std::vector<double> fixed_eps, live_eps, busy;
  std::vector<int64_t> counts;
  for (int r = 0; r < rounds; ++r) {
    fixed_eps.push_back(run(fixed_cluster));
    std::atomic<bool> stop{false};
    int64_t compactions = 0;
    double compacting_s = 0;
    const auto t0 = Clock::now();
    std::thread t([&] {
      while (!stop.load()) {
        int64_t v = 0, e = 0;
        double s = 0;
        fanout::live::UpdateBatch b = RandomEdges(rng, n, batch);
        if (!writer->ApplyUpdates(fanout::live::EncodeUpdateBatch(b), &v).ok()) return;
        fanout::Status cs = compactor->Compact(&v, &e, &s);
        if (cs.ok()) {
          ++compactions;
          compacting_s += s;
        } else if (cs.code() == fanout::Status::Code::kAborted) {
          // The generation before is released at the next poll.
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        } else {
          die(cs);
        }
      }
    });
    live_eps.push_back(run(live_cluster));
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    stop = true;
    t.join();
    counts.push_back(compactions);
    busy.push_back(wall > 0 ? compacting_s / wall : 0);
    std::fprintf(stderr,
                 "[updates] compaction round %d: static %.0f edges/s, live %.0f edges/s while "
                 "%lld compactions ran %.0f%% of the time\n",
                 r + 1, fixed_eps.back(), live_eps.back(), static_cast<long long>(compactions),
                 100 * busy.back());
  }
  fixed_cluster.reset();
  live_cluster.reset();
  writer.reset();
  compactor.reset();
  fanout::bench::StopServerProcess(&fixed);
  fanout::bench::StopServerProcess(&live);
  fs::remove_all(live_dir);
  const double fm = fanout::bench::Median(fixed_eps), lm = fanout::bench::Median(live_eps);
  std::sort(counts.begin(), counts.end());
  return {{"case", "compaction"},
          {"base_edges", base_edges},
          {"added_edges", added},
          {"fraction", fraction},
          {"seconds", first_s},
          {"edges", edges},
          {"live_rss_before", live_rss_before},
          {"live_rss", live_rss},
          {"static_rss", fixed_rss},
          {"rss_ratio", fixed_rss > 0 ? static_cast<double>(live_rss) / fixed_rss : 0},
          {"static_edges_per_s", fm},
          {"compacting_edges_per_s", lm},
          {"ratio", fm > 0 ? lm / fm : 0},
          {"compactions", counts[counts.size() / 2]},
          {"busy", fanout::bench::Median(busy)},
          {"path", "thrift"},
          {"fanouts", {15, 10, 5}},
          {"batch_size", 1024},
          {"rounds", rounds}};
}

// Case recovery (see the top of the file).
nlohmann::json Recovery(const std::string& dataset, const std::string& work, int kills) {
  const std::string live_dir = work + "/live-recovery";
  fs::remove_all(live_dir);
  struct Acked {
    std::vector<int64_t> src, dst;
  };
  std::map<int64_t, Acked> acked;  // by version
  std::vector<double> ready;
  int64_t lost = 0, checked_edges = 0;
  std::mt19937_64 rng(17);
  for (int round = 0; round <= kills; ++round) {
    const auto t0 = Clock::now();
    fanout::bench::ServerProcess server =
        fanout::bench::StartServerProcess(dataset, 0, false, {"--live-dir", live_dir});
    ready.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    std::unique_ptr<fanout::rpc::RpcClient> c;
    if (!fanout::rpc::RpcClient::Connect(server.rpc, {}, &c).ok()) std::exit(1);
    // Every acknowledged batch is there, whole.
    std::vector<int64_t> rows, nbrs, owner;
    for (const auto& [version, b] : acked) {
      rows.insert(rows.end(), b.src.begin(), b.src.end());
      nbrs.insert(nbrs.end(), b.dst.begin(), b.dst.end());
      owner.insert(owner.end(), b.src.size(), version);
    }
    std::set<int64_t> lost_batches;
    for (size_t at = 0; at < rows.size(); at += 50000) {
      const size_t k = std::min<size_t>(50000, rows.size() - at);
      std::string exists;
      fanout::Status st =
          c->HasEdges(fanout::ArrayView<const int64_t>(rows.data() + at, k),
                      fanout::ArrayView<const int64_t>(nbrs.data() + at, k), &exists);
      if (!st.ok()) {
        std::fprintf(stderr, "[updates] recovery: %s\n", st.ToString().c_str());
        std::exit(1);
      }
      for (size_t i = 0; i < k; ++i)
        if (exists[i] == 0) lost_batches.insert(owner[at + i]);
    }
    checked_edges = static_cast<int64_t>(rows.size());
    lost = std::max(lost, static_cast<int64_t>(lost_batches.size()));
    if (round == kills) {
      c.reset();
      fanout::bench::StopServerProcess(&server);
      break;
    }
    fanout::rpc::RemotePartitionInfo info;
    if (!c->Info(&info).ok()) std::exit(1);
    const int64_t n = info.num_nodes_total;
    std::mutex mu;
    std::thread writer([&, seed = rng()] {
      std::mt19937_64 wr(seed);
      std::unique_ptr<fanout::rpc::RpcClient> w;
      if (!fanout::rpc::RpcClient::Connect(server.rpc, {}, &w).ok()) return;
      for (;;) {
        fanout::live::UpdateBatch b = RandomEdges(wr, n, 100);
        int64_t version = 0;
        if (!w->ApplyUpdates(fanout::live::EncodeUpdateBatch(b), &version).ok()) return;
        Acked a;
        for (const auto& e : b.add_edges) {
          a.src.push_back(e.src);
          a.dst.push_back(e.dst);
        }
        std::lock_guard<std::mutex> l(mu);
        acked[version] = std::move(a);
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + static_cast<int>(rng() % 250)));
    kill(server.pid, SIGKILL);
    waitpid(server.pid, nullptr, 0);
    writer.join();
    std::fprintf(stderr,
                 "[updates] recovery: kill %d of %d; %zu batches acknowledged so far, ready in "
                 "%.2f s, %lld lost\n",
                 round + 1, kills, acked.size(), ready.back(), static_cast<long long>(lost));
  }
  fs::remove_all(live_dir);
  return {{"case", "recovery"},
          {"kills", kills},
          {"acknowledged", static_cast<int64_t>(acked.size())},
          {"edges_checked", checked_edges},
          {"lost", lost},
          {"ready_s", fanout::bench::Median(ready)},
          {"ready_max_s", *std::max_element(ready.begin(), ready.end())}};
}

// Case restart (see the top of the file).
nlohmann::json RestartCase(const std::string& dataset, const std::string& work, int64_t batch,
                           double fraction, int rounds) {
  const std::string replay_dir = work + "/live-restart-replay", base_dir = work + "/live-restart";
  fs::remove_all(replay_dir);
  fs::remove_all(base_dir);
  // Compactions and base files only when asked: the folders stay as made.
  const std::vector<std::string> quiet{"--live-compact-ratio",  "0", "--live-compact-mib", "0",
                                       "--live-checkpoint-mib", "0"};
  auto live_flags = [&](const std::string& d) {
    std::vector<std::string> f{"--live-dir", d, "--local-socket", "off"};
    f.insert(f.end(), quiet.begin(), quiet.end());
    return f;
  };
  auto die = [](const fanout::Status& st) {
    std::fprintf(stderr, "fanout-bench-updates: restart: %s\n", st.ToString().c_str());
    std::exit(1);
  };
  fanout::bench::ServerProcess live =
      fanout::bench::StartServerProcess(dataset, 0, true, live_flags(base_dir));
  std::unique_ptr<fanout::rpc::RpcClient> c;
  fanout::rpc::RpcOptions long_calls;
  long_calls.call_timeout_ms = 600000;
  fanout::Status st = fanout::rpc::RpcClient::Connect(live.rpc, long_calls, &c);
  if (!st.ok()) die(st);
  fanout::rpc::RemotePartitionInfo info;
  if (!(st = c->Info(&info)).ok()) die(st);
  const int64_t want = static_cast<int64_t>(fraction * static_cast<double>(info.num_edges));
  std::mt19937_64 rng(29);
  for (int64_t added = 0; added < want;) {
    int64_t version = 0;
    fanout::live::UpdateBatch b =
        RandomEdges(rng, info.num_nodes_total, std::min(batch, want - added));
    if (!(st = c->ApplyUpdates(fanout::live::EncodeUpdateBatch(b), &version)).ok()) die(st);
    added += static_cast<int64_t>(b.add_edges.size());
  }
  nlohmann::json s = fanout::bench::AdminStats(live.admin_port, 10);
  const int64_t log_bytes = s["live"]["log"]["bytes"].get<int64_t>();
  c.reset();
  fanout::bench::StopServerProcess(&live);
  // The whole log kept aside; then the same server compacts, writing its base.
  fs::copy(base_dir, replay_dir, fs::copy_options::recursive);
  live = fanout::bench::StartServerProcess(dataset, 0, true, live_flags(base_dir));
  if (!(st = fanout::rpc::RpcClient::Connect(live.rpc, long_calls, &c)).ok()) die(st);
  int64_t version = 0, edges = 0;
  double compact_s = 0;
  if (!(st = c->Compact(&version, &edges, &compact_s)).ok()) die(st);
  s = fanout::bench::AdminStats(live.admin_port, 10);
  const nlohmann::json bf = s["live"]["base_file"];
  const int64_t log_after = s["live"]["log"]["bytes"].get<int64_t>();
  c.reset();
  fanout::bench::StopServerProcess(&live);
  if (bf["version"].get<int64_t>() != version) {
    std::fprintf(stderr, "fanout-bench-updates: restart: no base file written (%s)\n",
                 bf.dump().c_str());
    std::exit(1);
  }
  auto ready = [&](bool is_live, const std::string& d) {
    const auto t0 = Clock::now();
    fanout::bench::ServerProcess p = fanout::bench::StartServerProcess(
        dataset, 0, false,
        is_live ? live_flags(d) : std::vector<std::string>{"--local-socket", "off"});
    const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
    fanout::bench::StopServerProcess(&p);
    return sec;
  };
  std::vector<double> fixed, replay, base;
  for (int r = 0; r < rounds; ++r) {
    fixed.push_back(ready(false, ""));
    replay.push_back(ready(true, replay_dir));
    base.push_back(ready(true, base_dir));
    std::fprintf(stderr,
                 "[updates] restart round %d: static %.2f s, replaying the log %.2f s, from the "
                 "base file %.2f s\n",
                 r + 1, fixed.back(), replay.back(), base.back());
  }
  fs::remove_all(replay_dir);
  fs::remove_all(base_dir);
  return {{"case", "restart"},
          {"added_edges", want},
          {"log_bytes", log_bytes},
          {"base_file_bytes", bf["bytes"]},
          {"base_write_s", bf["last_seconds"]},
          {"compaction_s", compact_s},
          {"log_bytes_after", log_after},
          {"static_ready_s", fanout::bench::Median(fixed)},
          {"replay_ready_s", fanout::bench::Median(replay)},
          {"base_ready_s", fanout::bench::Median(base)},
          {"rounds", rounds}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-bench-updates: durable edge inserts into a live partition beside the update log's "
      "own limit, and acknowledgement-to-visible latency (see bench/updates_bench.cc)"};
  int scale = 18, writers = 4, rounds = 3;
  int64_t batch = 1000;
  double seconds = 5;
  int visibility_samples = 500, kills = 20;
  double sample_seconds = 5;
  double compact_fraction = 0.1;
  std::string work, json,
      cases_arg = "ingest,visibility,sample_during_ingest,compaction,recovery,read_path,restart",
      paths_arg = "thrift,ucx";
  app.add_option("--scale", scale, "R-MAT scale of the dataset")->default_val(18);
  app.add_option("--writers", writers, "Concurrent writer connections")->default_val(4);
  app.add_option("--batch", batch, "Edges per update batch")->default_val(1000);
  app.add_option("--seconds", seconds, "Seconds per measured round")->default_val(5);
  app.add_option("--rounds", rounds, "Rounds (ingest and the log alone alternate)")->default_val(3);
  app.add_option("--visibility-samples", visibility_samples, "Updates timed for visibility")
      ->default_val(500);
  app.add_option("--kills", kills, "kill -9s of the recovery case")->default_val(20);
  app.add_option("--sample-seconds", sample_seconds,
                 "Seconds per loader round of sample_during_ingest")
      ->default_val(5);
  app.add_option("--compact-fraction", compact_fraction,
                 "compaction: new edges before it, as a fraction of the base's")
      ->default_val(0.1)
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--cases", cases_arg,
                 "Comma-separated cases: ingest, visibility, sample_during_ingest, compaction, "
                 "recovery, read_path, restart "
                 "(sample_during_ingest writes at half the ingest case's rate: it runs ingest)")
      ->default_val(cases_arg);
  app.add_option("--work", work, "Folder for the dataset and logs (default: temporary, removed)");
  app.add_option("--json", json, "Write the cases as a JSON array here");
  app.add_option("--paths", paths_arg,
                 "sample_during_ingest: the paths both server pairs are read by, one case "
                 "each (thrift, ucx; ucx is skipped, said, where the build has no data plane)")
      ->default_val(paths_arg);
  CLI11_PARSE(app, argc, argv);
  std::set<std::string> wanted;
  {
    std::stringstream ss(cases_arg);
    std::string c;
    while (std::getline(ss, c, ','))
      if (!c.empty()) wanted.insert(c);
    for (const std::string& c : wanted)
      if (c != "ingest" && c != "visibility" && c != "sample_during_ingest" && c != "compaction" &&
          c != "recovery" && c != "read_path" && c != "restart") {
        std::fprintf(stderr,
                     "fanout-bench-updates: unknown case '%s' (known: ingest, visibility, "
                     "sample_during_ingest, compaction, recovery, read_path, restart)\n",
                     c.c_str());
        return 2;
      }
    if (wanted.count("sample_during_ingest")) wanted.insert("ingest");
  }
  std::vector<std::string> paths;
  {
    std::stringstream ss(paths_arg);
    std::string p;
    while (std::getline(ss, p, ','))
      if (!p.empty()) {
        if (p != "thrift" && p != "ucx") {
          std::fprintf(stderr, "fanout-bench-updates: unknown path '%s' (known: thrift, ucx)\n",
                       p.c_str());
          return 2;
        }
        paths.push_back(p);
      }
  }
  if (kills < 1 || rounds < 1 || seconds <= 0 || sample_seconds <= 0 || batch < 1) {
    std::fprintf(
        stderr,
        "fanout-bench-updates: --kills, --rounds, --batch and the seconds must be positive\n");
    return 2;
  }
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
  for (int r = 0; r < rounds && wanted.count("ingest"); ++r) {
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
  for (int i = 0; wanted.count("visibility") && i < visibility_samples; ++i) {
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
  nlohmann::json cases = nlohmann::json::array();
  if (wanted.count("ingest"))
    cases.push_back({{"case", "ingest"},
                     {"scale", scale},
                     {"writers", writers},
                     {"batch", batch},
                     {"updates_per_s", ingest_m},
                     {"per_core", fanout::bench::Median(per_core)},
                     {"log_limit_per_s", limit_m},
                     {"ratio", limit_m > 0 ? ingest_m / limit_m : 0},
                     {"rounds", rounds},
                     {"cpus", fanout::UsableCpuCount()}});
  if (wanted.count("visibility"))
    cases.push_back({{"case", "visibility"},
                     {"samples", visibility_samples},
                     {"p50_ms", pct(0.5)},
                     {"p99_ms", pct(0.99)}});
  clients.clear();
  fanout::bench::StopServerProcess(&server);
  fs::remove_all(live_dir);
  if (wanted.count("sample_during_ingest")) {
    for (const std::string& p : paths) {
      if (p == "ucx" && !fanout::rpc::DataPlaneBuilt()) {
        std::fprintf(stderr,
                     "[updates] sample_during_ingest over ucx: skipped, this build has no "
                     "UCX data plane\n");
        continue;
      }
      std::fprintf(stderr,
                   "[updates] sample_during_ingest: 2 static and 2 live servers, read over %s\n",
                   p.c_str());
      cases.push_back(
          SampleDuringIngest(work, scale, batch, ingest_m, sample_seconds, rounds, p == "ucx"));
    }
  }
  if (wanted.count("compaction")) {
    std::fprintf(stderr, "[updates] compaction: a static and a live server\n");
    cases.push_back(CompactionCase(dir, work, batch, compact_fraction, sample_seconds, rounds));
  }
  if (wanted.count("recovery")) {
    std::fprintf(stderr, "[updates] recovery: %d kill -9s mid-ingest\n", kills);
    cases.push_back(Recovery(dir, work, kills));
  }
  if (wanted.count("restart")) {
    std::fprintf(stderr, "[updates] restart: replaying the log against reading the base file\n");
    cases.push_back(RestartCase(dir, work, batch, compact_fraction, rounds));
  }
  if (wanted.count("read_path")) {
    std::fprintf(stderr, "[updates] read_path: merged rows in process\n");
    cases.push_back(ReadPath(scale, batch, compact_fraction, sample_seconds / 2, rounds));
  }
  std::printf("%s\n", cases.dump(2).c_str());
  fanout::bench::WriteJson(json, cases);
  if (own) fs::remove_all(work);
  return 0;
}
