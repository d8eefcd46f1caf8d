#include "server/partition_server.h"

#include <fcntl.h>
#include <httplib.h>
#include <malloc.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TThreadedServer.h>
#include <thrift/transport/TSSLServerSocket.h>
#include <thrift/transport/TSSLSocket.h>
#include <thrift/transport/TServerSocket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>

#include "common/cpu.h"
#include "common/secret.h"
#include "rpc/data_plane.h"
#include "rpc/framed_transport.h"
#include "rpc/local_export.h"
#include "rpc/partition_export.h"
#include "server/data_plane_service.h"
#include "server/handler.h"
#include "server/partition_server_admin.h"
#include "server/tls_subject.h"

namespace fanout::server {

using apache::thrift::server::TServerEventHandler;
using apache::thrift::server::TThreadedServer;
using apache::thrift::transport::TServerSocket;

namespace {
// Signals Start() once the server socket listens.
class ReadySignal : public TServerEventHandler {
 public:
  void preServe() override { ready.set_value(); }
  std::promise<void> ready;
};
}  // namespace

struct PartitionServer::Rpc {
  std::shared_ptr<TServerSocket> socket;
  std::shared_ptr<TThreadedServer> server;
  std::thread thread;
};

namespace {
// A server with credentials gives connections that have not yet presented
// them a small pool of their own (ConnectionGuard).
rpc::ConnectionLimits GuardLimits(const ServerOptions& o) {
  rpc::ConnectionLimits l = o.limits;
  if (l.unauthenticated_connections == 0 && (!o.tenants_file.empty() || !o.auth_token.empty()))
    l.unauthenticated_connections = rpc::ConnectionLimits::UnauthenticatedPool(l.max_connections);
  return l;
}
}  // namespace

PartitionServer::PartitionServer(ServerOptions options)
    : options_(std::move(options)),
      guard_(std::make_shared<rpc::ConnectionGuard>(GuardLimits(options_))) {}

PartitionServer::PartitionServer(ServerOptions options,
                                 std::shared_ptr<const datasets::PartitionData> data)
    : options_(std::move(options)),
      data_(std::move(data)),
      guard_(std::make_shared<rpc::ConnectionGuard>(GuardLimits(options_))) {}

PartitionServer::~PartitionServer() { Stop(); }

const ServerMetrics& PartitionServer::metrics() const { return state_->counters.metrics; }
const datasets::PartitionView& PartitionServer::view() const { return state_->view; }
const std::string& PartitionServer::local_socket() const { return state_->local_socket; }

const std::string& PartitionServer::local_off_reason() const { return state_->local_off_reason; }

namespace {
// A tenant named by its TLS subject can be reached only where clients present
// certificates (--tls-ca): without it, its line is an error naming it.
Status CheckTenantsReachable(const TenantTable& table, const ServerOptions& o) {
  if (!o.tls_ca.empty()) return Status::OK();
  for (const Tenant& t : table.tenants())
    if (!t.tls_subject.empty())
      return Status::InvalidArgument(
          o.tenants_file + " line " + std::to_string(t.line) + ": tenant '" + t.name +
          "' is named by tls_subject, but this server asks for no client certificate "
          "(--tls-ca, with --tls-cert and --tls-key): no connection could be charged to it");
  return Status::OK();
}
}  // namespace

const char* PartitionServer::state() const {
  static const char* kNames[] = {"loading", "serving", "draining", "stopped"};
  return kNames[phase_.load()];
}

Status PartitionServer::Start() {
  started_at_ = std::chrono::steady_clock::now();
  state_ = std::make_unique<ServerState>();
  {
    storage::IoGateOptions g;
    g.budget = options_.io_gate_budget;
    g.latency_factor = options_.io_gate_latency_factor;
    state_->io_gate.Configure(g);
  }
  // Requests computed at once (the usable CPUs unless --scheduler-slots): the
  // scheduler's slots, and what sizes the disk tier's reader pool.
  const int slots =
      options_.scheduler_slots > 0 ? options_.scheduler_slots : std::max(1, UsableCpuCount());
  {
    // Tenants first: a bad file stops the server before it loads anything.
    std::shared_ptr<const TenantTable> table;
    if (!options_.tenants_file.empty()) {
      if (!options_.auth_token.empty())
        return Status::InvalidArgument(
            "--tenants names each tenant's token: give tokens there, not --auth-token-file");
      FANOUT_RETURN_IF_ERROR(TenantTable::Load(options_.tenants_file, &table));
      FANOUT_RETURN_IF_ERROR(CheckTenantsReachable(*table, options_));
    }
    SchedulerOptions so;
    so.slots = slots;
    // As many more for online work alone: a query never waits for batch
    // requests to finish (they can be long: thousands of disk reads), only
    // for other queries beyond that.
    so.online_slots = so.slots;
    so.online_io_first = options_.online_io_first;
    // Under the Thrift frame deadline the clients' calls keep to.
    if (options_.limits.frame_timeout_ms > 0)
      so.max_wait = std::chrono::milliseconds(
          std::min<int64_t>(20000, std::max<int64_t>(1000, options_.limits.frame_timeout_ms / 2)));
    state_->tenants_file = table != nullptr;
    // Tickets (the data plane's and the export's credential, handed to
    // authenticated connections) wherever a credential is required: each
    // tenant's own, or the default tenant's with an auth token or TLS.
    const bool tickets =
        table != nullptr || !options_.auth_token.empty() || !options_.tls_cert.empty();
    state_->tenancy = std::make_unique<Tenancy>(table, table != nullptr, so, tickets);
  }
  if (options_.admin_port >= 0) FANOUT_RETURN_IF_ERROR(StartAdmin());
  std::shared_ptr<datasets::PartitionData> owned;  // loaded here: its arrays go once exported
  std::shared_ptr<storage::DiskFeatures> disk;
  if (!data_) {
    auto t0 = std::chrono::steady_clock::now();
    Status st = Load(&owned, &disk);
    if (!st.ok()) {
      Stop();
      return st;
    }
    data_ = owned;
    load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } else {
    // Given ready-made: held as it is.
    plan_ = MemoryPlan();
    plan_.index_bits = data_->indices32.empty() ? 64 : 32;
    plan_.edge_ids_at_start = !data_->edge_ids.empty() || data_->View().num_edges() == 0;
    plan_.why = "given in memory";
  }
  state_->options = options_;
  state_->disk = disk;
  if (disk) {
    // As many readers as requests compute at once (the scheduler's slots, as
    // many again for online work), at least 4: more connections make no more
    // rings or buffers, they wait for a reader.
    state_->readers = std::make_unique<storage::ReaderPool>(disk.get(), std::max(4, 2 * slots));
  }
  state_->edge_ids_at_start = plan_.edge_ids_at_start;
  if (disk) {
    state_->feature_file_path = disk->file().path();
    state_->disk_io_mode = disk_io_mode_;
  }
  state_->data = data_;
  state_->view = data_->View();
  if (disk) {
    state_->view.hot_table = disk->hot_table();
    state_->view.hot_rows = ArrayView<const uint8_t>(
        reinterpret_cast<const uint8_t*>(disk->hot_rows().data()), disk->hot_rows().size());
  }
  // A live server offers no export (it would hold a second
  // copy of the partition nobody maps).
  Status exported = options_.live_dir.empty() ? Export(owned.get()) : Status::OK();
  if (!exported.ok()) {
    Stop();
    return exported;
  }
  state_->graph = state_->view.Graph();
  int64_t max_degree = 0;
  for (int64_t v = 0; v < state_->graph.num_nodes(); ++v)
    max_degree = std::max(max_degree, state_->graph.degree(v));
  state_->max_degree = max_degree;
  if (data_->meta.has_edge_times)
    state_->time_index = sampler::PrepareTimeOrder(
        state_->graph, state_->view.edge_times.data(), &state_->time_order,
        state_->view.edge_types.empty() ? nullptr : state_->view.edge_types.data());
  int workers = options_.threads > 0 ? options_.threads - 1 : std::max(1, UsableCpuCount() - 1);
  state_->pool = std::make_unique<ThreadPool>(workers);
  if (!options_.live_dir.empty()) {
    // A live partition: its log replayed over the base before any request.
    live::LogReplayReport opened;
    Status live = LivePartition::Open(options_.live_dir, *state_, &state_->live, &opened);
    if (!live.ok()) {
      Stop();
      return live;
    }
    const uint64_t from_base = state_->live->opened_base_version();
    std::fprintf(
        stderr,
        "fanout-server: live partition %d: %s%s, version %llu (%lld batches replayed)%s%s\n",
        state_->view.part,
        from_base > 0
            ? ("compacted base of version " + std::to_string(from_base) + " read, ").c_str()
            : "",
        opened.created ? "a new update log" : "update log replayed",
        static_cast<unsigned long long>(opened.last_seq), static_cast<long long>(opened.records),
        opened.torn_bytes > 0 ? "; cut a torn tail: " : "",
        opened.torn_bytes > 0 ? opened.torn_reason.c_str() : "");
    LivePartition::CompactionPolicy policy;
    policy.ratio = options_.live_compact_ratio;
    policy.bytes = options_.live_compact_mib << 20;
    policy.max_bytes = options_.live_compact_max_mib << 20;
    policy.retain_s = options_.live_retain_s;
    policy.checkpoint_bytes =
        options_.live_checkpoint_mib < 0 ? -1 : options_.live_checkpoint_mib << 20;
    state_->live->StartCompactor(policy);
    if (owned && !owned->indptr.empty()) {
      // Loaded here: the first generation owns the edge arrays, freed when a
      // compaction's base replaces them. From now on every read of the
      // graph goes through a generation (service.cc, handler.cc).
      auto a = std::make_unique<live::Generation::Arrays>();
      a->indptr = std::move(owned->indptr);
      a->indices = std::move(owned->indices);
      a->indices32 = std::move(owned->indices32);
      a->edge_ids = std::move(owned->edge_ids);
      a->times = std::move(owned->edge_times);
      a->types = std::move(owned->edge_types);
      a->weights = std::move(owned->edge_weights);
      a->time_order = std::move(state_->time_order);
      state_->live->AdoptBase(std::move(a));
    }
    // A follower catches up with its primary before the server serves.
    LivePartition::Replication rep;
    rep.follow = options_.live_follow;
    rep.token = options_.live_follow_token;
    rep.name = options_.live_replica_name;
    if (rep.name.empty()) {
      char host[256] = {0};
      if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
        std::snprintf(host, sizeof host, "replica");
      // Stable across restarts: its port, else its live folder's (hashed).
      uint64_t h = 1469598103934665603ull;
      for (char ch : options_.live_dir) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
      char dir_id[24];
      std::snprintf(dir_id, sizeof dir_id, "dir%08llx",
                    static_cast<unsigned long long>(h & 0xffffffffull));
      rep.name = std::string(host) + ":" +
                 (options_.port > 0 ? std::to_string(options_.port) : std::string(dir_id));
    }
    rep.catch_up_s = options_.live_catch_up_s;
    if (!options_.tls_ca.empty()) {
      // A server with mutual TLS reaches its primary the same way: the CA it
      // trusts, and its own certificate as the client's.
      rep.tls_ca = options_.tls_ca;
      rep.tls_cert = options_.tls_cert;
      rep.tls_key = options_.tls_key;
    }
    rep.wait_ms = options_.live_replica_wait_ms;
    rep.feed_bytes = options_.live_feed_mib << 20;
    if (!rep.follow.empty())
      std::fprintf(stderr, "fanout-server: live partition %d follows %s as %s%s\n",
                   state_->view.part, rep.follow.c_str(), rep.name.c_str(),
                   rep.catch_up_s > 0 ? ": catching up before serving" : "");
    Status replicated = state_->live->StartReplication(rep);
    if (!replicated.ok()) {
      Stop();
      return replicated;
    }
    // Its reads are at a version: Thrift and the UCX data plane carry one
    // (the request's at_version); the export does not yet, so a live server
    // offers none.
    state_->local_off_reason =
        "same-host export off: a live partition serves over Thrift and UCX only for now";
  }
  Status st = StartRpc();
  if (st.ok() && options_.data_plane && rpc::DataPlaneBuilt()) st = StartDataPlane();
  if (st.ok() && !state_->live) st = StartLocalSocket();
  if (!st.ok()) {
    Stop();
    return st;
  }
  // Everything the admin endpoint reads (ports, the data plane, the export)
  // is written above, before this release.
  loaded_.store(true, std::memory_order_release);
  phase_ = 1;
  return Status::OK();
}

Status PartitionServer::Load(std::shared_ptr<datasets::PartitionData>* out,
                             std::shared_ptr<storage::DiskFeatures>* disk) {
  datasets::DatasetMeta meta;
  FANOUT_RETURN_IF_ERROR(datasets::ReadDatasetMeta(options_.dataset_dir, &meta));
  if (options_.expected_num_parts >= 0 && meta.num_parts != options_.expected_num_parts)
    return Status::InvalidArgument(options_.dataset_dir + " has " + std::to_string(meta.num_parts) +
                                   " partitions, expected " +
                                   std::to_string(options_.expected_num_parts));
  FANOUT_RETURN_IF_ERROR(PlanMemory(meta, options_.partition, options_, &plan_));
  auto d = std::make_shared<datasets::PartitionData>();
  datasets::OpenOptions oo;
  oo.expected_num_parts = options_.expected_num_parts;
  oo.index_bits = plan_.index_bits;
  oo.edge_ids = plan_.edge_ids_at_start;
  oo.features = !plan_.features_on_disk;
  oo.heat = plan_.features_on_disk;
  FANOUT_RETURN_IF_ERROR(
      datasets::OpenPartition(options_.dataset_dir, options_.partition, oo, d.get()));
  if (plan_.features_on_disk) {
    std::shared_ptr<const storage::FeatureFile> file;
    FANOUT_RETURN_IF_ERROR(
        datasets::OpenPartitionFeatureFile(options_.dataset_dir, d->meta, d->part, &file));
    // The hot set: the rows sampling reaches most often first (stable by
    // row): those the most stored edges name as their neighbor (the store's
    // heat, counted over the whole graph by fanout-partition), else those of
    // the highest degree (a store without heat).
    const int64_t n = d->num_nodes();
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) order[r] = r;
    const std::vector<int64_t>& ip = d->indptr;
    if (d->heat.size() == static_cast<size_t>(n)) {
      const std::vector<int64_t>& h = d->heat;
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return h[a] > h[b]; });
      std::vector<int64_t>().swap(d->heat);
    } else {
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return ip[a + 1] - ip[a] > ip[b + 1] - ip[b]; });
    }
    storage::DiskCacheOptions co;
    co.budget_bytes = plan_.cache_bytes;
    co.hot_fraction = options_.feature_hot_fraction;
    co.queue_depth = options_.feature_queue_depth;
    std::unique_ptr<storage::DiskFeatures> df;
    FANOUT_RETURN_IF_ERROR(storage::DiskFeatures::Create(file, co, order, &df));
    std::unique_ptr<storage::BlockReader> probe;
    FANOUT_RETURN_IF_ERROR(df->NewReader(&probe));
    disk_io_mode_ = std::string(probe->mode()) + (file->direct() ? ", O_DIRECT" : ", buffered");
    *disk = std::move(df);
  }
  *out = std::move(d);
  return Status::OK();
}

Status PartitionServer::Export(datasets::PartitionData* owned) {
  if (options_.local_socket == "off") return Status::OK();
  const datasets::PartitionView& v = state_->view;
  Status st = rpc::LocalExport::Create(data_->meta.dataset_id, v.part, v.node_begin, v.node_end,
                                       rpc::ExportSources(v), &export_);
  if (!st.ok()) {
    if (!options_.local_socket.empty())
      return Status::FromCode(static_cast<int>(st.code()),
                              "cannot export the partition (--local-socket): " + st.message());
    std::fprintf(stderr,
                 "fanout-server: no same-host export (%s); clients here use the RPC paths\n",
                 st.message().c_str());
    return Status::OK();
  }
  state_->view = rpc::ViewOfExport(*export_);
  if (state_->disk) {
    // The hot set is served from the export too (the same memory clients read).
    FANOUT_RETURN_IF_ERROR(
        state_->disk->UseHotMemory(state_->view.hot_table.data(),
                                   reinterpret_cast<const char*>(state_->view.hot_rows.data())));
    // Co-located clients read the feature file themselves: a read-only
    // descriptor of their own (flags they set are theirs), handed beside it.
    const std::string& path = state_->feature_file_path;
    int ffd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (ffd < 0 && errno == EINVAL) ffd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ffd < 0)
      return Status::IOError(
          path + ": opening the feature file for same-host clients: " + std::strerror(errno));
    FANOUT_RETURN_IF_ERROR(export_->SetFeatureFile(ffd, state_->disk->sieve_bytes()));
  }
  if (owned !=
      nullptr) {  // served from the export from now on: the loaded copy goes (no second copy)
    std::vector<int64_t>().swap(owned->indptr);
    std::vector<int64_t>().swap(owned->indices);
    std::vector<int32_t>().swap(owned->indices32);
    std::vector<int64_t>().swap(owned->edge_ids);
    std::vector<int64_t>().swap(owned->edge_times);
    std::vector<int32_t>().swap(owned->edge_types);
    std::vector<float>().swap(owned->edge_weights);
    std::vector<uint8_t>().swap(owned->features);
    std::vector<int64_t>().swap(owned->labels);
    std::vector<uint8_t>().swap(owned->split);
    std::vector<int64_t>().swap(owned->original_ids);
    malloc_trim(0);
  }
  return Status::OK();
}

Status PartitionServer::StartLocalSocket() {
  if (!export_) return Status::OK();
  rpc::LocalExportOptions o;
  o.allowed_uids = options_.local_uids;
  if (state_->tenants_file) {
    // A hello carries the data-plane ticket the client's authenticated RPC
    // connection was handed: only a current tenant with local=yes maps the export
    // (a removed or rotated tenant's ticket names no one after the reload).
    const Tenancy* tenancy = state_->tenancy.get();
    o.authorize = [tenancy](const std::string& ticket) { return tenancy->MayMapExport(ticket); };
  } else if (state_->tenancy && state_->tenancy->tickets_required()) {
    // The token, or the data-plane ticket handed to connections that gave it
    // (TLS or the token).
    const Tenancy* tenancy = state_->tenancy.get();
    const std::string token = options_.auth_token;
    o.authorize = [tenancy, token](const std::string& credential) {
      if (tenancy->ByTicket(credential) >= 0 || (!token.empty() && SameSecret(credential, token)))
        return Status::OK();
      return Status::Unauthenticated(credential.empty()
                                         ? "this server requires its auth token on the local socket"
                                         : "wrong auth token on the local socket");
    };
  }
  const bool asked = !options_.local_socket.empty();
  if (!asked) {
    // The default folder is this uid's alone (made 0700, checked). A folder
    // another uid holds (made first, say, in /tmp) costs the export, not the
    // server: it serves over Thrift and UCX, and says why (the ready line,
    // /stats "local").
    Status dir = rpc::PrepareLocalSocketDir(rpc::DefaultLocalSocketDir(), !o.allowed_uids.empty());
    if (!dir.ok()) {
      state_->local_off_reason = "same-host export off: " + dir.message();
      std::fprintf(stderr, "fanout-server: %s; clients here use the RPC paths\n",
                   state_->local_off_reason.c_str());
      return Status::OK();
    }
  }
  const std::string path =
      asked ? options_.local_socket
            : rpc::DefaultLocalSocketPath(data_->meta.dataset_id, state_->view.part, port_);
  Status st = export_->Listen(path, o);
  if (!st.ok()) {
    if (asked)
      return Status::FromCode(static_cast<int>(st.code()), "--local-socket: " + st.message());
    state_->local_off_reason = "no same-host export socket: " + st.message();
    std::fprintf(stderr, "fanout-server: %s; clients here use the RPC paths\n",
                 state_->local_off_reason.c_str());
    return Status::OK();
  }
  state_->local_socket = path;
  state_->local_export_id = export_->layout().export_id;
  state_->local_export_bytes = export_->layout().bytes;
  return Status::OK();
}

Status PartitionServer::StartRpc() {
  std::shared_ptr<TServerSocket> socket;
  if (options_.tls_cert.empty() != options_.tls_key.empty())
    return Status::InvalidArgument(
        "TLS needs both a certificate (--tls-cert) and its private key (--tls-key)");
  if (!options_.tls_ca.empty() && options_.tls_cert.empty())
    return Status::InvalidArgument(
        "--tls-ca (client certificates) needs TLS itself: --tls-cert and --tls-key");
  if (!options_.tls_cert.empty()) {
    // Sockets that can name their client certificate's subject (tenants).
    auto tls = std::make_shared<SubjectSocketFactory>(apache::thrift::transport::SSLTLS);
    tls->server(true);
    // Each file, or the error naming it.
    auto load = [](const char* flag, const std::string& file,
                   const std::function<void(const char*)>& fn) {
      try {
        fn(file.c_str());
      } catch (const std::exception& e) {
        return Status::InvalidArgument(std::string(flag) + " " + file + ": " + e.what());
      }
      return Status::OK();
    };
    FANOUT_RETURN_IF_ERROR(
        load("--tls-cert", options_.tls_cert, [&](const char* f) { tls->loadCertificate(f); }));
    FANOUT_RETURN_IF_ERROR(
        load("--tls-key", options_.tls_key, [&](const char* f) { tls->loadPrivateKey(f); }));
    if (!options_.tls_ca.empty())
      FANOUT_RETURN_IF_ERROR(load("--tls-ca", options_.tls_ca,
                                  [&](const char* f) { tls->loadTrustedCertificates(f); }));
    tls->authenticate(
        !options_.tls_ca.empty());  // mutual TLS: a client certificate signed by the CA
    socket = std::make_shared<apache::thrift::transport::TSSLServerSocket>(options_.bind,
                                                                           options_.port, tls);
  } else {
    socket = std::make_shared<TServerSocket>(options_.bind, options_.port);
  }
  // A burst of connections must not overflow the kernel's accept queue: a
  // handshake dropped there completes only at the next SYN-ACK retransmission,
  // up to a minute later (the kernel caps this at net.core.somaxconn).
  socket->setAcceptBacklog(4096);
  rpc_ = std::make_unique<Rpc>();
  rpc_->socket = std::move(socket);
  auto handlers = std::make_shared<HandlerFactory>(state_.get());
  auto processors = std::make_shared<rpc::gen::FanoutProcessorFactory>(handlers);
  // Requests come in through the guard (limits, deadlines, memory); replies
  // go out through the plain framed transport of the same socket.
  auto protocols = std::make_shared<rpc::FrameBoundedProtocolFactory>();
  rpc_->server = std::make_shared<TThreadedServer>(
      processors, rpc_->socket,
      std::make_shared<rpc::GuardedFramedTransportFactory>(options_.max_frame_bytes, guard_),
      std::make_shared<rpc::ResettingFramedTransportFactory>(options_.max_frame_bytes), protocols,
      protocols);
  auto ready = std::make_shared<ReadySignal>();
  std::future<void> listening = ready->ready.get_future();
  rpc_->server->setServerEventHandler(ready);
  auto failed = std::make_shared<std::promise<std::string>>();
  std::future<std::string> failure = failed->get_future();
  rpc_->thread = std::thread([this, failed] {
    try {
      rpc_->server->serve();
      failed->set_value("");
    } catch (const std::exception& e) {
      failed->set_value(e.what());
    }
  });
  // Either the socket listens, or serve() fails (e.g. the port is taken).
  for (;;) {
    if (listening.wait_for(std::chrono::milliseconds(5)) == std::future_status::ready) break;
    if (failure.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready) {
      std::string why = failure.get();
      rpc_->thread.join();
      rpc_.reset();
      return Status::IOError("cannot serve on " + options_.bind + ":" +
                             std::to_string(options_.port) + ": " +
                             (why.empty() ? "server exited" : why));
    }
  }
  port_ = rpc_->socket->getPort();
  return Status::OK();
}

Status PartitionServer::StartDataPlane() {
  rpc::DataPlaneServerOptions o;
  o.bind = options_.bind;
  o.port = options_.data_port;
  o.threads = options_.data_threads > 0 ? options_.data_threads
                                        : std::min(4, std::max(1, UsableCpuCount()));
  o.max_request_bytes = options_.max_frame_bytes;
  Tenancy* tenancy = state_->tenancy.get();
  if (tenancy != nullptr &&
      tenancy->tickets_required())  // each ticket names its tenant (handed out with PartitionInfo)
    o.ticket_tenant = [tenancy](const std::string& ticket) { return tenancy->ByTicket(ticket); };
  if (state_->tenants_file) {
    // Requests wait for their tenant's turn: off the progress threads, so
    // that one waiting holds up no other endpoint (a thread's endpoints would
    // otherwise take turns, whatever their tenants' weights). As many
    // executors as requests a few tenants keep waiting at once; more wait
    // in the executors' queue, picked round robin by tenant.
    if (tenancy->scheduling()) o.executors = kDataPlaneExecutors;
  }
  o.budget = guard_->budget();  // one request-memory budget for both paths
  // As long as a Thrift frame waits (ConnectionLimits::budget_wait_ms); a
  // request's own deadline (wire::RequestHeader::deadline_ms) shortens it.
  o.budget_wait_ms = options_.limits.budget_wait_ms > 0 ? options_.limits.budget_wait_ms : 20000;
  if (options_.limits.frame_timeout_ms > 0)
    o.budget_wait_ms = std::min(o.budget_wait_ms, options_.limits.frame_timeout_ms);
  const ServerState* state = state_.get();
  Status st = rpc::DataPlaneServer::Start(
      o, [state] { return std::make_unique<DataPlaneService>(state); }, &data_plane_);
  if (!st.ok())
    return Status::FromCode(
        static_cast<int>(st.code()),
        "cannot start the UCX data plane (run with --data-plane off to serve over Thrift only): " +
            st.message());
  data_port_ = data_plane_->port();
  state_->data_port = data_port_;
  return Status::OK();
}

rpc::ConnectionStats PartitionServer::connection_stats() const { return guard_->Stats(); }

Status PartitionServer::ReloadTenants() {
  if (!state_ || !state_->tenants_file)
    return Status::InvalidArgument("this server runs without a tenants file (--tenants)");
  std::shared_ptr<const TenantTable> table;
  FANOUT_RETURN_IF_ERROR(TenantTable::Load(options_.tenants_file, &table));
  FANOUT_RETURN_IF_ERROR(CheckTenantsReachable(*table, options_));
  return state_->tenancy->Reload(std::move(table));
}

void PartitionServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  phase_ = 2;                                              // draining: /healthz answers 503
  if (state_ && state_->tenancy) state_->tenancy->Stop();  // waiters for a turn end now
  if (data_plane_) data_plane_->Stop();  // kept for /stats until the admin endpoint is gone
  if (export_) export_->Stop();          // no more hand-outs; mappings clients hold stay valid
  if (rpc_) {
    guard_->ShutdownAll();  // connections waiting for the budget end now
    rpc_->server->stop();   // closes the listener, interrupts idle connections
    if (rpc_->thread.joinable())
      rpc_->thread.join();  // serve() returns once every connection ended
    rpc_.reset();
  }
  if (admin_) {
    {
      std::lock_guard<std::mutex> lock(admin_->mu);
      admin_->stop = true;
    }
    admin_->cv.notify_all();
    if (admin_->tick_thread.joinable()) admin_->tick_thread.join();
    admin_->http.stop();
    if (admin_->http_thread.joinable()) admin_->http_thread.join();
    admin_.reset();
  }
  phase_ = 3;
  data_plane_.reset();
}

}  // namespace fanout::server
