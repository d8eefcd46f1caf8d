// A cluster of sampling servers, described by a cluster file:
//
//   {"partitions": [
//      {"partition": 0, "replicas": ["10.0.0.1:9100", "10.0.0.2:9100"]},
//      {"partition": 1, "replicas": ["10.0.0.3:9100"]}],
//    "data_plane": "auto"}
//
// "data_plane" (optional; "auto", "ucx" or "tcp", see rpc::DataPlaneMode)
// overrides RpcOptions::data_plane. With "auto", bulk replies (features,
// labels, sampled neighbors) travel over the UCX data plane to every server
// that offers it and whose endpoint comes up, else over Thrift; a data plane
// that fails later falls back to Thrift for that server (one log line, and
// SessionStats::fallbacks). Results are the same bytes on every path.
//
// Connect() checks that every partition answers (the first replica that
// does is used), that each server serves the partition the file says, that
// the partitions' id ranges tile [0, num_nodes), and that all servers belong
// to the same dataset; otherwise it returns an error naming the server and
// what is wrong. Server errors later arrive with the server's message and
// address; a server that does not answer within RpcOptions::call_timeout_ms
// gives DeadlineExceeded naming it; where the partition has other replicas,
// the request goes again, unchanged, to another one (failover, see
// RpcOptions), and a background thread health-checks every replica.
//
#ifndef FANOUT_CLIENT_CLUSTER_H_
#define FANOUT_CLIENT_CLUSTER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/local_partition.h"
#include "client/source.h"
#include "common/auth_token.h"
#include "rpc/data_plane_channel.h"
#include "rpc/rpc_client.h"

namespace fanout::client {

struct ClusterSpec {
  std::vector<std::vector<std::string>> replicas;  // index: partition
  bool has_data_plane = false;                     // the file set "data_plane"
  rpc::DataPlaneMode data_plane = rpc::DataPlaneMode::kAuto;
  bool has_local_sampling = false;  // the file set "local_sampling" ("auto" or "off")
  bool local_sampling = true;
  rpc::TlsOptions tls;  // "tls": {"ca", "cert", "key"} (paths relative to the file's folder)
  std::string auth_token_file;  // "auth_token_file": its first line is the token (relative to the
                                // file's folder)
};

Status ParseClusterJson(const std::string& text, const std::string& origin, ClusterSpec* out);
Status ReadClusterFile(const std::string& path, ClusterSpec* out);

// How a session reaches the servers (Cluster::NewSession, WithSessionMode).
struct SessionMode {
  // kAuto = the cluster's own choice (exports read here where co-located,
  // UCX to the others where it came up, else Thrift); kTcp = Thrift only (no
  // data plane, no export read here); kUcx = the UCX data plane, required
  // (no export read here).
  rpc::DataPlaneMode data_plane = rpc::DataPlaneMode::kAuto;
  // Hops of co-located partitions (kAuto only): -1 = the cluster's choice
  // (ClusterSpec / RpcOptions local_sampling), 0 = over RPC, 1 = here.
  int local_sampling = -1;
};

class Cluster : public Source, public std::enable_shared_from_this<Cluster> {
 public:
  ~Cluster() override;
  static Status Connect(const ClusterSpec& spec, const rpc::RpcOptions& options,
                        std::shared_ptr<Cluster>* out);

  Status NewSession(std::unique_ptr<Session>* out) override;
  // A session that reaches the servers another way than the cluster's own
  // choice, on this same cluster (its health checks, replicas, mappings):
  // kTcp = Thrift only (no data plane, no export read here); kUcx = the UCX
  // data plane, required (NotSupported where this cluster has none; no
  // export read here); kAuto = the cluster's own.
  Status NewSession(rpc::DataPlaneMode mode, std::unique_ptr<Session>* out) {
    return NewSession(SessionMode{mode, -1}, out);
  }
  Status NewSession(const SessionMode& mode, std::unique_ptr<Session>* out);
  // This cluster as a Source whose sessions use `mode` (for a loader that
  // asks for another path without connecting a second cluster).
  std::shared_ptr<Source> WithSessionMode(const SessionMode& mode);
  std::shared_ptr<Source> WithSessionMode(rpc::DataPlaneMode mode) {
    return WithSessionMode(SessionMode{mode, -1});
  }
  int64_t num_nodes() const override { return offsets_.back(); }
  int64_t feature_dim() const override { return info_[0].feature_dim; }
  int64_t num_classes() const override { return info_[0].num_classes; }
  const sampler::HeteroSchema* hetero() const override {
    return hetero_.empty() ? nullptr : &hetero_;
  }
  std::string description() const override;

  int num_parts() const { return static_cast<int>(info_.size()); }
  const std::vector<int64_t>& offsets() const { return offsets_; }
  const rpc::RemotePartitionInfo& info(int p) const { return info_[p]; }
  const std::string& address(int p) const { return addresses_[p]; }
  const std::vector<std::string>& replicas(int p) const { return replicas_[p]; }
  // The admin addresses are not known from RPC; the demo passes them itself.
  // Whether remote partitions' bulk replies may use UCX: kTcp when no
  // data-plane context came up here (or none was asked for). Per partition
  // and replica, what is used is Paths().
  rpc::DataPlaneMode data_plane() const { return mode_; }
  // Partition p's export, mapped in this process where its server shares
  // this host and data_plane is "auto" (null otherwise): its features,
  // labels and lookups are read here, and (local_sampling) its hops sampled
  // here, with no request.
  const LocalPartition* local(int p) const { return local_[p].get(); }
  bool local_sampling() const { return local_sampling_; }
  // Partitions whose server's export is on this host but could not be used
  // (each logged once, with the reason).
  int local_refused() const { return local_refused_; }
  // Every replica of every partition: health checks, failures, failovers.
  std::vector<ReplicaHealth> Health() const override;
  // Each partition's path as it is (PartitionPath): per replica and path in
  // use by this cluster's open sessions (loader workers included), with how
  // many use it; a partition no session has open shows the path a new
  // session would take (sessions 0). Ordered by partition.
  std::vector<PartitionPath> Paths() const;
  // The dataset's names of `ids` (string ids of tables, LINQS's alphanumeric
  // ids; "" for a node of an integer-id type), asked of each partition's
  // replicas in turn; NotFound where the dataset keeps none.
  Status OriginalNames(ArrayView<const int64_t> ids, std::vector<std::string>* out) const;
  // The data-plane choice asked for (the file's, else RpcOptions'): what
  // happened is Paths().
  rpc::DataPlaneMode requested_data_plane() const { return requested_; }

  // Reports of the work done here on co-located exports (sessions hand
  // theirs over; one background thread sends them, never a batch).
  struct LocalReportStats {
    int64_t sent = 0;     // reports a server took
    int64_t failed = 0;   // reports that did not arrive (kept, merged into the next)
    int64_t skipped = 0;  // rounds a partition's work waited: no replica passes its health checks
    int64_t pending_requests = 0;  // local requests not yet reported
  };
  LocalReportStats local_report_stats() const;
  // Export attempts at Connect that failed and were tried again (backoff).
  int local_export_retries() const { return local_retries_; }

 private:
  friend class ClusterSession;
  // A session's way to one partition (PartitionPath's path and sampling).
  enum Route : int { kLocalRoute, kLocalReadsUcx, kLocalReadsThrift, kUcxRoute, kThriftRoute };
  static constexpr int kRoutes = 5;
  static PartitionPath PathOf(int p, const std::string& replica, int route, int64_t sessions);
  // A session moved partition p from (r0, route0) to (r1, route1); -1 = none.
  void MovePath(int p, int r0, int route0, int r1, int route1) const;
  // Logs once per server address that its data plane is not used, and why.
  void NoteFallback(const std::string& address, const std::string& why) const;
  // Logs once per server address whose Fanout version (PartitionInfo) is
  // not this client's own (or is not said: a server before versions).
  void NoteVersion(const std::string& address, const rpc::RemotePartitionInfo& info) const;
  rpc::RpcOptions options_;
  rpc::DataPlaneMode mode_ = rpc::DataPlaneMode::kTcp;
  rpc::DataPlaneMode requested_ = rpc::DataPlaneMode::kAuto;
  std::shared_ptr<rpc::DataPlaneContext> data_ctx_;
  mutable std::mutex log_mu_;
  mutable std::set<std::string>
      logged_;  // addresses whose fallback was logged (GUARDED_BY(log_mu_))
  mutable std::set<std::string> version_logged_;    // ... whose version was (GUARDED_BY(log_mu_))
  std::vector<std::string> addresses_;              // chosen replica per partition
  std::vector<std::vector<std::string>> replicas_;  // every replica per partition, as listed
  mutable std::atomic<uint64_t> sessions_{0};  // sessions opened: spreads them over the replicas
  std::vector<rpc::RemotePartitionInfo> info_;
  std::vector<std::shared_ptr<const LocalPartition>>
      local_;  // per partition, null = not on this host
  bool local_sampling_ = true;
  int local_refused_ = 0;  // partitions whose server's export is on this host but could not be used
  std::vector<int64_t> offsets_;
  sampler::HeteroSchema hetero_;  // from the servers' PartitionInfo; empty when homogeneous

  // Health checks (RpcOptions::health_check_ms), where a partition has
  // several replicas.
  struct Replica {
    std::atomic<bool> healthy{true};
    int failed_in_row = 0;  // consecutive failed probes (its probe thread only)
    std::atomic<int64_t> checks{0}, checks_failed{0}, failures{0}, failovers_to{0};
    // Open sessions on it, by route (Cluster::Route: the path and where hops are sampled).
    std::atomic<int64_t> sessions_on[5] = {};
    std::mutex mu;
    std::string last_error;  // GUARDED_BY(mu)
    // Sockets of Thrift calls waiting on this replica (dups, see
    // RpcClient::DupSocket): shut down when it fails its health check, so
    // those calls end at once and go to another replica.
    std::set<int> waiting;  // GUARDED_BY(mu)
  };
  // Registers a Thrift call waiting on replica (p, r); shut down at once
  // where the replica is already down. Unwatch closes `fd`.
  void WatchCall(int p, int r, int fd) const;
  void UnwatchCall(int p, int r, int fd) const;
  Replica& replica_state(int p, int r) const { return *state_[p][r]; }
  bool Healthy(int p, int r) const { return state_[p][r]->healthy.load(std::memory_order_relaxed); }
  // Partition p's replicas in the order to try them from `start` (ring
  // order), the healthy ones first; `start` itself included.
  std::vector<int> ReplicaOrder(int p, int start) const;
  void NoteFailure(int p, int r, const std::string& why) const;
  // OK when `info` (a replica's PartitionInfo) is partition p of this
  // cluster's dataset with its node range; else InvalidArgument saying what
  // it serves instead.
  Status SameReplica(int p, const rpc::RemotePartitionInfo& info) const;
  // Connects to replica r of partition p and checks that it serves p of this
  // dataset (its PartitionInfo into *info). Where p has other replicas the
  // connect and the check have a probe's deadline (ProbeDeadlineMs: a
  // stopped replica costs that, not the call deadline); the client keeps
  // the call deadline for what follows.
  Status ConnectReplica(int p, int r, std::unique_ptr<rpc::RpcClient>* client,
                        rpc::RemotePartitionInfo* info) const;
  // The one deadline of every probe (health pings, and connecting where
  // another replica could answer): half the health interval, at least
  // kMinProbeDeadlineMs (500 ms at the default 1 s interval).
  static constexpr int kMinProbeDeadlineMs = 500;
  static int ProbeDeadlineMs(const rpc::RpcOptions& o);
  // `o` with the probe's connect and call deadlines (never longer than o's).
  static rpc::RpcOptions ProbeOptions(const rpc::RpcOptions& o);
  // One replica's health probes (a thread each: a hung replica delays no
  // other's verdict). Down after kDownAfterFailures failed probes in a row
  // (the second right after the first) or a request that timed out on it;
  // up again after one probe that passes.
  static constexpr int kDownAfterFailures = 2;
  void ProbeLoop(int p, int r);
  // Marks replica (p, r) down (logged once) and ends the Thrift calls waiting on it.
  void MarkDown(int p, int r, const std::string& why) const;
  bool WaitHealth(std::chrono::milliseconds ms);  // false once the cluster closes

  // Local work reports (local_reports.cc).
  void AddLocalWork(int p, const rpc::LocalWork& work) const;
  void ReportLoop();
  // One round: each partition's pending work to the replica it goes to
  // (ReportReplica), with a short deadline; what does not arrive is kept.
  void SendReports();
  // The replica partition p's reports go to: the one whose export is read
  // here while it passes its health checks, else the first that does; -1
  // when none does.
  int ReportReplica(int p) const;
  std::vector<std::vector<std::unique_ptr<Replica>>> state_;
  bool health_checks_ = false;
  std::vector<std::thread> health_threads_;  // one per replica of a partition with several
  std::mutex health_mu_;
  std::condition_variable health_cv_;
  bool health_stop_ = false;  // GUARDED_BY(health_mu_)
  int local_retries_ = 0;

  mutable std::mutex report_mu_;
  mutable std::vector<rpc::LocalWork> pending_;  // per partition (GUARDED_BY(report_mu_))
  mutable LocalReportStats report_stats_;        // GUARDED_BY(report_mu_), but pending_requests
  // The reporter thread's connections: per partition, to replica report_to_[p].
  std::vector<std::unique_ptr<rpc::RpcClient>> report_clients_;
  std::vector<int> report_to_;
  std::vector<int> exporter_;  // per partition: the replica whose export is mapped here (-1: none)
  std::thread report_thread_;
};

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_CLUSTER_H_
