// PartitionServer: serves one partition of a dataset over Thrift (framed,
// binary protocol, one thread per connection) with an admin HTTP endpoint.
//
// Lifecycle: Start() starts the admin endpoint (healthz 503 while loading),
// loads the partition (unless given one), starts the RPC server and returns
// once it is listening; port() and admin_port() report the bound ports (bind
// port 0 in tests). Stop() is idempotent: /healthz turns 503 (draining), the
// listener closes, requests in flight finish and get their replies, idle
// connections close, threads are joined. The destructor calls Stop().
//
// With the UCX data plane on (ServerOptions::data_plane), a UCX listener
// serves feature, label and sampling requests beside Thrift, from the same
// partition and with the same answers; its port travels in PartitionInfo.
//
// Thread safety: Start/Stop from one controlling thread; everything else is
// safe from any thread. The partition is read-only once loaded: no locks on
// the request path.
#ifndef FANOUT_SERVER_PARTITION_SERVER_H_
#define FANOUT_SERVER_PARTITION_SERVER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/thread_pool.h"
#include "datasets/partition_store.h"
#include "rpc/connection_guard.h"
#include "server/memory_plan.h"
#include "server/server_metrics.h"

namespace fanout::server {

struct ServerOptions {
  std::string dataset_dir;         // the fanout-partition output folder
  int partition = 0;               // which partition to serve
  std::string bind = "127.0.0.1";  // address for both listeners (default loopback only)
  int port = 0;                    // RPC port (0 = any free port)
  int admin_port = 0;              // admin HTTP port (0 = any free port, -1 = no admin endpoint)
  int threads = 0;  // threads that split a large request: the caller plus threads - 1 workers (0 =
                    // the usable CPUs)
  int64_t max_ids_per_request = int64_t{1} << 22;  // ids in one request, default 4 Mi
  int64_t max_fanout = 100000;  // largest fanout accepted (-1 = all is always accepted)
  int64_t max_frame_bytes = int64_t{256} << 20;  // largest request frame, default 256 MiB
  // Largest feature or label reply one request may ask for (ids x row bytes),
  // default 1 GiB (the client's default largest reply): without it a valid
  // request for --max-ids rows of wide features asked for tens of GiB.
  int64_t max_reply_bytes = int64_t{1} << 30;
  int expected_num_parts = -1;  // refuse a dataset with another partition count
  // Authentication: with a token, every RPC connection must present it
  // (authenticate) before any other call, and the admin endpoint's /stats and
  // / need it (Authorization: Bearer, or ?token=); /metrics and /healthz stay
  // open. Empty = no authentication.
  std::string auth_token;
  // The admin endpoint's credential for /stats, /history and / (Bearer or
  // ?token=). Empty: auth_token is; with neither, those pages are open on a
  // server without tenants and refused (401) on one with a tenants file.
  std::string admin_token;
  // TLS for the RPC listener (PEM files; empty = plain TCP). With tls_ca,
  // clients must present a certificate signed by it (mutual TLS).
  std::string tls_cert, tls_key, tls_ca;
  // Connections, idle and slow clients, request memory (see ConnectionGuard).
  rpc::ConnectionLimits limits = rpc::ConnectionLimits::Defaults();
  // The UCX data plane (a listener on `bind`, advertised in PartitionInfo):
  // on by default; ignored in builds without UCX (fanout-server refuses an
  // explicit --data-plane ucx there). Start() fails with the reason when it
  // is on and cannot start (run with it off to serve over Thrift only).
  bool data_plane = true;
  int data_port = 0;     // its port (0 = any free port)
  int data_threads = 0;  // its progress threads (0 = min(cores, 4))
  // The same-host export (rpc/local_export.h): the partition's arrays in
  // sealed read-only shared memory, served from there, and handed to clients
  // on this host over a Unix socket at this path ("" = the default,
  // rpc::DefaultLocalSocketPath; "off" = no export). Its path travels in
  // PartitionInfo. An explicit path that cannot be served fails Start().
  std::string local_socket;
  std::vector<uid_t> local_uids;  // uids allowed to map it (empty = this process's uid)
  // Memory tiers (server/memory_plan.h; docs/DESIGN.md "Memory tiers"),
  // for a partition the server loads itself:
  // where the feature rows live: "memory", "disk" (the dataset's feature
  // file, read with io_uring under a cache) or "auto" (default: memory where
  // the partition fits the memory limit, disk otherwise).
  std::string features = "auto";
  // The disk tier's cache budget in bytes (hot set and SIEVE cache); -1 =
  // default: a quarter of the feature bytes, within the memory limit.
  int64_t feature_memory_bytes = -1;
  double feature_hot_fraction = 0.9;  // the hot set's share of that budget
  int feature_queue_depth = 32;       // reads in flight per serving thread
  // Edge ids: "memory" (held from the start), "on-demand" (read from the
  // store on the first request that asks for them) or "auto" (default:
  // held where they fit the memory limit).
  std::string edge_ids = "auto";
  int index_bits = 0;  // neighbor ids: 32, 64, or 0 (default: 32 where they fit)
  // Tenants (server/tenants.h): a tenants file (reloaded by ReloadTenants,
  // fanout-server on SIGHUP): requests are charged to the tenant their
  // credentials name, wait in weighted fair order (server/scheduler.h) and
  // keep to its quotas. "" = no tenants file: the default tenant alone,
  // counted, never queued. Not with auth_token (the file names the tokens).
  std::string tenants_file;
  int scheduler_slots = 0;  // requests computed at once with a tenants file (0 = the usable CPUs)
  bool online_io_first = true;  // SchedulerOptions::online_io_first
  // The device gate's batch budget while online reads go on
  // (storage/io_gate.h): 0 adapts it to the online reads' p99, held near
  // io_gate_latency_factor x their p99 with batch held to one read; > 0
  // fixes it.
  int io_gate_budget = 0;
  double io_gate_latency_factor = 1.5;
  int64_t memory_limit_bytes = 0;  // planned against (0 = the cgroup's limit or physical memory)
  // Live graphs (docs/DESIGN.md "Live updates"): a folder for this
  // partition's update log (part-<k>.updates.log, replayed at start); the
  // server then takes apply_updates and serves every read at a version. ""
  // = a static partition.
  std::string live_dir;
  // Compaction (live/versioned_partition.h Compact): it starts in the
  // background when the delta's edge changes reach live_compact_ratio of the
  // base's edges, or its bytes live_compact_mib (0 turns each off); the new
  // base's arrays may take at most live_compact_max_mib (0: no bound). The
  // generation before stays for reads below the new base until none came for
  // live_retain_s seconds.
  double live_compact_ratio = 0.1;
  int64_t live_compact_mib = 256;
  int64_t live_compact_max_mib = 0;
  double live_retain_s = 10;
  // After a compaction, once the update log holds this many MiB, the new
  // base is written to live_dir (part-<k>.base) and the log cut at its
  // version (0: after every compaction; < 0: never).
  int64_t live_checkpoint_mib = 64;
  // Replicas (server/live_replication.h): a follower replica applies the
  // update log of the primary at live_follow (HOST:PORT), presenting
  // live_follow_token (a write-permission tenant's token or the primary's
  // auth token; empty: none), under the name live_replica_name (empty:
  // host:port, or host:dir<hash of live_dir> with port 0); it serves once
  // caught up, waiting at most live_catch_up_s
  // (0: serves what it holds at once). A primary's write waits up to
  // live_replica_wait_ms for its in-sync followers, and it keeps
  // live_feed_mib of records for them.
  std::string live_follow, live_follow_token, live_replica_name;
  double live_catch_up_s = 60;
  int live_replica_wait_ms = 1000;
  int64_t live_feed_mib = 256;
};

struct ServerState;  // internal: what handlers share
}  // namespace fanout::server
namespace fanout::rpc {
class DataPlaneServer;
class LocalExport;
}  // namespace fanout::rpc
namespace fanout::storage {
class DiskFeatures;
}  // namespace fanout::storage
namespace fanout::server {

class PartitionServer {
 public:
  // With tenants: data-plane requests wait for their turn on this many
  // executor threads (rpc::DataPlaneServerOptions::executors).
  static constexpr int kDataPlaneExecutors = 32;
  explicit PartitionServer(ServerOptions options);
  // Serves an already-loaded partition (tests, benchmarks).
  PartitionServer(ServerOptions options, std::shared_ptr<const datasets::PartitionData> data);
  ~PartitionServer();
  PartitionServer(const PartitionServer&) = delete;
  PartitionServer& operator=(const PartitionServer&) = delete;

  Status Start();
  void Stop();

  int port() const { return port_; }
  // The data plane's port; 0 when it is off or not built.
  int data_port() const { return data_port_; }
  int admin_port() const { return admin_port_; }
  // The dataset's meta and names. Its arrays are empty when the server
  // loaded the partition itself and exports it: view() has them.
  const datasets::PartitionData& data() const { return *data_; }
  // The arrays served (in the sealed export where there is one).
  const datasets::PartitionView& view() const;
  // The same-host export's socket ("" = none).
  const std::string& local_socket() const;
  // Why the same-host export is not served ("" where it is, or was not asked for).
  const std::string& local_off_reason() const;
  const ServerMetrics& metrics() const;
  double load_seconds() const { return load_seconds_; }
  // How the partition is held (features, ids, edge ids); the default plan
  // for a partition given ready-made.
  const MemoryPlan& memory_plan() const { return plan_; }
  // "loading", "serving", "draining", "stopped".
  const char* state() const;
  rpc::ConnectionStats connection_stats() const;
  // The /stats document (JSON text).
  std::string StatsJson() const;
  // Reads the tenants file again (options().tenants_file) and swaps it in;
  // on an error (named with its line) the old table stays.
  Status ReloadTenants();

 private:
  Status StartAdmin();
  Status StartRpc();
  Status StartDataPlane();
  // Plans memory (plan_) and loads the partition; the disk tier where
  // its features stay on disk.
  Status Load(std::shared_ptr<datasets::PartitionData>* out,
              std::shared_ptr<storage::DiskFeatures>* disk);
  Status Export(datasets::PartitionData* owned);
  Status StartLocalSocket();

  ServerOptions options_;
  MemoryPlan plan_;
  std::shared_ptr<const datasets::PartitionData> data_;
  std::unique_ptr<ServerState> state_;
  const std::shared_ptr<rpc::ConnectionGuard>
      guard_;  // the RPC listener's limits (lives as long as the server)
  struct Rpc;
  std::unique_ptr<Rpc> rpc_;
  struct Admin;
  std::unique_ptr<Admin> admin_;
  std::unique_ptr<rpc::DataPlaneServer> data_plane_;
  std::unique_ptr<rpc::LocalExport> export_;  // what state_->view points into, where exported
  std::atomic<bool> loaded_{
      false};                  // data_ and state_ are complete (the admin endpoint may read them)
  std::atomic<int> phase_{0};  // 0 loading, 1 serving, 2 draining, 3 stopped
  int port_ = 0, admin_port_ = -1, data_port_ = 0;
  double load_seconds_ = 0;
  std::string disk_io_mode_;  // the disk tier's reads: "io_uring, O_DIRECT", ...
  std::chrono::steady_clock::time_point started_at_;
  bool stopped_ = false;
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_PARTITION_SERVER_H_
