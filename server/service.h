// What a request computes, whatever path it came by (Thrift or the UCX data
// plane): id checks, feature gather, labels, one-hop sampling, and the timing
// and metrics around each request. Internal to server/.
//
// Thread safety: a PartitionService holds sampling scratch; use one per
// connection (Thrift) or per progress thread (UCX). The ServerState it reads
// is read-only after load.
#ifndef FANOUT_SERVER_SERVICE_H_
#define FANOUT_SERVER_SERVICE_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "common/cpu.h"
#include "common/thread_pool.h"
#include "datasets/partition_store.h"
#include "sampler/neighbor_sampler.h"
#include "sampler/ppr_push.h"
#include "sampler/temporal.h"
#include "server/live_partition.h"
#include "server/partition_server.h"
#include "server/server_metrics.h"
#include "server/tenancy.h"
#include "storage/disk_features.h"
#include "storage/io_gate.h"
#include "storage/reader_pool.h"

namespace fanout::server {

// What clients told this server about their failovers (note_failover),
// counted by the replica they came from. Bounded: at most kMaxOrigins
// addresses are named; the rest are counted under "(other)".
class FailoverLog {
 public:
  static constexpr size_t kMaxOrigins = 256;
  static constexpr size_t kMaxAddressBytes = 256;
  struct Snapshot {
    int64_t retries = 0;                  // the same replica asked again on a new connection
    int64_t failovers = 0;                // moved here from another replica
    std::map<std::string, int64_t> from;  // failovers by origin address
    std::string last_reason;
  };
  void Note(const std::string& from, const std::string& reason, bool retry);
  Snapshot Get() const;

 private:
  mutable std::mutex mu_;
  Snapshot s_;  // GUARDED_BY(mu_)
};

// What a server counts while it serves. Every member is safe to update from
// any thread (sharded metrics, atomics, a mutex-guarded log), which is why a
// ServerState that is otherwise read-only after load holds it `mutable`.
struct ServerCounters {
  ServerMetrics metrics;
  std::atomic<int64_t> auth_refused{0};   // RPC calls refused for a missing or wrong token
  std::atomic<int64_t> admin_refused{0};  // admin requests refused for a missing or wrong token
  FailoverLog failovers;                  // clients' failovers to this server
};

// The partition a server serves and how: written by PartitionServer::Start()
// before any request is served, read-only afterwards; only `counters`
// changes while serving.
struct ServerState {
  ServerOptions options;
  // The dataset's meta.json and original names; its arrays may be empty:
  // every array is read through `view`.
  std::shared_ptr<const datasets::PartitionData> data;
  // The arrays served: the sealed export's memory where the server exports
  // (the same memory same-host clients map), else data's vectors.
  datasets::PartitionView view;
  std::string local_socket;      // the export's socket path ("" = none)
  std::string local_off_reason;  // why there is no export socket ("" = there is one, or none asked)
  uint64_t local_export_id = 0;  // ... and its id
  uint64_t local_export_bytes = 0;  // ... and its size
  sampler::CsrGraph graph;
  std::unique_ptr<ThreadPool> pool;
  std::atomic<int> data_port{0};  // the UCX listener's port once it listens (0 = none)
  int64_t max_degree =
      -1;  // of the partition's nodes (-1 = not known: sampling bounds replies exactly)
  // With edge timestamps: sampler::PrepareTimeOrder's index (null: rows in time order) and its
  // storage.
  const int64_t* time_index = nullptr;
  std::vector<int64_t> time_order;
  // The disk tier, where the features are on disk (null: they are in
  // `view`); its hot set lies in view.hot_table / hot_rows.
  std::shared_ptr<storage::DiskFeatures> disk;
  // A live partition (--live-dir): its update log and versioned delta (null:
  // static). Thread-safe: reads from any thread beside the one write path.
  std::unique_ptr<LivePartition> live;
  // The disk tier's readers (rings and buffers), shared by every serving
  // thread and counted in /stats: not one per connection.
  std::unique_ptr<storage::ReaderPool> readers;
  // The device's order between online and batch reads of this server's
  // requests (storage/io_gate.h); each request's reads name it.
  mutable storage::IoGate io_gate;  // thread-safe: every method from any thread
  std::string feature_file_path;    // ... its file
  std::string disk_io_mode;         // "io_uring" or "pread" (what the reads at start used)
  // Edge ids read on the first request that needs them, where they were not
  // held from the start (`graph` has none then).
  struct OnDemandEdgeIds {
    std::mutex mu;
    std::atomic<bool> ready{false};
    std::vector<int64_t> ids;  // GUARDED_BY(mu) until ready
    sampler::CsrGraph graph;   // `graph` with them, once ready
    Status failed;             // GUARDED_BY(mu): a load that failed (kept: not retried per request)
    double seconds = 0;        // the load's duration
  };
  bool edge_ids_at_start = true;
  mutable OnDemandEdgeIds edge_ids;
  // Tenants: whose work each request is, its quotas and its turn (the
  // default tenant alone without a tenants file).
  std::unique_ptr<Tenancy> tenancy;
  bool tenants_file = false;  // a tenants file was given: tokens name tenants
  mutable ServerCounters counters;
};

struct SampleParams {
  int64_t fanout = -1;
  bool replace = false, weighted = false, with_edge_ids = true;
  uint64_t seed = 0;
  int32_t hop = 0;
  // Temporal sampling (sampler/temporal.h): one time per node.
  bool temporal = false;
  ArrayView<const int64_t> times;
  sampler::TemporalStrategy strategy = sampler::TemporalStrategy::kUniform;
  // Heterogeneous sampling (sampler/hetero.h): this hop's fanout per edge type.
  bool hetero = false;
  ArrayView<const int64_t> type_fanouts;
  // LABOR-0 (sampler/labor.h): the hop's result carries edge weights.
  bool labor = false;
  // A random-walk step (sampler/walk.h): one key per node; fanout unused.
  bool walk = false;
  ArrayView<const uint64_t> walk_keys;
  // A live partition's version to read at (< 0: the newest committed; 0: the base).
  int64_t version = -1;
};

// A data request's size, for its tenant's turn and quotas: `ids` it names
// (-1: a control call, not queued), and for a sampling request the most edges
// one node may draw (`draws`, -1: all of its edges), from what the request
// really asks (SampleDraws), never from a field the client may leave low.
struct ServiceWork {
  int64_t ids = -1;
  int64_t draws = 0;
  int64_t update_bytes = 0;  // apply_updates: the batch's bytes (max_update_bytes_per_s)
  // A sampling request's draws per node: 1 for a walk step, all edges for LABOR
  // (any neighbor may be taken), the sum of the per-type fanouts for a
  // heterogeneous hop (all where one is -1), else its fanout.
  static int64_t SampleDraws(int64_t fanout, ArrayView<const int64_t> type_fanouts, bool hetero,
                             bool walk, bool labor) {
    if (walk) return 1;
    if (labor) return -1;
    if (!hetero) return fanout < 0 ? -1 : fanout;
    int64_t sum = 0;
    for (int64_t f : type_fanouts) {
      // A fanout that makes the sum overflow asks for every edge as well
      // (the cost is capped at the largest degree either way).
      if (f < 0 || f > INT64_MAX - sum) return -1;
      sum += f;
    }
    return sum;
  }
};

class PartitionService {
 public:
  explicit PartitionService(const ServerState* state)
      : s_(state), metrics_(&state->counters.metrics) {}

  using Work = ServiceWork;
  // The tenant this service's next requests are charged to.
  void SetTenant(int tenant) { tenant_ = tenant; }
  int tenant() const { return tenant_; }
  // Holds a batch tenant's reply refused over a quota until the request
  // could pass (at most kMaxRefusalPaceS), so that a client retrying in a
  // tight loop costs the server one call per refill instead of thousands a
  // second. Only for a path whose thread serves one connection (Thrift): the
  // data plane's shared executors must not sleep.
  static constexpr double kMaxRefusalPaceS = 0.1;
  void SetPaceRefusals(bool on) { pace_refusals_ = on; }

  // Runs fn (returning Status) as one request of `method` over `path`: in-flight
  // and latency metrics, exceptions turned into Status. `reply_bytes` is read
  // after fn to count the path's bytes. A data request (work.ids >= 0) first
  // takes its tenant's turn (Tenancy::Admit: quotas, then the fair order).
  template <typename Fn>
  Status Run(int method, int path, const size_t* reply_bytes, Fn&& fn, Work work = {}) {
    auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = ThreadCpuSeconds() + ThreadPool::HelperCpuSeconds();
    metrics_->BeginRequest();
    Status st;
    Tenancy::Admission admission;
    const bool data = work.ids >= 0 && s_->tenancy != nullptr && tenant_ >= 0;
    if (data) {
      last_edges_ = last_rows_ = 0;
      const int64_t feature =
          method == kLookupFeatures ? work.ids * static_cast<int64_t>(FeatureRowBytes()) : 0;
      st = s_->tenancy->Admit(tenant_, EstimateCost(method, work), feature, &admission,
                              work.update_bytes);
    }
    read_class_ = admission.read_class;  // the reads fn() makes (GatherFeatures)
    if (st.ok()) {
      try {
        st = fn();
      } catch (const std::bad_alloc&) {
        st = Status::ResourceExhausted("out of memory serving " + std::string(MethodName(method)));
      } catch (const std::exception& e) {
        st = Status::Internal(e.what());
      }
    }
    if (pace_refusals_ && admission.hold_refusal && admission.retry_after_s > 0)
      std::this_thread::sleep_for(
          std::chrono::duration<double>(std::min(admission.retry_after_s, kMaxRefusalPaceS)));
    if (admission.tenant >= 0) {
      const int64_t reply =
          reply_bytes != nullptr && st.ok() ? static_cast<int64_t>(*reply_bytes) : 0;
      s_->tenancy->Done(&admission, st.ok(), static_cast<double>(work.ids * 8 + reply), last_edges_,
                        last_rows_, method == kLookupFeatures && st.ok() ? reply : 0);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    metrics_->EndRequest(method,
                         st.ok()                  ? kOk
                         : st.IsInvalidArgument() ? kInvalidArgument
                                                  : kError,
                         secs, ThreadCpuSeconds() + ThreadPool::HelperCpuSeconds() - cpu0);
    if (st.ok()) metrics_->RecordPath(path, reply_bytes ? static_cast<int64_t>(*reply_bytes) : 0);
    return st;
  }

  // Checks the count and range of a request's ids.
  Status CheckIds(ArrayView<const int64_t> ids) const;
  // Bytes of one feature row in the partition's dtype.
  size_t FeatureRowBytes() const;
  // Gathers the rows of checked ids into dst (ids.size() * FeatureRowBytes()):
  // from memory, or the disk tier (its cache, then the file; Corruption
  // naming the file and block where one is damaged).
  Status GatherFeatures(ArrayView<const int64_t> ids, char* dst);
  // The CSR to sample from: with edge ids where asked (read from the store
  // on first need where the server did not hold them).
  Status GraphFor(bool with_edge_ids, const sampler::CsrGraph** graph);
  // InvalidArgument when rows x row_bytes is over ServerOptions::max_reply_bytes.
  Status CheckReplyBytes(size_t rows, size_t row_bytes) const;
  // Labels of checked ids; NotFound when the dataset has none.
  Status Labels(ArrayView<const int64_t> ids, int64_t* dst) const;
  // One-hop sampling of checked ids; the result stays valid until the next call.
  Status Sample(ArrayView<const int64_t> ids, const SampleParams& p,
                const sampler::OneHopResult** out);
  // One round of PPR pushes (sampler/ppr_push.h) on this partition's rows
  // at `version` (as SampleParams::version; a live partition's changed rows
  // read merged); the reply is bounded by --max-reply-mib. The result stays
  // valid until the next call.
  Status PprPush(const sampler::PprPushRequest& in, int64_t version,
                 const sampler::PprPushResult** out);
  // The version the last Sample or PprPush read at (live partitions; -1: static).
  int64_t last_version() const { return last_version_; }
  // Live partitions: replaces, in rows (ids.size() x FeatureRowBytes(), may
  // be null) and labels (may be null), what batches at or below `version`
  // (< 0: the newest; resolved into *read_at) set for these ids. OK and
  // nothing done on a static partition (*read_at -1).
  Status OverlayLive(ArrayView<const int64_t> ids, int64_t version, char* rows, int64_t* labels,
                     int64_t* read_at) const;
  // The version a read of `requested` (< 0: the newest committed; 0: the
  // base) is at on a live partition, into *read_at; -1 on a static one,
  // where a version past its base is InvalidArgument.
  Status ResolveVersion(int64_t requested, int64_t* read_at) const;
  const ServerState& state() const { return *s_; }
  ServerMetrics* metrics() { return metrics_; }
  // Bytes a data request moves, estimated before it runs (the ids it sends,
  // and the rows, labels or sampled neighbors it will get back).
  double EstimateCost(int method, const Work& w) const;

 private:
  int tenant_ = -1;
  storage::ReadClass read_class_ = storage::ReadClass::kNone;  // the request running now
  bool pace_refusals_ = false;
  int64_t last_edges_ = 0, last_rows_ = 0;  // of the request being run
  int64_t last_version_ = -1;               // the version the last Sample read at
  const ServerState* s_;
  ServerMetrics* metrics_;
  sampler::HopSampler sampler_;
  sampler::OneHopResult hop_;
  sampler::PprPushResult ppr_;
  sampler::detail::IdMap ppr_map_;
  std::vector<int64_t> rows_;  // local rows of a disk gather
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_SERVICE_H_
