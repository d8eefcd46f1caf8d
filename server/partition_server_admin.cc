// PartitionServer's admin endpoint (its HTTP server, started after the
// listeners): /healthz, /metrics (Prometheus text), /stats and /history
// (JSON), and the embedded admin page. The lifecycle (load, export,
// listeners, stop) is partition_server.cc.
#include "server/partition_server_admin.h"

#include <httplib.h>
#include <malloc.h>
#include <sys/prctl.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "common/cpu.h"
#include "common/secret.h"
#include "common/version.h"
#include "rpc/data_plane.h"
#include "rpc/local_export.h"
#include "server/admin_page.h"  // generated from server/admin_page.html
#include "server/partition_server.h"
#include "server/prometheus_text.h"
#include "server/service.h"

namespace fanout::server {

namespace {

nlohmann::json DataPlaneJson(const rpc::DataPlaneServer* dp, int port) {
  nlohmann::json j;
  j["built"] = rpc::DataPlaneBuilt();
  j["enabled"] = dp != nullptr;
  if (dp == nullptr) return j;
  rpc::DataPlaneServerStats s = dp->Stats();
  j["port"] = port;
  j["ucx_version"] = s.ucx_version;
  j["memory_types"] = s.memory_types;
  j["requests"] = s.requests;
  j["reply_bytes"] = s.reply_bytes;
  j["errors"] = s.errors;
  j["malformed_requests"] = s.malformed;
  j["refused_requests"] = s.refused;
  j["unauthenticated_requests"] = s.unauthenticated;
  j["endpoints_open"] = s.endpoints_open;
  j["endpoints_total"] = s.endpoints_total;
  j["endpoints_rejected"] = s.endpoints_rejected;
  j["held_bytes"] = s.held_bytes;
  j["pooled_bytes"] = s.pooled_bytes;
  j["budget_waits"] = s.budget_waits;
  j["budget_refused"] = s.budget_refused;
  j["memory_releases"] = s.memory_releases;
  nlohmann::json eps = nlohmann::json::array();
  for (const auto& e : s.endpoints)
    eps.push_back({{"peer", e.peer},
                   {"transports", e.transports},
                   {"requests", e.requests},
                   {"reply_bytes", e.reply_bytes},
                   {"held_bytes", e.held_bytes}});
  j["endpoints"] = eps;
  return j;
}

// The same-host export: its socket, memory and who was handed or refused it.
// What clients did with it is in totals.by_path.local.
nlohmann::json LocalJson(const rpc::LocalExport* e, const std::string& socket,
                         const std::string& off_reason) {
  if (e == nullptr) return {{"enabled", false}, {"why_off", off_reason}};
  const rpc::LocalExportStats s = e->Stats();
  return {{"enabled", !socket.empty()},
          {"why_off", off_reason},
          {"socket", socket},
          {"bytes", s.bytes},
          {"export_id", e->layout().export_id},
          {"handed", s.handed},
          {"refused_uid", s.refused_uid},
          {"refused_token", s.refused_token},
          {"malformed", s.malformed},
          {"timed_out", s.timed_out},
          {"overloaded", s.overloaded},
          {"accept_errors", s.accept_errors},
          {"last_refusal", s.last_refusal}};
}

// The resident set, split into the server's own memory and shared memory
// (its sealed partition export; no client memory is ever mapped here), and
// the request-memory budget both paths take from.
nlohmann::json MemoryJson(int64_t rss, const rpc::MemoryBudget& budget) {
  const ResidentBreakdown r = ResidentSetBreakdown();
  const rpc::MemoryBudgetStats b = budget.Stats();
  return {{"rss_bytes", rss},
          {"peak_rss_bytes", PeakResidentSetBytes()},
          {"rss_anon_bytes", r.anon},
          {"rss_file_bytes", r.file},
          {"rss_shmem_bytes", r.shmem},
          {"request_budget_bytes", b.limit},
          {"request_held_bytes", b.held},
          {"request_peak_bytes", b.peak},
          {"request_waits", b.waits}};
}

nlohmann::json ConnectionsJson(const rpc::ConnectionStats& c, const rpc::ConnectionLimits& l) {
  nlohmann::json by_owner = nlohmann::json::object();
  for (const auto& [owner, n] : c.by_owner) by_owner[owner] = n;
  return {{"open", c.open},
          {"unauthenticated", c.unauthenticated},
          {"unauthenticated_pool", l.unauthenticated_connections},
          {"pool_refused", c.pool_refused},
          {"pool_evicted", c.pool_evicted},
          {"owner_refused", c.owner_refused},
          {"owner_evicted", c.owner_evicted},
          {"by_owner", by_owner},
          {"peak_open", c.peak_open},
          {"accepted", c.accepted},
          {"refused", c.refused},
          {"evicted_idle", c.evicted_idle},
          {"idle_timeouts", c.idle_timeouts},
          {"frame_timeouts", c.frame_timeouts},
          {"memory_waits", c.memory_waits},
          {"memory_refused", c.memory_refused},
          {"inflight_bytes", c.inflight_bytes},
          {"max_connections", l.max_connections},
          {"idle_timeout_ms", l.idle_timeout_ms},
          {"frame_timeout_ms", l.frame_timeout_ms},
          {"max_inflight_bytes", l.max_inflight_bytes}};
}

nlohmann::json RdmaJson() {
  std::string error;
  std::vector<rpc::RdmaDevice> devs = rpc::ListRdmaDevices(&error);
  nlohmann::json j = nlohmann::json::array();
  for (const auto& d : devs) {
    nlohmann::json ports = nlohmann::json::array();
    for (const auto& p : d.ports)
      ports.push_back({{"port", p.port},
                       {"state", p.state},
                       {"link_layer", p.link_layer},
                       {"rate_gbps", p.rate_gbps}});
    j.push_back(
        {{"name", d.name}, {"node_guid", d.node_guid}, {"ports", ports}, {"dmabuf", d.dmabuf}});
  }
  nlohmann::json out = {{"devices", j}};
  if (!error.empty()) out["error"] = error;
  return out;
}

// Where the partition is held (memory plan) and the disk tier's counters.
nlohmann::json TiersJson(const MemoryPlan& plan, const ServerState& s) {
  const datasets::PartitionView& v = s.view;
  const int64_t edges = v.num_edges();
  const int64_t topology = static_cast<int64_t>(v.indptr.size() * 8 + v.indices.size() * 8 +
                                                v.indices32.size() * 4 + v.edge_ids.size() * 8);
  nlohmann::json j = {
      {"features", plan.FeaturesTier()},
      {"index_bits", v.indices32.empty() && !v.indices.empty() ? 64 : plan.index_bits},
      {"edge_ids", s.edge_ids_at_start       ? "held"
                   : s.edge_ids.ready.load() ? "read on demand"
                                             : "not read (on demand)"},
      {"topology_bytes", topology},
      {"topology_bytes_per_edge", edges > 0 ? double(topology) / edges : 0.0},
      {"memory_limit_bytes", plan.limit_bytes},
      {"memory_limit_source", plan.limit_source},
      {"plan", plan.why}};
  if (!s.edge_ids_at_start && s.edge_ids.ready.load())
    j["edge_ids_load_seconds"] = s.edge_ids.seconds;
  if (s.disk) {
    const storage::DiskFeatureStats d = s.disk->stats();
    j["disk"] = {{"file", s.feature_file_path},
                 {"io", s.disk_io_mode},
                 {"lookups", d.lookups},
                 {"hot_hits", d.hot_hits},
                 {"cache_hits", d.cache_hits},
                 {"misses", d.misses},
                 {"hit_rate", d.hit_rate()},
                 {"block_reads", d.block_reads},
                 {"bytes_read", d.bytes_read},
                 {"read_errors", d.read_errors},
                 {"evictions", d.evictions},
                 {"cache_bytes", d.cache_bytes},
                 {"budget_bytes", d.budget_bytes},
                 {"hot_rows", d.hot_rows},
                 {"cache_slots", d.cache_slots},
                 {"queue_depth", d.queue_depth},
                 // The serving threads' readers: rings and aligned buffers (a pool).
                 {"readers",
                  {{"made", s.readers ? s.readers->made() : 0},
                   {"max", s.readers ? s.readers->max_readers() : 0},
                   {"bytes", s.readers ? s.readers->bytes() : 0},
                   {"retired", s.readers ? s.readers->retired() : 0}}},
                 {"max_in_flight", d.max_in_flight},
                 {"hot_set_seconds", s.disk->hot_seconds()}};
    // The device gate between online and batch reads (storage/io_gate.h).
    const storage::IoGateStats g = s.io_gate.stats();
    j["disk"]["io_gate"] = {{"mode", g.adaptive ? "adaptive" : "fixed"},
                            {"budget", g.budget},
                            {"online_reads", g.online_reads},
                            {"held", g.held},
                            {"windows", g.windows},
                            {"cuts", g.cuts},
                            {"raises", g.raises},
                            {"probes", g.probes},
                            {"probing", g.probing},
                            {"reference_us", g.reference_us},
                            {"target_us", g.target_us},
                            {"last_p99_us", g.last_p99_us}};
  }
  return j;
}

}  // namespace

std::string PartitionServer::StatsJson() const {
  // Until Start() has loaded the partition (phase 1), data_ and state_ are
  // being written by the starting thread: report the state only.
  const bool loaded = loaded_.load(std::memory_order_acquire);
  nlohmann::json j = nlohmann::json::parse(loaded ? state_->counters.metrics.WindowsJson() : "{}");
  j["state"] = state();
  j["version"] = {{"version", VersionString()}, {"release", Release()}, {"commit", BuildCommit()}};
  j["uptime_s"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at_).count();
  int64_t rss = ResidentSetBytes();
  if (loaded) {
    const datasets::DatasetMeta& meta = data_->meta;
    const datasets::PartitionView& d = state_->view;
    j["partition"] = {{"dataset", meta.name},
                      {"dataset_id", meta.dataset_id},
                      {"partition", d.part},
                      {"num_parts", meta.num_parts},
                      {"node_begin", d.node_begin},
                      {"node_end", d.node_end},
                      {"num_edges", d.num_edges()},
                      {"feature_dim", meta.feature_dim},
                      {"feature_dtype", datasets::FeatureDTypeName(meta.feature_dtype)},
                      {"num_classes", meta.num_classes}};
    j["memory"] = MemoryJson(rss, *guard_->budget());
    j["memory"]["array_bytes"] = d.RawBytes();
    j["memory"]["rss_over_arrays"] = d.RawBytes() > 0 ? double(rss) / d.RawBytes() : 0.0;
    j["memory"]["disk_reader_bytes"] = state_->readers ? state_->readers->bytes() : 0;
    j["load_seconds"] = load_seconds_;
    const ServerMetrics& m = state_->counters.metrics;
    int64_t requests = 0;
    for (int me = 0; me < kNumMethods; ++me)
      for (int o = 0; o < kNumOutcomes; ++o) requests += m.Requests(me, o);
    j["totals"] = {{"requests", requests},
                   {"sampled_nodes", m.SampledNodes()},
                   {"sampled_edges", m.SampledEdges()},
                   {"feature_rows", m.FeatureRows()},
                   {"feature_bytes", m.FeatureBytes()},
                   {"in_flight", m.InFlight()}};
    nlohmann::json paths;
    for (int p = 0; p < kNumPaths; ++p)
      paths[PathName(p)] = {{"requests", m.PathRequests(p)}, {"reply_bytes", m.PathBytes(p)}};
    j["totals"]["by_path"] = paths;
    nlohmann::json methods;
    for (int me = 0; me < kNumMethods; ++me) {
      int64_t n = 0;
      for (int o = 0; o < kNumOutcomes; ++o) n += m.Requests(me, o);
      methods[MethodName(me)] = n;
    }
    j["totals"]["by_method"] = methods;
    j["tiers"] = TiersJson(plan_, *state_);
    j["tenants"] = state_->tenancy->StatsJson();
    j["data_plane"] = DataPlaneJson(data_plane_.get(), data_port_);
    j["local"] = LocalJson(export_.get(), state_->local_socket, state_->local_off_reason);
  } else {
    j["memory"] = MemoryJson(rss, *guard_->budget());
  }
  j["rpc_port"] = loaded ? port_ : 0;  // written by Start() before `loaded`
  j["connections"] = ConnectionsJson(connection_stats(), guard_->limits());
  if (state_->live) j["live"] = state_->live->StatsJson();
  j["security"] = {{"tls", !options_.tls_cert.empty()},
                   {"mutual_tls", !options_.tls_ca.empty()},
                   // fanout-server makes itself not dumpable (server/main.cc); read back here.
                   {"dumpable", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1},
                   {"auth_token", !options_.auth_token.empty()},
                   {"tenant_tokens", !options_.tenants_file.empty()},
                   {"admin_token", !options_.admin_token.empty() || !options_.auth_token.empty()},
                   {"tls_failures", connection_stats().tls_failures},
                   {"last_tls_failure", guard_->LastTlsFailure()},
                   {"auth_refused", state_ ? state_->counters.auth_refused.load() : 0},
                   {"admin_refused", state_ ? state_->counters.admin_refused.load() : 0}};
  if (state_) {
    // What clients reported when they moved to this server (note_failover).
    const FailoverLog::Snapshot f = state_->counters.failovers.Get();
    j["failovers"] = {{"retries_in", f.retries},
                      {"failovers_in", f.failovers},
                      {"from", f.from},
                      {"last_reason", f.last_reason}};
  }
  j["rdma"] = RdmaJson();
  return j.dump(2);
}

Status PartitionServer::StartAdmin() {
  admin_ = std::make_unique<Admin>();
  httplib::Server& http = admin_->http;
  http.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    int p = phase_.load();
    res.status = p == 1 ? 200 : 503;
    res.set_content(std::string(state()) + "\n", "text/plain");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const bool loaded = loaded_.load(std::memory_order_acquire);
    PrometheusText out;
    out.Family("fanout_build_info", "gauge", "1, labelled with this server's Fanout version.")
        .Sample("fanout_build_info",
                std::string("version=\"") + VersionString() + "\",release=\"" + Release() +
                    "\",commit=\"" + BuildCommit() + "\"",
                int64_t{1});
    out.Gauge("fanout_process_resident_memory_bytes", "Resident set size.", ResidentSetBytes());
    out.Gauge("fanout_partition_array_bytes", "Bytes of the loaded partition's arrays.",
              loaded ? state_->view.RawBytes() : 0);
    out.Gauge("fanout_serving", "1 while serving, 0 while loading or draining.",
              phase_.load() == 1 ? 1 : 0);
    const rpc::ConnectionStats c = guard_->Stats();
    out.Gauge("fanout_rpc_connections", "Open RPC connections.", c.open);
    out.Gauge("fanout_rpc_connections_max", "The connection limit (--max-connections).",
              options_.limits.max_connections);
    out.Family("fanout_rpc_connections_closed_total", "counter",
               "RPC connections the server closed or refused, by reason.");
    for (const auto& [reason, n] : {std::pair<const char*, int64_t>{"refused", c.refused},
                                    {"evicted_idle", c.evicted_idle},
                                    {"idle_timeout", c.idle_timeouts},
                                    {"frame_timeout", c.frame_timeouts},
                                    {"memory", c.memory_refused}})
      out.Sample("fanout_rpc_connections_closed_total", std::string("reason=\"") + reason + "\"",
                 n);
    out.Gauge("fanout_rpc_inflight_request_bytes", "Request bytes held by all connections.",
              c.inflight_bytes);
    if (loaded) {
      const FailoverLog::Snapshot f = state_->counters.failovers.Get();
      out.Counter("fanout_client_failovers_in_total",
                  "Sessions clients moved to this server after another replica failed (as the "
                  "clients reported).",
                  f.failovers);
      out.Counter("fanout_client_retries_in_total",
                  "Requests clients asked this server again, on a new connection, after it "
                  "failed them once.",
                  f.retries);
    }
    if (loaded && data_plane_) {
      rpc::DataPlaneServerStats dp = data_plane_->Stats();
      out.Gauge("fanout_data_plane_endpoints", "Open UCX data-plane endpoints.", dp.endpoints_open);
      out.Gauge("fanout_data_plane_held_bytes",
                "Reply buffers and queued requests the data plane holds.", dp.held_bytes);
      out.Counter("fanout_data_plane_malformed_total",
                  "Data-plane requests that could not be parsed.", dp.malformed);
      out.Counter("fanout_data_plane_rejected_total",
                  "Data-plane connections rejected (limit or stopping).", dp.endpoints_rejected);
    }
    if (loaded) state_->tenancy->Prometheus(&out);
    if (loaded && state_->live) state_->live->Prometheus(&out);
    if (loaded && state_->disk) {
      const storage::DiskFeatureStats ds = state_->disk->stats();
      out.Family("fanout_feature_cache_hits_total", "counter",
                 "Feature rows served from the disk tier's cache, by part (hot set, SIEVE).")
          .Sample("fanout_feature_cache_hits_total", "cache=\"hot\"", ds.hot_hits)
          .Sample("fanout_feature_cache_hits_total", "cache=\"sieve\"", ds.cache_hits);
      out.Counter("fanout_feature_cache_misses_total",
                  "Feature rows read from the feature file (not cached).", ds.misses);
      out.Counter("fanout_feature_disk_reads_total", "Feature-file blocks read.", ds.block_reads);
      out.Counter("fanout_feature_disk_read_bytes_total", "Feature-file bytes read.",
                  ds.bytes_read);
      out.Counter("fanout_feature_disk_read_errors_total",
                  "Feature-file reads refused (a block failing its checksum, an I/O error).",
                  ds.read_errors);
      out.Counter("fanout_feature_cache_evictions_total", "Rows the SIEVE cache evicted.",
                  ds.evictions);
      out.Gauge("fanout_feature_cache_bytes", "Bytes the disk tier's cache holds (allocated).",
                ds.cache_bytes);
      out.Gauge("fanout_feature_cache_budget_bytes", "The disk tier's cache budget.",
                ds.budget_bytes);
      out.Gauge("fanout_feature_disk_queue_depth",
                "Reads in flight per serving thread (configured).", ds.queue_depth);
      out.Gauge("fanout_feature_disk_max_in_flight",
                "Most reads one serving thread had in flight at once.", ds.max_in_flight);
      const storage::IoGateStats g = state_->io_gate.stats();
      out.Gauge("fanout_io_gate_budget",
                "Batch reads in flight at most while an online read waits (the device gate).",
                g.budget);
      out.Counter("fanout_io_gate_held_total", "Batch reads the device gate held back.", g.held);
      out.Family("fanout_io_gate_online_read_p99_seconds", "gauge",
                 "The online reads' 99th-percentile latency in the gate's last window.")
          .Sample("fanout_io_gate_online_read_p99_seconds", "", g.last_p99_us / 1e6);
      out.Family("fanout_io_gate_reference_latency_seconds", "gauge",
                 "The online reads' p99 with batch held to one read (the adaptive gate's last "
                 "probe), which its target is a multiple of.")
          .Sample("fanout_io_gate_reference_latency_seconds", "", g.reference_us / 1e6);
    }
    if (loaded && export_) {
      const rpc::LocalExportStats ls = export_->Stats();
      out.Counter("fanout_local_handed_total", "Same-host clients handed the sealed export.",
                  ls.handed);
      out.Counter("fanout_local_refused_total",
                  "Same-host clients refused the export (uid, token, malformed, timed out, busy).",
                  ls.refused_uid + ls.refused_token + ls.malformed + ls.timed_out + ls.overloaded);
    }
    const std::string& extra = out.str();
    std::string body = loaded ? state_->counters.metrics.Prometheus(extra) : extra;
    res.set_content(body, "text/plain; version=0.0.4");
  });
  // /stats, /history and / need the admin credential (admin_token, else
  // auth_token); with neither they are open, but on a server with tenants
  // (which would show every tenant's name and usage) refused. /metrics and
  // /healthz stay open.
  auto allowed = [this](const httplib::Request& req, httplib::Response& res) {
    const std::string& want =
        options_.admin_token.empty() ? options_.auth_token : options_.admin_token;
    if (want.empty() && options_.tenants_file.empty()) return true;
    std::string given = req.get_param_value("token");
    const std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0) given = auth.substr(7);
    if (!want.empty() && SameSecret(given, want)) return true;
    ++state_->counters.admin_refused;
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer");
    res.set_content(want.empty()
                        ? "this server has tenants: /stats, /history and / show every tenant's "
                          "usage, and need the admin credential; start the server with "
                          "--admin-token-file\n"
                        : "this server requires its admin credential (--admin-token-file, else "
                          "--auth-token-file): Authorization: Bearer TOKEN, or ?token=TOKEN\n",
                    "text/plain");
    return false;
  };
  http.Get("/stats", [this, allowed](const httplib::Request& req, httplib::Response& res) {
    if (allowed(req, res)) res.set_content(StatsJson(), "application/json");
  });
  http.Get("/history", [this, allowed](const httplib::Request& req, httplib::Response& res) {
    if (!allowed(req, res)) return;
    double seconds = 600;
    if (req.has_param("seconds")) {
      try {
        seconds = std::stod(req.get_param_value("seconds"));
      } catch (const std::exception&) {
        seconds = -1;
      }
      if (!(seconds > 0 && seconds <= 86400)) {
        res.status = 400;
        res.set_content("seconds must be a number in (0, 86400]\n", "text/plain");
        return;
      }
    }
    res.set_content(state_->counters.metrics.HistoryJson(seconds),
                    "application/json");  // state_: made before the admin starts
  });
  http.Get("/", [allowed](const httplib::Request& req, httplib::Response& res) {
    if (allowed(req, res)) res.set_content(kAdminPageHtml, "text/html");
  });
  int port =
      options_.admin_port == 0
          ? http.bind_to_any_port(options_.bind)
          : (http.bind_to_port(options_.bind, options_.admin_port) ? options_.admin_port : -1);
  if (port <= 0) {
    admin_.reset();
    return Status::IOError("cannot bind the admin endpoint to " + options_.bind + ":" +
                           std::to_string(options_.admin_port));
  }
  admin_port_ = port;
  admin_->http_thread = std::thread([this] { admin_->http.listen_after_bind(); });
  // httplib's stop() does nothing until the listen loop runs; wait for it so
  // that a Stop() right after Start() (e.g. a failed load) cannot hang.
  for (int i = 0; i < 5000 && !admin_->http.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  admin_->tick_thread = std::thread([this] {
    std::unique_lock<std::mutex> lock(admin_->mu);
    int64_t seen = -1;  // requests served when last looked at
    int quiet = 0;      // seconds since the count last moved
    while (!admin_->stop) {
      if (state_) {
        state_->counters.metrics.Tick(ResidentSetBytes());
        // After a burst, once no request has been served for 2 s, the
        // allocator gives its free pages back (glibc keeps what its threads'
        // arenas freed: a flood of large requests would stay resident).
        int64_t served = 0;
        for (int p = 0; p < kNumPaths; ++p) served += state_->counters.metrics.PathRequests(p);
        if (served != seen) {
          seen = served;
          quiet = 0;
        } else if (++quiet == 2) {
          malloc_trim(0);
        }
      }
      admin_->cv.wait_for(lock, std::chrono::seconds(1));
    }
  });
  return Status::OK();
}

}  // namespace fanout::server
