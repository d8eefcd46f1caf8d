// fanout-ctl: operator's view of running sampling servers.
//   fanout-ctl stats HOST:ADMIN_PORT [HOST:ADMIN_PORT ...]
//   fanout-ctl tenants HOST:ADMIN_PORT [HOST:ADMIN_PORT ...]
//   fanout-ctl health CLUSTER_FILE [--timeout-ms MS]
//   fanout-ctl info HOST:PORT | --cluster CLUSTER_FILE
//   fanout-ctl sample HOST:PORT --seeds 1,2,3 --fanout 10 [--seed S] [--hop H] [--replace]
//   [--weighted]
//                     [--times T1,T2,T3 [--temporal-strategy uniform|last]] [--keep ID,ID,...]
//                     [--type-fanout REL=N ...]   (heterogeneous datasets: per edge type)
//   fanout-ctl has-edges HOST:PORT --rows 1,2 --neighbors 5,6 [--edge-type REL]
//   fanout-ctl resources --dataset DIR [--max-inflight-mib N] [--max-reply-mib N] [--json]
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "client/cluster.h"
#include "client/tools/fanout_ctl_admin.h"
#include "client/tools/fanout_ctl_update.h"
#include "common/version.h"
#include "datasets/partition_store.h"
#include "rpc/local_export.h"
#include "rpc/rpc_client.h"
#include "sampler/walk.h"

using fanout::Status;
using fanout::ctl::Human;
using fanout::ctl::Stats;
using fanout::ctl::Tenants;

namespace {

// Checks every replica of every partition of a cluster file, as a client's
// health checks do: connect, ping (timed), partition description, and that it
// serves the cluster's dataset, the partition listed and its node range. Exit
// 0 when every replica answers and serves what the file lists, 1 when some do
// not but every partition has one that does, 2 when a partition has none (or
// the file is bad).

int Health(const std::string& path, int timeout_ms) {
  fanout::client::ClusterSpec spec;
  Status st = fanout::client::ReadClusterFile(path, &spec);
  if (!st.ok()) {
    std::fprintf(stderr, "fanout-ctl: %s\n", st.message().c_str());
    return 2;
  }
  fanout::rpc::RpcOptions ro;
  ro.connect_timeout_ms = ro.call_timeout_ms = timeout_ms;
  ro.tls = spec.tls;
  if (!spec.auth_token_file.empty()) {
    st = fanout::ReadAuthTokenFile(spec.auth_token_file, 1, &ro.auth_token);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-ctl: %s\n", st.message().c_str());
      return 2;
    }
  }
  // Every replica asked first; then each is judged against the dataset the
  // cluster serves (the first answering replica of partition 0 names it):
  // a replica of another dataset, partition or node range is "wrong", not
  // healthy, as a client would refuse it.
  struct Answer {
    Status st;
    double ms = 0;
    fanout::rpc::RemotePartitionInfo info;
  };
  std::vector<std::vector<Answer>> answers(spec.replicas.size());
  const fanout::rpc::RemotePartitionInfo* ref = nullptr;
  for (size_t p = 0; p < spec.replicas.size(); ++p) {
    for (const std::string& addr : spec.replicas[p]) {
      Answer a;
      std::unique_ptr<fanout::rpc::RpcClient> client;
      std::string pong;
      auto t0 = std::chrono::steady_clock::now();
      a.st = fanout::rpc::RpcClient::Connect(addr, ro, &client);
      if (a.st.ok()) a.st = client->Ping("health", &pong);
      a.ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (a.st.ok()) a.st = client->Info(&a.info);
      answers[p].push_back(std::move(a));
    }
  }
  for (size_t p = 0; p < answers.size() && ref == nullptr; ++p)
    for (const Answer& a : answers[p])
      if (a.st.ok() && a.info.partition == static_cast<int>(p)) {
        ref = &a.info;
        break;
      }
  std::printf("%-5s %-24s %-9s %9s  %s\n", "part", "replica", "state", "ping ms", "serves");
  int down = 0, wrong = 0, dead_parts = 0;
  for (size_t p = 0; p < spec.replicas.size(); ++p) {
    int up = 0;
    for (size_t r = 0; r < spec.replicas[p].size(); ++r) {
      const std::string& addr = spec.replicas[p][r];
      const Answer& a = answers[p][r];
      const fanout::rpc::RemotePartitionInfo& info = a.info;
      if (!a.st.ok()) {
        std::printf("%-5zu %-24s %-9s %9s  %s\n", p, addr.c_str(), "down", "-",
                    a.st.message().c_str());
        ++down;
        continue;
      }
      std::string why;
      if (info.partition != static_cast<int>(p)) {
        why = "serves partition " + std::to_string(info.partition) + ", listed as " +
              std::to_string(p);
      } else if (ref != nullptr && info.dataset_id != ref->dataset_id) {
        why = "serves dataset '" + info.dataset_name + "' (" + info.dataset_id +
              "), not the cluster's '" + ref->dataset_name + "' (" + ref->dataset_id + ")";
      } else if (ref != nullptr && (info.num_parts != static_cast<int>(spec.replicas.size()) ||
                                    ref->partition_offsets.size() != spec.replicas.size() + 1 ||
                                    info.node_begin != ref->partition_offsets[p] ||
                                    info.node_end != ref->partition_offsets[p + 1])) {
        why = "serves nodes [" + std::to_string(info.node_begin) + ", " +
              std::to_string(info.node_end) + ") of " + std::to_string(info.num_parts) +
              " partitions, which does not fit the cluster file's " +
              std::to_string(spec.replicas.size());
      }
      if (!why.empty()) {
        std::printf("%-5zu %-24s %-9s %9.3f  %s\n", p, addr.c_str(), "wrong", a.ms, why.c_str());
        ++wrong;
        continue;
      }
      ++up;
      std::printf(
          "%-5zu %-24s %-9s %9.3f  %s (%s) nodes [%lld, %lld), data plane %s, local export %s\n", p,
          addr.c_str(), "healthy", a.ms, info.dataset_name.c_str(), info.dataset_id.c_str(),
          static_cast<long long>(info.node_begin), static_cast<long long>(info.node_end),
          info.data_port > 0 ? (":" + std::to_string(info.data_port)).c_str() : "off",
          info.local_socket.empty() ? "off" : info.local_socket.c_str());
    }
    if (up == 0) ++dead_parts;
  }
  std::printf(
      "%zu partitions, %d replicas down, %d serving something else, %d partitions without a "
      "replica "
      "that answers\n",
      spec.replicas.size(), down, wrong, dead_parts);
  return dead_parts > 0 ? 2 : down + wrong > 0 ? 1 : 0;
}

// Memory to request and to limit a server of each partition to (the
// Kubernetes manifests' resources), from meta.json alone. Measured on this
// machine (docs/DEPLOY.md): a ready server holds its arrays plus about 45 MiB
// (libraries, UCX, thread stacks); loading peaks near twice the arrays plus
// that; serving adds what its budgets let clients hold: request bytes in
// flight (--max-inflight-mib) and a reply being built and serialized (two
// copies of at most --max-reply-mib).
int Resources(const std::string& dir, int64_t inflight_mib, int64_t reply_mib, bool json) {
  constexpr int64_t kMiB = 1 << 20;
  constexpr int64_t kBase = 64 * kMiB;  // measured ~45 MiB, rounded up
  fanout::datasets::DatasetMeta meta;
  Status st = fanout::datasets::ReadDatasetMeta(dir, &meta);
  nlohmann::json out = {{"dataset", meta.name},        {"dataset_dir", dir},
                        {"num_parts", meta.num_parts}, {"max_inflight_mib", inflight_mib},
                        {"max_reply_mib", reply_mib},  {"partitions", nlohmann::json::array()}};
  auto round_mib = [&](double bytes) {
    return static_cast<int64_t>(std::ceil(bytes / kMiB)) * kMiB;
  };
  for (int p = 0; st.ok() && p < meta.num_parts; ++p) {
    int64_t arrays = 0;
    st = fanout::datasets::PartitionArrayBytes(meta, p, &arrays);
    if (!st.ok()) break;
    const double steady = 1.1 * static_cast<double>(arrays) + kBase;
    const double loading = 2.0 * static_cast<double>(arrays) + kBase;
    const double serving = steady + static_cast<double>(inflight_mib + 2 * reply_mib) * kMiB;
    out["partitions"].push_back(
        {{"partition", p},
         {"nodes", meta.offsets[p + 1] - meta.offsets[p]},
         {"edges", meta.stats.edges[p]},
         {"array_bytes", arrays},
         {"memory_request_bytes", round_mib(steady)},
         {"memory_limit_bytes", round_mib(1.25 * std::max(loading, serving))}});
  }
  if (!st.ok()) {
    std::fprintf(stderr, "fanout-ctl: %s\n", st.ToString().c_str());
    return 1;
  }
  const std::string flags = "--max-inflight-mib=" + std::to_string(inflight_mib) +
                            " --max-reply-mib=" + std::to_string(reply_mib) + " --malloc-arenas=2";
  out["server_flags"] = flags;
  if (json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("dataset %s (%s), %d partitions; servers run with %s\n", meta.name.c_str(),
              dir.c_str(), meta.num_parts, flags.c_str());
  std::printf("%-5s %12s %14s %12s %16s %14s\n", "part", "nodes", "edges", "arrays",
              "memory request", "memory limit");
  int64_t max_req = 0, max_lim = 0;
  for (const auto& r : out["partitions"]) {
    const int64_t req = r["memory_request_bytes"].get<int64_t>(),
                  lim = r["memory_limit_bytes"].get<int64_t>();
    max_req = std::max(max_req, req);
    max_lim = std::max(max_lim, lim);
    std::printf("%-5d %12lld %14lld %10.1fMi %14lldMi %12lldMi\n", r["partition"].get<int>(),
                static_cast<long long>(r["nodes"].get<int64_t>()),
                static_cast<long long>(r["edges"].get<int64_t>()),
                r["array_bytes"].get<double>() / kMiB, static_cast<long long>(req / kMiB),
                static_cast<long long>(lim / kMiB));
  }
  std::printf(
      "Kubernetes (the largest partition; one StatefulSet per partition may use its own row):\n"
      "  resources: {requests: {memory: %lldMi}, limits: {memory: %lldMi}}\n",
      static_cast<long long>(max_req / kMiB), static_cast<long long>(max_lim / kMiB));
  return 0;
}

}  // namespace

// fanout-ctl info --cluster FILE: connects the cluster as a client on this
// host would (exports mapped where co-located, UCX where it comes up), opens
// one session, and prints each partition's path as that session takes it
// (Cluster::Paths) with its server's version. Exit 0, or 1 where the
// cluster does not connect.
int ClusterPaths(const std::string& path, const fanout::rpc::TlsOptions& tls,
                 const std::string& token) {
  fanout::client::ClusterSpec spec;
  Status st = fanout::client::ReadClusterFile(path, &spec);
  if (!st.ok()) {
    std::fprintf(stderr, "fanout-ctl: %s\n", st.message().c_str());
    return 1;
  }
  fanout::rpc::RpcOptions ro;
  ro.tls = tls;
  ro.auth_token = token;
  std::shared_ptr<fanout::client::Cluster> cluster;
  st = fanout::client::Cluster::Connect(spec, ro, &cluster);
  std::unique_ptr<fanout::client::Session> session;
  if (st.ok()) st = cluster->NewSession(&session);
  if (!st.ok()) {
    std::fprintf(stderr, "fanout-ctl: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("%s\n", cluster->description().c_str());
  std::printf("data_plane asked: %s\n",
              fanout::rpc::DataPlaneModeName(cluster->requested_data_plane()));
  std::printf("%-5s %-24s %-8s %-9s %s\n", "part", "replica", "path", "sampling", "version");
  for (const fanout::client::PartitionPath& p : cluster->Paths()) {
    const std::string& v = cluster->info(p.partition).server_version;
    std::printf("%-5d %-24s %-8s %-9s %s\n", p.partition, p.replica.c_str(), p.path.c_str(),
                p.sampling.c_str(), v.empty() ? "(not said)" : v.c_str());
  }
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{"fanout-ctl: inspect running Fanout sampling servers."};
  app.set_version_flag("--version", fanout::VersionLine("fanout-ctl"));
  app.require_subcommand(1);
  // Credentials for servers that require them (health reads its cluster file's).
  std::string token_file;
  fanout::rpc::TlsOptions tls;
  app.add_option("--auth-token-file", token_file,
                 "The servers' auth token (first line of FILE); for stats and tenants, the admin "
                 "credential (a server's --admin-token-file, else its --auth-token-file)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-ca", tls.ca, "Connect over TLS, trusting this CA (PEM)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-cert", tls.cert, "Client certificate (PEM), for servers that require one")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", tls.key, "The client certificate's key (PEM)")
      ->check(CLI::ExistingFile);
  std::vector<std::string> admin_addrs;
  auto* stats = app.add_subcommand(
      "stats", "Throughput, latency and memory of servers, from their admin endpoints");
  stats->add_option("servers", admin_addrs, "HOST:ADMIN_PORT of each server")->required();
  std::vector<std::string> tenant_addrs;
  auto* tenants = app.add_subcommand(
      "tenants",
      "Each tenant's requests, bytes, edges, queue waits, refusals and share of the work "
      "beside its weight's, from servers' admin endpoints (fanout-server --tenants)");
  tenants->add_option("servers", tenant_addrs, "HOST:ADMIN_PORT of each server")->required();
  std::string addr;
  std::string cluster_file;
  int timeout_ms = 2000;
  auto* health = app.add_subcommand(
      "health", "Every replica of a cluster file: answers? how fast? what it serves");
  health
      ->add_option("cluster", cluster_file,
                   "Cluster file (JSON, as train-graphsage --cluster reads)")
      ->required();
  health->add_option("--timeout-ms", timeout_ms, "Connect and ping deadline per replica")
      ->default_val(2000)
      ->check(CLI::Range(1, 600000));
  auto* info = app.add_subcommand(
      "info",
      "Partition description and Fanout version of a server (over RPC); with --cluster, each "
      "partition's path from this host as a client connecting the cluster file takes it");
  auto* info_server = info->add_option("server", addr, "HOST:PORT of the server's RPC port");
  info->add_option("--cluster", cluster_file,
                   "Cluster file (JSON): connect it as a client here and print, per partition, the "
                   "path its requests take (local, ucx or thrift) and where hops are sampled")
      ->excludes(info_server)
      ->check(CLI::ExistingFile);
  auto* sample = app.add_subcommand("sample", "One one-hop sampling request, printed per seed");
  std::vector<int64_t> seeds;
  int64_t fanout = 10, seed = 0;
  int hop = 0;
  bool replace = false, weighted = false;
  sample->add_option("server", addr, "HOST:PORT of the server's RPC port")->required();
  sample->add_option("--seeds", seeds, "Node ids (global ids owned by that server)")
      ->required()
      ->delimiter(',');
  sample->add_option("--fanout", fanout, "Neighbors per seed (-1 = all)")->default_val(10);
  sample->add_option("--seed", seed, "Request seed")->default_val(0);
  sample->add_option("--hop", hop, "Hop index")->default_val(0);
  sample->add_flag("--replace", replace, "Sample with replacement");
  sample->add_flag("--weighted", weighted, "Sample by edge weight");
  std::string sampler_kind = "neighbor";
  sample
      ->add_option("--sampler", sampler_kind,
                   "neighbor (each seed draws --fanout independently), labor (LABOR-0: seeds "
                   "share one variate per neighbor; prints each edge's importance weight), or "
                   "walk (one random-walk step per seed: seed i is walk i, at step --hop + 1)")
      ->default_val("neighbor")
      ->check(CLI::IsMember({"neighbor", "labor", "walk"}));
  std::vector<int64_t> times, keep;
  std::string strategy = "uniform";
  sample
      ->add_option("--times", times,
                   "Temporal sampling: one time per seed; only edges not later than it (a dataset "
                   "partitioned "
                   "with --edge-times)")
      ->delimiter(',');
  sample
      ->add_option("--temporal-strategy", strategy,
                   "With --times: uniform or last (the most recent)")
      ->default_val("uniform")
      ->check(CLI::IsMember({"uniform", "last"}));
  sample
      ->add_option("--keep", keep,
                   "Reply only neighbors among these ids (ascending; the subgraph loader's filter)")
      ->delimiter(',');
  std::vector<std::string> type_fanouts;
  sample->add_option("--type-fanout", type_fanouts,
                     "Heterogeneous datasets: the fanout of one edge type, REL=N or SRC,REL,DST=N "
                     "(repeat per type; "
                     "types not named draw nothing; --fanout is then ignored)");
  std::string edge_type_name;
  auto* has_edges = app.add_subcommand(
      "has-edges", "Which stored rows hold which neighbors (strict negative sampling's check)");
  std::vector<int64_t> rows, neighbors;
  has_edges->add_option("server", addr, "HOST:PORT of the server's RPC port")->required();
  has_edges->add_option("--rows", rows, "Node ids owned by that server")
      ->required()
      ->delimiter(',');
  has_edges->add_option("--neighbors", neighbors, "One neighbor id per row")
      ->required()
      ->delimiter(',');
  has_edges->add_option(
      "--edge-type", edge_type_name,
      "Heterogeneous datasets: only edges of this type count (REL or SRC,REL,DST)");
  fanout::ctl::UpdateOptions update_options;
  auto* update = app.add_subcommand(
      "update",
      "Graph updates to a cluster's live partitions (fanout-server --live-dir), from a CSV "
      "file or standard input: add,SRC,DST[,TIME[,WEIGHT[,TYPE]]] / remove,SRC,DST[,TYPE] / "
      "label,NODE,VALUE / features,NODE,V1 V2 ...; each batch durable before the next");
  update->add_option("cluster", update_options.cluster_file, "Cluster file (JSON)")->required();
  update->add_option("input", update_options.input, "CSV file of updates (- or absent: stdin)")
      ->default_val("-");
  update->add_option("--batch", update_options.batch, "Lines per update batch")
      ->default_val(1000)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  update->add_flag("--undirected", update_options.undirected,
                   "Store every edge in both directions (a dataset partitioned undirected)");
  update->add_flag("--quiet", update_options.quiet, "No line per batch on stderr");
  auto* compact = app.add_subcommand(
      "compact",
      "Fold a live partition's delta into a new base now (what the server does by itself past "
      "--live-compact-ratio / --live-compact-mib); needs write permission, as update");
  compact->add_option("server", addr, "HOST:PORT of the live server's RPC port")->required();
  std::string dataset_dir;
  int64_t inflight_mib = 64, reply_mib = 128;
  bool as_json = false;
  auto* resources = app.add_subcommand("resources",
                                       "Memory to request and limit for each partition's servers "
                                       "(Kubernetes resources), from meta.json");
  resources->add_option("--dataset", dataset_dir, "Dataset folder written by fanout-partition")
      ->required()
      ->check(CLI::ExistingDirectory);
  resources
      ->add_option("--max-inflight-mib", inflight_mib,
                   "The servers' --max-inflight-mib (request bytes held)")
      ->default_val(64)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  resources
      ->add_option("--max-reply-mib", reply_mib, "The servers' --max-reply-mib (largest reply)")
      ->default_val(128)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  resources->add_flag("--json", as_json, "Print JSON instead of a table");
  CLI11_PARSE(app, argc, argv);
  if (resources->parsed()) return Resources(dataset_dir, inflight_mib, reply_mib, as_json);

  std::string token;
  if (!token_file.empty()) {
    Status st = fanout::ReadAuthTokenFile(token_file, 1, &token);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-ctl: %s\n", st.message().c_str());
      return 1;
    }
  }
  if (stats->parsed()) return Stats(admin_addrs, token);
  if (tenants->parsed()) return Tenants(tenant_addrs, token);
  if (health->parsed()) return Health(cluster_file, timeout_ms);
  if (update->parsed()) {
    fanout::rpc::RpcOptions uo;
    uo.tls = tls;
    uo.auth_token = token;
    return fanout::ctl::Update(update_options, uo);
  }
  if (info->parsed() && !cluster_file.empty()) return ClusterPaths(cluster_file, tls, token);
  if (info->parsed() && addr.empty()) {
    std::fprintf(stderr, "fanout-ctl info: give a server (HOST:PORT) or --cluster FILE\n");
    return 2;
  }

  std::unique_ptr<fanout::rpc::RpcClient> client;
  fanout::rpc::RpcOptions ro;
  ro.call_timeout_ms = compact->parsed() ? 3600 * 1000 : 10000;  // a compaction takes its time
  ro.tls = tls;
  ro.auth_token = token;
  Status st = fanout::rpc::RpcClient::Connect(addr, ro, &client);
  if (!st.ok()) {
    std::fprintf(stderr, "fanout-ctl: %s\n", st.ToString().c_str());
    return 1;
  }
  if (compact->parsed()) {
    int64_t version = 0, edges = 0;
    double seconds = 0;
    bool up_to_date = false;
    st = client->Compact(&version, &edges, &seconds, &up_to_date);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-ctl compact: %s\n", st.ToString().c_str());
      return 1;
    }
    if (up_to_date) {
      std::printf("nothing to compact: the base already holds version %lld, the newest\n",
                  static_cast<long long>(version));
      return 0;
    }
    std::printf("compacted: the base now holds version %lld, %lld edges (%.2f s)\n",
                static_cast<long long>(version), static_cast<long long>(edges), seconds);
    return 0;
  }
  if (info->parsed()) {
    fanout::rpc::RemotePartitionInfo pi;
    st = client->Info(&pi);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-ctl: %s\n", st.ToString().c_str());
      return 1;
    }
    std::printf(
        "dataset %s (%s), partition %d of %d, nodes [%lld, %lld) of %lld, %lld edges of %lld, "
        "features %lld x %s, %lld classes, direction %s\n",
        pi.dataset_name.c_str(), pi.dataset_id.c_str(), pi.partition, pi.num_parts,
        static_cast<long long>(pi.node_begin), static_cast<long long>(pi.node_end),
        static_cast<long long>(pi.num_nodes_total), static_cast<long long>(pi.num_edges),
        static_cast<long long>(pi.num_edges_total), static_cast<long long>(pi.feature_dim),
        pi.feature_dtype.c_str(), static_cast<long long>(pi.num_classes), pi.direction.c_str());
    std::printf(
        "server version %s%s\n",
        pi.server_version.empty() ? "(not said: a server before 0.4)" : pi.server_version.c_str(),
        pi.server_version == fanout::VersionString() ? "" : " (differs from this fanout-ctl)");
    if (pi.live_version >= 0)
      std::printf("live partition: version %lld committed (it takes updates)\n",
                  static_cast<long long>(pi.live_version));
    std::printf("data plane %s, same-host export %s\n",
                pi.data_port > 0 ? ("port " + std::to_string(pi.data_port)).c_str() : "off",
                pi.local_socket.empty() ? "off" : pi.local_socket.c_str());
    if (pi.has_edge_times) std::printf("edge timestamps: yes (temporal sampling)\n");
    if (pi.has_edge_weights) std::printf("edge weights: yes (weighted sampling and walks)\n");
    if (!pi.node_types.empty()) {
      const size_t T = pi.node_types.size();
      std::printf("node types (this partition's ids):");
      for (size_t t = 0; t < T; ++t) {
        const size_t i = static_cast<size_t>(pi.partition) * T + t;
        std::printf(" %s [%lld, %lld) %lld features%s", pi.node_types[t].c_str(),
                    static_cast<long long>(pi.node_type_bounds[i]),
                    static_cast<long long>(pi.node_type_bounds[i + 1]),
                    static_cast<long long>(pi.node_type_feature_dims[t]), t + 1 < T ? ";" : "\n");
      }
      std::printf("edge types:");
      for (size_t e = 0; e < pi.edge_types.size(); ++e)
        std::printf(" %zu (%s)%s", e, pi.edge_types[e].c_str(),
                    e + 1 < pi.edge_types.size() ? ";" : "\n");
    }
    return 0;
  }
  // Heterogeneous: the dataset's types as the server lists them; an edge type
  // is named REL or SRC,REL,DST (HeteroSchema::FindEdgeType).
  fanout::sampler::HeteroSchema schema;
  if (!type_fanouts.empty() || !edge_type_name.empty()) {
    fanout::rpc::RemotePartitionInfo pi;
    st = client->Info(&pi);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-ctl: %s\n", st.ToString().c_str());
      return 1;
    }
    if (pi.edge_types.empty()) {
      std::fprintf(stderr, "fanout-ctl: dataset %s has no edge types (it is not heterogeneous)\n",
                   pi.dataset_name.c_str());
      return 1;
    }
    schema.node_types = pi.node_types;
    for (const std::string& name : pi.edge_types) {
      st = schema.AddEdgeTypeNamed(name);
      if (!st.ok()) {
        std::fprintf(stderr, "fanout-ctl: server %s: %s\n", addr.c_str(), st.message().c_str());
        return 1;
      }
    }
  }
  auto find_edge_type = [&](const std::string& name) -> int {
    int e = -1;
    Status found = schema.FindEdgeType(name, &e);
    if (!found.ok()) std::fprintf(stderr, "fanout-ctl: %s\n", found.message().c_str());
    return found.ok() ? e : -1;
  };
  if (has_edges->parsed()) {
    if (rows.size() != neighbors.size()) {
      std::fprintf(stderr, "fanout-ctl: --rows has %zu ids but --neighbors %zu\n", rows.size(),
                   neighbors.size());
      return 1;
    }
    int edge_type = -1;
    if (!edge_type_name.empty() && (edge_type = find_edge_type(edge_type_name)) < 0) return 1;
    std::string found;
    st = client->HasEdges(rows, neighbors, &found, edge_type);
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-ctl: %s\n", st.ToString().c_str());
      return 1;
    }
    for (size_t i = 0; i < rows.size(); ++i)
      std::printf("row %lld holds %lld: %s\n", static_cast<long long>(rows[i]),
                  static_cast<long long>(neighbors[i]), found[i] ? "yes" : "no");
    return 0;
  }
  if (!times.empty() && times.size() != seeds.size()) {
    std::fprintf(stderr, "fanout-ctl: --times has %zu values for %zu seeds\n", times.size(),
                 seeds.size());
    return 1;
  }
  std::vector<int64_t> per_type(static_cast<size_t>(schema.num_edge_types()), 0);
  for (const std::string& tf : type_fanouts) {
    const size_t eq = tf.rfind('=');
    int64_t f = 0;
    size_t used = 0;
    try {
      if (eq != std::string::npos) f = std::stoll(tf.substr(eq + 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (eq == std::string::npos || used == 0 || used != tf.size() - eq - 1 || f < -1) {
      std::fprintf(stderr, "fanout-ctl: --type-fanout '%s' is not REL=N (N >= -1)\n", tf.c_str());
      return 1;
    }
    const int e = find_edge_type(tf.substr(0, eq));
    if (e < 0) return 1;
    per_type[static_cast<size_t>(e)] = f;
  }
  fanout::rpc::SampleCall call;
  if (!type_fanouts.empty()) {
    call.type_fanouts = per_type;
    fanout = 0;
    for (int64_t f : per_type) fanout = fanout < 0 || f < 0 ? -1 : std::max(fanout, f);
  }
  call.times = times;
  call.temporal_strategy = strategy;
  call.keep = keep;
  call.fanout = fanout;
  call.seed = static_cast<uint64_t>(seed);
  call.hop = hop;
  call.replace = replace;
  call.weighted = weighted;
  call.labor = sampler_kind == "labor";
  std::vector<uint64_t> walk_keys;
  if (sampler_kind == "walk") {
    for (size_t i = 0; i < seeds.size(); ++i)
      walk_keys.push_back(fanout::sampler::WalkStepKey(static_cast<uint64_t>(seed), i,
                                                       static_cast<uint64_t>(hop) + 1));
    call.walk_keys = walk_keys;
  }
  fanout::rpc::SampleReply reply;
  st = client->Sample(seeds, call, &reply);
  if (!st.ok()) {
    std::fprintf(stderr, "fanout-ctl: %s\n", st.ToString().c_str());
    return 1;
  }
  auto counts = reply.Counts();
  auto nbr = reply.Neighbors();
  auto eids = reply.EdgeIds();
  auto types = reply.EdgeTypes();
  auto weights = reply.EdgeWeights();
  size_t at = 0;
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::printf("%lld (%d):", static_cast<long long>(seeds[i]), counts[i]);
    for (int32_t k = 0; k < counts[i]; ++k, ++at) {
      std::printf(" %lld[e%lld", static_cast<long long>(nbr[at]), static_cast<long long>(eids[at]));
      if (at < types.size() && types[at] >= 0 && types[at] < schema.num_edge_types())
        std::printf(" %s", schema.EdgeTypeName(types[at]).c_str());
      if (at < weights.size()) std::printf(" w=%.6g", weights[at]);
      std::printf("]");
    }
    std::printf("\n");
  }
  return 0;
}
