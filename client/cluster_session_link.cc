// ClusterSession's link policy: opening each partition's link, failover to
// another replica, fallback from the data plane to Thrift and re-probing it,
// going home after a failover, and routing ids to partitions.
#include "client/detail/cluster_session.h"

namespace fanout::client {

int ClusterSession::RouteOf(int p) const {
  const bool ucx = channel_ && links_[p].peer >= 0;
  if (Local(p) != nullptr) {
    if (LocalSampling()) return Cluster::kLocalRoute;
    return ucx ? Cluster::kLocalReadsUcx : Cluster::kLocalReadsThrift;
  }
  return ucx ? Cluster::kUcxRoute : Cluster::kThriftRoute;
}

int ClusterSession::RouteReplica(int p) const {
  // Read and sampled here: the replica whose export is mapped.
  if (Local(p) != nullptr && LocalSampling() && c_->exporter_[p] >= 0) return c_->exporter_[p];
  return links_[p].replica;
}

void ClusterSession::SyncPath(int p) {
  const int r = RouteReplica(p), route = RouteOf(p);
  c_->MovePath(p, path_replica_[p], path_route_[p], r, route);
  path_replica_[p] = r;
  path_route_[p] = route;
}

std::vector<PartitionPath> ClusterSession::Paths() const {
  std::vector<PartitionPath> out;
  for (int p = 0; p < static_cast<int>(links_.size()); ++p)
    out.push_back(Cluster::PathOf(p, c_->replicas_[p][RouteReplica(p)], RouteOf(p), 1));
  return out;
}

Status ClusterSession::Open() {
  const int k = c_->num_parts();
  links_.resize(k);
  path_replica_.assign(k, -1);
  path_route_.assign(k, -1);
  for (int p = 0; p < k; ++p) links_[p].info = c_->info_[p];
  // Sessions start on different replicas (round robin), so a loader's
  // workers spread over them; each replica is checked like Connect()'s.
  const uint64_t seq = c_->sessions_++;
  for (int p = 0; p < k; ++p) {
    const auto& reps = c_->replicas_[p];
    const int found =
        static_cast<int>(std::find(reps.begin(), reps.end(), c_->addresses_[p]) - reps.begin());
    // Its own replica in turn, or the next healthy one after it.
    links_[p].home = static_cast<int>((found + seq) % reps.size());
    links_[p].replica = c_->ReplicaOrder(p, links_[p].home).front();
    // Read and sampled here from its mapped export, which outlives the
    // server: nothing needs the server, so nothing waits on it (connected
    // on first need only, EnsureClient).
    if (Local(p) != nullptr && LocalSampling()) continue;
    Status st = c_->ConnectReplica(p, links_[p].replica, &links_[p].client, &links_[p].info);
    if (!st.ok()) {
      // Gone (or not what it should be): another one, where there is one.
      std::vector<std::string> tried;
      FANOUT_RETURN_IF_ERROR(Failover(p, st, &tried));
    }
  }
  by_part_.resize(k);
  served_.assign(k, 0);
  local_hops_.resize(k);
  local_counts_.resize(k);
  work_.resize(k);
  last_handoff_ = std::chrono::steady_clock::now();
  times_by_part_.resize(k);
  walk_keys_by_part_.resize(k);
  pos_.resize(k);
  replies_.resize(k);
  dp_replies_.resize(k);
  views_.resize(k);
  if (ctx_) {
    const bool must = must_ucx_;
    Status st = rpc::DataPlaneChannel::Create(ctx_, c_->options_, &channel_);
    if (!st.ok()) {
      if (must) return st;
      for (int p = 0; p < k; ++p) c_->NoteFallback(Address(p), st.message());
      for (int p = 0; p < k; ++p) SyncPath(p);
      return Status::OK();
    }
    for (int p = 0; p < k; ++p) {
      if (Local(p) != nullptr && LocalSampling()) continue;  // everything of it is read here
      if (links_[p].info.data_port <= 0) {
        c_->NoteFallback(Address(p), "the server offers no data plane");
        continue;
      }
      st = ConnectDataPlane(p);
      if (!st.ok()) {
        if (must) return st;
        c_->NoteFallback(Address(p), st.message());
        ++stats_.fallbacks;
      }
    }
  }
  for (int p = 0; p < k; ++p) SyncPath(p);
  return Status::OK();
}

void ClusterSession::GoHome() {
  const auto now = std::chrono::steady_clock::now();
  for (int p = 0; p < c_->num_parts(); ++p) {
    if (!links_[p].client || links_[p].replica == links_[p].home ||
        !c_->Healthy(p, links_[p].home) || now < links_[p].next_home_try)
      continue;
    links_[p].next_home_try = now + std::chrono::milliseconds(c_->options_.health_check_ms);
    std::unique_ptr<rpc::RpcClient> client;
    rpc::RemotePartitionInfo info;
    if (!c_->ConnectReplica(p, links_[p].home, &client, &info).ok()) continue;
    if (channel_ && links_[p].peer >= 0) channel_->Abandon(links_[p].peer);
    links_[p].peer = -1;
    links_[p].replica = links_[p].home;
    links_[p].client = std::move(client);
    links_[p].info = info;
    if (channel_ && info.data_port > 0) {
      Status dp = ConnectDataPlane(p);
      if (!dp.ok()) c_->NoteFallback(Address(p), dp.message());
    }
    SyncPath(p);
  }
}

Status ClusterSession::EnsureClient(int p) {
  if (links_[p].client) return Status::OK();
  Status last;
  for (int r : c_->ReplicaOrder(p, links_[p].home)) {
    rpc::RemotePartitionInfo info;
    last = c_->ConnectReplica(p, r, &links_[p].client, &info);
    if (!last.ok()) continue;
    links_[p].replica = r;
    links_[p].info = info;
    SyncPath(p);
    return Status::OK();
  }
  return Status::FromCode(
      static_cast<int>(last.code()),
      "partition " + std::to_string(p) + ": no replica answers: " + last.message());
}

Status ClusterSession::ConnectDataPlane(int p) {
  links_[p].peer = -1;
  const std::string& addr = c_->replicas_[p][links_[p].replica];
  std::string host;
  int port = 0;
  FANOUT_RETURN_IF_ERROR(rpc::ParseAddress(addr, &host, &port));
  int peer = -1;
  FANOUT_RETURN_IF_ERROR(
      channel_->Connect(host, links_[p].info.data_port, addr, &peer, links_[p].info.data_ticket));
  links_[p].peer = peer;
  return Status::OK();
}

Status ClusterSession::Failover(int p, const Status& why, std::vector<std::string>* tried) {
  const auto& reps = c_->replicas_[p];
  const int n = static_cast<int>(reps.size());
  // A server closes connections that idle too long or that make room for
  // new ones (ConnectionGuard): on the first Unavailable the same replica
  // is asked again, on a new connection, before any other.
  const bool same_first = why.code() == Status::Code::kUnavailable && tried->empty();
  if (n < 2 && !same_first) return why;  // nowhere else to go
  tried->push_back(reps[links_[p].replica] + ": " + why.message());
  c_->NoteFailure(p, links_[p].replica, why.message());
  // A request that timed out calls its replica down for every session
  // (the health probes call it up again once it answers).
  if (n >= 2 && why.code() == Status::Code::kDeadlineExceeded)
    c_->MarkDown(p, links_[p].replica, "a request timed out: " + why.message());
  if (channel_ && links_[p].peer >= 0) channel_->Abandon(links_[p].peer);
  links_[p].peer = -1;
  SyncPath(p);
  // The others from the next one on, those that pass their health checks
  // first; the same one again after a round (after backoff).
  std::vector<int> order;
  if (same_first) order.push_back(links_[p].replica);
  if (n >= 2) {
    for (int r : c_->ReplicaOrder(p, (links_[p].replica + 1) % n))
      if (r != links_[p].replica) order.push_back(r);
    order.push_back(links_[p].replica);
  }
  int backoff = std::max(1, c_->options_.failover_backoff_ms);
  for (size_t step = 0; step < order.size(); ++step) {
    const int next = order[step];
    if (step + 1 == order.size() &&
        n >= 2) {  // a whole round failed: wait before going round again
      std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
      backoff = std::min(backoff * 2, 5000);
    }
    std::unique_ptr<rpc::RpcClient> client;
    rpc::RemotePartitionInfo info;
    Status st = c_->ConnectReplica(p, next, &client, &info);
    if (!st.ok()) {
      tried->push_back(reps[next] + ": " + st.message());
      continue;
    }
    // The replica it moves to hears of it (counted there for operators:
    // fanout-ctl stats). Best effort: a server too old to know the call,
    // or one failing now, changes nothing here.
    Status noted =
        client->NoteFailover(p, reps[links_[p].replica], why.message(), next == links_[p].replica);
    if (!noted.ok() && !Retryable(noted)) noted = Status::OK();
    if (!noted.ok()) {
      tried->push_back(reps[next] + ": " + noted.message());
      continue;
    }
    if (next != links_[p].replica) {
      ++stats_.failovers;
      ++c_->replica_state(p, next).failovers_to;
      std::fprintf(stderr, "fanout: partition %d: %s failed (%s); now using replica %s\n", p,
                   reps[links_[p].replica].c_str(), why.message().c_str(), reps[next].c_str());
    }
    links_[p].replica = next;
    links_[p].client = std::move(client);
    links_[p].info = info;
    // The new replica's data plane, where this session uses one (else Thrift).
    if (channel_ && info.data_port > 0) {
      Status dp = ConnectDataPlane(p);
      if (!dp.ok()) c_->NoteFallback(Address(p), dp.message());
    }
    SyncPath(p);
    return Status::OK();
  }
  if (n < 2) return why;
  return Status::FromCode(
      static_cast<int>(why.code()),
      "partition " + std::to_string(p) + ": no replica answers: " + Join(*tried));
}

void ClusterSession::Fallback(int p, const Status& why) {
  c_->NoteFallback(Address(p), why.message());
  links_[p].peer = -1;
  ++stats_.fallbacks;
  links_[p].reprobe_at = std::chrono::steady_clock::now() + ReprobeInterval();
  SyncPath(p);
}

std::chrono::milliseconds ClusterSession::ReprobeInterval() const {
  return std::chrono::milliseconds(c_->options_.health_check_ms > 0 ? c_->options_.health_check_ms
                                                                    : 1000);
}

void ClusterSession::Reprobe() {
  const auto now = std::chrono::steady_clock::now();
  for (int p = 0; p < c_->num_parts(); ++p) {
    if (links_[p].peer >= 0 || links_[p].reprobe_at == std::chrono::steady_clock::time_point{} ||
        now < links_[p].reprobe_at)
      continue;
    if (links_[p].info.data_port <= 0 ||
        (c_->health_checks_ && !c_->Healthy(p, links_[p].replica))) {
      links_[p].reprobe_at = now + ReprobeInterval();
      continue;
    }
    Status st = ConnectDataPlane(p);
    links_[p].reprobe_at =
        st.ok() ? std::chrono::steady_clock::time_point{} : now + ReprobeInterval();
    if (st.ok()) {
      SyncPath(p);
      ++stats_.reprobes;
      std::fprintf(stderr,
                   "fanout: data plane to server %s answers again; its requests go over it\n",
                   Address(p).c_str());
    }
  }
}

Status ClusterSession::Route(ArrayView<const int64_t> ids) {
  HandOffLocalWork(false);
  const auto& off = c_->offsets_;
  for (int p = 0; p < c_->num_parts(); ++p) {
    by_part_[p].clear();
    pos_[p].clear();
    served_[p] = 0;
    replies_[p].counts.clear();
    replies_[p].neighbors.clear();
    replies_[p].edge_ids.clear();
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t v = ids[i];
    if (v < 0 || v >= off.back()) return IdOutOfRange(v, i, 0, off.back(), kNoPosition);
    int p = static_cast<int>(std::upper_bound(off.begin(), off.end(), v) - off.begin()) - 1;
    by_part_[p].push_back(v);
    pos_[p].push_back(static_cast<int64_t>(i));
  }
  return Status::OK();
}

rpc::DataRequest ClusterSession::PartRequest(const rpc::DataRequest& base, int p) const {
  rpc::DataRequest r = base;
  r.ids = by_part_[p];
  if (!base.call.walk_keys.empty()) r.call.walk_keys = walk_keys_by_part_[p];
  r.call.version = pinned_.empty() ? -1 : pinned_[p];
  return r;
}

}  // namespace fanout::client
