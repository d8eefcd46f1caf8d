// Reports of the work this process did itself on co-located servers'
// exports, so their admin endpoints still show the partition's whole
// throughput. Sessions hand their counts to the cluster (no call); one
// background thread sends them once a second with a short deadline, to a
// replica that passes its health checks; what does not arrive is kept and
// merged into the next report; the cluster's close sends what is left. No
// batch ever waits on a report.
#include <algorithm>

#include "client/cluster.h"

namespace fanout::client {

namespace {
constexpr int kReportIntervalMs = 1000;
constexpr int kReportTimeoutMs = 1000;  // connect and call: a stopped server costs this, here only
}  // namespace

void Cluster::AddLocalWork(int p, const rpc::LocalWork& work) const {
  if (work.empty()) return;
  std::lock_guard<std::mutex> lock(report_mu_);
  pending_[p].Add(work);
}

Cluster::LocalReportStats Cluster::local_report_stats() const {
  std::lock_guard<std::mutex> lock(report_mu_);
  LocalReportStats s = report_stats_;
  s.pending_requests = 0;
  for (const rpc::LocalWork& w : pending_) s.pending_requests += w.requests;
  return s;
}

int Cluster::ReportReplica(int p) const {
  const int r = exporter_[p];
  if (r < 0) return -1;
  for (int c : ReplicaOrder(p, r))
    if (Healthy(p, c)) return c;
  return -1;
}

void Cluster::SendReports() {
  for (int p = 0; p < num_parts(); ++p) {
    rpc::LocalWork work;
    {
      std::lock_guard<std::mutex> lock(report_mu_);
      std::swap(work, pending_[p]);
    }
    if (work.empty()) continue;
    const int r = ReportReplica(p);
    Status st = Status::Unavailable("no replica passes its health checks");
    if (r >= 0) {
      if (report_to_[p] != r) report_clients_[p].reset();
      if (!report_clients_[p]) {
        rpc::RpcOptions ro = options_;
        ro.connect_timeout_ms = std::min(ro.connect_timeout_ms, kReportTimeoutMs);
        ro.call_timeout_ms = std::min(ro.call_timeout_ms, kReportTimeoutMs);
        st = rpc::RpcClient::Connect(replicas_[p][r], ro, &report_clients_[p]);
        report_to_[p] = st.ok() ? r : -1;
      }
      if (report_clients_[p]) st = report_clients_[p]->ReportLocal(p, work);
      if (!st.ok()) report_clients_[p].reset();
    }
    std::lock_guard<std::mutex> lock(report_mu_);
    if (st.ok()) {
      ++report_stats_.sent;
      continue;
    }
    // Kept for the next round (a report that timed out may have arrived
    // after all: counted twice then, never lost).
    pending_[p].Add(work);
    if (r < 0)
      ++report_stats_.skipped;
    else
      ++report_stats_.failed;
  }
}

void Cluster::ReportLoop() {
  while (WaitHealth(std::chrono::milliseconds(kReportIntervalMs))) SendReports();
}

}  // namespace fanout::client
