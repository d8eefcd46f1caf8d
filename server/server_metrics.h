// The sampling server's metrics: counters by method and outcome, sampled
// nodes/edges, feature rows/bytes, latency histograms, in-flight requests;
// rendered as Prometheus text (/metrics) and as JSON throughput over the last
// 1, 10 and 60 s with p50/p99 latency per method (/stats).
//
// Thread safety: Record*() from any thread without locks (sharded counters);
// Tick() from one thread (the admin server's sampler); rendering from any
// thread (the snapshot ring is guarded by a mutex that the hot path never takes).
#ifndef FANOUT_SERVER_SERVER_METRICS_H_
#define FANOUT_SERVER_SERVER_METRICS_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "common/metrics.h"

namespace fanout::server {

enum Method : int {
  kPartitionInfo = 0,
  kSampleNeighbors,
  kLookupFeatures,
  kLookupLabels,
  kLookupDegrees,
  kLookupSplits,
  kLookupOriginalIds,
  kPing,
  kNoteFailover,
  kHasEdges,
  kReportLocal,
  kApplyUpdates,
  kLookupOriginalNames,
  kPprPush,
  kCompact,
  kFetchUpdates,
  kNumMethods
};
const char* MethodName(int m);

enum Outcome : int { kOk = 0, kInvalidArgument, kError, kNumOutcomes };
const char* OutcomeName(int o);

// The path a request came and its reply went by.
// kLocal: work same-host clients did themselves on the exported partition,
// as they reported it (report_local).
enum Path : int { kThrift = 0, kUcx, kLocal, kNumPaths };
const char* PathName(int p);

class ServerMetrics {
 public:
  static constexpr int kBuckets = 40;  // latency bucket k: <= 2^(k/2) microseconds (last: +inf)

  ServerMetrics();

  void BeginRequest() { counters_.Add(kInFlight, 1); }
  // Ends a request begun with BeginRequest(): `seconds` of wall time and
  // `cpu_seconds` of CPU (the serving thread's and its ParallelFor helpers').
  void EndRequest(int method, int outcome, double seconds, double cpu_seconds = 0);
  void RecordSample(int64_t nodes, int64_t edges) {
    counters_.Add(kSampledNodes, nodes);
    counters_.Add(kSampledEdges, edges);
  }
  // `requests` answered over `path` with reply payloads of `bytes` in all.
  void RecordPath(int path, int64_t bytes, int64_t requests = 1) {
    counters_.Add(PathRequestIndex(path), requests);
    counters_.Add(PathBytesIndex(path), bytes);
  }
  int64_t PathRequests(int path) const { return counters_.Get(PathRequestIndex(path)); }
  int64_t PathBytes(int path) const { return counters_.Get(PathBytesIndex(path)); }
  void RecordFeatures(int64_t rows, int64_t bytes) {
    counters_.Add(kFeatureRows, rows);
    counters_.Add(kFeatureBytes, bytes);
  }

  int64_t Requests(int method, int outcome) const {
    return counters_.Get(RequestIndex(method, outcome));
  }
  int64_t SampledNodes() const { return counters_.Get(kSampledNodes); }
  int64_t SampledEdges() const { return counters_.Get(kSampledEdges); }
  int64_t FeatureRows() const { return counters_.Get(kFeatureRows); }
  int64_t FeatureBytes() const { return counters_.Get(kFeatureBytes); }
  // Update operations applied to a live partition (edges added and removed,
  // feature rows and labels set; a retried batch's not again).
  void RecordUpdates(int64_t operations) { counters_.Add(kUpdateOperations, operations); }
  int64_t Updates() const { return counters_.Get(kUpdateOperations); }
  int64_t InFlight() const { return counters_.Get(kInFlight); }

  // Records a snapshot for the windowed rates (call about once a second),
  // and a history point: the rates and latency since the previous call and
  // `rss_bytes` (the process's resident memory, which the server measures).
  void Tick(int64_t rss_bytes = 0);

  // The history points of the last `seconds` (at most kHistoryPoints, one
  // per Tick), oldest first, as a JSON object text: {"points": [{"t": unix
  // seconds, "sampled_edges_per_s", "feature_bytes_per_s", "requests_per_s",
  // "p50_ms", "p99_ms" (all methods; null without requests), "rss_bytes"}]}.
  std::string HistoryJson(double seconds) const;
  static constexpr int kHistoryPoints = 900;  // 15 minutes at one Tick a second

  // Prometheus text exposition; `extra` is appended (gauges owned by the server).
  std::string Prometheus(const std::string& extra) const;
  // {"throughput": {"1s": {...}, "10s": {...}, "60s": {...}}, "latency": {...}}
  // as a JSON object text (merged into /stats by the server).
  std::string WindowsJson() const;

  static double BucketUpperSeconds(int k);

 private:
  enum Fixed : int {
    kInFlight = 0,
    kSampledNodes,
    kSampledEdges,
    kFeatureRows,
    kFeatureBytes,
    kUpdateOperations,
    kNumFixed
  };
  static int RequestIndex(int m, int o) { return kNumFixed + m * kNumOutcomes + o; }
  static int LatencySumIndex(int m) { return kNumFixed + kNumMethods * kNumOutcomes + m; }
  static int BucketIndex(int m, int k) {
    return kNumFixed + kNumMethods * (kNumOutcomes + 1) + m * kBuckets + k;
  }
  static int PathRequestIndex(int p) {
    return kNumFixed + kNumMethods * (kNumOutcomes + 1) + kNumMethods * kBuckets + p;
  }
  static int PathBytesIndex(int p) { return PathRequestIndex(kNumPaths) + p; }
  static int CpuSumIndex(int m) { return PathBytesIndex(kNumPaths) + m; }
  static int NumCounters() { return CpuSumIndex(kNumMethods); }

  struct Snap {
    std::chrono::steady_clock::time_point at;
    std::vector<int64_t> values;
  };

  struct HistoryPoint {
    double unix_s = 0;
    double edges_per_s = 0, feature_bytes_per_s = 0, requests_per_s = 0;
    double p50_ms = -1, p99_ms = -1;  // -1: no request in the interval
    int64_t rss_bytes = 0;
  };
  // Latency percentile q over the bucket counts `d` (their upper bounds), in ms.
  static double PercentileMs(const std::vector<int64_t>& d, int64_t total, double q);

  ShardedCounters counters_;
  mutable std::mutex mu_;
  std::deque<Snap> ring_;             // GUARDED_BY(mu_): the last 61 snapshots, oldest first
  std::deque<HistoryPoint> history_;  // GUARDED_BY(mu_): the last kHistoryPoints, oldest first
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_SERVER_METRICS_H_
