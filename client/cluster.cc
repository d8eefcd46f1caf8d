// Cluster: connecting to every partition's replicas (PartitionInfo checked
// against one dataset), the co-located exports mapped here, the data-plane
// context. Cluster files: cluster_file.cc; replica health: replica_health.cc;
// sessions (routing and merging, one link per partition): cluster_session.cc.
#include "client/cluster.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "common/version.h"

namespace fanout::client {

namespace {
constexpr int kExportAttempts = 3;  // at Connect: then RPC for the cluster's life
}  // namespace

Status Cluster::Connect(const ClusterSpec& spec, const rpc::RpcOptions& given,
                        std::shared_ptr<Cluster>* out) {
  auto c = std::shared_ptr<Cluster>(new Cluster());
  rpc::RpcOptions options = given;  // the file's TLS and token win
  if (spec.tls.enabled()) options.tls = spec.tls;
  if (!spec.auth_token_file.empty())
    FANOUT_RETURN_IF_ERROR(fanout::ReadAuthTokenFile(spec.auth_token_file, 1, &options.auth_token));
  c->options_ = options;
  c->replicas_ = spec.replicas;
  const int k = static_cast<int>(spec.replicas.size());
  for (int p = 0; p < k; ++p) {
    Status last;
    bool found = false;
    for (const std::string& addr : spec.replicas[p]) {
      std::unique_ptr<rpc::RpcClient> client;
      rpc::RemotePartitionInfo info;
      // Where other replicas could answer, a stopped one costs a probe's
      // deadline, not the call deadline.
      const rpc::RpcOptions ro = spec.replicas[p].size() > 1 ? ProbeOptions(options) : options;
      last = rpc::RpcClient::Connect(addr, ro, &client);
      if (last.ok()) last = client->Info(&info);
      if (!last.ok()) continue;
      if (info.partition != p)
        return Status::InvalidArgument(
            "server " + addr + " serves partition " + std::to_string(info.partition) +
            " but the cluster file lists it as partition " + std::to_string(p));
      if (info.num_parts != k)
        return Status::InvalidArgument(
            "server " + addr + " belongs to a dataset of " + std::to_string(info.num_parts) +
            " partitions but the cluster file lists " + std::to_string(k));
      c->NoteVersion(addr, info);
      c->addresses_.push_back(addr);
      c->info_.push_back(info);
      found = true;
      break;
    }
    if (!found)
      return Status::FromCode(
          static_cast<int>(last.code()),
          "no replica of partition " + std::to_string(p) + " answers: " + last.message());
  }
  const rpc::RemotePartitionInfo& first = c->info_[0];
  c->offsets_.push_back(0);
  for (int p = 0; p < k; ++p) {
    const rpc::RemotePartitionInfo& i = c->info_[p];
    if (i.dataset_id != first.dataset_id)
      return Status::InvalidArgument("servers " + c->addresses_[0] + " and " + c->addresses_[p] +
                                     " belong to different datasets ('" + first.dataset_name +
                                     "' " + first.dataset_id + " vs '" + i.dataset_name + "' " +
                                     i.dataset_id + ")");
    if (i.node_begin != c->offsets_.back())
      return Status::InvalidArgument("partition ranges do not tile the id space: partition " +
                                     std::to_string(p) + " at " + c->addresses_[p] + " starts at " +
                                     std::to_string(i.node_begin) + ", expected " +
                                     std::to_string(c->offsets_.back()));
    c->offsets_.push_back(i.node_end);
  }
  if (c->offsets_.back() != first.num_nodes_total)
    return Status::InvalidArgument("partition ranges end at " + std::to_string(c->offsets_.back()) +
                                   " but the dataset has " + std::to_string(first.num_nodes_total) +
                                   " nodes");
  if (!first.node_types
           .empty()) {  // heterogeneous: every partition serves the same schema (one dataset id)
    sampler::HeteroSchema& h = c->hetero_;
    h.node_types = first.node_types;
    for (const std::string& name : first.edge_types) {
      Status st = h.AddEdgeTypeNamed(name);
      if (!st.ok()) return Status::Corruption("server " + c->addresses_[0] + ": " + st.message());
    }
    h.type_bounds = first.node_type_bounds;
    h.feature_dims = first.node_type_feature_dims;
    h.incoming = first.direction != "out";
    Status st = h.Check(k, first.num_nodes_total, first.feature_dim);
    if (!st.ok()) return Status::Corruption("server " + c->addresses_[0] + ": " + st.message());
  }
  const rpc::DataPlaneMode mode = spec.has_data_plane ? spec.data_plane : options.data_plane;
  c->requested_ = mode;
  if (mode == rpc::DataPlaneMode::kUcx) {
    for (int p = 0; p < k; ++p)
      if (c->info_[p].data_port <= 0)
        return Status::Unavailable(
            "data plane \"ucx\" was asked for, but server " + c->addresses_[p] +
            " offers none (it runs with --data-plane off, or was built without UCX)");
  }
  // Same host: each partition whose server's export maps here is read here.
  c->local_.resize(k);
  c->local_sampling_ = spec.has_local_sampling ? spec.local_sampling : options.local_sampling;
  int remote = k;
  c->exporter_.assign(k, -1);
  if (mode == rpc::DataPlaneMode::kAuto) {
    for (int p = 0; p < k; ++p) {
      const rpc::RemotePartitionInfo& i = c->info_[p];
      if (i.local_socket.empty()) continue;
      // A busy or restarting export is tried again with backoff before the
      // partition settles on the RPC paths; a refusal that will not change
      // (identity, uid, a bad layout) is not.
      Status st;
      int backoff = 50;
      for (int attempt = 0;; ++attempt) {
        // The hello's credential: the data-plane ticket this client's authenticated
        // connection was handed (a server with tenants maps only a current tenant's),
        // else the auth token.
        st = LocalPartition::Open(i, c->hetero_.num_edge_types(),
                                  i.data_ticket.empty() ? options.auth_token : i.data_ticket,
                                  options.connect_timeout_ms, &c->local_[p]);
        const bool again = st.code() == Status::Code::kUnavailable ||
                           st.code() == Status::Code::kResourceExhausted ||
                           st.code() == Status::Code::kDeadlineExceeded;
        if (!again || attempt + 1 >= kExportAttempts) break;
        ++c->local_retries_;
        std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
        backoff *= 4;
      }
      if (st.ok()) {
        --remote;
        const auto& reps = c->replicas_[p];
        c->exporter_[p] =
            static_cast<int>(std::find(reps.begin(), reps.end(), c->addresses_[p]) - reps.begin());
      } else if (st.code() != Status::Code::kNotFound) {  // NotFound: the server is on another host
        ++c->local_refused_;
        std::fprintf(stderr,
                     "fanout: partition %d: the same-host export of server %s is not used (%s); "
                     "its requests go over the RPC paths\n",
                     p, c->addresses_[p].c_str(), st.message().c_str());
      }
    }
  }
  if (mode != rpc::DataPlaneMode::kTcp && remote > 0) {
    Status st = rpc::DataPlaneContext::Create(&c->data_ctx_);
    if (st.ok()) {
      c->mode_ = mode;
    } else if (mode == rpc::DataPlaneMode::kUcx) {
      return Status::FromCode(static_cast<int>(st.code()),
                              "data plane \"ucx\" was asked for: " + st.message());
    } else {
      std::fprintf(
          stderr,
          "fanout: the UCX data plane is not available (%s); using Thrift for every server\n",
          st.message().c_str());
    }
  }
  c->state_.resize(k);
  for (int p = 0; p < k; ++p)
    for (size_t r = 0; r < c->replicas_[p].size(); ++r)
      c->state_[p].push_back(std::make_unique<Replica>());
  for (int p = 0; p < k; ++p)
    c->health_checks_ |= options.health_check_ms > 0 && c->replicas_[p].size() > 1;
  if (c->health_checks_)
    for (int p = 0; p < k; ++p)
      if (c->replicas_[p].size() > 1)
        for (size_t r = 0; r < c->replicas_[p].size(); ++r)
          c->health_threads_.emplace_back(
              [raw = c.get(), p, r] { raw->ProbeLoop(p, static_cast<int>(r)); });
  c->pending_.resize(k);
  c->report_clients_.resize(k);
  c->report_to_.assign(k, -1);
  if (remote < k) c->report_thread_ = std::thread([raw = c.get()] { raw->ReportLoop(); });
  *out = std::move(c);
  return Status::OK();
}

Cluster::~Cluster() {
  {
    std::lock_guard<std::mutex> lock(health_mu_);
    health_stop_ = true;
  }
  health_cv_.notify_all();
  for (std::thread& t : health_threads_) t.join();
  if (report_thread_.joinable()) {
    report_thread_.join();
    SendReports();  // what the sessions handed over last (they are all gone): not lost
  }
}

void Cluster::NoteFallback(const std::string& address, const std::string& why) const {
  std::lock_guard<std::mutex> lock(log_mu_);
  if (!logged_.insert(address).second) return;
  std::fprintf(stderr, "fanout: data plane to server %s: %s; its requests go over Thrift\n",
               address.c_str(), why.c_str());
}

PartitionPath Cluster::PathOf(int p, const std::string& replica, int route, int64_t sessions) {
  static const char* const kPath[kRoutes] = {"local", "local", "local", "ucx", "thrift"};
  static const char* const kSampling[kRoutes] = {"local", "ucx", "thrift", "ucx", "thrift"};
  PartitionPath out;
  out.partition = p;
  out.replica = replica;
  out.path = kPath[route];
  out.sampling = kSampling[route];
  out.sessions = sessions;
  return out;
}

void Cluster::MovePath(int p, int r0, int route0, int r1, int route1) const {
  if (r0 == r1 && route0 == route1) return;
  if (r0 >= 0 && route0 >= 0) state_[p][r0]->sessions_on[route0].fetch_sub(1);
  if (r1 >= 0 && route1 >= 0) state_[p][r1]->sessions_on[route1].fetch_add(1);
}

std::vector<PartitionPath> Cluster::Paths() const {
  std::vector<PartitionPath> out;
  for (int p = 0; p < num_parts(); ++p) {
    bool any = false;
    for (size_t r = 0; r < replicas_[p].size(); ++r)
      for (int route = 0; route < kRoutes; ++route) {
        const int64_t n = state_[p][r]->sessions_on[route].load(std::memory_order_relaxed);
        if (n <= 0) continue;
        out.push_back(PathOf(p, replicas_[p][r], route, n));
        any = true;
      }
    if (any) continue;
    // No session open: what the next one takes on the first replica.
    const bool dp = data_ctx_ != nullptr && info_[p].data_port > 0;
    int route = dp ? kUcxRoute : kThriftRoute;
    if (local_[p] != nullptr)
      route = local_sampling_ ? kLocalRoute : dp ? kLocalReadsUcx : kLocalReadsThrift;
    out.push_back(PathOf(p, addresses_[p], route, 0));
  }
  return out;
}

void Cluster::NoteVersion(const std::string& address, const rpc::RemotePartitionInfo& info) const {
  const std::string mine = VersionString();
  if (info.server_version == mine) return;
  std::lock_guard<std::mutex> lock(log_mu_);
  if (!version_logged_.insert(address).second) return;
  std::fprintf(stderr, "fanout: server %s runs Fanout %s; this client is %s\n", address.c_str(),
               info.server_version.empty() ? "(an older release that does not say its version)"
                                           : info.server_version.c_str(),
               mine.c_str());
}

std::string Cluster::description() const {
  std::string s = "cluster of " + std::to_string(num_parts()) + " partition(s) of '" +
                  info_[0].dataset_name + "':";
  for (const auto& a : addresses_) s += " " + a;
  return s;
}

Status Cluster::OriginalNames(ArrayView<const int64_t> ids, std::vector<std::string>* out) const {
  out->assign(ids.size(), std::string());
  const int k = num_parts();
  std::vector<std::vector<int64_t>> ask(static_cast<size_t>(k));
  std::vector<std::vector<size_t>> at(static_cast<size_t>(k));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= offsets_.back())
      return Status::InvalidArgument("node " + std::to_string(ids[i]) + " is outside [0, " +
                                     std::to_string(offsets_.back()) + ")");
    const int p = static_cast<int>(std::upper_bound(offsets_.begin(), offsets_.end(), ids[i]) -
                                   offsets_.begin()) -
                  1;
    ask[p].push_back(ids[i]);
    at[p].push_back(i);
  }
  for (int p = 0; p < k; ++p) {
    if (ask[p].empty()) continue;
    Status st = Status::Unavailable("partition " + std::to_string(p) + " lists no replica");
    std::vector<std::string> names;
    for (const std::string& address : replicas_[p]) {
      std::unique_ptr<rpc::RpcClient> c;
      st = rpc::RpcClient::Connect(address, options_, &c);
      if (st.ok()) st = c->OriginalNames(ArrayView<const int64_t>(ask[p]), &names);
      if (st.ok() || st.code() == Status::Code::kNotFound ||
          st.code() == Status::Code::kInvalidArgument)
        break;
    }
    FANOUT_RETURN_IF_ERROR(st);
    for (size_t j = 0; j < names.size(); ++j) (*out)[at[p][j]] = std::move(names[j]);
  }
  return Status::OK();
}

}  // namespace fanout::client
