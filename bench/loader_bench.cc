// fanout-bench-loader: NodeLoader through 2 fanout-server processes serving
// the R-MAT benchmark graph (scale 20, out-neighbors, 128-dim features, 2
// partitions), beside the in-process multi-hop sampler on the same graph with
// the same two cores (2 threads), measured in the same run. Case `subgraph`:
// the same for subgraph batches (every edge among the sampled nodes; fanouts
// [10, 5], batch 256), edges counted are the induced edges.
//
// --suite loaders (`./run bench loaders`, build/bench/loaders.json): issue
// 12's loader cases, each through the 2 servers beside the same loader in
// process in the same run: `subgraph` (as above) and `link` (LinkLoader over
// 200,000 stored edges, binary strict negatives, amount 1, fanouts [10, 5],
// batches of 1024 seed edges, against a LocalSource holding the whole
// dataset) and `temporal` (NodeLoader with seed times over the same R-MAT
// graph partitioned with synthetic edge timestamps, uniform strategy, batch
// 1024, against a LocalSource) and `hetero` (NodeLoader with per-edge-type
// fanouts [5, 3] over the same R-MAT graph with 2 node types, v % 2, and an
// edge type per pair of them, batch 1024, against a LocalSource), `labor`
// (NodeLoader with 128-dim features, LABOR-0, [15, 10, 5], batch 1024,
// against the same loader on a LocalSource; with the feature bytes per batch
// beside neighbor sampling's at the same fanouts through the same servers)
// and `walk` (uniform random walks of 8 steps from batches of 4096 seeds,
// one WalkSampler per core, through the servers and on a LocalSource), `ppr`
// (top-32 personalized PageRank lists of 1024 uniform seeds per batch by
// forward push, through the servers and on a LocalSource; and the share of
// exact top-32 lists found, on R-MAT scale 12) and `metapath_walk` (walks
// along t0 -> t1 -> t0 ... on the 2-node-type graph, as `walk`).
// --only names a subset of the suite's cases (e.g. --only labor,walk).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <thread>

#include "bench/bench_util.h"
#include "bench/loader_case.h"
#include "bench/two_servers.h"
#include "client/cluster.h"
#include "client/loader.h"
#include "client/ppr.h"
#include "client/walks.h"
#include "common/cpu.h"
#include "common/random.h"
#include "datasets/rmat.h"
#include "sampler/multihop.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Measured {
  double batches_per_s = 0, edges_per_s = 0, feature_bytes_per_s = 0, network_wait_s = 0;
};

using fanout::bench::LoaderCaseOptions;

// Takes batches from `loader` for `seconds` (epoch after epoch) after one
// warm-up batch (connections, buffers); `each` sees every timed batch.
Measured Measure(fanout::client::NodeLoader& loader, double seconds,
                 const std::function<void(const fanout::client::MiniBatch&)>& each = nullptr) {
  fanout::client::MiniBatch b;
  loader.Next(&b);
  auto start = Clock::now();
  int64_t batches = 0, edges = 0;
  auto before = loader.stats();
  while (Clock::now() - start < std::chrono::duration<double>(seconds)) {
    if (!loader.Next(&b)) continue;  // the end of an epoch: the next call starts the following one
    ++batches;
    edges += b.edge_index.size(1);
    if (each) each(b);
  }
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  auto after = loader.stats();
  Measured m;
  m.batches_per_s = batches / secs;
  m.edges_per_s = edges / secs;
  m.feature_bytes_per_s = (after.feature_bytes - before.feature_bytes) / secs;
  m.network_wait_s = after.network_wait_s - before.network_wait_s;
  return m;
}

Measured RunLoader(std::shared_ptr<fanout::client::Source> source,
                   const std::vector<int64_t>& seeds, bool features, double seconds,
                   std::vector<int64_t> fanouts = {15, 10, 5}, int64_t batch_size = 1024,
                   bool subgraph = false) {
  fanout::client::LoaderOptions o = LoaderCaseOptions(batch_size, std::move(fanouts), features);
  o.subgraph = subgraph;
  fanout::client::NodeLoader loader(source, seeds, o);
  return Measure(loader, seconds);
}

// Case failover_stall, once per path: partition 0 has two replicas,
// partition 1 two more (4 server processes on this host); a NodeLoader epoch
// (features, fanouts [10, 5], batch 1024, 2 workers: one session on each
// replica of partition 0) with default RpcOptions except the path: `local`
// (data_plane "auto": every partition read from its server's export and
// sampled here), `ucx` (the UCX data plane) or `thrift` (data_plane "tcp").
// Undisturbed epochs alternate with epochs during which replica 0 of
// partition 0 (the one whose export `local` reads) is SIGSTOPped after the
// first 10% of batches (and SIGCONTed after); stall_s = median(stopped) -
// median(undisturbed); identical: every batch (n_id, edges, features) of
// every stopped epoch equals the undisturbed epoch's. The machine's own limit
// beside it: the health-check interval, plus one batch's time.
struct Stall {
  std::string path;
  double calm_s = 0, stopped_s = 0, stall_s = 0, batch_s = 0;
  int health_check_ms = 0;
  int64_t batches = 0, health_abandons = 0, failovers = 0;
  bool identical = true;
};

uint64_t BatchDigest(const fanout::client::MiniBatch& b) {
  auto mix = [](uint64_t h, const at::Tensor& t) {
    if (!t.defined()) return h;
    at::Tensor c = t.contiguous();
    const auto* p = static_cast<const unsigned char*>(c.data_ptr());
    const size_t n = static_cast<size_t>(c.numel()) * c.element_size();
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
  };
  uint64_t h = 0xcbf29ce484222325ULL;
  h = mix(h, b.n_id);
  h = mix(h, b.edge_index);
  return mix(h, b.x);
}

bool FailoverStall(const std::string& dir, int rounds, const std::string& path,
                   fanout::rpc::DataPlaneMode mode, Stall* out) {
  using fanout::bench::ServerProcess;
  std::vector<ServerProcess> s;
  for (int i = 0; i < 4; ++i) s.push_back(fanout::bench::StartServerProcess(dir, i / 2, false));
  fanout::client::ClusterSpec spec;
  spec.replicas = {{s[0].rpc, s[1].rpc}, {s[2].rpc, s[3].rpc}};
  fanout::rpc::RpcOptions ro;
  ro.data_plane = mode;
  out->path = path;
  out->health_check_ms = ro.health_check_ms;
  fanout::SplitMix64 rng(99);
  std::shared_ptr<fanout::client::Cluster> probe;
  if (!fanout::client::Cluster::Connect(spec, ro, &probe).ok()) return false;
  const int64_t n = probe->num_nodes();
  probe.reset();
  std::vector<int64_t> seeds(120 * 1024);
  for (auto& v : seeds)
    v = static_cast<int64_t>(fanout::DrawBelow(rng.Next(), static_cast<uint64_t>(n)));
  const size_t num_batches = seeds.size() / 1024;
  auto epoch = [&](bool stop, fanout::client::LoaderStats* stats, std::vector<uint64_t>* digests) {
    std::shared_ptr<fanout::client::Cluster> c;
    fanout::Status st = fanout::client::Cluster::Connect(spec, ro, &c);
    if (!st.ok()) {
      std::fprintf(stderr, "failover_stall (%s): %s\n", path.c_str(), st.ToString().c_str());
      return -1.0;
    }
    if (mode == fanout::rpc::DataPlaneMode::kAuto &&
        (c->local(0) == nullptr || c->local(1) == nullptr)) {
      std::fprintf(stderr, "failover_stall (local): the servers' exports are not mapped here\n");
      return -1.0;
    }
    fanout::client::LoaderOptions o = LoaderCaseOptions(1024, {10, 5}, true);
    o.num_workers = 2;
    fanout::client::NodeLoader loader(c, seeds, o);
    fanout::client::MiniBatch b;
    digests->assign(num_batches, 0);
    const auto start = Clock::now();
    int64_t got = 0;
    bool stopped = false;
    try {
      while (loader.Next(&b)) {
        if (b.index >= 0 && static_cast<size_t>(b.index) < num_batches)
          (*digests)[static_cast<size_t>(b.index)] = BatchDigest(b);
        if (stop && !stopped && ++got == static_cast<int64_t>(num_batches / 10)) {
          kill(s[0].pid, SIGSTOP);
          stopped = true;
        } else if (!stop) {
          ++got;
        }
      }
    } catch (const fanout::client::LoaderError& e) {
      if (stopped) kill(s[0].pid, SIGCONT);
      std::fprintf(stderr, "failover_stall (%s): %s\n", path.c_str(), e.what());
      return -1.0;
    }
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    *stats = loader.stats();
    c.reset();  // closed while the replica is still stopped: the close must not wait on it
    if (stopped) kill(s[0].pid, SIGCONT);
    return secs;
  };
  std::vector<double> calm, stopped;
  fanout::client::LoaderStats st;
  std::vector<uint64_t> want, got;
  for (int r = 0; r < rounds; ++r) {
    const double a = epoch(false, &st, &want);
    const double b = epoch(true, &st, &got);
    if (a < 0 || b < 0) return false;
    out->identical &= want == got;
    calm.push_back(a);
    stopped.push_back(b);
    out->health_abandons += st.health_abandons;
    out->failovers += st.failovers;
  }
  for (auto& x : s) fanout::bench::StopServerProcess(&x);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  out->batches = static_cast<int64_t>(num_batches);
  out->calm_s = median(calm);
  out->stopped_s = median(stopped);
  out->stall_s = out->stopped_s - out->calm_s;
  out->batch_s = out->calm_s / static_cast<double>(out->batches);
  return true;
}

// The in-process multi-hop sampler on `g`: 2 pinned threads, each sampling
// its own batches of uniform seeds; edges (sampled or induced) per second.
double InProcess(const fanout::sampler::CsrGraph& g, int64_t n, const std::vector<int64_t>& fanouts,
                 int64_t batch_size, bool induced, double seconds) {
  std::atomic<int64_t> edges{0};
  std::vector<std::thread> ts;
  auto start = Clock::now();
  for (int t = 0; t < 2; ++t) {
    ts.emplace_back([&, t] {
      (void)fanout::PinThisThread(t);
      fanout::sampler::MultiHopOptions mo;
      mo.fanouts = fanouts;
      mo.sampling.with_edge_ids = false;
      mo.induced = induced;
      fanout::sampler::MultiHopSampler sampler(g, mo);
      fanout::sampler::SampledSubgraph sub;
      std::vector<int64_t> batch(static_cast<size_t>(batch_size));
      fanout::SplitMix64 r(77 + t);
      int64_t e = 0, i = 0;
      while (Clock::now() - start < std::chrono::duration<double>(seconds)) {
        for (auto& v : batch)
          v = static_cast<int64_t>(fanout::DrawBelow(r.Next(), static_cast<uint64_t>(n)));
        if (!sampler.Sample(batch, static_cast<uint64_t>(i++), &sub).ok()) std::abort();
        e += static_cast<int64_t>(sub.row.size());
      }
      edges += e;
    });
  }
  for (auto& th : ts) th.join();
  return edges / std::chrono::duration<double>(Clock::now() - start).count();
}

// LABOR (or neighbor) NodeLoader batches with features for `seconds`,
// fanouts [15, 10, 5], batch 1024; *bytes_per_batch: feature bytes per batch
// (rows x 128 x 4, what the loader moves for it).
Measured RunLabor(std::shared_ptr<fanout::client::Source> source, const std::vector<int64_t>& seeds,
                  bool labor, double seconds, double* bytes_per_batch) {
  fanout::client::LoaderOptions o = LoaderCaseOptions(1024, {15, 10, 5}, true);
  o.labor = labor;
  fanout::client::NodeLoader loader(source, seeds, o);
  int64_t bytes = 0, batches = 0;
  Measured m = Measure(loader, seconds, [&](const fanout::client::MiniBatch& b) {
    bytes += b.x.numel() * 4;
    ++batches;
  });
  *bytes_per_batch = batches ? static_cast<double>(bytes) / batches : 0;
  return m;
}

// Walk steps per second: uniform walks of 8 steps from batches of 4096
// seeds, one WalkSampler per core (2), for `seconds`.
double RunWalks(std::shared_ptr<fanout::client::Source> source, int64_t n, double seconds) {
  std::atomic<int64_t> steps{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> ts;
  auto start = Clock::now();
  for (int t = 0; t < 2; ++t) {
    ts.emplace_back([&, t] {
      fanout::client::WalkOptions wo;
      wo.walk_length = 8;
      std::unique_ptr<fanout::client::WalkSampler> w;
      if (!fanout::client::WalkSampler::Create(source, wo, &w).ok()) {
        failed = true;
        return;
      }
      std::vector<int64_t> batch(4096);
      fanout::SplitMix64 r(91 + t);
      fanout::client::WalkResult res;
      int64_t mine = 0;
      for (uint64_t i = 0; Clock::now() - start < std::chrono::duration<double>(seconds); ++i) {
        for (auto& v : batch)
          v = static_cast<int64_t>(fanout::DrawBelow(r.Next(), static_cast<uint64_t>(n)));
        fanout::Status st = w->Sample(batch, i * 2 + static_cast<uint64_t>(t), &res);
        if (!st.ok()) {
          std::fprintf(stderr, "walks: %s\n", st.ToString().c_str());
          failed = true;
          return;
        }
        mine += res.steps;
      }
      steps += mine;
    });
  }
  for (auto& th : ts) th.join();
  if (failed) return 0;
  return steps / std::chrono::duration<double>(Clock::now() - start).count();
}

// PPR batches: the top-32 PPR lists (alpha 0.15, eps --ppr-eps) of 1,024 uniform
// seeds per batch on one session, for `seconds`: batches/s, and pushes/s in
// edges_per_s.
Measured RunPpr(std::shared_ptr<fanout::client::Source> source, int64_t n, double seconds,
                double eps) {
  std::unique_ptr<fanout::client::Session> s;
  if (!source->NewSession(&s).ok()) return {};
  fanout::client::PprOptions o;
  o.eps = eps;
  std::vector<int64_t> batch(1024);
  fanout::SplitMix64 r(77);
  fanout::client::PprResult res;
  int64_t batches = 0, pushes = 0;
  const auto start = Clock::now();
  do {
    for (auto& v : batch)
      v = static_cast<int64_t>(fanout::DrawBelow(r.Next(), static_cast<uint64_t>(n)));
    fanout::Status st = fanout::client::PersonalizedPageRank(*s, batch, o, &res);
    if (!st.ok()) {
      std::fprintf(stderr, "ppr: %s\n", st.ToString().c_str());
      return {};
    }
    pushes += res.pushes;
    ++batches;
  } while (Clock::now() - start < std::chrono::duration<double>(seconds));
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  Measured m;
  m.batches_per_s = batches / secs;
  m.edges_per_s = pushes / secs;
  m.network_wait_s = s->stats().network_wait_s;
  return m;
}

// The share of exact top-32 PPR lists (power iteration to 1e-12, the same
// definition) that forward push at the default eps finds, over 64 seeds of
// `source` (a small graph: the exact vectors are dense).
double PprTopkRecall(std::shared_ptr<fanout::client::Source> source, double eps) {
  std::unique_ptr<fanout::client::Session> s;
  if (!source->NewSession(&s).ok()) return 0;
  const int64_t n = source->num_nodes();
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  fanout::sampler::MultiHopOptions every;
  every.fanouts = {-1};
  fanout::sampler::SampledSubgraph sub;
  if (!s->Sample(all, 0, every, &sub).ok()) return 0;
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(n));
  for (size_t e = 0; e < sub.col.size(); ++e) rows[sub.col[e]].push_back(sub.n_id[sub.row[e]]);
  fanout::client::PprOptions o;
  o.eps = eps;
  std::vector<int64_t> seeds;
  fanout::SplitMix64 r(5);
  while (seeds.size() < 64) {
    const int64_t v = static_cast<int64_t>(fanout::DrawBelow(r.Next(), static_cast<uint64_t>(n)));
    if (!rows[v].empty()) seeds.push_back(v);
  }
  fanout::client::PprResult approx;
  if (!fanout::client::PersonalizedPageRank(*s, seeds, o, &approx).ok()) return 0;
  int64_t found = 0, wanted = 0;
  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::vector<double> x =
        fanout::client::ExactPersonalizedPageRank(rows, seeds[i], o.alpha, 200);
    std::vector<std::pair<double, int64_t>> ranked;
    for (int64_t v = 0; v < n; ++v)
      if (v != seeds[i] && x[v] > 0) ranked.emplace_back(-x[v], v);
    const size_t k = std::min<size_t>(ranked.size(), static_cast<size_t>(o.top_k));
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(k),
                      ranked.end());
    std::set<int64_t> got(approx.nodes.begin() + approx.offsets[i],
                          approx.nodes.begin() + approx.offsets[i + 1]);
    for (size_t j = 0; j < k; ++j) found += got.count(ranked[j].second);
    wanted += static_cast<int64_t>(k);
  }
  return wanted ? static_cast<double>(found) / wanted : 0;
}

// Metapath walks (t0 -> t1 -> t0 ..., 8 steps) from batches of 4,096 seeds of
// the metapath's first node type, one WalkSampler per core (2): steps/s.
Measured RunMetapathWalks(std::shared_ptr<fanout::client::Source> source, double seconds) {
  const fanout::sampler::HeteroSchema* h = source->hetero();
  int a = -1, b = -1;
  if (h == nullptr || !h->FindEdgeType("t0,links,t1", &a).ok() ||
      !h->FindEdgeType("t1,links,t0", &b).ok())
    return {};
  const fanout::sampler::NodeRanges starts = h->NodesOfType(h->RowType(a));
  std::atomic<int64_t> steps{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> ts;
  const auto start = Clock::now();
  for (int t = 0; t < 2; ++t) {
    ts.emplace_back([&, t] {
      fanout::client::WalkOptions wo;
      wo.walk_length = 8;
      wo.metapath = {a, b};
      std::unique_ptr<fanout::client::WalkSampler> w;
      fanout::Status st = fanout::client::WalkSampler::Create(source, wo, &w);
      if (!st.ok()) {
        std::fprintf(stderr, "metapath walks: %s\n", st.ToString().c_str());
        failed = true;
        return;
      }
      std::vector<int64_t> batch(4096);
      fanout::SplitMix64 r(191 + t);
      fanout::client::WalkResult res;
      int64_t mine = 0;
      for (uint64_t i = 0; Clock::now() - start < std::chrono::duration<double>(seconds); ++i) {
        for (auto& v : batch)
          v = starts.Id(static_cast<int64_t>(
              fanout::DrawBelow(r.Next(), static_cast<uint64_t>(starts.count()))));
        st = w->Sample(batch, i * 2 + static_cast<uint64_t>(t), &res);
        if (!st.ok()) {
          std::fprintf(stderr, "metapath walks: %s\n", st.ToString().c_str());
          failed = true;
          return;
        }
        mine += res.steps;
      }
      steps += mine;
    });
  }
  for (auto& th : ts) th.join();
  Measured m;
  if (!failed) m.edges_per_s = steps / std::chrono::duration<double>(Clock::now() - start).count();
  return m;
}

// Temporal NodeLoader batches for `seconds` (uniform strategy, fanouts
// [10, 5], batch 1024, seeds at times uniform over the timestamps' range).
Measured RunTemporal(std::shared_ptr<fanout::client::Source> source,
                     const std::vector<int64_t>& seeds, const std::vector<int64_t>& times,
                     double seconds) {
  fanout::client::LoaderOptions o = LoaderCaseOptions(1024, {10, 5}, false);
  o.input_time = times;
  fanout::client::NodeLoader loader(source, seeds, o);
  return Measure(loader, seconds);
}

// Heterogeneous NodeLoader batches for `seconds`: fanouts [5, 3] for each
// of the graph's edge types (each row holds two of them), batch 1024.
Measured RunHetero(std::shared_ptr<fanout::client::Source> source,
                   const std::vector<int64_t>& seeds, double seconds) {
  fanout::client::LoaderOptions o = LoaderCaseOptions(1024, {10, 6}, false);
  o.edge_type_fanouts.assign(static_cast<size_t>(source->hetero()->num_edge_types()), {5, 3});
  fanout::client::NodeLoader loader(source, seeds, o);
  return Measure(loader, seconds);
}

// LinkLoader batches for `seconds` (binary strict negatives, amount 1,
// fanouts [10, 5]); *negatives counts the negatives drawn.
Measured RunLink(std::shared_ptr<fanout::client::Source> source,
                 const fanout::client::LinkSeeds& seeds, int64_t batch_size, double seconds,
                 int64_t* negatives) {
  fanout::client::LoaderOptions o = LoaderCaseOptions(batch_size, {10, 5}, false);
  o.negative.mode = fanout::sampler::NegativeMode::kBinary;
  o.negative.amount = 1;
  fanout::client::LinkLoader loader(source, seeds, o);
  *negatives = 0;
  return Measure(loader, seconds, [negatives](const fanout::client::MiniBatch& b) {
    *negatives += b.edge_label_index.size(1) - b.input_id.size(0);
  });
}

// The R-MAT graph partitioned in 2 parts by range with `flags` into `dir`
// (unless it is there), measured by `run` through 2 server processes, then on
// a LocalSource holding it. False, having said why, on failure.
bool ThroughServersAndInProcess(
    const std::string& dir, int scale, const std::string& flags, const std::string& what,
    const std::function<Measured(std::shared_ptr<fanout::client::Source>)>& run, Measured* dist,
    Measured* local, Measured* on_servers = nullptr) {
  if (!fs::exists(dir + "/meta.json")) {
    std::printf("partitioning R-MAT scale %d with %s (2 parts by range) ...\n", scale,
                what.c_str());
    const std::string cmd = fanout::bench::BinDir() +
                            "/fanout-partition --quiet --format rmat --rmat-scale " +
                            std::to_string(scale) + " " + flags +
                            " --parts 2 --method range --output " + dir + " > /dev/null";
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "fanout-partition failed: %s\n", cmd.c_str());
      return false;
    }
  }
  fanout::bench::TwoServers servers;
  std::shared_ptr<fanout::client::Cluster> cluster;
  fanout::Status st = fanout::bench::StartTwoServers(dir, &servers, &cluster);
  std::printf("%s%s", servers.s0.ready_line.c_str(), servers.s1.ready_line.c_str());
  if (st.ok()) {
    *dist = run(cluster);
    cluster.reset();
  }
  // The same through a cluster that asks the servers for every hop (no
  // sampling of co-located exports here).
  if (st.ok() && on_servers != nullptr) {
    st = fanout::bench::ConnectTwoServers(servers, /*local_sampling=*/false, &cluster);
    if (st.ok()) *on_servers = run(cluster);
    cluster.reset();
  }
  servers.Stop();
  std::shared_ptr<fanout::client::LocalSource> source;
  if (st.ok()) st = fanout::client::LocalSource::Open(dir, &source);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return false;
  }
  *local = run(source);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fanout-bench-loader: NodeLoader through 2 servers beside the in-process sampler."};
  int scale = 20;
  double seconds = 5;
  std::string work, json_path;
  app.add_option("--scale", scale, "R-MAT scale")->default_val(20)->check(CLI::Range(8, 24));
  app.add_option("--seconds", seconds, "Seconds per case")->default_val(5.0);
  app.add_option("--work-dir", work, "Keep the dataset here (default: temporary, removed)");
  app.add_option("--json", json_path, "Write the cases as a JSON array to this file");
  std::string suite = "node";
  app.add_option("--suite", suite,
                 "node: the node loader's cases and subgraph; loaders: issue 12's loader cases "
                 "(subgraph, link, temporal, hetero)")
      ->default_val("node")
      ->check(CLI::IsMember({"node", "loaders"}));
  double ppr_eps = fanout::client::PprOptions().eps;
  app.add_option("--ppr-eps", ppr_eps, "Case ppr's eps (default: PprOptions' default)")
      ->check(CLI::Range(1e-9, 0.5));
  std::vector<std::string> only;
  app.add_option("--only", only,
                 "--suite loaders: run only these cases (subgraph, link, temporal, hetero, "
                 "failover_stall, labor, walk, ppr, metapath_walk)")
      ->delimiter(',')
      ->check(CLI::IsMember({"subgraph", "link", "temporal", "hetero", "failover_stall", "labor",
                             "walk", "ppr", "metapath_walk"}));
  CLI11_PARSE(app, argc, argv);
  auto want = [&](const char* name) {
    return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
  };
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  bool own = false;
  work = fanout::bench::WorkDir(work, "fanout-bench-loader", &own);
  std::string dir = work + "/rmat" + std::to_string(scale) + "-2";
  fanout::bench::EnsureRmatDataset(dir, scale, 2, 128);
  fanout::bench::TwoServers servers;
  std::shared_ptr<fanout::client::Cluster> cluster;
  fanout::Status st = fanout::bench::StartTwoServers(dir, &servers, &cluster);
  std::printf("%s%s", servers.s0.ready_line.c_str(), servers.s1.ready_line.c_str());
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  const int64_t n = cluster->num_nodes();
  fanout::SplitMix64 rng(2024);
  std::vector<int64_t> seeds(static_cast<size_t>(n));
  for (auto& v : seeds)
    v = static_cast<int64_t>(fanout::DrawBelow(rng.Next(), static_cast<uint64_t>(n)));

  const std::vector<int64_t> sub_fanouts = {10, 5};
  const int64_t sub_batch = 256;
  if (suite == "loaders") {
    const int64_t link_batch = 1024;  // seed edges per batch, as the node loader case's seeds
    fanout::datasets::RmatOptions ro;
    ro.scale = scale;
    fanout::sampler::CsrArrays csr;
    if (!fanout::datasets::GenerateRmat(ro, &csr).ok()) return 1;
    // 200,000 stored edges (row v holds v's out-neighbors), uniform.
    fanout::client::LinkSeeds links;
    for (int i = 0; i < 200000; ++i) {
      const int64_t e = static_cast<int64_t>(
          fanout::DrawBelow(rng.Next(), static_cast<uint64_t>(csr.num_edges())));
      const int64_t v =
          std::upper_bound(csr.indptr.begin(), csr.indptr.end(), e) - csr.indptr.begin() - 1;
      links.src.push_back(v);
      links.dst.push_back(csr.indices[e]);
    }
    int64_t neg_dist = 0, neg_local = 0;
    Measured subgraph, link, labor, neighbor, labor_local, link_local;
    double labor_bytes = 0, neighbor_bytes = 0, local_bytes = 0, walk_steps = 0, walk_local = 0;
    if (want("subgraph"))
      subgraph = RunLoader(cluster, seeds, false, seconds, sub_fanouts, sub_batch, true);
    if (want("link")) link = RunLink(cluster, links, link_batch, seconds, &neg_dist);
    // The co-located servers' exports are sampled in this process by default
    // (Cluster's local sampling); rpc_cluster asks the servers instead (UCX).
    std::shared_ptr<fanout::client::Cluster> rpc_cluster;
    if (want("labor") || want("walk")) {
      st = fanout::bench::ConnectTwoServers(servers, /*local_sampling=*/false, &rpc_cluster);
      if (!st.ok()) {
        std::fprintf(stderr, "%s\n", st.ToString().c_str());
        return 1;
      }
    }
    Measured labor_rpc;
    double rpc_bytes = 0, walk_rpc = 0;
    if (want("labor")) {
      labor = RunLabor(cluster, seeds, true, seconds, &labor_bytes);
      neighbor = RunLabor(cluster, seeds, false, seconds, &neighbor_bytes);
      labor_rpc = RunLabor(rpc_cluster, seeds, true, seconds, &rpc_bytes);
    }
    if (want("walk")) {
      walk_steps = RunWalks(cluster, n, seconds);
      walk_rpc = RunWalks(rpc_cluster, n, seconds);
    }
    rpc_cluster.reset();
    servers.Stop();
    const double local_sub =
        want("subgraph") ? InProcess(csr.View(), n, sub_fanouts, sub_batch, true, seconds) : 0;
    std::shared_ptr<fanout::client::LocalSource> local;
    st = fanout::client::LocalSource::Open(dir, &local);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
    if (want("link")) link_local = RunLink(local, links, link_batch, seconds, &neg_local);
    if (want("labor")) labor_local = RunLabor(local, seeds, true, seconds, &local_bytes);
    if (want("walk")) walk_local = RunWalks(local, n, seconds);
    local.reset();
    // temporal and hetero: the same R-MAT graph with synthetic timestamps, or
    // with 2 node types and 4 edge types, each with its own 2 servers.
    std::vector<int64_t> tseeds(200000), ttimes(200000);
    for (size_t i = 0; i < tseeds.size(); ++i) {
      tseeds[i] = static_cast<int64_t>(fanout::DrawBelow(rng.Next(), static_cast<uint64_t>(n)));
      ttimes[i] = static_cast<int64_t>(fanout::DrawBelow(rng.Next(), uint64_t{1} << 30));
    }
    Measured temporal, temporal_local, hetero, hetero_local;
    if (want("temporal") &&
        !ThroughServersAndInProcess(
            work + "/rmat" + std::to_string(scale) + "-2-temporal", scale, "--edge-times",
            "synthetic edge timestamps",
            [&](auto source) { return RunTemporal(source, tseeds, ttimes, seconds); }, &temporal,
            &temporal_local))
      return 1;
    if (want("hetero") &&
        !ThroughServersAndInProcess(
            work + "/rmat" + std::to_string(scale) + "-2-hetero", scale, "--rmat-node-types 2",
            "2 node types", [&](auto source) { return RunHetero(source, tseeds, seconds); },
            &hetero, &hetero_local))
      return 1;
    Measured ppr, ppr_local, ppr_colocated, metapath, metapath_local;
    double ppr_recall = 0;
    // ppr: the pushes on the servers (a cluster that asks them, as between
    // hosts), and, for reference, on the default cluster, which pushes on the
    // co-located exports in this process.
    if (want("ppr") &&
        !ThroughServersAndInProcess(
            dir, scale, "", "", [&](auto source) { return RunPpr(source, n, seconds, ppr_eps); },
            &ppr_colocated, &ppr_local, &ppr))
      return 1;
    if (want("ppr")) {
      const std::string small = work + "/rmat12-2";
      Measured unused;
      std::shared_ptr<fanout::client::Source> small_source;
      if (!ThroughServersAndInProcess(
              small, 12, "", "R-MAT scale 12 for the exact PPR",
              [&](auto source) {
                if (dynamic_cast<fanout::client::LocalSource*>(source.get()))
                  ppr_recall = PprTopkRecall(source, ppr_eps);
                return Measured();
              },
              &unused, &unused))
        return 1;
    }
    if (want("metapath_walk") &&
        !ThroughServersAndInProcess(
            work + "/rmat" + std::to_string(scale) + "-2-hetero", scale, "--rmat-node-types 2",
            "2 node types", [&](auto source) { return RunMetapathWalks(source, seconds); },
            &metapath, &metapath_local))
      return 1;
    std::vector<Stall> stalls;
    if (want("failover_stall"))
      for (const auto& [name, mode] :
           std::vector<std::pair<std::string, fanout::rpc::DataPlaneMode>>{
               {"local", fanout::rpc::DataPlaneMode::kAuto},
               {"ucx", fanout::rpc::DataPlaneMode::kUcx},
               {"thrift", fanout::rpc::DataPlaneMode::kTcp}}) {
        stalls.emplace_back();
        if (!FailoverStall(dir, 3, name, mode, &stalls.back())) return 1;
      }
    std::printf(
        "loaders through 2 servers beside the same work in process, R-MAT scale %d, fanouts "
        "[10,5]:\n",
        scale);
    if (want("subgraph"))
      std::printf(
          "  subgraph (batch 256): %7.2f M induced edges/s vs %7.2f M in process: ratio %.3f (bar "
          ">= "
          "0.35)\n",
          subgraph.edges_per_s / 1e6, local_sub / 1e6, subgraph.edges_per_s / local_sub);
    if (want("link"))
      std::printf(
          "  link (batch %lld seed edges, binary strict negatives, amount 1): %7.2f M sampled "
          "edges/s (%.1f batches/s, %.2f s waiting "
          "on the network) vs %7.2f M with a LocalSource: ratio %.3f (bar >= 0.35)\n",
          static_cast<long long>(link_batch), link.edges_per_s / 1e6, link.batches_per_s,
          link.network_wait_s, link_local.edges_per_s / 1e6,
          link.edges_per_s / link_local.edges_per_s);
    if (want("temporal"))
      std::printf(
          "  temporal (NodeLoader, uniform, batch 1024): %7.2f M sampled edges/s (%.2f s waiting "
          "on "
          "the network) "
          "vs %7.2f M with a LocalSource: ratio %.3f (bar >= 0.35)\n",
          temporal.edges_per_s / 1e6, temporal.network_wait_s, temporal_local.edges_per_s / 1e6,
          temporal.edges_per_s / temporal_local.edges_per_s);
    if (want("hetero"))
      std::printf(
          "  hetero (NodeLoader, 4 edge types, [5,3] each, batch 1024): %7.2f M sampled edges/s "
          "(%.2f s waiting on "
          "the network) vs %7.2f M with a LocalSource: ratio %.3f (bar >= 0.35)\n",
          hetero.edges_per_s / 1e6, hetero.network_wait_s, hetero_local.edges_per_s / 1e6,
          hetero.edges_per_s / hetero_local.edges_per_s);
    if (want("ppr"))
      std::printf(
          "  ppr (top 32, alpha 0.15, eps %g, batches of 1024 seeds, one session), pushes on the "
          "servers: %.1f ms per batch, %.2f M pushes/s (%.2f s waiting on the network) vs %.1f ms, "
          "%.2f M pushes/s with a LocalSource: ratio %.3f (bar >= 0.7); pushed on the co-located "
          "exports here (Cluster default): %.1f ms, ratio %.3f; top-32 recall against exact PPR "
          "on R-MAT scale 12: %.3f (bar >= 0.95)\n",
          ppr_eps, 1000 / ppr.batches_per_s, ppr.edges_per_s / 1e6, ppr.network_wait_s,
          1000 / ppr_local.batches_per_s, ppr_local.edges_per_s / 1e6,
          ppr.batches_per_s / ppr_local.batches_per_s, 1000 / ppr_colocated.batches_per_s,
          ppr_colocated.batches_per_s / ppr_local.batches_per_s, ppr_recall);
    if (want("metapath_walk"))
      std::printf(
          "  metapath_walk (t0,links,t1 then t1,links,t0; 8 steps, batches of 4096, 2 samplers): "
          "%7.2f M steps/s vs %7.2f M with a LocalSource: ratio %.3f (bar >= 0.7)\n",
          metapath.edges_per_s / 1e6, metapath_local.edges_per_s / 1e6,
          metapath.edges_per_s / metapath_local.edges_per_s);
    for (const Stall& stall : stalls)
      std::printf(
          "  failover_stall %s (NodeLoader, %lld batches of 1024, features, 2 workers; "
          "replica 0 of 2 of partition 0 SIGSTOPped after 10%%): "
          "epoch %.2f s undisturbed, %.2f s stopped (medians of 3): "
          "stall %.2f s vs health interval %d ms + one batch %.3f s (target <= 3 s); "
          "batches identical: %s; %lld requests given up on the health verdict, %lld "
          "failovers\n",
          stall.path.c_str(), static_cast<long long>(stall.batches), stall.calm_s, stall.stopped_s,
          stall.stall_s, stall.health_check_ms, stall.batch_s, stall.identical ? "yes" : "NO",
          static_cast<long long>(stall.health_abandons), static_cast<long long>(stall.failovers));
    if (want("labor"))
      std::printf(
          "  labor (NodeLoader, LABOR-0, [15,10,5], batch 1024, 128-dim features): %7.2f M sampled "
          "edges/s (%.1f batches/s) vs %7.2f M with a LocalSource: ratio %.3f (bar >= 0.5); "
          "%.2f MB of features per batch vs %.2f MB for neighbor sampling at the same fanouts "
          "through the same servers (%.1f batches/s): %.3f of it (bar <= 0.6); sampled by the "
          "servers over UCX instead of from their exports here: %7.2f M edges/s, ratio %.3f\n",
          labor.edges_per_s / 1e6, labor.batches_per_s, labor_local.edges_per_s / 1e6,
          labor.edges_per_s / labor_local.edges_per_s, labor_bytes / 1e6, neighbor_bytes / 1e6,
          neighbor.batches_per_s, labor_bytes / neighbor_bytes, labor_rpc.edges_per_s / 1e6,
          labor_rpc.edges_per_s / labor_local.edges_per_s);
    if (want("walk"))
      std::printf(
          "  walk (uniform walks of 8 steps, batches of 4096 seeds, 2 samplers): %7.2f M steps/s "
          "vs %7.2f M with a LocalSource: ratio %.3f (bar >= 0.35); stepped by the servers over "
          "UCX: %7.2f M steps/s, ratio %.3f\n",
          walk_steps / 1e6, walk_local / 1e6, walk_steps / walk_local, walk_rpc / 1e6,
          walk_rpc / walk_local);
    nlohmann::json cases = nlohmann::json::array();
    if (want("labor"))
      cases.push_back({{"case", "labor"},
                       {"fanout", {15, 10, 5}},
                       {"batch_size", 1024},
                       {"scale", scale},
                       {"feature_dim", 128},
                       {"batches_per_s", labor.batches_per_s},
                       {"edges_per_s", labor.edges_per_s},
                       {"inprocess_edges_per_s", labor_local.edges_per_s},
                       {"ratio", labor.edges_per_s / labor_local.edges_per_s},
                       {"inprocess", "LABOR NodeLoader with features on a LocalSource"},
                       {"feature_bytes_per_batch", labor_bytes},
                       {"neighbor_feature_bytes_per_batch", neighbor_bytes},
                       {"feature_bytes_ratio", labor_bytes / neighbor_bytes},
                       {"neighbor_batches_per_s", neighbor.batches_per_s},
                       {"path", "co-located exports sampled in the client (Cluster default)"},
                       {"rpc_edges_per_s", labor_rpc.edges_per_s},
                       {"rpc_ratio", labor_rpc.edges_per_s / labor_local.edges_per_s},
                       {"neighbor_edges_per_s", neighbor.edges_per_s}});
    if (want("ppr"))
      cases.push_back(
          {{"case", "ppr"},
           {"top_k", 32},
           {"alpha", 0.15},
           {"eps", ppr_eps},
           {"batch_size", 1024},
           {"scale", scale},
           {"ms_per_batch", 1000 / ppr.batches_per_s},
           {"pushes_per_s", ppr.edges_per_s},
           {"network_wait_s", ppr.network_wait_s},
           {"inprocess_ms_per_batch", 1000 / ppr_local.batches_per_s},
           {"inprocess_pushes_per_s", ppr_local.edges_per_s},
           {"ratio", ppr.batches_per_s / ppr_local.batches_per_s},
           {"topk_recall", ppr_recall},
           {"recall_graph", "R-MAT scale 12, 64 seeds, exact power iteration"},
           {"path", "pushes on the 2 servers (ppr_push over Thrift)"},
           {"colocated_ms_per_batch", 1000 / ppr_colocated.batches_per_s},
           {"colocated_ratio", ppr_colocated.batches_per_s / ppr_local.batches_per_s},
           {"colocated_path", "pushes on the co-located exports in the client (Cluster default)"}});
    if (want("metapath_walk"))
      cases.push_back({{"case", "metapath_walk"},
                       {"metapath", {"t0,links,t1", "t1,links,t0"}},
                       {"walk_length", 8},
                       {"batch_size", 4096},
                       {"scale", scale},
                       {"steps_per_s", metapath.edges_per_s},
                       {"inprocess_steps_per_s", metapath_local.edges_per_s},
                       {"ratio", metapath.edges_per_s / metapath_local.edges_per_s}});
    if (want("walk"))
      cases.push_back({{"case", "walk"},
                       {"walk_length", 8},
                       {"batch_size", 4096},
                       {"scale", scale},
                       {"steps_per_s", walk_steps},
                       {"inprocess_steps_per_s", walk_local},
                       {"ratio", walk_steps / walk_local},
                       {"inprocess", "WalkSampler on a LocalSource, 2 threads"},
                       {"path", "co-located exports stepped in the client (Cluster default)"},
                       {"rpc_steps_per_s", walk_rpc},
                       {"rpc_ratio", walk_rpc / walk_local}});
    if (want("subgraph"))
      cases.push_back({{"case", "subgraph"},
                       {"fanout", sub_fanouts},
                       {"batch_size", sub_batch},
                       {"scale", scale},
                       {"batches_per_s", subgraph.batches_per_s},
                       {"edges_per_s", subgraph.edges_per_s},
                       {"inprocess_edges_per_s", local_sub},
                       {"ratio", subgraph.edges_per_s / local_sub},
                       {"inprocess", "multi-hop sampler, 2 threads"}});
    for (const Stall& stall : stalls)
      cases.push_back({{"case", "failover_stall"},
                       {"fanout", {10, 5}},
                       {"batch_size", 1024},
                       {"scale", scale},
                       {"batches", stall.batches},
                       {"path", stall.path},
                       {"epoch_undisturbed_s", stall.calm_s},
                       {"epoch_stopped_s", stall.stopped_s},
                       {"stall_s", stall.stall_s},
                       {"identical", stall.identical},
                       {"health_check_ms", stall.health_check_ms},
                       {"batch_s", stall.batch_s},
                       {"limit_s", stall.health_check_ms / 1000.0 + stall.batch_s},
                       {"target_s", 3.0},
                       {"health_abandons", stall.health_abandons},
                       {"failovers", stall.failovers}});
    if (want("link"))
      cases.push_back({{"case", "link"},
                       {"fanout", sub_fanouts},
                       {"batch_size", link_batch},
                       {"scale", scale},
                       {"negative", "binary strict, amount 1"},
                       {"seed_edges", links.src.size()},
                       {"batches_per_s", link.batches_per_s},
                       {"edges_per_s", link.edges_per_s},
                       {"inprocess_edges_per_s", link_local.edges_per_s},
                       {"ratio", link.edges_per_s / link_local.edges_per_s},
                       {"inprocess", "LinkLoader on a LocalSource"},
                       {"negatives", neg_dist}});
    if (want("temporal"))
      cases.push_back({{"case", "temporal"},
                       {"fanout", {10, 5}},
                       {"batch_size", 1024},
                       {"scale", scale},
                       {"strategy", "uniform"},
                       {"batches_per_s", temporal.batches_per_s},
                       {"edges_per_s", temporal.edges_per_s},
                       {"inprocess_edges_per_s", temporal_local.edges_per_s},
                       {"ratio", temporal.edges_per_s / temporal_local.edges_per_s},
                       {"inprocess", "temporal NodeLoader on a LocalSource"}});
    if (want("hetero"))
      cases.push_back({{"case", "hetero"},
                       {"fanout", {5, 3}},
                       {"edge_types", 4},
                       {"node_types", 2},
                       {"batch_size", 1024},
                       {"scale", scale},
                       {"batches_per_s", hetero.batches_per_s},
                       {"edges_per_s", hetero.edges_per_s},
                       {"inprocess_edges_per_s", hetero_local.edges_per_s},
                       {"ratio", hetero.edges_per_s / hetero_local.edges_per_s},
                       {"inprocess", "heterogeneous NodeLoader on a LocalSource"}});
    if (own) fs::remove_all(work);
    fanout::bench::WriteJson(json_path, cases);
    return 0;
  }
  Measured dist = RunLoader(cluster, seeds, false, seconds);
  Measured feat = RunLoader(cluster, seeds, true, seconds);
  Measured subgraph = RunLoader(cluster, seeds, false, seconds, sub_fanouts, sub_batch, true);
  servers.Stop();

  // In process: the same graph (range partitioning keeps the generator's ids).
  fanout::datasets::RmatOptions ro;
  ro.scale = scale;
  fanout::sampler::CsrArrays csr;
  if (!fanout::datasets::GenerateRmat(ro, &csr).ok()) return 1;
  fanout::sampler::CsrGraph g = csr.View();
  const double local = InProcess(g, n, {15, 10, 5}, 1024, false, seconds);
  const double local_sub = InProcess(g, n, sub_fanouts, sub_batch, true, seconds);

  std::printf("fanouts [15,10,5], batch 1024, 2 servers + 1 client on this machine:\n");
  std::printf(
      "  NodeLoader, sampling only:    %7.1f batches/s  %7.2f M sampled edges/s  (%.2f s waiting "
      "on the network)\n",
      dist.batches_per_s, dist.edges_per_s / 1e6, dist.network_wait_s);
  std::printf("  in-process sampler, 2 threads:                   %7.2f M sampled edges/s\n",
              local / 1e6);
  std::printf("  ratio %.3f (bar >= 0.25)\n", dist.edges_per_s / local);
  std::printf(
      "  NodeLoader with 128-dim features: %7.1f batches/s  %7.2f M sampled edges/s  %.2f GB/s of "
      "features\n",
      feat.batches_per_s, feat.edges_per_s / 1e6, feat.feature_bytes_per_s / 1e9);
  std::printf(
      "subgraph batches (every edge among the sampled nodes), fanouts [10,5], batch 256:\n");
  std::printf(
      "  SubgraphLoader, 2 servers:     %7.1f batches/s  %7.2f M induced edges/s  (%.2f s waiting "
      "on the network)\n",
      subgraph.batches_per_s, subgraph.edges_per_s / 1e6, subgraph.network_wait_s);
  std::printf("  in-process, 2 threads:                           %7.2f M induced edges/s\n",
              local_sub / 1e6);
  std::printf("  ratio %.3f (issue 12's bar for each loader: >= 0.35)\n",
              subgraph.edges_per_s / local_sub);
  nlohmann::json cases = nlohmann::json::array();
  cases.push_back({{"case", "dist_multihop"},
                   {"fanout", {15, 10, 5}},
                   {"batch_size", 1024},
                   {"scale", scale},
                   {"batches_per_s", dist.batches_per_s},
                   {"edges_per_s", dist.edges_per_s},
                   {"inprocess_edges_per_s", local},
                   {"ratio", dist.edges_per_s / local}});
  cases.push_back({{"case", "dist_loader_features"},
                   {"fanout", {15, 10, 5}},
                   {"batch_size", 1024},
                   {"feature_dim", 128},
                   {"batches_per_s", feat.batches_per_s},
                   {"edges_per_s", feat.edges_per_s},
                   {"feature_bytes_per_s", feat.feature_bytes_per_s}});
  cases.push_back({{"case", "subgraph"},
                   {"fanout", sub_fanouts},
                   {"batch_size", sub_batch},
                   {"scale", scale},
                   {"batches_per_s", subgraph.batches_per_s},
                   {"edges_per_s", subgraph.edges_per_s},
                   {"inprocess_edges_per_s", local_sub},
                   {"ratio", subgraph.edges_per_s / local_sub}});
  if (own) fs::remove_all(work);
  fanout::bench::WriteJson(json_path, cases);
  return 0;
}
