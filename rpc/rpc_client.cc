#include "rpc/rpc_client.h"

#include <fcntl.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <thrift/TApplicationException.h>
#include <thrift/transport/TSSLSocket.h>
#include <thrift/transport/TSocket.h>
#include <thrift/transport/TTransportException.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "gen-cpp/Fanout.h"
#include "rpc/codec.h"
#include "rpc/framed_transport.h"
#include "rpc/local_export.h"

namespace fanout::rpc {

using apache::thrift::transport::TSocket;
using apache::thrift::transport::TTransportException;

namespace {
// Why the last certificate check on this thread failed (OpenSSL's words,
// e.g. "certificate has expired"), for the error Thrift reports without it.
thread_local std::string t_verify_error;

int RecordVerifyError(int ok, X509_STORE_CTX* store) {
  if (!ok) t_verify_error = X509_verify_cert_error_string(X509_STORE_CTX_get_error(store));
  return ok;
}

// TSSLSocketFactory with its OpenSSL context reachable (for the callback).
class TlsFactory : public apache::thrift::transport::TSSLSocketFactory {
 public:
  TlsFactory() : TSSLSocketFactory(apache::thrift::transport::SSLTLS) {}
  SSL_CTX* context() { return ctx_->get(); }
};

std::string TakeVerifyError() {
  std::string why = t_verify_error.empty() ? "" : " (" + t_verify_error + ")";
  t_verify_error.clear();
  return why;
}
}  // namespace

struct RpcClient::Impl {
  std::string host;
  int port = 0;
  RpcOptions options;
  std::shared_ptr<TSocket> socket;
  std::shared_ptr<TlsFactory> tls;  // when options.tls is on
  std::shared_ptr<ResettingFramedTransport> transport;
  std::unique_ptr<gen::FanoutClient> client;
  bool broken = true;

  Status Open() {
    auto config = MakeThriftConfig(options.max_frame_bytes);
    if (options.tls.enabled()) {
      if (!tls) {
        tls = std::make_shared<TlsFactory>();
        auto load = [](const char* what, const std::string& file,
                       const std::function<void(const char*)>& fn) {
          try {
            fn(file.c_str());
          } catch (const std::exception& e) {
            return Status::InvalidArgument(std::string("TLS ") + what + " " + file + ": " +
                                           e.what());
          }
          return Status::OK();
        };
        FANOUT_RETURN_IF_ERROR(
            load("CA", options.tls.ca, [&](const char* f) { tls->loadTrustedCertificates(f); }));
        if (!options.tls.cert.empty() || !options.tls.key.empty()) {
          FANOUT_RETURN_IF_ERROR(load("certificate", options.tls.cert,
                                      [&](const char* f) { tls->loadCertificate(f); }));
          FANOUT_RETURN_IF_ERROR(
              load("key", options.tls.key, [&](const char* f) { tls->loadPrivateKey(f); }));
        }
        tls->authenticate(true);  // the server's certificate must verify against the CA
        SSL_CTX_set_verify(tls->context(), SSL_CTX_get_verify_mode(tls->context()),
                           RecordVerifyError);
        // ... and name the address connected to.
        tls->access(std::make_shared<apache::thrift::transport::DefaultClientAccessManager>());
      }
      socket = tls->createSocket(host, port);
    } else {
      socket = std::make_shared<TSocket>(host, port, config);
    }
    socket->setConnTimeout(options.connect_timeout_ms);
    socket->setRecvTimeout(options.call_timeout_ms);
    socket->setSendTimeout(options.call_timeout_ms);
    socket->setNoDelay(true);
    transport = std::make_shared<ResettingFramedTransport>(socket, config);
    // A reply's fields may not declare more bytes than their frame holds (a
    // rogue server's 30-byte reply declaring a 2 GiB string would otherwise
    // cost this client the allocation: found by fuzz_client_reply).
    auto protocol = FrameBoundedProtocolFactory().getProtocol(transport);
    client = std::make_unique<gen::FanoutClient>(protocol);
    try {
      transport->open();
    } catch (const std::exception& e) {
      return Status::Unavailable("cannot connect to " + host + ":" + std::to_string(port) + ": " +
                                 e.what());
    }
    broken = false;
    if (options.auth_token.empty()) return Status::OK();
    try {
      client->authenticate(options.auth_token);
    } catch (const gen::FanoutError& e) {
      broken = true;
      return Status::FromCode(e.code,
                              "server " + host + ":" + std::to_string(port) + ": " + e.message);
    } catch (const apache::thrift::transport::TSSLException& e) {
      broken = true;
      return Status::Unauthenticated("server " + host + ":" + std::to_string(port) +
                                     ": TLS: " + e.what() + TakeVerifyError());
    } catch (const std::exception& e) {
      broken = true;
      return Status::Unavailable("server " + host + ":" + std::to_string(port) +
                                 ": authenticate failed: " + e.what());
    }
    return Status::OK();
  }
};

Status ParseDataPlaneMode(const std::string& text, DataPlaneMode* out) {
  if (text == "auto")
    *out = DataPlaneMode::kAuto;
  else if (text == "ucx")
    *out = DataPlaneMode::kUcx;
  else if (text == "tcp")
    *out = DataPlaneMode::kTcp;
  else
    return Status::InvalidArgument("data plane '" + text + "' is not one of auto, ucx, tcp");
  return Status::OK();
}

const char* DataPlaneModeName(DataPlaneMode mode) {
  switch (mode) {
    case DataPlaneMode::kAuto:
      return "auto";
    case DataPlaneMode::kUcx:
      return "ucx";
    case DataPlaneMode::kTcp:
      return "tcp";
  }
  return "?";
}

Status ParseAddress(const std::string& address, std::string* host, int* port) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
    return Status::InvalidArgument("address '" + address + "' is not host:port");
  *host = address.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']')
    *host = host->substr(1, host->size() - 2);
  try {
    size_t used = 0;
    int p = std::stoi(address.substr(colon + 1), &used);
    if (used != address.size() - colon - 1 || p <= 0 || p > 65535) throw std::out_of_range("port");
    *port = p;
  } catch (const std::exception&) {
    return Status::InvalidArgument("address '" + address + "' has no valid port (1-65535)");
  }
  return Status::OK();
}

Status RpcClient::Connect(const std::string& host, int port, const RpcOptions& options,
                          std::unique_ptr<RpcClient>* out) {
  FilterThriftLog();
  std::unique_ptr<RpcClient> c(new RpcClient());
  c->impl_ = std::make_unique<Impl>();
  c->impl_->host = host;
  c->impl_->port = port;
  c->impl_->options = options;
  c->address_ = host + ":" + std::to_string(port);
  FANOUT_RETURN_IF_ERROR(c->impl_->Open());
  *out = std::move(c);
  return Status::OK();
}

Status RpcClient::Connect(const std::string& address, const RpcOptions& options,
                          std::unique_ptr<RpcClient>* out) {
  std::string host;
  int port = 0;
  FANOUT_RETURN_IF_ERROR(ParseAddress(address, &host, &port));
  return Connect(host, port, options, out);
}

RpcClient::~RpcClient() {
  if (impl_ && impl_->transport) {
    try {
      impl_->transport->close();
    } catch (...) {
    }
  }
}

int RpcClient::DupSocket() const {
  if (impl_->broken || !impl_->socket) return -1;
  const int fd = impl_->socket->getSocketFD();
  return fd >= 0 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
}

void RpcClient::Abandon() {
  if (impl_->broken) return;
  impl_->broken = true;
  try {
    impl_->transport->close();
  } catch (...) {
  }
}

template <typename Fn>
Status RpcClient::Call(const char* method, Fn&& fn) {
  if (impl_->broken) FANOUT_RETURN_IF_ERROR(impl_->Open());
  try {
    fn(*impl_->client);
    return Status::OK();
  } catch (const gen::FanoutError& e) {
    return Status::FromCode(e.code, "server " + address_ + ": " + e.message);
  } catch (const apache::thrift::transport::TSSLException& e) {
    // A handshake that failed: a certificate the other side does not accept.
    impl_->broken = true;
    try {
      impl_->transport->close();
    } catch (...) {
    }
    return Status::Unauthenticated("server " + address_ + ": " + method + ": TLS: " + e.what() +
                                   TakeVerifyError());
  } catch (const TTransportException& e) {
    impl_->broken = true;
    try {
      impl_->transport->close();
    } catch (...) {
    }
    if (e.getType() == TTransportException::TIMED_OUT)
      return Status::DeadlineExceeded("server " + address_ + " did not answer " + method +
                                      " within " + std::to_string(impl_->options.call_timeout_ms) +
                                      " ms");
    return Status::Unavailable("server " + address_ + ": " + method + " failed: " + e.what());
  } catch (const apache::thrift::TApplicationException& e) {
    // A server from before this call: it read the request whole and said
    // so, and the connection stays usable.
    if (e.getType() == apache::thrift::TApplicationException::UNKNOWN_METHOD)
      return Status::NotSupported("server " + address_ + " does not know " + method +
                                  " (an older server)");
    impl_->broken = true;
    return Status::Unavailable("server " + address_ + ": " + method + " failed: " + e.what());
  } catch (const std::exception& e) {
    impl_->broken = true;
    return Status::Unavailable("server " + address_ + ": " + method + " failed: " + e.what());
  }
}

Status RpcClient::Info(RemotePartitionInfo* out) {
  gen::PartitionInfo r;
  FANOUT_RETURN_IF_ERROR(
      Call("partition_info", [&](gen::FanoutClient& c) { c.partition_info(r); }));
  out->partition = r.partition;
  out->num_parts = r.num_parts;
  out->node_begin = r.node_begin;
  out->node_end = r.node_end;
  out->num_nodes_total = r.num_nodes_total;
  out->num_edges = r.num_edges;
  out->num_edges_total = r.num_edges_total;
  out->feature_dim = r.feature_dim;
  out->feature_dtype = r.feature_dtype;
  out->feature_scale = r.feature_scale;
  out->feature_scales.clear();
  if (r.feature_dtype == "int8") {
    if (r.feature_dim < 0 || r.feature_dim > (int64_t{1} << 24))
      return Status::Corruption("server " + address_ + ": feature_dim " +
                                std::to_string(r.feature_dim) + " out of range");
    if (r.__isset.feature_scales) {
      if (r.feature_scales.size() != static_cast<size_t>(r.feature_dim) * 8)
        return Status::Corruption(
            "server " + address_ + ": " + std::to_string(r.feature_scales.size() / 8) +
            " int8 feature scales for " + std::to_string(r.feature_dim) + " columns");
      out->feature_scales.resize(static_cast<size_t>(r.feature_dim));
      std::memcpy(out->feature_scales.data(), r.feature_scales.data(), r.feature_scales.size());
    } else {
      out->feature_scales.assign(static_cast<size_t>(r.feature_dim), r.feature_scale);
    }
    for (double s : out->feature_scales)
      if (!(s > 0) || !std::isfinite(s))
        return Status::Corruption("server " + address_ + ": an int8 feature scale is not positive");
  }
  out->num_classes = r.num_classes;
  out->format_version = r.format_version;
  out->dataset_id = r.dataset_id;
  out->dataset_name = r.dataset_name;
  out->direction = r.direction;
  ArrayView<const int64_t> offsets;
  FANOUT_RETURN_IF_ERROR(View(r.partition_offsets, "partition_offsets", &offsets));
  out->partition_offsets.assign(offsets.begin(), offsets.end());
  out->has_labels = r.has_labels;
  out->max_ids_per_request = r.max_ids_per_request;
  out->max_fanout = r.max_fanout;
  out->data_port = r.__isset.data_port ? r.data_port : 0;
  if (r.__isset.data_plane_ticket) out->data_ticket = r.data_plane_ticket;
  if (r.__isset.local_socket) out->local_socket = r.local_socket;
  if (r.__isset.local_export_id) out->local_export_id = r.local_export_id;
  if (r.__isset.local_export_bytes) out->local_export_bytes = r.local_export_bytes;
  if (r.__isset.server_uid) out->server_uid = r.server_uid;
  if (r.__isset.server_version) out->server_version = PrintableText(r.server_version, 64);
  out->features_on_disk = r.__isset.features_tier && r.features_tier == "disk";
  out->live_version = r.__isset.live_version ? r.live_version : -1;
  out->live_follows = r.__isset.live_follows ? r.live_follows : "";
  out->has_edge_times = r.__isset.has_edge_times && r.has_edge_times;
  out->has_edge_weights = r.__isset.has_edge_weights && r.has_edge_weights;
  if (r.__isset.node_types) {
    out->node_types = r.node_types;
    out->edge_types = r.edge_types;
    ArrayView<const int64_t> v;
    FANOUT_RETURN_IF_ERROR(View(r.node_type_bounds, "node_type_bounds", &v));
    out->node_type_bounds.assign(v.begin(), v.end());
    FANOUT_RETURN_IF_ERROR(View(r.node_type_feature_dims, "node_type_feature_dims", &v));
    out->node_type_feature_dims.assign(v.begin(), v.end());
  }
  return Status::OK();
}

Status RpcClient::Sample(ArrayView<const int64_t> nodes, const SampleCall& call, SampleReply* out) {
  FANOUT_RETURN_IF_ERROR(SendSample(nodes, call));
  return ReceiveSample(nodes.size(), call, out);
}

Status RpcClient::SendSample(ArrayView<const int64_t> nodes, const SampleCall& call) {
  gen::SampleRequest req;
  Pack(nodes, &req.nodes);
  req.fanout = call.fanout;
  req.replace = call.replace;
  req.weighted = call.weighted;
  req.seed = static_cast<int64_t>(call.seed);
  req.hop = call.hop;
  req.with_edge_ids = call.with_edge_ids;
  if (!call.keep.empty()) Pack(call.keep, &req.keep), req.__isset.keep = true;
  if (!call.times.empty()) {
    Pack(call.times, &req.times);
    req.__isset.times = true;
    req.__set_temporal_strategy(call.temporal_strategy);
  }
  if (!call.type_fanouts.empty())
    Pack(call.type_fanouts, &req.type_fanouts), req.__isset.type_fanouts = true;
  if (call.labor) req.__set_labor(true);
  if (!call.walk_keys.empty()) Pack(call.walk_keys, &req.walk_keys), req.__isset.walk_keys = true;
  if (call.version >= 0) req.__set_version(call.version);
  return Call("sample_neighbors", [&](gen::FanoutClient& c) { c.send_sample_neighbors(req); });
}

Status RpcClient::ReceiveSample(size_t num_nodes, const SampleCall& call, SampleReply* out) {
  gen::SampleResponse r;
  FANOUT_RETURN_IF_ERROR(
      Call("sample_neighbors", [&](gen::FanoutClient& c) { c.recv_sample_neighbors(r); }));
  out->counts = std::move(r.counts);
  out->neighbors = std::move(r.neighbors);
  out->edge_ids = std::move(r.edge_ids);
  out->edge_types = r.__isset.edge_types ? std::move(r.edge_types) : std::string();
  out->edge_weights = r.__isset.edge_weights ? std::move(r.edge_weights) : std::string();
  out->version = r.__isset.version ? r.version : -1;
  if (call.version >= 0 && out->version != call.version)
    return Status::Corruption("server " + address_ + " sampled at version " +
                              std::to_string(out->version) + ", not the " +
                              std::to_string(call.version) + " asked for");
  return CheckSampleReply(address_, num_nodes, call, r.__isset.walk_step && r.walk_step,
                          r.__isset.edge_types, *out);
}

Status CheckSampleReply(const std::string& server, size_t num_nodes, const SampleCall& call,
                        bool answered_walk_step, bool has_edge_types, const SampleReply& r) {
  const std::string who = "server " + server;
  if (call.labor && r.edge_weights.size() * 2 != r.neighbors.size())
    return Status::Corruption(who +
                              " sent no edge weights for a LABOR sample (a server before LABOR?)");
  if (!call.walk_keys.empty() && !answered_walk_step)
    return Status::Corruption(who +
                              " did not answer a walk step as one (a server before random walks?)");
  if (r.counts.size() != num_nodes * 4 || r.neighbors.size() % 8 != 0 ||
      (call.with_edge_ids && r.edge_ids.size() != r.neighbors.size()) ||
      (has_edge_types && r.edge_types.size() * 2 != r.neighbors.size()))
    return Status::Corruption(who + ": malformed sample reply");
  // The same count checks as the data plane's codec: a negative count would
  // otherwise pass a sum that matches and overrun the merge.
  int64_t total = 0;
  Status st = CheckSampleCounts(r.Counts().data(), num_nodes, -1, &total);
  if (!st.ok()) return Status::Corruption(who + ": " + st.message());
  if (total * 8 != static_cast<int64_t>(r.neighbors.size()))
    return Status::Corruption(who + ": sample reply counts do not match its neighbors");
  return Status::OK();
}

Status RpcClient::SendFeatures(ArrayView<const int64_t> nodes, int64_t version) {
  std::string ids = Pack(nodes);
  return Call("lookup_features",
              [&](gen::FanoutClient& c) { c.send_lookup_features(ids, version); });
}

Status RpcClient::ReceiveFeatures(std::string* rows) {
  return Call("lookup_features", [&](gen::FanoutClient& c) { c.recv_lookup_features(*rows); });
}

Status RpcClient::ReceiveFeaturesInto(const std::vector<iovec>& segments, std::string* rows,
                                      bool* direct) {
  *direct = false;
  return Call("lookup_features", [&](gen::FanoutClient& c) {
    apache::thrift::protocol::TProtocol* in = c.getInputProtocol().get();
    bool done = false;
    ArmBinaryScatter(in, segments.data(), segments.size(), &done);
    try {
      c.recv_lookup_features(*rows);
    } catch (...) {
      DisarmBinaryScatter(in);
      throw;
    }
    DisarmBinaryScatter(in);
    *direct = done;
  });
}

Status RpcClient::SendLabels(ArrayView<const int64_t> nodes, int64_t version) {
  std::string ids = Pack(nodes);
  return Call("lookup_labels", [&](gen::FanoutClient& c) { c.send_lookup_labels(ids, version); });
}

Status RpcClient::ReceiveLabels(std::string* labels) {
  return Call("lookup_labels", [&](gen::FanoutClient& c) { c.recv_lookup_labels(*labels); });
}

// A per-node lookup: packs the ids, calls `rpc`, and (when bytes_per_node > 0)
// checks that the reply holds that many bytes for every node.
template <typename Rpc>
Status RpcClient::Lookup(const char* method, ArrayView<const int64_t> nodes, size_t bytes_per_node,
                         std::string* out, Rpc&& rpc) {
  std::string ids = Pack(nodes);
  FANOUT_RETURN_IF_ERROR(Call(method, [&](gen::FanoutClient& c) { rpc(c, *out, ids); }));
  if (bytes_per_node > 0 && out->size() != nodes.size() * bytes_per_node)
    return Status::Corruption("server " + address_ + ": malformed " + method + " reply");
  return Status::OK();
}

Status RpcClient::OriginalIds(ArrayView<const int64_t> nodes, std::string* out) {
  return Lookup("lookup_original_ids", nodes, 8, out,
                [](gen::FanoutClient& c, std::string& r, const std::string& ids) {
                  c.lookup_original_ids(r, ids);
                });
}

Status RpcClient::OriginalNames(ArrayView<const int64_t> nodes, std::vector<std::string>* names) {
  const std::string ids(reinterpret_cast<const char*>(nodes.data()), nodes.size() * 8);
  FANOUT_RETURN_IF_ERROR(Call("lookup_original_names",
                              [&](gen::FanoutClient& c) { c.lookup_original_names(*names, ids); }));
  if (names->size() != nodes.size())
    return Status::Corruption("server " + address_ + " answered " + std::to_string(names->size()) +
                              " names for " + std::to_string(nodes.size()) + " nodes");
  return Status::OK();
}

Status RpcClient::Features(ArrayView<const int64_t> nodes, std::string* rows, int64_t version) {
  // The row width is the server's to know: the caller checks the size.
  return Lookup("lookup_features", nodes, 0, rows,
                [version](gen::FanoutClient& c, std::string& r, const std::string& ids) {
                  c.lookup_features(r, ids, version);
                });
}

Status RpcClient::Labels(ArrayView<const int64_t> nodes, std::string* labels, int64_t version) {
  return Lookup("lookup_labels", nodes, 8, labels,
                [version](gen::FanoutClient& c, std::string& r, const std::string& ids) {
                  c.lookup_labels(r, ids, version);
                });
}

Status RpcClient::Compact(int64_t* version, int64_t* edges, double* seconds, bool* up_to_date) {
  gen::CompactReply r;
  Status st = Call("compact", [&](gen::FanoutClient& c) { c.compact(r); });
  if (up_to_date != nullptr) *up_to_date = false;
  // A server from before CompactReply.up_to_date refused an up-to-date base
  // as InvalidArgument ("... the base already holds version N").
  static const std::string kOldWords = "the base already holds version ";
  const size_t at = st.message().find(kOldWords);
  if (st.code() == Status::Code::kInvalidArgument && at != std::string::npos) {
    *version = std::strtoll(st.message().c_str() + at + kOldWords.size(), nullptr, 10);
    *edges = 0;
    *seconds = 0;
    if (up_to_date != nullptr) *up_to_date = true;
    return Status::OK();
  }
  FANOUT_RETURN_IF_ERROR(st);
  *version = r.version;
  *edges = r.edges;
  *seconds = r.seconds;
  if (up_to_date != nullptr) *up_to_date = r.__isset.up_to_date && r.up_to_date;
  return Status::OK();
}

Status RpcClient::ApplyUpdates(const std::string& batch, int64_t* version, int64_t* operations,
                               bool* retry) {
  gen::UpdateReply r;
  FANOUT_RETURN_IF_ERROR(
      Call("apply_updates", [&](gen::FanoutClient& c) { c.apply_updates(r, batch); }));
  if (r.version <= 0)
    return Status::Corruption("server " + address_ + " acknowledged an update at version " +
                              std::to_string(r.version));
  *version = r.version;
  if (operations != nullptr) *operations = r.operations;
  if (retry != nullptr) *retry = r.__isset.was_retry && r.was_retry;
  return Status::OK();
}

Status RpcClient::FetchUpdates(int64_t after, int wait_ms, const std::string& follower,
                               int64_t max_bytes, UpdateFeed* out) {
  gen::UpdateFeed r;
  FANOUT_RETURN_IF_ERROR(Call("fetch_updates", [&](gen::FanoutClient& c) {
    c.fetch_updates(r, after, wait_ms, follower, max_bytes);
  }));
  out->records = std::move(r.records);
  out->committed = r.committed;
  out->oldest = r.oldest;
  return Status::OK();
}

Status RpcClient::Degrees(ArrayView<const int64_t> nodes, std::string* degrees) {
  return Lookup("lookup_degrees", nodes, 8, degrees,
                [](gen::FanoutClient& c, std::string& r, const std::string& ids) {
                  c.lookup_degrees(r, ids);
                });
}

Status RpcClient::Splits(ArrayView<const int64_t> nodes, std::string* splits) {
  return Lookup("lookup_splits", nodes, 1, splits,
                [](gen::FanoutClient& c, std::string& r, const std::string& ids) {
                  c.lookup_splits(r, ids);
                });
}

Status RpcClient::HasEdges(ArrayView<const int64_t> rows, ArrayView<const int64_t> neighbors,
                           std::string* exists, int edge_type) {
  FANOUT_RETURN_IF_ERROR(SendHasEdges(rows, neighbors, edge_type));
  return ReceiveHasEdges(rows.size(), exists);
}

Status RpcClient::SendHasEdges(ArrayView<const int64_t> rows, ArrayView<const int64_t> neighbors,
                               int edge_type) {
  std::string r = Pack(rows), n = Pack(neighbors);
  return Call("has_edges", [&](gen::FanoutClient& c) { c.send_has_edges(r, n, edge_type); });
}

Status RpcClient::ReceiveHasEdges(size_t num_pairs, std::string* exists) {
  FANOUT_RETURN_IF_ERROR(
      Call("has_edges", [&](gen::FanoutClient& c) { c.recv_has_edges(*exists); }));
  if (exists->size() != num_pairs)
    return Status::Corruption("server " + address_ + ": malformed has_edges reply");
  return Status::OK();
}

Status RpcClient::SendPprPush(ArrayView<const int32_t> queries, ArrayView<const int64_t> nodes,
                              ArrayView<const uint64_t> residuals, uint64_t alpha_fixed,
                              uint64_t eps_fixed, int64_t version) {
  gen::PprPushRequest req;
  Pack(queries, &req.queries);
  Pack(nodes, &req.nodes);
  Pack(residuals, &req.residuals);
  req.alpha_fixed = static_cast<int64_t>(alpha_fixed);
  req.eps_fixed = static_cast<int64_t>(eps_fixed);
  if (version >= 0) req.__set_version(version);
  return Call("ppr_push", [&](gen::FanoutClient& c) { c.send_ppr_push(req); });
}

Status RpcClient::ReceivePprPush(size_t num_entries, const PprReplyBounds& bounds,
                                 PprPushReply* out) {
  gen::PprPushResponse r;
  FANOUT_RETURN_IF_ERROR(Call("ppr_push", [&](gen::FanoutClient& c) { c.recv_ppr_push(r); }));
  out->done = r.done;
  out->pushed = std::move(r.pushed);
  out->degrees = std::move(r.degrees);
  out->out_queries = std::move(r.out_queries);
  out->out_nodes = std::move(r.out_nodes);
  out->out_mass = std::move(r.out_mass);
  out->version = r.__isset.version ? r.version : -1;
  return CheckPprPushReply(address_, num_entries, bounds, *out);
}

Status CheckPprPushReply(const std::string& server, size_t num_entries,
                         const PprReplyBounds& bounds, const PprPushReply& r) {
  const size_t k = r.out_nodes.size() / 8;
  const int64_t least = num_entries > 0 ? 1 : 0;
  if (r.done < least || static_cast<uint64_t>(r.done) > num_entries ||
      r.pushed.size() != static_cast<size_t>(r.done) ||
      r.degrees.size() != static_cast<size_t>(r.done) * 8 || r.out_nodes.size() != k * 8 ||
      r.out_queries.size() != k * 4 || r.out_mass.size() != k * 8)
    return Status::Corruption("server " + server + ": malformed ppr_push reply (" +
                              std::to_string(r.done) + " of " + std::to_string(num_entries) +
                              " entries done)");
  // Values, read through copies (Thrift's strings need not be aligned for them).
  for (size_t j = 0; j < static_cast<size_t>(r.done); ++j) {
    int64_t degree;
    std::memcpy(&degree, r.degrees.data() + j * 8, 8);
    const uint8_t pushed = static_cast<uint8_t>(r.pushed[j]);
    if (degree < 0 || pushed > 1)
      return Status::Corruption("server " + server + ": a ppr_push reply gives degree " +
                                std::to_string(degree) + " or pushed flag " +
                                std::to_string(pushed) + " for entry " + std::to_string(j));
  }
  for (size_t j = 0; j < k; ++j) {
    int32_t q;
    int64_t v;
    uint64_t mass;
    std::memcpy(&q, r.out_queries.data() + j * 4, 4);
    std::memcpy(&v, r.out_nodes.data() + j * 8, 8);
    std::memcpy(&mass, r.out_mass.data() + j * 8, 8);
    if (v < 0 || v >= bounds.num_nodes || q < 0 || q >= bounds.max_query || mass > bounds.max_mass)
      return Status::Corruption("server " + server + ": a ppr_push reply names node " +
                                std::to_string(v) + ", query " + std::to_string(q) + " or mass " +
                                std::to_string(mass) + " out of range");
  }
  return Status::OK();
}

void RpcClient::SetCallTimeoutMs(int ms) {
  impl_->options.call_timeout_ms = ms;
  if (impl_->socket) {
    impl_->socket->setRecvTimeout(ms);
    impl_->socket->setSendTimeout(ms);
  }
}

Status RpcClient::Ping(const std::string& text, std::string* reply) {
  return Call("ping", [&](gen::FanoutClient& c) { c.ping(*reply, text); });
}

Status RpcClient::NoteFailover(int partition, const std::string& from, const std::string& reason,
                               bool retry) {
  gen::FailoverNote note;
  note.partition = partition;
  note.from_address = from;
  note.reason = reason;
  note.same_replica = retry;
  return Call("note_failover", [&](gen::FanoutClient& c) { c.note_failover(note); });
}

Status RpcClient::ReportLocal(int partition, const LocalWork& work) {
  gen::LocalReport r;
  r.partition = partition;
  r.requests = work.requests;
  r.sampled_nodes = work.sampled_nodes;
  r.sampled_edges = work.sampled_edges;
  r.feature_rows = work.feature_rows;
  r.bytes = work.bytes;
  r.feature_bytes = work.feature_bytes;
  return Call("report_local", [&](gen::FanoutClient& c) { c.report_local(r); });
}

}  // namespace fanout::rpc
