#include "server/server_metrics.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "server/prometheus_text.h"

namespace fanout::server {

const char* MethodName(int m) {
  static const char* kNames[] = {"partition_info",
                                 "sample_neighbors",
                                 "lookup_features",
                                 "lookup_labels",
                                 "lookup_degrees",
                                 "lookup_splits",
                                 "lookup_original_ids",
                                 "ping",
                                 "note_failover",
                                 "has_edges",
                                 "report_local",
                                 "apply_updates",
                                 "lookup_original_names",
                                 "ppr_push",
                                 "compact",
                                 "fetch_updates"};
  return m >= 0 && m < kNumMethods ? kNames[m] : "unknown";
}

const char* OutcomeName(int o) {
  static const char* kNames[] = {"ok", "invalid_argument", "error"};
  return o >= 0 && o < kNumOutcomes ? kNames[o] : "unknown";
}

const char* PathName(int p) {
  static const char* kNames[] = {"thrift", "ucx", "local"};
  return p >= 0 && p < kNumPaths ? kNames[p] : "unknown";
}

ServerMetrics::ServerMetrics() : counters_(NumCounters()) {}

double ServerMetrics::BucketUpperSeconds(int k) { return std::pow(2.0, k / 2.0) * 1e-6; }

void ServerMetrics::EndRequest(int method, int outcome, double seconds, double cpu_seconds) {
  counters_.Add(RequestIndex(method, outcome), 1);
  double us = seconds * 1e6;
  counters_.Add(LatencySumIndex(method), static_cast<int64_t>(us));
  counters_.Add(CpuSumIndex(method), static_cast<int64_t>(cpu_seconds * 1e6));
  // Smallest k with us <= 2^(k/2).
  int k = us <= 1.0 ? 0 : static_cast<int>(std::ceil(2.0 * std::log2(us)));
  if (k >= kBuckets) k = kBuckets - 1;
  counters_.Add(BucketIndex(method, k), 1);
  counters_.Add(kInFlight, -1);
}

double ServerMetrics::PercentileMs(const std::vector<int64_t>& d, int64_t total, double q) {
  const int64_t need = static_cast<int64_t>(std::ceil(q * total));
  int64_t cum = 0;
  for (int k = 0; k < kBuckets; ++k) {
    cum += d[k];
    if (cum >= need) return BucketUpperSeconds(k) * 1e3;
  }
  return BucketUpperSeconds(kBuckets - 1) * 1e3;
}

void ServerMetrics::Tick(int64_t rss_bytes) {
  Snap s;
  s.at = std::chrono::steady_clock::now();
  counters_.Snapshot(&s.values);
  HistoryPoint h;
  h.unix_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  h.rss_bytes = rss_bytes;
  std::lock_guard<std::mutex> lock(mu_);
  if (!ring_.empty()) {
    const Snap& prev = ring_.back();
    double dt = std::chrono::duration<double>(s.at - prev.at).count();
    if (dt <= 0) dt = 1e-9;
    auto delta = [&](int idx) { return s.values[idx] - prev.values[idx]; };
    h.edges_per_s = delta(kSampledEdges) / dt;
    h.feature_bytes_per_s = delta(kFeatureBytes) / dt;
    int64_t reqs = 0;
    for (int m = 0; m < kNumMethods; ++m)
      for (int o = 0; o < kNumOutcomes; ++o) reqs += delta(RequestIndex(m, o));
    h.requests_per_s = reqs / dt;
    // Latency over every method in the interval.
    std::vector<int64_t> d(kBuckets, 0);
    int64_t total = 0;
    for (int m = 0; m < kNumMethods; ++m)
      for (int k = 0; k < kBuckets; ++k) {
        const int64_t n = delta(BucketIndex(m, k));
        d[k] += n;
        total += n;
      }
    if (total > 0) {
      h.p50_ms = PercentileMs(d, total, 0.5);
      h.p99_ms = PercentileMs(d, total, 0.99);
    }
    history_.push_back(h);
    while (history_.size() > static_cast<size_t>(kHistoryPoints)) history_.pop_front();
  }
  ring_.push_back(std::move(s));
  while (ring_.size() > 61) ring_.pop_front();
}

std::string ServerMetrics::HistoryJson(double seconds) const {
  std::deque<HistoryPoint> h;
  {
    std::lock_guard<std::mutex> lock(mu_);
    h = history_;
  }
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  nlohmann::json points = nlohmann::json::array();
  for (const HistoryPoint& p : h) {
    if (p.unix_s < now - seconds) continue;
    nlohmann::json j = {{"t", p.unix_s},
                        {"sampled_edges_per_s", p.edges_per_s},
                        {"feature_bytes_per_s", p.feature_bytes_per_s},
                        {"requests_per_s", p.requests_per_s},
                        {"rss_bytes", p.rss_bytes}};
    j["p50_ms"] = p.p50_ms < 0 ? nlohmann::json(nullptr) : nlohmann::json(p.p50_ms);
    j["p99_ms"] = p.p99_ms < 0 ? nlohmann::json(nullptr) : nlohmann::json(p.p99_ms);
    points.push_back(std::move(j));
  }
  return nlohmann::json{{"interval_s", 1}, {"points", std::move(points)}}.dump();
}

std::string ServerMetrics::Prometheus(const std::string& extra) const {
  std::vector<int64_t> v;
  counters_.Snapshot(&v);
  PrometheusText out;
  auto label = [](const char* key, const char* value) {
    return std::string(key) + "=\"" + value + "\"";
  };
  out.Family("fanout_requests_total", "counter", "RPC requests by method and outcome.");
  for (int m = 0; m < kNumMethods; ++m)
    for (int o = 0; o < kNumOutcomes; ++o)
      out.Sample("fanout_requests_total",
                 label("method", MethodName(m)) + "," + label("outcome", OutcomeName(o)),
                 v[RequestIndex(m, o)]);
  out.Family("fanout_path_requests_total", "counter", "Requests answered, by path (thrift, ucx).");
  for (int p = 0; p < kNumPaths; ++p)
    out.Sample("fanout_path_requests_total", label("path", PathName(p)), v[PathRequestIndex(p)]);
  out.Family("fanout_path_reply_bytes_total", "counter",
             "Reply payload bytes sent, by path (thrift, ucx).");
  for (int p = 0; p < kNumPaths; ++p)
    out.Sample("fanout_path_reply_bytes_total", label("path", PathName(p)), v[PathBytesIndex(p)]);
  out.Counter("fanout_sampled_nodes_total", "Nodes whose neighbors were sampled.",
              v[kSampledNodes]);
  out.Counter("fanout_sampled_edges_total", "Sampled edges returned.", v[kSampledEdges]);
  out.Counter("fanout_feature_rows_total", "Feature rows served.", v[kFeatureRows]);
  out.Counter("fanout_feature_bytes_total", "Feature bytes served.", v[kFeatureBytes]);
  out.Counter("fanout_updates_total",
              "Update operations applied to a live partition (edges added and removed, feature "
              "rows and labels set).",
              v[kUpdateOperations]);
  out.Gauge("fanout_in_flight_requests", "Requests being processed.", v[kInFlight]);
  out.Family("fanout_request_duration_seconds", "histogram", "RPC latency by method.");
  for (int m = 0; m < kNumMethods; ++m) {
    const std::string method = label("method", MethodName(m));
    int64_t cum = 0;
    for (int k = 0; k < kBuckets; ++k) {
      cum += v[BucketIndex(m, k)];
      char le[32];
      if (k == kBuckets - 1)
        std::snprintf(le, sizeof le, "+Inf");
      else
        std::snprintf(le, sizeof le, "%.6g", BucketUpperSeconds(k));
      out.Sample("fanout_request_duration_seconds_bucket", method + "," + label("le", le), cum);
    }
    out.Sample("fanout_request_duration_seconds_sum", method, v[LatencySumIndex(m)] * 1e-6);
    out.Sample("fanout_request_duration_seconds_count", method, cum);
  }
  out.Family("fanout_request_cpu_seconds_total", "counter",
             "CPU seconds spent serving requests, by method (the serving thread's and its helper "
             "threads'; the transport's own work is not in it).");
  for (int m = 0; m < kNumMethods; ++m)
    out.Sample("fanout_request_cpu_seconds_total", label("method", MethodName(m)),
               v[CpuSumIndex(m)] * 1e-6);
  out.Append(extra);
  return out.str();
}

std::string ServerMetrics::WindowsJson() const {
  std::vector<int64_t> now_v;
  counters_.Snapshot(&now_v);
  auto now = std::chrono::steady_clock::now();
  std::deque<Snap> ring;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ring = ring_;
  }
  // The snapshot closest to `seconds` ago (the oldest one if the server is younger).
  auto base = [&](double seconds) -> const Snap* {
    const Snap* best = nullptr;
    for (const Snap& s : ring) {
      double age = std::chrono::duration<double>(now - s.at).count();
      if (age >= seconds - 0.5) best = &s;
    }
    if (!best && !ring.empty()) best = &ring.front();
    return best;
  };
  nlohmann::json tp, lat;
  for (int w : {1, 10, 60}) {
    const Snap* b = base(w);
    nlohmann::json j;
    if (b == nullptr) {
      j = nullptr;
    } else {
      double dt = std::chrono::duration<double>(now - b->at).count();
      if (dt <= 0) dt = 1e-9;
      auto rate = [&](int idx) { return (now_v[idx] - b->values[idx]) / dt; };
      int64_t reqs = 0;
      for (int m = 0; m < kNumMethods; ++m)
        for (int o = 0; o < kNumOutcomes; ++o)
          reqs += now_v[RequestIndex(m, o)] - b->values[RequestIndex(m, o)];
      j = {{"window_s", dt},
           {"sampled_edges_per_s", rate(kSampledEdges)},
           {"sampled_nodes_per_s", rate(kSampledNodes)},
           {"feature_bytes_per_s", rate(kFeatureBytes)},
           {"feature_rows_per_s", rate(kFeatureRows)},
           {"updates_per_s", rate(kUpdateOperations)},
           {"requests_per_s", reqs / dt}};
      for (int p = 0; p < kNumPaths; ++p)
        j["by_path"][PathName(p)] = {{"requests_per_s", rate(PathRequestIndex(p))},
                                     {"reply_bytes_per_s", rate(PathBytesIndex(p))}};
    }
    tp[std::to_string(w) + "s"] = j;
  }
  // Latency percentiles per method over the last 60 s (bucket upper bounds).
  const Snap* b = base(60);
  for (int m = 0; m < kNumMethods; ++m) {
    std::vector<int64_t> d(kBuckets);
    int64_t total = 0;
    for (int k = 0; k < kBuckets; ++k) {
      d[k] = now_v[BucketIndex(m, k)] - (b ? b->values[BucketIndex(m, k)] : 0);
      total += d[k];
    }
    if (total == 0) continue;
    lat[MethodName(m)] = {{"count", total},
                          {"p50_ms", PercentileMs(d, total, 0.5)},
                          {"p99_ms", PercentileMs(d, total, 0.99)}};
  }
  nlohmann::json out = {{"throughput", tp},
                        {"latency", lat.is_null() ? nlohmann::json::object() : lat}};
  return out.dump();
}

}  // namespace fanout::server
