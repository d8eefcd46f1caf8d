#include "server/handler.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/secret.h"
#include "common/version.h"
#include "rpc/codec.h"
#include "sampler/hetero.h"
#include "sampler/negative.h"

namespace fanout::server {

namespace gen = rpc::gen;

namespace {
[[noreturn]] void Throw(const Status& st) {
  gen::FanoutError err;
  err.code = static_cast<int32_t>(st.code());
  err.message = st.message();
  throw err;
}

// A request's optional `version` field: *out = it where set (never
// negative), else -1 (the newest).
Status RequestVersion(bool isset, int64_t version, int64_t* out) {
  *out = -1;
  if (!isset) return Status::OK();
  if (version < 0)
    return Status::InvalidArgument("version " + std::to_string(version) +
                                   " is negative (leave it out for the newest)");
  *out = version;
  return Status::OK();
}
}  // namespace

void RpcHandler::authenticate(const std::string& token) {
  const ServerState& s = svc_.state();
  if (s.tenants_file) {
    // The token names the tenant this connection's requests are charged to
    // (where no tenant has its TLS subject: Resolve decides, as on a reload).
    if (s.tenancy->ByToken(token) < 0) {
      ++s.counters.auth_refused;
      Throw(
          Status::Unauthenticated("unknown token: no tenant of this server's tenants file has it"));
    }
    has_token_ = true;
    token_ = token;
    Resolve();
    if (authenticated_) BindSlot();
    return;
  }
  if (s.options.auth_token.empty()) return;  // nothing required: any token is fine
  if (!SameSecret(token, s.options.auth_token)) {
    ++s.counters.auth_refused;
    Throw(Status::Unauthenticated("wrong auth token (the server's --auth-token-file)"));
  }
  authenticated_ = true;
  BindSlot();
}

void RpcHandler::BindSlot() {
  rpc::ConnectionGuard::Connection* conn = framed_ ? framed_->connection() : nullptr;
  if (conn == nullptr) return;
  const ServerState& s = svc_.state();
  // Every request asks: once bound, nothing is looked up until the tenant
  // changes (tenant ids stay with their names across reloads).
  const int tenant = s.tenants_file ? svc_.tenant() : -1;
  if (bound_ && tenant == bound_tenant_) return;
  std::string owner = "(authenticated)";
  int64_t cap = 0;  // one owner: only the server's limit
  if (s.tenants_file) {
    owner = s.tenancy->Name(tenant);
    cap = s.tenancy->ConnectionSlots(tenant, s.options.limits.max_connections);
  }
  std::string why;
  if (!conn->Bind(owner, cap, &why)) Throw(Status::Unavailable(why));
  bound_ = true;
  bound_tenant_ = tenant;
}

void RpcHandler::SetTlsSubject(const std::string& subject) {
  if (!svc_.state().tenants_file) return;
  subject_ = subject;
  Resolve();
}

void RpcHandler::Resolve() {
  const Tenancy& t = *svc_.state().tenancy;
  resolved_at_ = t.generation();  // read first: a reload after it is seen next time
  refused_why_.clear();
  int tenant = subject_.empty() ? -1 : t.ByTlsSubject(subject_);
  if (tenant < 0 && has_token_) {
    tenant = t.ByToken(token_);
    if (tenant < 0) {
      authenticated_ = false;
      refused_why_ =
          "this connection's token no longer names a tenant (the tenant was removed from the "
          "tenants file, or its token changed): reconnect with a current token";
      return;
    }
  }
  if (tenant < 0) {
    svc_.SetTenant(t.DefaultId());
    authenticated_ = !t.DefaultRefused();
    return;
  }
  svc_.SetTenant(tenant);
  authenticated_ = true;
}

template <typename Fn>
void RpcHandler::Serve(int method, const size_t* reply_bytes, Fn&& fn,
                       PartitionService::Work work) {
  const ServerState& s = svc_.state();
  if (tls_ && !tls_checked_) {  // the handshake is done: a request came
    tls_checked_ = true;
    SetTlsSubject(tls_->PeerSubject());
  }
  if (s.tenants_file && s.tenancy->generation() != resolved_at_) Resolve();
  if (!authenticated_) {
    ++s.counters.auth_refused;
    if (!refused_why_.empty()) Throw(Status::Unauthenticated(refused_why_));
    if (s.tenants_file)
      Throw(Status::Unauthenticated(
          "this server serves only its tenants' requests (its tenants file refuses requests "
          "without credentials): give the client its tenant's token (cluster file "
          "\"auth_token_file\", or RpcOptions::auth_token)"));
    Throw(
        Status::Unauthenticated("this server requires an auth token (it runs with "
                                "--auth-token-file): give the client the same token "
                                "(cluster file \"auth_token_file\", or RpcOptions::auth_token)"));
  }
  BindSlot();
  Status st = svc_.Run(method, kThrift, reply_bytes, std::forward<Fn>(fn), work);
  if (!st.ok()) Throw(st);
}

Status RpcHandler::CheckIds(const std::string& payload, ArrayView<const int64_t>* ids) const {
  FANOUT_RETURN_IF_ERROR(rpc::View(payload, "node ids", ids));
  return svc_.CheckIds(*ids);
}

void RpcHandler::partition_info(gen::PartitionInfo& out) {
  Serve(kPartitionInfo, nullptr, [&] {
    const ServerState& s = svc_.state();
    const datasets::PartitionView& d = s.view;
    const datasets::DatasetMeta& m = s.data->meta;
    out.partition = d.part;
    out.num_parts = m.num_parts;
    out.node_begin = d.node_begin;
    out.node_end = d.node_end;
    out.num_nodes_total = m.num_nodes;
    out.num_edges = d.num_edges();
    out.num_edges_total = m.num_edges;
    out.feature_dim = m.feature_dim;
    out.feature_dtype = datasets::FeatureDTypeName(m.feature_dtype);
    out.feature_scale = m.feature_scale;
    if (!m.feature_scales.empty())
      out.__set_feature_scales(std::string(reinterpret_cast<const char*>(m.feature_scales.data()),
                                           m.feature_scales.size() * 8));
    out.num_classes = m.num_classes;
    out.format_version = m.format_version;
    out.dataset_id = m.dataset_id;
    out.dataset_name = m.name;
    out.direction = m.direction;
    rpc::Pack(ArrayView<const int64_t>(m.offsets), &out.partition_offsets);
    out.has_labels = m.has_labels;
    out.max_ids_per_request = s.options.max_ids_per_request;
    out.max_fanout = s.options.max_fanout;
    out.__set_server_version(VersionString());
    out.__set_features_tier(s.disk ? "disk" : "memory");
    const int data_port = s.data_port.load();
    if (data_port > 0) out.__set_data_port(data_port);
    // Its tenant's ticket (the default tenant's on a server with an auth
    // token or TLS): this connection authenticated to get here.
    const std::string ticket = s.tenancy ? s.tenancy->Ticket(svc_.tenant()) : std::string();
    if (!ticket.empty()) out.__set_data_plane_ticket(ticket);
    if (m.has_edge_times) out.__set_has_edge_times(true);
    if (m.has_edge_weights) out.__set_has_edge_weights(true);
    if (s.live) {
      out.__set_live_version(static_cast<int64_t>(s.live->partition().committed()));
      if (!s.live->follows().empty()) out.__set_live_follows(s.live->follows());
    }
    if (!s.local_socket.empty()) {
      out.__set_local_socket(s.local_socket);
      out.__set_local_export_id(static_cast<int64_t>(s.local_export_id));
      out.__set_local_export_bytes(static_cast<int64_t>(s.local_export_bytes));
      out.__set_server_uid(static_cast<int64_t>(geteuid()));
    }
    if (!m.hetero.empty()) {
      out.__set_node_types(m.hetero.node_types);
      std::vector<std::string> edge_types;
      for (int e = 0; e < m.hetero.num_edge_types(); ++e)
        edge_types.push_back(m.hetero.EdgeTypeName(e));
      out.__set_edge_types(edge_types);
      std::string packed;
      rpc::Pack(ArrayView<const int64_t>(m.hetero.type_bounds), &packed);
      out.__set_node_type_bounds(packed);
      rpc::Pack(ArrayView<const int64_t>(m.hetero.feature_dims), &packed);
      out.__set_node_type_feature_dims(packed);
    }
    return Status::OK();
  });
}

void RpcHandler::sample_neighbors(gen::SampleResponse& out, const gen::SampleRequest& req) {
  size_t bytes = 0;
  Serve(
      kSampleNeighbors, &bytes,
      [&]() -> Status {
        ArrayView<const int64_t> ids;
        FANOUT_RETURN_IF_ERROR(CheckIds(req.nodes, &ids));
        SampleParams p;
        p.fanout = req.fanout;
        p.replace = req.replace;
        p.weighted = req.weighted;
        p.with_edge_ids = req.with_edge_ids;
        p.seed = static_cast<uint64_t>(req.seed);
        p.hop = req.hop;
        ArrayView<const int64_t> keep;
        if (req.__isset.keep) FANOUT_RETURN_IF_ERROR(CheckKeep(req.keep, &keep));
        if (req.__isset.times) {
          FANOUT_RETURN_IF_ERROR(rpc::View(req.times, "times", &p.times));
          p.temporal = true;
          if (req.__isset.temporal_strategy)
            FANOUT_RETURN_IF_ERROR(
                sampler::ParseTemporalStrategy(req.temporal_strategy, &p.strategy));
        }
        if (req.__isset.type_fanouts) {
          FANOUT_RETURN_IF_ERROR(rpc::View(req.type_fanouts, "type fanouts", &p.type_fanouts));
          p.hetero = true;
          if (req.__isset.keep)
            return Status::InvalidArgument(
                "subgraph (keep) sampling of heterogeneous datasets is not supported");
        }
        p.labor = req.__isset.labor && req.labor;
        FANOUT_RETURN_IF_ERROR(RequestVersion(req.__isset.version, req.version, &p.version));
        if (req.__isset.walk_keys) {
          FANOUT_RETURN_IF_ERROR(rpc::View(req.walk_keys, "walk keys", &p.walk_keys));
          p.walk = true;
        }
        if ((p.labor || p.walk) && req.__isset.keep)
          return Status::InvalidArgument(
              "keep lists are for subgraph passes, not LABOR or walk steps");
        const sampler::OneHopResult* hop = nullptr;
        FANOUT_RETURN_IF_ERROR(svc_.Sample(ids, p, &hop));
        const size_t n = ids.size();
        if (p.hetero) {
          const int64_t total = hop->offsets[n];
          out.__set_edge_types(
              std::string(reinterpret_cast<const char*>(hop->edge_types.data()), total * 4));
        }
        if (p.labor) {
          const int64_t total = hop->offsets[n];
          out.__set_edge_weights(
              std::string(reinterpret_cast<const char*>(hop->edge_weights.data()), total * 4));
        }
        if (p.walk) out.__set_walk_step(true);
        if (svc_.last_version() >= 0) out.__set_version(svc_.last_version());
        if (req.__isset.keep) {
          PackKept(*hop, n, keep, req.with_edge_ids, &out);
          bytes = out.counts.size() + out.neighbors.size() + out.edge_ids.size();
          return Status::OK();
        }
        const int64_t total = hop->offsets[n];
        out.counts.resize(n * 4);
        int32_t* counts = reinterpret_cast<int32_t*>(out.counts.data());
        for (size_t i = 0; i < n; ++i)
          counts[i] = static_cast<int32_t>(hop->offsets[i + 1] - hop->offsets[i]);
        out.neighbors.assign(reinterpret_cast<const char*>(hop->neighbors.data()), total * 8);
        if (req.with_edge_ids)
          out.edge_ids.assign(reinterpret_cast<const char*>(hop->edge_ids.data()), total * 8);
        else
          out.edge_ids.clear();
        bytes = out.counts.size() + out.neighbors.size() + out.edge_ids.size() +
                out.edge_types.size() + out.edge_weights.size();
        return Status::OK();
      },
      SampleWork(req));
}

PartitionService::Work RpcHandler::SampleWork(const gen::SampleRequest& req) const {
  // Type fanouts that do not parse are charged as all edges (the request is
  // then refused anyway, after its turn).
  ArrayView<const int64_t> types;
  const bool hetero = req.__isset.type_fanouts;
  const bool parsed = !hetero || rpc::View(req.type_fanouts, "type fanouts", &types).ok();
  PartitionService::Work w;
  w.ids = static_cast<int64_t>(req.nodes.size() / 8);
  w.draws = parsed ? ServiceWork::SampleDraws(req.fanout, types, hetero, req.__isset.walk_keys,
                                              req.__isset.labor && req.labor)
                   : -1;
  return w;
}

Status RpcHandler::CheckKeep(const std::string& payload, ArrayView<const int64_t>* keep) const {
  FANOUT_RETURN_IF_ERROR(rpc::View(payload, "keep ids", keep));
  const int64_t total = svc_.state().data->meta.num_nodes;
  for (size_t i = 0; i < keep->size(); ++i) {
    const int64_t v = (*keep)[i];
    if (v < 0 || v >= total)
      return Status::InvalidArgument("keep id " + std::to_string(v) + " at position " +
                                     std::to_string(i) + " is outside [0, " +
                                     std::to_string(total) + ")");
    if (i > 0 && v <= (*keep)[i - 1])
      return Status::InvalidArgument(
          "keep ids must be ascending and distinct: " + std::to_string(v) + " at position " +
          std::to_string(i) + " follows " + std::to_string((*keep)[i - 1]));
  }
  return Status::OK();
}

void RpcHandler::PackKept(const sampler::OneHopResult& hop, size_t n, ArrayView<const int64_t> keep,
                          bool eids, gen::SampleResponse* out) {
  // Membership through a bitmap over the graph's ids where that is small
  // (set for this request, cleared after), else a binary search.
  const int64_t total = svc_.state().data->meta.num_nodes;
  const bool bitmap = total <= (int64_t{1} << 25);  // at most 4 MiB per connection
  if (bitmap) {
    if (keep_bits_.size() < static_cast<size_t>((total + 63) / 64))
      keep_bits_.assign((total + 63) / 64, 0);
    for (int64_t v : keep) keep_bits_[v >> 6] |= uint64_t{1} << (v & 63);
  }
  auto kept = [&](int64_t v) {
    if (bitmap) return (keep_bits_[v >> 6] >> (v & 63)) & 1;
    return static_cast<uint64_t>(std::binary_search(keep.begin(), keep.end(), v));
  };
  out->counts.resize(n * 4);
  int32_t* counts = reinterpret_cast<int32_t*>(out->counts.data());
  const int64_t total_in = hop.offsets[n];
  out->neighbors.resize(total_in * 8);
  out->edge_ids.resize(eids ? total_in * 8 : 0);
  int64_t* nbr = reinterpret_cast<int64_t*>(out->neighbors.data());
  int64_t* eid = reinterpret_cast<int64_t*>(out->edge_ids.data());
  int64_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t begin = at;
    for (int64_t e = hop.offsets[i]; e < hop.offsets[i + 1]; ++e) {
      const int64_t v = hop.neighbors[e];
      if (!kept(v)) continue;
      nbr[at] = v;
      if (eids) eid[at] = hop.edge_ids[e];
      ++at;
    }
    counts[i] = static_cast<int32_t>(at - begin);
  }
  out->neighbors.resize(at * 8);
  out->edge_ids.resize(eids ? at * 8 : 0);
  if (bitmap)
    for (int64_t v : keep) keep_bits_[v >> 6] = 0;
}

void RpcHandler::lookup_features(std::string& out, const std::string& nodes, int64_t version) {
  size_t bytes = 0;
  Serve(kLookupFeatures, &bytes,
        [&]() -> Status {
          ArrayView<const int64_t> ids;
          FANOUT_RETURN_IF_ERROR(CheckIds(nodes, &ids));
          FANOUT_RETURN_IF_ERROR(svc_.CheckReplyBytes(ids.size(), svc_.FeatureRowBytes()));
          out.resize(ids.size() * svc_.FeatureRowBytes());
          FANOUT_RETURN_IF_ERROR(svc_.GatherFeatures(ids, out.data()));
          int64_t read_at = -1;
          FANOUT_RETURN_IF_ERROR(svc_.OverlayLive(ids, version, out.data(), nullptr, &read_at));
          bytes = out.size();
          return Status::OK();
        },
        {static_cast<int64_t>(nodes.size() / 8)});
}

template <typename T, typename Fn>
void RpcHandler::ServeLookup(int method, const std::string& nodes, std::string& out,
                             Fn&& value_of_row) {
  size_t bytes = 0;
  Serve(method, &bytes,
        [&]() -> Status {
          ArrayView<const int64_t> ids;
          FANOUT_RETURN_IF_ERROR(CheckIds(nodes, &ids));
          out.resize(ids.size() * sizeof(T));
          T* dst = reinterpret_cast<T*>(out.data());
          const int64_t base = svc_.state().view.node_begin;
          for (size_t i = 0; i < ids.size(); ++i) dst[i] = value_of_row(ids[i] - base);
          bytes = out.size();
          return Status::OK();
        },
        {static_cast<int64_t>(nodes.size() / 8)});
}

void RpcHandler::lookup_labels(std::string& out, const std::string& nodes, int64_t version) {
  size_t bytes = 0;
  Serve(kLookupLabels, &bytes,
        [&]() -> Status {
          ArrayView<const int64_t> ids;
          FANOUT_RETURN_IF_ERROR(CheckIds(nodes, &ids));
          out.resize(ids.size() * 8);
          int64_t* labels = reinterpret_cast<int64_t*>(out.data());
          FANOUT_RETURN_IF_ERROR(svc_.Labels(ids, labels));
          int64_t read_at = -1;
          FANOUT_RETURN_IF_ERROR(svc_.OverlayLive(ids, version, nullptr, labels, &read_at));
          bytes = out.size();
          return Status::OK();
        },
        {static_cast<int64_t>(nodes.size() / 8)});
}

void RpcHandler::lookup_degrees(std::string& out, const std::string& nodes) {
  const ServerState& s = svc_.state();
  if (!s.live) {
    const datasets::PartitionView& d = s.view;
    ServeLookup<int64_t>(kLookupDegrees, nodes, out,
                         [&](int64_t r) { return d.indptr[r + 1] - d.indptr[r]; });
    return;
  }
  // A live partition: degrees at its newest committed version (rows a batch
  // changed since the base counted merged).
  const live::VersionedPartition& vp = s.live->partition();
  const uint64_t at = vp.committed();
  std::shared_ptr<const live::Generation> gen;
  Status held = vp.GenerationFor(at, &gen);
  live::VersionedPartition::Row row;
  ServeLookup<int64_t>(kLookupDegrees, nodes, out, [&](int64_t r) -> int64_t {
    if (!held.ok()) return 0;  // not reached: the newest committed version is always kept
    const int64_t node = s.view.node_begin + r;
    if (!gen->EdgesAsBase(at) && vp.MergedRow(*gen, node, at, &row))
      return static_cast<int64_t>(row.neighbors.size());
    return gen->graph().degree(r);
  });
}

void RpcHandler::lookup_splits(std::string& out, const std::string& nodes) {
  const datasets::PartitionView& d = svc_.state().view;
  ServeLookup<uint8_t>(kLookupSplits, nodes, out,
                       [&](int64_t r) { return d.split.empty() ? uint8_t{0} : d.split[r]; });
}

void RpcHandler::lookup_original_ids(std::string& out, const std::string& nodes) {
  const datasets::PartitionView& d = svc_.state().view;
  ServeLookup<int64_t>(kLookupOriginalIds, nodes, out,
                       [&](int64_t r) { return d.original_ids[r]; });
}

void RpcHandler::lookup_original_names(std::vector<std::string>& out, const std::string& nodes) {
  size_t bytes = 0;
  Serve(kLookupOriginalNames, &bytes,
        [&]() -> Status {
          ArrayView<const int64_t> ids;
          FANOUT_RETURN_IF_ERROR(CheckIds(nodes, &ids));
          const ServerState& s = svc_.state();
          const std::vector<std::string>& names = s.data->original_names;
          if (!s.data->meta.has_names || names.size() != static_cast<size_t>(s.data->num_nodes()))
            return Status::NotFound("dataset '" + s.data->meta.name +
                                    "' keeps no original names (its ids are integers: "
                                    "lookup_original_ids)");
          for (int64_t id : ids)
            bytes += names[static_cast<size_t>(id - s.view.node_begin)].size() + 4;
          // Names are as long as the tables made them: the reply's size is checked first.
          FANOUT_RETURN_IF_ERROR(svc_.CheckReplyBytes(1, bytes));
          out.resize(ids.size());
          for (size_t i = 0; i < ids.size(); ++i)
            out[i] = names[static_cast<size_t>(ids[i] - s.view.node_begin)];
          return Status::OK();
        },
        {static_cast<int64_t>(nodes.size() / 8)});
}

void RpcHandler::apply_updates(gen::UpdateReply& out, const std::string& batch) {
  Serve(kApplyUpdates, nullptr,
        [&]() -> Status {
          const ServerState& s = svc_.state();
          if (!s.live)
            return Status::NotSupported(
                "this partition is static: it takes updates when its server runs with --live-dir");
          if (s.tenants_file) FANOUT_RETURN_IF_ERROR(s.tenancy->MayWrite(svc_.tenant()));
          uint64_t version = 0;
          int64_t ops = 0;
          bool retry = false;
          FANOUT_RETURN_IF_ERROR(s.live->Apply(batch, &version, &ops, &retry));
          out.version = static_cast<int64_t>(version);
          out.operations = ops;
          if (retry)
            out.__set_was_retry(true);
          else
            svc_.metrics()->RecordUpdates(ops);
          return Status::OK();
        },
        {static_cast<int64_t>(batch.size() / 8), 0, static_cast<int64_t>(batch.size())});
}

void RpcHandler::compact(gen::CompactReply& out) {
  Serve(kCompact, nullptr, [&]() -> Status {
    const ServerState& s = svc_.state();
    if (!s.live)
      return Status::NotSupported(
          "this partition is static: only a live partition (--live-dir) has a delta to compact");
    if (s.tenants_file) FANOUT_RETURN_IF_ERROR(s.tenancy->MayWrite(svc_.tenant()));
    live::CompactionReport r;
    FANOUT_RETURN_IF_ERROR(s.live->CompactNow(&r));
    out.version = static_cast<int64_t>(r.version);
    out.edges = r.edges;
    out.rows_merged = r.rows_merged;
    out.bytes = r.bytes;
    out.seconds = r.seconds;
    if (r.up_to_date) out.__set_up_to_date(true);
    return Status::OK();
  });
}

void RpcHandler::fetch_updates(rpc::gen::UpdateFeed& out, int64_t after, int32_t wait_ms,
                               const std::string& follower, int64_t max_bytes) {
  const ServerState& s = svc_.state();
  auto fetch = [&] {
    size_t bytes = 0;
    Serve(kFetchUpdates, &bytes, [&]() -> Status {
      if (!s.live)
        return Status::NotSupported(
            "this partition is static: only a live partition (--live-dir) has updates to follow");
      if (s.tenants_file) FANOUT_RETURN_IF_ERROR(s.tenancy->MayWrite(svc_.tenant()));
      if (after < 0) return Status::InvalidArgument("fetch_updates after a negative version");
      uint64_t committed = 0, oldest = 0;
      // Bounded: at most 64 MiB a reply (and at least one record).
      const int64_t cap = std::clamp<int64_t>(max_bytes, 1, int64_t{64} << 20);
      FANOUT_RETURN_IF_ERROR(s.live->FetchForFollower(follower, static_cast<uint64_t>(after), cap,
                                                      &out.records, &committed, &oldest));
      out.committed = static_cast<int64_t>(committed);
      out.oldest = static_cast<int64_t>(oldest);
      bytes = out.records.size();
      return Status::OK();
    });
  };
  fetch();  // throws on a refusal: past it the partition is live and `after` >= 0
  // Nothing new yet: the wait (a long poll) happens outside the request's
  // scheduling slot, then the records are read again.
  if (out.records.empty() && wait_ms > 0) {
    s.live->WaitNewerForFollower(static_cast<uint64_t>(after), wait_ms);
    fetch();
  }
}

void RpcHandler::has_edges(std::string& out, const std::string& rows, const std::string& neighbors,
                           const int32_t edge_type) {
  size_t bytes = 0;
  Serve(kHasEdges, &bytes,
        [&]() -> Status {
          ArrayView<const int64_t> ids, nbrs;
          FANOUT_RETURN_IF_ERROR(CheckIds(rows, &ids));
          FANOUT_RETURN_IF_ERROR(rpc::View(neighbors, "neighbor ids", &nbrs));
          if (nbrs.size() != ids.size())
            return Status::InvalidArgument("has_edges: " + std::to_string(ids.size()) +
                                           " rows but " + std::to_string(nbrs.size()) +
                                           " neighbors");
          const ServerState& s = svc_.state();
          const sampler::HeteroSchema& h = s.data->meta.hetero;
          if (edge_type >= 0 && edge_type >= h.num_edge_types())
            return Status::InvalidArgument("has_edges: edge type " + std::to_string(edge_type) +
                                           " is outside [0, " + std::to_string(h.num_edge_types()) +
                                           ") of dataset '" + s.data->meta.name + "'");
          // A live partition answers at its newest committed version, from
          // the generation holding it: a row a batch changed since its base
          // is read merged (what negatives exclude must be the edges the
          // hops sample).
          const datasets::PartitionView* view = &s.view;
          const sampler::CsrGraph* graph = &s.graph;
          const live::VersionedPartition* vp = nullptr;
          std::shared_ptr<const live::Generation> gen;
          uint64_t at = 0;
          if (s.live) {
            vp = &s.live->partition();
            at = vp->committed();
            FANOUT_RETURN_IF_ERROR(vp->GenerationFor(at, &gen));
            view = &gen->view();
            graph = &gen->graph();
            if (gen->EdgesAsBase(at)) vp = nullptr;
          }
          const int32_t* types = view->edge_types.empty() ? nullptr : view->edge_types.data();
          live::VersionedPartition::Row row;
          out.resize(ids.size());
          for (size_t i = 0; i < ids.size(); ++i) {
            bool has = false;
            if (vp != nullptr && vp->MergedRow(*gen, ids[i], at, &row)) {
              for (size_t j = 0; j < row.neighbors.size() && !has; ++j)
                has = row.neighbors[j] == nbrs[i] &&
                      (edge_type < 0 || row.types.empty() || row.types[j] == edge_type);
            } else {
              has = sampler::RowHasNeighbor(*graph, ids[i] - view->node_begin, nbrs[i], types,
                                            edge_type);
            }
            out[i] = static_cast<char>(has);
          }
          bytes = out.size();
          return Status::OK();
        },
        {static_cast<int64_t>(rows.size() / 8)});
}

void RpcHandler::ppr_push(gen::PprPushResponse& out, const gen::PprPushRequest& req) {
  size_t bytes = 0;
  Serve(kPprPush, &bytes,
        [&]() -> Status {
          sampler::PprPushRequest in;
          FANOUT_RETURN_IF_ERROR(rpc::View(req.queries, "PPR query ids", &in.queries));
          FANOUT_RETURN_IF_ERROR(rpc::View(req.nodes, "PPR nodes", &in.nodes));
          FANOUT_RETURN_IF_ERROR(rpc::View(req.residuals, "PPR residuals", &in.residuals));
          if (req.alpha_fixed <= 0 || req.eps_fixed <= 0)
            return Status::InvalidArgument("PPR push: alpha_fixed " +
                                           std::to_string(req.alpha_fixed) + " and eps_fixed " +
                                           std::to_string(req.eps_fixed) + " must be positive");
          in.alpha_fixed = static_cast<uint64_t>(req.alpha_fixed);
          in.eps_fixed = static_cast<uint64_t>(req.eps_fixed);
          int64_t version = -1;
          FANOUT_RETURN_IF_ERROR(RequestVersion(req.__isset.version, req.version, &version));
          const sampler::PprPushResult* r = nullptr;
          FANOUT_RETURN_IF_ERROR(svc_.PprPush(in, version, &r));
          out.done = static_cast<int64_t>(r->done);
          rpc::Pack<uint8_t>(r->pushed, &out.pushed);
          rpc::Pack<int64_t>(r->degrees, &out.degrees);
          rpc::Pack<int32_t>(r->queries, &out.out_queries);
          rpc::Pack<int64_t>(r->nodes, &out.out_nodes);
          rpc::Pack<uint64_t>(r->mass, &out.out_mass);
          if (svc_.last_version() >= 0) out.__set_version(svc_.last_version());
          bytes = out.pushed.size() + out.degrees.size() + out.out_queries.size() +
                  out.out_nodes.size() + out.out_mass.size();
          return Status::OK();
        },
        {static_cast<int64_t>(req.nodes.size() / 8)});
}

void RpcHandler::ping(std::string& out, const std::string& text) {
  Serve(kPing, nullptr, [&] {
    out = text;
    return Status::OK();
  });
}

void RpcHandler::note_failover(const gen::FailoverNote& note) {
  Serve(kNoteFailover, nullptr, [&] {
    const ServerState& s = svc_.state();
    if (note.partition != s.view.part)
      return Status::InvalidArgument(
          "a failover note for partition " + std::to_string(note.partition) +
          " sent to a server of partition " + std::to_string(s.view.part));
    s.counters.failovers.Note(note.from_address, note.reason, note.same_replica);
    return Status::OK();
  });
}

void RpcHandler::report_local(const gen::LocalReport& r) {
  Serve(kReportLocal, nullptr, [&] {
    const ServerState& s = svc_.state();
    if (r.partition != s.view.part)
      return Status::InvalidArgument("a local report for partition " + std::to_string(r.partition) +
                                     " sent to a server of partition " +
                                     std::to_string(s.view.part));
    // Counts of work done elsewhere: bounded so that a forged report cannot
    // wrap the counters (at most 2^40 of anything per report).
    constexpr int64_t kMost = int64_t{1} << 40;
    for (int64_t v :
         {r.requests, r.sampled_nodes, r.sampled_edges, r.feature_rows, r.feature_bytes, r.bytes})
      if (v < 0 || v > kMost)
        return Status::InvalidArgument("a local report's counts must be in [0, 2^40]");
    ServerMetrics* m = svc_.metrics();
    m->RecordSample(r.sampled_nodes, r.sampled_edges);
    m->RecordFeatures(r.feature_rows, r.feature_bytes);
    m->RecordPath(kLocal, r.bytes, r.requests);
    if (s.tenancy)
      s.tenancy->AddLocalWork(svc_.tenant(), r.requests, r.sampled_edges, r.feature_rows, r.bytes);
    return Status::OK();
  });
}

}  // namespace fanout::server
