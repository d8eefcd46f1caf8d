// fanout-bench-tenants (`./run bench tenants`, build/bench/tenants.json):
// many jobs on one pair of servers (docs/TENANTS.md), each case's figures
// beside the same servers' figures in the same run.
//
// Set-up: R-MAT (--scale, 20 by default; 128-dim float32 features in
// feature files), 2 partitions by range, 2 servers with a tenants file, no
// same-host export (every request is the servers' work) and the features on
// disk with no cache (--features disk --feature-memory 0: every feature row
// a device read). Why the disk: fair order acts only on work that waits,
// and on this host the clients share the servers' cores, spending about as
// much CPU per batch as the servers do, so CPU-bound servers are never
// backlogged however many workers the clients run; the device is a
// bottleneck the clients do not share, as a dedicated server's cores are
// one its remote clients do not share. Each batch job is a process of its
// own (this binary with --load): N worker threads, each with its own
// connections (a session), pulling training batches (--batch seeds, fanouts
// [10, 5], features) as fast as the servers give them, at nice 10 (a batch
// job's CPU priority on a host that also answers queries). Work is what the
// servers charge (request and reply bytes, /stats tenants), counted over a
// window after a warm-up (connections, executors and queues settle).
//
//   fair_share       4 batch tenants, weights 1, 1, 2, 4, --workers each
//                    (t1, t3 on Thrift, t2, t4 on the UCX data plane): each
//                    tenant's share of the work against its weight's share;
//                    aggregate_ratio = the four's work/s over that of t4
//                    alone with as many workers (half on each path).
//   many_connections fair_share's tenants, t1 with 16x the workers (and so
//                    the connections) of each other one: shares within 10%.
//   greedy_neighbor  equal weights, `greedy` with 8x the workers (and so the
//                    connections) of `modest` (--workers): their shares.
//   online_beside_batch  an online tenant (class online) at --qps queries/s
//                    (open loop, up to 16 in flight; 2-hop [10, 10], 1-16
//                    seeds, features; a query's latency counts from when it
//                    was due) alone, then beside 2 saturating batch tenants:
//                    p99 ratio; the batch tenants' work/s with it over
//                    without it (batch_ratio); and the highest rate
//                    (doubling from --qps) whose p99 beside batch stays
//                    within 2x the p99 alone (max_qps_at_2x; --no-ramp
//                    skips it). Once per server gate budget
//                    (--gate-budgets: 8, the old fixed budget, and 0, the
//                    adaptive gate; the servers restarted with each),
//                    alternated in each of --rounds rounds (medians), on
//                    this machine's device and on the same device throttled
//                    to --throttle-iops reads/s (a cgroup v1 blkio group
//                    holding the servers; needs root, else that device is
//                    skipped and says why). Each case names its device's
//                    limit (device_reads_per_s: raw io_uring 4 KiB reads at
//                    depth 32 over the feature files, in the same group).
//   quota            a tenant over its byte quota (max_feature_bytes_per_s
//                    4 MiB per server), hammering with --workers/2 workers
//                    that retry at once: its refusals (those naming the byte
//                    quota apart), and the work/s of 2 others with it over
//                    without it (others_ratio).
#include <httplib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "bench/bench_util.h"
#include "bench/device_limits.h"
#include "client/cluster.h"
#include "client/loader.h"
#include "client/online.h"
#include "datasets/partition_store.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using fanout::Status;

namespace {

struct TenantDef {
  const char* name;
  double weight;
  const char* cls;
  const char* extra;
};
// Tokens are the names, padded: a bench's tenants, not secrets.
const TenantDef kTenants[] = {
    {"t1", 1, "batch", ""},      {"t2", 1, "batch", ""},
    {"t3", 2, "batch", ""},      {"t4", 4, "batch", ""},
    {"greedy", 1, "batch", ""},  {"modest", 1, "batch", ""},
    {"online", 1, "online", ""}, {"quota", 1, "batch", "max_feature_bytes_per_s=4M"},
};
std::string TokenOf(const std::string& name) { return "bench-token-" + name + "-0123456789"; }

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- --load: one batch job ----

int RunLoad(const std::vector<std::string>& servers, const std::string& tenant,
            const std::string& data_plane, int workers, double seconds, int batch) {
  fanout::client::ClusterSpec spec;
  for (const std::string& s : servers) spec.replicas.push_back({s});
  spec.has_local_sampling = true;
  spec.local_sampling = false;
  fanout::rpc::RpcOptions ro;
  ro.auth_token = TokenOf(tenant);
  std::shared_ptr<fanout::client::Cluster> cluster;
  Status st = fanout::rpc::ParseDataPlaneMode(data_plane, &ro.data_plane);
  if (st.ok()) st = fanout::client::Cluster::Connect(spec, ro, &cluster);
  if (!st.ok()) {
    std::fprintf(stderr, "load %s: %s\n", tenant.c_str(), st.ToString().c_str());
    return 1;
  }
  fanout::client::LoaderOptions o;
  o.fanouts = {10, 5};
  o.features = true;
  o.labels = false;
  o.shuffle = false;
  o.batch_size = batch;
  const int64_t n = cluster->num_nodes();
  std::atomic<int64_t> batches{0}, refused{0}, refused_bytes{0}, errors{0};
  std::string first_error;
  std::mutex mu;
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> ts;
  for (int w = 0; w < workers; ++w)
    ts.emplace_back([&, w] {
      std::unique_ptr<fanout::client::Session> s;
      if (!cluster->NewSession(&s).ok()) {
        ++errors;
        return;
      }
      std::mt19937_64 rng(std::hash<std::string>()(tenant) + w);
      fanout::client::BatchSeeds seeds;
      seeds.nodes.resize(static_cast<size_t>(batch));
      for (uint64_t i = 0; Clock::now() < until; ++i) {
        for (int64_t& v : seeds.nodes) v = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
        fanout::client::MiniBatch b;
        Status r = fanout::client::SampleBatch(*cluster, s.get(), seeds, i, o, &b);
        if (r.ok()) {
          ++batches;
        } else if (r.code() == Status::Code::kResourceExhausted) {
          ++refused;
          if (r.message().find("max_feature_bytes_per_s") != std::string::npos) ++refused_bytes;
        } else {
          ++errors;
          std::lock_guard<std::mutex> lock(mu);
          if (first_error.empty()) first_error = r.ToString();
          s.reset();
          if (!cluster->NewSession(&s).ok()) return;
        }
      }
    });
  for (auto& t : ts) t.join();
  nlohmann::json out = {{"tenant", tenant},          {"batches", batches.load()},
                        {"refused", refused.load()}, {"refused_bytes", refused_bytes.load()},
                        {"errors", errors.load()},   {"first_error", first_error}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

// ---- the driver ----

struct Load {
  pid_t pid = -1;
  int out = -1;
  std::string tenant;
};

Load StartLoad(const std::vector<std::string>& servers, const std::string& tenant,
               const std::string& data_plane, int workers, double seconds, int batch) {
  int p[2];
  if (pipe(p) != 0) std::exit(1);
  std::vector<std::string> args = {fanout::bench::BinDir() + "/fanout-bench-tenants",
                                   "--load",
                                   "--tenant",
                                   tenant,
                                   "--data-plane",
                                   data_plane,
                                   "--workers",
                                   std::to_string(workers),
                                   "--seconds",
                                   std::to_string(seconds),
                                   "--batch",
                                   std::to_string(batch),
                                   "--servers",
                                   servers[0] + "," + servers[1]};
  Load l;
  l.tenant = tenant;
  l.pid = fork();
  if (l.pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    (void)setpriority(PRIO_PROCESS, 0, 10);  // a batch job's priority (see the header)
    dup2(p[1], 1);
    close(p[0]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(p[1]);
  l.out = p[0];
  return l;
}

nlohmann::json FinishLoad(Load* l) {
  std::string text;
  char buf[4096];
  ssize_t k;
  while ((k = read(l->out, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(k));
  close(l->out);
  int status = 0;
  waitpid(l->pid, &status, 0);
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception&) {
    std::fprintf(stderr, "load %s ended without its figures (status %d): %s\n", l->tenant.c_str(),
                 status, text.c_str());
    std::exit(1);
  }
}

// Per tenant over both servers: bytes charged (the scheduler's cost),
// requests, quota refusals.
struct Usage {
  double bytes = 0;
  int64_t requests = 0, refused_quota = 0;
};
// The servers' admin credential (--admin-token-file): /stats of a server with
// tenants needs it.
const char kAdminToken[] = "fanout-bench-tenants-admin-0001";

// A server's /stats (the admin token), or {} where it did not answer.
nlohmann::json ServerStats(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(10, 0);
  auto r = c.Get("/stats", {{"Authorization", std::string("Bearer ") + kAdminToken}});
  if (!r || r->status != 200) return nlohmann::json::object();
  return nlohmann::json::parse(r->body, nullptr, false);
}

std::map<std::string, Usage> Snapshot(const std::vector<int>& admin_ports) {
  std::map<std::string, Usage> out;
  for (int port : admin_ports) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(10, 0);
    auto r = c.Get("/stats", {{"Authorization", std::string("Bearer ") + kAdminToken}});
    if (!r || r->status != 200) {
      std::fprintf(stderr, "admin 127.0.0.1:%d did not answer /stats\n", port);
      std::exit(1);
    }
    const nlohmann::json stats = nlohmann::json::parse(r->body);
    if (!stats.contains("tenants") || !stats["tenants"].contains("tenants")) {
      std::fprintf(stderr, "admin 127.0.0.1:%d: /stats has no tenants: %.300s\n", port,
                   r->body.c_str());
      std::exit(1);
    }
    for (const auto& t : stats["tenants"]["tenants"]) {
      Usage& u = out[t["tenant"].get<std::string>()];
      u.bytes += t["bytes"].get<double>();
      u.requests += t["requests"].get<int64_t>();
      u.refused_quota += t["refused_quota"].get<int64_t>();
    }
  }
  return out;
}
std::map<std::string, Usage> Diff(const std::map<std::string, Usage>& a,
                                  const std::map<std::string, Usage>& b) {
  std::map<std::string, Usage> d;
  for (const auto& [name, u] : b) {
    Usage x = u;
    auto it = a.find(name);
    if (it != a.end()) {
      x.bytes -= it->second.bytes;
      x.requests -= it->second.requests;
      x.refused_quota -= it->second.refused_quota;
    }
    d[name] = x;
  }
  return d;
}

struct Bench {
  std::vector<std::string> servers;
  std::vector<int> admin;
  std::shared_ptr<fanout::client::Cluster> online_cluster;
  double warm = 3, window = 10;
  int batch = 512;
};

struct LoadSpec {
  std::string tenant, data_plane;
  int workers;
};

constexpr int kOnlineDrivers = 16;  // queries in flight at most (and OnlineSampler workers)

// Online queries at `qps` for `seconds` (open loop: drivers take the next
// due slot; latency from when the query was due). Latencies in ms.
std::vector<double> RunOnline(fanout::client::OnlineSampler* online, int64_t n, double qps,
                              double seconds, uint64_t seed) {
  std::vector<double> lat;
  std::mutex mu;
  std::atomic<int64_t> next{0};
  const auto start = Clock::now();
  const int64_t total = static_cast<int64_t>(qps * seconds);
  std::vector<std::thread> ts;
  for (int d = 0; d < kOnlineDrivers; ++d)
    ts.emplace_back([&, d] {
      std::mt19937_64 rng(seed * 131 + d);
      for (;;) {
        const int64_t i = next++;
        if (i >= total) return;
        const auto due = start + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(i / qps));
        std::this_thread::sleep_until(due);
        std::vector<int64_t> seeds(1 + rng() % 16);
        for (int64_t& v : seeds) v = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
        fanout::client::QueryOptions q;
        q.num_neighbors = {10, 10};
        q.request_seed = static_cast<uint64_t>(i);
        fanout::client::Batch b;
        Status st = online->Query(seeds, q, &b);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - due).count();
        if (!st.ok()) {
          std::fprintf(stderr, "online query: %s\n", st.ToString().c_str());
          std::exit(1);
        }
        std::lock_guard<std::mutex> lock(mu);
        lat.push_back(ms);
      }
    });
  for (auto& t : ts) t.join();
  return lat;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// Runs the loads for warm + window (+ a margin) seconds, `during` (if any)
// inside the window; the usage in the window, per tenant.
template <typename Fn>
std::map<std::string, Usage> RunCase(const Bench& b, const std::vector<LoadSpec>& loads, Fn during,
                                     std::vector<nlohmann::json>* results = nullptr) {
  std::vector<Load> running;
  for (const LoadSpec& l : loads)
    running.push_back(
        StartLoad(b.servers, l.tenant, l.data_plane, l.workers, b.warm + b.window + 1, b.batch));
  std::this_thread::sleep_for(std::chrono::duration<double>(b.warm));
  const auto a = Snapshot(b.admin);
  const auto t0 = Clock::now();
  during();
  const double rest = b.window - Since(t0);
  if (rest > 0) std::this_thread::sleep_for(std::chrono::duration<double>(rest));
  const auto z = Snapshot(b.admin);
  const double took = Since(t0);
  for (Load& l : running) {
    nlohmann::json r = FinishLoad(&l);
    if (r["errors"].get<int64_t>() > 0)
      std::fprintf(stderr, "  load %s: %lld errors, the first: %s\n", l.tenant.c_str(),
                   static_cast<long long>(r["errors"].get<int64_t>()),
                   r["first_error"].get<std::string>().c_str());
    if (results) results->push_back(r);
  }
  auto d = Diff(a, z);
  for (auto& [name, u] : d) u.bytes /= took;  // bytes per second
  return d;
}

void NoOnline() {}

// Each load's tenant's share of the work in `u` beside its weight's share
// (weights[i] for loads[i]), printed and as the cases' `tenants` list; the
// total bytes/s in *total and the worst relative share error in *worst.
nlohmann::json WeightedShares(const std::map<std::string, Usage>& u,
                              const std::vector<LoadSpec>& loads,
                              const std::vector<double>& weights, double* total, double* worst) {
  *total = 0;
  double weight_sum = 0;
  for (size_t i = 0; i < loads.size(); ++i) {
    *total += u.at(loads[i].tenant).bytes;
    weight_sum += weights[i];
  }
  nlohmann::json list = nlohmann::json::array();
  *worst = 0;
  for (size_t i = 0; i < loads.size(); ++i) {
    const LoadSpec& l = loads[i];
    const double share = u.at(l.tenant).bytes / *total, want = weights[i] / weight_sum;
    *worst = std::max(*worst, std::fabs(share / want - 1));
    list.push_back({{"name", l.tenant},
                    {"weight", weights[i]},
                    {"share", share},
                    {"weight_share", want},
                    {"workers", l.workers},
                    {"data_plane", l.data_plane}});
    std::printf("  %s weight %.0f, %d workers (%s): share %.3f, its weight's %.3f (%+.1f%%)\n",
                l.tenant.c_str(), weights[i], l.workers, l.data_plane.c_str(), share, want,
                100 * (share / want - 1));
  }
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-bench-tenants: weighted fair share, a greedy neighbor, online queries beside "
      "training, and quotas on one pair of servers (see the header of bench/tenants_bench.cc)"};
  int scale = 20, workers = 8, batch = 128;
  double qps = 50, window = 10, warm = 5;
  std::string work, json;
  bool load = false, online_io_first = true;
  std::string tenant, data_plane = "auto", servers_arg;
  double seconds = 10;
  app.add_option("--scale", scale, "R-MAT scale of the dataset")->default_val(20);
  app.add_option("--workers", workers, "Workers per batch tenant (fair_share)")->default_val(8);
  app.add_option("--batch", batch, "Seeds per training batch")->default_val(128);
  app.add_option("--qps", qps, "The online tenant's query rate")->default_val(50);
  app.add_option("--window", window, "Seconds measured per case")->default_val(10);
  app.add_option("--warm", warm, "Seconds of warm-up per case (connections, queues)")
      ->default_val(5);
  app.add_option("--work", work, "Folder for the dataset (default: a temporary one, removed)");
  app.add_option("--json", json, "Write the cases as a JSON array here");
  std::vector<std::string> only;
  app.add_option("--cases", only, "Run only these cases")
      ->delimiter(',')
      ->check(CLI::IsMember(
          {"fair_share", "many_connections", "greedy_neighbor", "online_beside_batch", "quota"}));
  // One batch job (the driver starts these).
  app.add_flag("--online-io-first,!--no-online-io-first", online_io_first,
               "Servers with --online-io-first (their default: batch reads keep to a few in flight "
               "while a query's reads wait) or, with --no-online-io-first, without");
  std::vector<int> gate_budgets = {8, 0};
  app.add_option("--gate-budgets", gate_budgets,
                 "online_beside_batch: the servers' --io-gate-budget, one run each (0 = the "
                 "adaptive gate, the default; 8 = the old fixed budget)")
      ->delimiter(',')
      ->default_str("8,0")
      ->check(CLI::Range(0, 65536));
  int64_t throttle_iops = 80000;
  app.add_option("--throttle-iops", throttle_iops,
                 "online_beside_batch: also on the same device throttled to this many reads/s "
                 "(cgroup v1 blkio.throttle.read_iops_device on the servers; needs root; 0 = "
                 "this device only)")
      ->default_val(80000)
      ->check(CLI::Range(int64_t{0}, int64_t{100000000}));
  int rounds = 1;
  app.add_option("--rounds", rounds,
                 "online_beside_batch: rounds, the gate budgets alternated in each (medians)")
      ->default_val(1)
      ->check(CLI::Range(1, 100));
  bool ramp = true;
  app.add_flag("--ramp,!--no-ramp", ramp,
               "online_beside_batch: find the highest query rate held at 2x (max_qps_at_2x)");
  app.add_flag("--load", load, "Run as one tenant's batch job (internal)");
  app.add_option("--tenant", tenant, "--load: the tenant");
  app.add_option("--data-plane", data_plane, "--load: auto, ucx or tcp");
  app.add_option("--seconds", seconds, "--load: how long");
  app.add_option("--servers", servers_arg, "--load: HOST:PORT,HOST:PORT");
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  if (workers < 1 || batch < 1 || qps <= 0 || window <= 0 || warm < 0) {
    std::fprintf(stderr, "--workers, --batch, --qps and --window must be positive\n");
    return 2;
  }
  if (load) {
    std::vector<std::string> servers;
    std::stringstream ss(servers_arg);
    for (std::string s; std::getline(ss, s, ',');) servers.push_back(s);
    if (servers.empty() || tenant.empty()) {
      std::fprintf(stderr, "--load needs --tenant and --servers\n");
      return 2;
    }
    return RunLoad(servers, tenant, data_plane, workers, seconds, batch);
  }

  bool own = false;
  work = fanout::bench::WorkDir(work, "fanout-bench-tenants", &own);
  const std::string dir = work + "/rmat" + std::to_string(scale) + "-2-ff";
  if (!fs::exists(dir + "/meta.json")) {
    std::printf("partitioning R-MAT scale %d (128-dim features in feature files, 2 parts) ...\n",
                scale);
    const std::string cmd = fanout::bench::BinDir() +
                            "/fanout-partition --quiet --format rmat --rmat-scale " +
                            std::to_string(scale) +
                            " --feature-dim 128 --parts 2 --method range --direction out "
                            "--feature-file --output " +
                            dir + " > /dev/null";
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "fanout-partition failed: %s\n", cmd.c_str());
      return 1;
    }
  }
  const std::string tenants_file = work + "/tenants.conf";
  {
    std::ofstream f(tenants_file);
    f << "# fanout-bench-tenants\n";
    for (const TenantDef& t : kTenants)
      f << "tenant " << t.name << " token=" << TokenOf(t.name) << " weight=" << t.weight
        << " class=" << t.cls << " " << t.extra << "\n";
    f << "tenant default refuse\n";
  }
  const std::string admin_file = work + "/admin.token";
  std::ofstream(admin_file) << kAdminToken << "\n";
  // Features on disk, no cache: every feature row a read of the device (see
  // the header: a bottleneck the clients on this host do not share).
  std::vector<std::string> extra = {
      "--tenants",  tenants_file, "--admin-token-file", admin_file, "--local-socket", "off",
      "--features", "disk",       "--feature-memory",   "0"};
  if (!online_io_first) extra.push_back("--no-online-io-first");
  fanout::bench::ServerProcess s0 = fanout::bench::StartServerProcess(dir, 0, true, extra);
  fanout::bench::ServerProcess s1 = fanout::bench::StartServerProcess(dir, 1, true, extra);
  std::printf("%s%s", s0.ready_line.c_str(), s1.ready_line.c_str());
  Bench b;
  b.servers = {s0.rpc, s1.rpc};
  b.admin = {s0.admin_port, s1.admin_port};
  int server_gate_budget = 0;  // the servers' --io-gate-budget (their default: adaptive)
  // Both servers again with the device gate's budget `budget`.
  auto restart_with_gate = [&](int budget) {
    if (budget == server_gate_budget) return;
    fanout::bench::StopServerProcess(&s0);
    fanout::bench::StopServerProcess(&s1);
    std::vector<std::string> x = extra;
    x.push_back("--io-gate-budget");
    x.push_back(std::to_string(budget));
    s0 = fanout::bench::StartServerProcess(dir, 0, true, x);
    s1 = fanout::bench::StartServerProcess(dir, 1, true, x);
    b.servers = {s0.rpc, s1.rpc};
    b.admin = {s0.admin_port, s1.admin_port};
    server_gate_budget = budget;
  };
  b.warm = warm;
  b.window = window;
  b.batch = batch;
  nlohmann::json cases = nlohmann::json::array();
  int failures = 0;
  auto stop = [&] {
    fanout::bench::StopServerProcess(&s0);
    fanout::bench::StopServerProcess(&s1);
    if (own) fs::remove_all(work);
  };

  auto want = [&](const char* name) {
    return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
  };

  // ---- fair_share ----
  if (want("fair_share")) {
    std::printf("\n== fair_share: t1..t4, weights 1 1 2 4, %d workers each\n", workers);
    // Alone with as many workers as the four together: the servers as busy.
    const auto alone =
        RunCase(b, {{"t4", "tcp", 2 * workers}, {"t4", "ucx", 2 * workers}}, NoOnline);
    const double alone_rate = alone.at("t4").bytes;
    const std::vector<LoadSpec> four = {{"t1", "tcp", workers},
                                        {"t2", "ucx", workers},
                                        {"t3", "tcp", workers},
                                        {"t4", "ucx", workers}};
    const auto u = RunCase(b, four, NoOnline);
    double total = 0, worst = 0;
    const nlohmann::json list = WeightedShares(u, four, {1, 1, 2, 4}, &total, &worst);
    const double aggregate = total / alone_rate;
    std::printf("  aggregate %.1f MB/s, t4 alone %.1f MB/s: ratio %.3f; worst share error %.1f%%\n",
                total / 1e6, alone_rate / 1e6, aggregate, 100 * worst);
    if (worst > 0.10 || aggregate < 0.9) ++failures;
    cases.push_back({{"case", "fair_share"},
                     {"tenants", list},
                     {"aggregate_ratio", aggregate},
                     {"aggregate_bytes_per_s", total},
                     {"alone_bytes_per_s", alone_rate},
                     {"worst_share_error", worst},
                     {"workers_per_tenant", workers}});
  }

  // ---- many_connections ----
  // fair_share's four tenants, t1 with 16x the workers (and connections) of
  // each other one: its share must stay its weight's, however many
  // connections it opens (its requests past its share of the wait are
  // refused, and the others' are not crowded out).
  if (want("many_connections")) {
    const int each = workers, many = 16 * workers;  // each backlogged, as in fair_share
    std::printf("\n== many_connections: t1..t4, weights 1 1 2 4; t1 %d workers, the others %d\n",
                many, each);
    const std::vector<LoadSpec> four = {
        {"t1", "tcp", many}, {"t2", "tcp", each}, {"t3", "ucx", each}, {"t4", "ucx", each}};
    const auto u = RunCase(b, four, NoOnline);
    double total = 0, worst = 0;
    const nlohmann::json list = WeightedShares(u, four, {1, 1, 2, 4}, &total, &worst);
    std::printf("  worst share error %.1f%% (bar 10%%)\n", 100 * worst);
    if (worst > 0.10) ++failures;
    cases.push_back({{"case", "many_connections"},
                     {"tenants", list},
                     {"worst_share_error", worst},
                     {"connections_ratio", 16}});
  }

  // ---- greedy_neighbor ----
  if (want("greedy_neighbor")) {
    const int modest = workers, greedy = 8 * modest;
    std::printf("\n== greedy_neighbor: greedy %d workers, modest %d, equal weights\n", greedy,
                modest);
    const std::vector<LoadSpec> two = {{"greedy", "tcp", greedy}, {"modest", "tcp", modest}};
    const auto u = RunCase(b, two, NoOnline);
    double total = 0, worst = 0;
    const nlohmann::json list = WeightedShares(u, two, {1, 1}, &total, &worst);
    if (worst > 0.10) ++failures;
    cases.push_back({{"case", "greedy_neighbor"}, {"tenants", list}, {"worst_share_error", worst}});
  }

  // ---- online_beside_batch ----
  // Per device (this one, then throttled) and round, each gate budget in
  // turn (the servers restarted with it): the device's limit (raw io_uring
  // 4 KiB reads at depth 32, 2 threads, the servers idle), the online tenant
  // alone, then beside 2 saturating batch tenants. One case per device and
  // budget: the medians over the rounds.
  if (want("online_beside_batch")) {
    fanout::datasets::DatasetMeta meta;
    std::vector<std::string> files;
    if (fanout::datasets::ReadDatasetMeta(dir, &meta).ok())
      for (const auto& f : meta.feature_files) files.push_back(dir + "/" + f.file);
    std::vector<std::string> devices = {"this"};
    if (throttle_iops > 0) devices.push_back("throttled");
    // One run; null where the device could not be throttled (`why` says).
    auto run_one = [&](int budget, const std::string& device, int round,
                       std::string* why) -> nlohmann::json {
      const std::string gate = budget == 0 ? "adaptive" : "fixed " + std::to_string(budget);
      std::unique_ptr<fanout::bench::BlkioThrottle> throttle;
      if (device == "throttled") {
        Status ts = files.empty()
                        ? Status::NotFound(dir + " has no feature files")
                        : fanout::bench::BlkioThrottle::Create(files[0], throttle_iops, &throttle);
        if (ts.ok()) ts = throttle->Add(::getpid());  // for the limit's probe only
        if (!ts.ok()) {
          *why = ts.ToString();
          return nullptr;
        }
      }
      const double limit =
          files.empty() ? 0 : fanout::bench::RawReads(files, 4096, 32, 2, 3.0).per_s;
      if (throttle) {
        throttle->RemoveAll();
        Status ts = throttle->Add(s0.pid);
        if (ts.ok()) ts = throttle->Add(s1.pid);
        if (!ts.ok()) {
          *why = "throttling the servers: " + ts.ToString();
          return nullptr;
        }
      }
      std::printf(
          "\n== online_beside_batch round %d (gate %s; device %s: %.0f random 4 KiB reads/s at "
          "depth 32): online at %.0f queries/s, [10, 10], 1-16 seeds\n",
          round, gate.c_str(), device == "this" ? "this machine's" : "throttled", limit, qps);
      fanout::client::ClusterSpec spec;
      spec.replicas = {{s0.rpc}, {s1.rpc}};
      spec.has_local_sampling = true;
      spec.local_sampling = false;
      fanout::rpc::RpcOptions ro;
      ro.auth_token = TokenOf("online");
      std::shared_ptr<fanout::client::Cluster> cluster;
      Status st = fanout::client::Cluster::Connect(spec, ro, &cluster);
      std::unique_ptr<fanout::client::OnlineSampler> online;
      if (st.ok()) st = fanout::client::OnlineSampler::Create(cluster, kOnlineDrivers, &online);
      if (!st.ok()) {
        *why = "online tenant: " + st.ToString();
        return nullptr;
      }
      const int64_t n = cluster->num_nodes();
      (void)RunOnline(online.get(), n, qps, 1.0, 99);  // warm: connections, workers
      const std::vector<double> alone = RunOnline(online.get(), n, qps, window, 1);
      const double p50_alone = Quantile(alone, 0.5), p99_alone = Quantile(alone, 0.99);
      std::printf("  alone: p50 %.2f ms, p99 %.2f ms\n", p50_alone, p99_alone);
      const std::vector<LoadSpec> batch_jobs = {{"t1", "tcp", workers}, {"t2", "ucx", workers}};
      const auto without = RunCase(b, batch_jobs, NoOnline);
      std::vector<double> beside;
      const auto with = RunCase(b, batch_jobs,
                                [&] { beside = RunOnline(online.get(), n, qps, window - 0.5, 2); });
      const double p99 = Quantile(beside, 0.99);
      const double batch_without = without.at("t1").bytes + without.at("t2").bytes;
      const double batch_with = with.at("t1").bytes + with.at("t2").bytes;
      // What the gates did (each server's /stats tiers.disk.io_gate after the run).
      nlohmann::json gates = nlohmann::json::array();
      for (int port : b.admin) {
        const nlohmann::json js = ServerStats(port);
        if (js.contains("tiers") && js["tiers"].contains("disk") &&
            js["tiers"]["disk"].contains("io_gate"))
          gates.push_back(js["tiers"]["disk"]["io_gate"]);
      }
      std::string gate_line;
      for (const auto& g : gates)
        gate_line += " [budget " + std::to_string(g.value("budget", 0)) + ", online read p99 " +
                     std::to_string(static_cast<int>(g.value("last_p99_us", 0.0))) +
                     " us, target " + std::to_string(static_cast<int>(g.value("target_us", 0.0))) +
                     " us]";
      std::printf(
          "  beside batch: p50 %.2f ms, p99 %.2f ms (%.2fx alone); batch %.1f MB/s, %.1f "
          "without it (%.3f); gates:%s\n",
          Quantile(beside, 0.5), p99, p99 / p99_alone, batch_with / 1e6, batch_without / 1e6,
          batch_with / batch_without, gate_line.c_str());
      // The highest rate held at p99 <= 2x alone, doubling.
      double max_qps = 0;
      nlohmann::json ramp_list = nlohmann::json::array();
      for (double r = qps; ramp && r <= qps * 64; r *= 2) {
        std::vector<double> lat;
        Bench shorter = b;
        shorter.window = std::min(window, 6.0);
        (void)RunCase(shorter, batch_jobs,
                      [&] { lat = RunOnline(online.get(), n, r, shorter.window - 0.5, 3); });
        const double p = Quantile(lat, 0.99);
        ramp_list.push_back({{"qps", r}, {"p99_ms", p}});
        std::printf("  %.0f queries/s beside batch: p99 %.2f ms (%.2fx alone)\n", r, p,
                    p / p99_alone);
        if (p > 2 * p99_alone) break;
        max_qps = r;
      }
      nlohmann::json c = {{"device_reads_per_s", limit},
                          {"p50_alone_ms", p50_alone},
                          {"p99_alone_ms", p99_alone},
                          {"p50_ms", Quantile(beside, 0.5)},
                          {"p99_ms", p99},
                          {"p99_ratio", p99 / p99_alone},
                          {"batch_ratio", batch_with / batch_without},
                          {"gates", gates}};
      if (ramp) c["max_qps_at_2x"] = max_qps, c["ramp"] = ramp_list;
      online.reset();
      return c;  // `throttle` goes: the servers back on the unthrottled device
    };
    for (const std::string& device : devices) {
      std::map<int, std::vector<nlohmann::json>> runs;  // per budget
      std::string skipped;
      for (int round = 1; round <= rounds && skipped.empty(); ++round)
        for (int budget : gate_budgets) {
          restart_with_gate(budget);
          nlohmann::json r = run_one(budget, device, round, &skipped);
          if (r.is_null()) break;
          runs[budget].push_back(r);
        }
      if (!skipped.empty()) {
        std::printf("\n== online_beside_batch, device %s: skipped (%s)\n", device.c_str(),
                    skipped.c_str());
        cases.push_back(
            {{"case", "online_beside_batch"}, {"device", device}, {"skipped", skipped}});
        continue;
      }
      for (int budget : gate_budgets) {
        const std::vector<nlohmann::json>& rs = runs[budget];
        auto median = [&](const char* key) {
          std::vector<double> v;
          for (const auto& r : rs) v.push_back(r.value(key, 0.0));
          return fanout::bench::Median(v);
        };
        const double p99_ratio = median("p99_ratio"), batch_ratio = median("batch_ratio");
        const std::string gate = budget == 0 ? "adaptive" : "fixed " + std::to_string(budget);
        std::printf(
            "online_beside_batch, device %s, gate %s (medians of %zu rounds): p99 %.2fx alone, "
            "batch %.3f, device %.0f reads/s\n",
            device.c_str(), gate.c_str(), rs.size(), p99_ratio, batch_ratio,
            median("device_reads_per_s"));
        // The targets are the adaptive gate's (the default); a fixed budget
        // runs beside it for comparison.
        if (budget == 0 && (p99_ratio > 2 || batch_ratio < 0.85)) ++failures;
        nlohmann::json c = {{"case", "online_beside_batch"},
                            {"device", device},
                            {"device_reads_per_s", median("device_reads_per_s")},
                            {"throttle_iops", device == "throttled" ? throttle_iops : 0},
                            {"io_gate_budget", budget},
                            {"io_gate", gate},
                            {"qps", qps},
                            {"online_io_first", online_io_first},
                            {"rounds", rs.size()},
                            {"p50_alone_ms", median("p50_alone_ms")},
                            {"p99_alone_ms", median("p99_alone_ms")},
                            {"p50_ms", median("p50_ms")},
                            {"p99_ms", median("p99_ms")},
                            {"p99_ratio", p99_ratio},
                            {"batch_ratio", batch_ratio},
                            {"runs", rs}};
        if (ramp) c["max_qps_at_2x"] = median("max_qps_at_2x");
        cases.push_back(c);
      }
    }
    restart_with_gate(0);
  }

  // ---- quota ----
  if (want("quota")) {
    std::printf("\n== quota: 'quota' (max_feature_bytes_per_s=4M) hammering beside t1, t2\n");
    const std::vector<LoadSpec> others = {{"t1", "tcp", workers / 2}, {"t2", "tcp", workers / 2}};
    const auto without = RunCase(b, others, NoOnline);
    std::vector<LoadSpec> all = others;
    all.push_back({"quota", "tcp", workers / 2});
    std::vector<nlohmann::json> results;
    const auto with = RunCase(b, all, NoOnline, &results);
    const double ratio = (with.at("t1").bytes + with.at("t2").bytes) /
                         (without.at("t1").bytes + without.at("t2").bytes);
    const int64_t refused = with.at("quota").refused_quota;
    int64_t client_refused = 0, client_refused_bytes = 0;
    for (const auto& r : results)
      if (r["tenant"] == "quota") {
        client_refused = r["refused"].get<int64_t>();
        client_refused_bytes = r.value("refused_bytes", int64_t{0});
      }
    std::printf(
        "  refused over quota: %lld in the window (the job saw %lld, %lld of them naming the byte "
        "quota); the others at %.3f of their rate alone\n",
        static_cast<long long>(refused), static_cast<long long>(client_refused),
        static_cast<long long>(client_refused_bytes), ratio);
    if (refused == 0 || client_refused_bytes == 0 || std::fabs(ratio - 1) > 0.10) ++failures;
    cases.push_back({{"case", "quota"},
                     {"refused_over_quota", refused},
                     {"refused_seen_by_job", client_refused},
                     {"refused_byte_quota_seen_by_job", client_refused_bytes},
                     {"others_ratio", ratio}});
  }

  stop();
  fanout::bench::WriteJson(json, cases);
  std::printf("\n%s\n", failures == 0 ? "every case within its target"
                                      : (std::to_string(failures) + " case(s) off target").c_str());
  return 0;
}
