// Replica health: the cluster's health thread, the order replicas are tried
// in, per-replica failure counts, and the Thrift calls a failed health check
// ends at once.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "client/cluster.h"

namespace fanout::client {

int Cluster::ProbeDeadlineMs(const rpc::RpcOptions& o) {
  // Pings, info and the control calls of a connect are answered outside the
  // request budget, so a healthy server answers them at once however busy:
  // half the health interval is ample, and never under kMinProbeDeadlineMs.
  return std::max(kMinProbeDeadlineMs, o.health_check_ms / 2);
}

rpc::RpcOptions Cluster::ProbeOptions(const rpc::RpcOptions& o) {
  rpc::RpcOptions ro = o;
  const int probe = ProbeDeadlineMs(o);
  ro.connect_timeout_ms = std::min(ro.connect_timeout_ms, probe);
  ro.call_timeout_ms = std::min(ro.call_timeout_ms, probe);
  return ro;
}

bool Cluster::WaitHealth(std::chrono::milliseconds ms) {
  std::unique_lock<std::mutex> lock(health_mu_);
  return !health_cv_.wait_for(lock, ms, [this] { return health_stop_; });
}

Status Cluster::ConnectReplica(int p, int r, std::unique_ptr<rpc::RpcClient>* client,
                               rpc::RemotePartitionInfo* info) const {
  const bool elsewhere = replicas_[p].size() > 1;
  const rpc::RpcOptions ro = elsewhere ? ProbeOptions(options_) : options_;
  std::unique_ptr<rpc::RpcClient> c;
  FANOUT_RETURN_IF_ERROR(rpc::RpcClient::Connect(replicas_[p][r], ro, &c));
  FANOUT_RETURN_IF_ERROR(c->Info(info));
  FANOUT_RETURN_IF_ERROR(SameReplica(p, *info));
  NoteVersion(replicas_[p][r], *info);
  if (elsewhere) c->SetCallTimeoutMs(options_.call_timeout_ms);
  *client = std::move(c);
  return Status::OK();
}

void Cluster::MarkDown(int p, int r, const std::string& why) const {
  Replica& st = *state_[p][r];
  // The reason first: whoever sees the replica marked down (Health() reads
  // `healthy` first) also sees why.
  {
    std::lock_guard<std::mutex> l(st.mu);
    st.last_error = why;
  }
  if (st.healthy.exchange(false))
    std::fprintf(stderr, "fanout: partition %d: replica %s is down: %s\n", p,
                 replicas_[p][r].c_str(), why.c_str());
  // Thrift calls waiting on it end now (their sessions move them to another
  // replica) instead of at their deadline.
  std::lock_guard<std::mutex> l(st.mu);
  for (int fd : st.waiting) ::shutdown(fd, SHUT_RDWR);
}

void Cluster::ProbeLoop(int p, int r) {
  // Its own deadline even where a call's is shorter: a verdict needs an answer.
  rpc::RpcOptions ro = options_;
  ro.connect_timeout_ms = ro.call_timeout_ms = ProbeDeadlineMs(options_);
  std::unique_ptr<rpc::RpcClient> client;
  Replica& st = *state_[p][r];
  do {
    std::string pong;
    Status ok = client ? client->Ping("health", &pong) : Status::Unavailable("not connected");
    if (!ok.ok() && ok.code() != Status::Code::kDeadlineExceeded) {
      // The connection may predate a restart, or have been closed as idle: a
      // new one decides, and what answers there must serve this partition of
      // this dataset (a replica of another dataset is not healthy, whatever
      // it answers).
      client.reset();
      ok = rpc::RpcClient::Connect(replicas_[p][r], ro, &client);
      if (ok.ok()) ok = client->Ping("health", &pong);
      rpc::RemotePartitionInfo info;
      if (ok.ok()) ok = client->Info(&info);
      if (ok.ok()) ok = SameReplica(p, info);
    }
    ++st.checks;
    if (ok.ok()) {
      st.failed_in_row = 0;
      if (!st.healthy.exchange(true))
        std::fprintf(stderr, "fanout: partition %d: replica %s answers its health check again\n", p,
                     replicas_[p][r].c_str());
      continue;
    }
    client.reset();
    ++st.checks_failed;
    if (++st.failed_in_row >= kDownAfterFailures) {
      MarkDown(
          p, r,
          std::to_string(st.failed_in_row) + " health checks in a row failed: " + ok.message());
    } else {
      std::lock_guard<std::mutex> l(st.mu);
      st.last_error = ok.message();
      continue;  // once more at once: one late answer does not call it down
    }
  } while (
      WaitHealth(std::chrono::milliseconds(st.failed_in_row == 1 ? 0 : options_.health_check_ms)));
}

Status Cluster::SameReplica(int p, const rpc::RemotePartitionInfo& info) const {
  const rpc::RemotePartitionInfo& want = info_[p];
  if (info.partition != p || info.dataset_id != want.dataset_id ||
      info.node_begin != want.node_begin || info.node_end != want.node_end)
    return Status::InvalidArgument("serves partition " + std::to_string(info.partition) +
                                   " of dataset '" + info.dataset_name + "' " + info.dataset_id +
                                   ", not partition " + std::to_string(p) + " of '" +
                                   want.dataset_name + "' " + want.dataset_id);
  return Status::OK();
}

std::vector<int> Cluster::ReplicaOrder(int p, int start) const {
  const int n = static_cast<int>(replicas_[p].size());
  std::vector<int> order;
  for (int pass = 0; pass < 2; ++pass)
    for (int i = 0; i < n; ++i) {
      const int r = (start + i) % n;
      if (Healthy(p, r) == (pass == 0)) order.push_back(r);
    }
  return order;
}

void Cluster::WatchCall(int p, int r, int fd) const {
  Replica& st = *state_[p][r];
  std::lock_guard<std::mutex> lock(st.mu);
  st.waiting.insert(fd);
  // Marked down before this was seen by the health thread's shutdown pass
  // (it marks first, then shuts down under this lock): end it here.
  if (!st.healthy.load()) ::shutdown(fd, SHUT_RDWR);
}

void Cluster::UnwatchCall(int p, int r, int fd) const {
  Replica& st = *state_[p][r];
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.waiting.erase(fd);
  }
  ::close(fd);
}

void Cluster::NoteFailure(int p, int r, const std::string& why) const {
  Replica& st = *state_[p][r];
  ++st.failures;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.last_error = why;
  }
}

std::vector<ReplicaHealth> Cluster::Health() const {
  std::vector<ReplicaHealth> out;
  for (int p = 0; p < num_parts(); ++p)
    for (size_t r = 0; r < replicas_[p].size(); ++r) {
      Replica& st = *state_[p][r];
      ReplicaHealth h;
      h.partition = p;
      h.address = replicas_[p][r];
      h.healthy = st.healthy;
      h.checks = st.checks;
      h.checks_failed = st.checks_failed;
      h.failures = st.failures;
      h.failovers_to = st.failovers_to;
      std::lock_guard<std::mutex> lock(st.mu);
      h.last_error = st.last_error;
      out.push_back(std::move(h));
    }
  return out;
}

}  // namespace fanout::client
