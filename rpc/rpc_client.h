// RpcClient: one connection to one sampling server, with a Status-returning
// API over the generated Thrift client. Server errors come back as the
// server's Status (code and message) prefixed with its address; transport
// failures as Unavailable, timeouts as DeadlineExceeded, both naming the
// address. Generated Thrift types do not appear in this header.
//
// Thread safety: none; use one client per thread. A client whose connection
// broke reconnects on its next call.
#ifndef FANOUT_RPC_RPC_CLIENT_H_
#define FANOUT_RPC_RPC_CLIENT_H_

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/array_view.h"
#include "common/status.h"

namespace fanout::rpc {

// Which path bulk replies take: `kAuto` this process's own reads of the
// server's export where the server shares this host (local memory), else the
// UCX data plane where the server offers it and its endpoint comes up, else
// Thrift, each per server; `kUcx` the UCX data plane or an error; `kTcp`
// Thrift only (the name is historical: it means Thrift's TCP connection, not
// UCX's tcp transport).
enum class DataPlaneMode { kAuto, kUcx, kTcp };
// "auto", "ucx", "tcp"; InvalidArgument names the text otherwise.
Status ParseDataPlaneMode(const std::string& text, DataPlaneMode* out);
const char* DataPlaneModeName(DataPlaneMode mode);

// TLS for RPC connections (PEM files). The server's certificate must be
// signed by `ca` and name the address connected to (its IP or host name);
// `cert` and `key` are this client's, for servers that require one (mutual
// TLS). Empty `ca` = plain TCP.
struct TlsOptions {
  std::string ca, cert, key;
  bool enabled() const { return !ca.empty(); }
};

struct RpcOptions {
  int connect_timeout_ms = 5000;               // TCP connect deadline, default 5 s
  int call_timeout_ms = 30000;                 // send/receive deadline per call, default 30 s
  int64_t max_frame_bytes = int64_t{1} << 30;  // largest reply accepted, default 1 GiB
  DataPlaneMode data_plane =
      DataPlaneMode::kAuto;  // see DataPlaneMode; a cluster file's value wins
  // With data_plane kAuto, partitions whose server shares this host are read
  // from its sealed export in this process (client/local_partition.h); this
  // says whether they are also sampled here (true, "auto") or over RPC
  // (false, "off": features, labels and lookups still local). A cluster
  // file's "local_sampling" wins.
  bool local_sampling = true;
  // Failover (a cluster with replicas): after Unavailable or DeadlineExceeded
  // a request goes again, unchanged, to another replica of the partition, at
  // most this many times per call, waiting backoff, 2x backoff, ... between
  // rounds over all replicas.
  int max_failovers = 4;
  int failover_backoff_ms = 50;
  // Where a partition has several replicas, a client thread pings each this
  // often (and within this long, at least 500 ms): sessions start on, and
  // move first to, replicas that answer, and return to their own once it
  // answers again. 0 = no health checks.
  int health_check_ms = 1000;
  TlsOptions tls;
  // Presented on every connection (authenticate) to servers that run with
  // --auth-token-file; empty = none.
  std::string auth_token;
};

struct RemotePartitionInfo {
  int partition = 0, num_parts = 0;
  int64_t node_begin = 0, node_end = 0, num_nodes_total = 0;
  int64_t num_edges = 0, num_edges_total = 0;
  int64_t feature_dim = 0;
  std::string feature_dtype;
  double feature_scale = 1.0;
  std::vector<double> feature_scales;  // int8: one per column (feature_dim of them); else empty
  int64_t num_classes = 0;
  int format_version = 0;
  std::string dataset_id, dataset_name, direction;
  std::vector<int64_t> partition_offsets;
  bool has_labels = false;
  int64_t max_ids_per_request = 0, max_fanout = 0;
  int data_port = 0;  // the UCX data plane's listener port on the server's host (0 = none offered)
  std::string data_ticket;        // what its data-plane requests must carry (empty = nothing)
  bool has_edge_times = false;    // temporal sampling possible
  bool has_edge_weights = false;  // weighted sampling possible
  // Heterogeneous datasets (sampler/hetero.h); empty for homogeneous ones.
  std::vector<std::string> node_types, edge_types;  // edge types as "src,rel,dst"
  std::vector<int64_t> node_type_bounds, node_type_feature_dims;
  std::string local_socket;        // the same-host export's socket ("" = none offered)
  int64_t local_export_id = 0;     // ... and its id
  int64_t local_export_bytes = 0;  // ... and its size (0 = not said: a server before it)
  int64_t server_uid = -1;         // the server's uid (-1 = not said)
  std::string server_version;      // the server's Fanout version ("" = not said: before 0.4)
  bool features_on_disk = false;   // its features are in its disk tier (the export hands the file)
  // A live partition (it takes updates): its newest committed version; -1 = static.
  int64_t live_version = -1;
  // A live partition's follower replica: the primary it follows (writes go
  // there); empty for a primary or a static partition.
  std::string live_follows;
};

// A same-host client's local work since its last report (report_local).
struct LocalWork {
  int64_t requests = 0, sampled_nodes = 0, sampled_edges = 0, feature_rows = 0, feature_bytes = 0,
          bytes = 0;
  bool empty() const { return requests == 0; }
  void Add(const LocalWork& o) {
    requests += o.requests;
    sampled_nodes += o.sampled_nodes;
    sampled_edges += o.sampled_edges;
    feature_rows += o.feature_rows;
    feature_bytes += o.feature_bytes;
    bytes += o.bytes;
  }
};

struct SampleCall {
  int64_t fanout = -1;
  bool replace = false;
  bool weighted = false;
  uint64_t seed = 0;
  int32_t hop = 0;
  bool with_edge_ids = true;
  // Non-empty (ascending ids): the server replies only neighbors in it. Over
  // Thrift only (a data-plane request carries no keep list).
  ArrayView<const int64_t> keep;
  // Non-empty: temporal sampling, one time per node (Thrift only, as keep).
  ArrayView<const int64_t> times;
  std::string temporal_strategy = "uniform";
  // Non-empty: heterogeneous sampling, this hop's fanout per edge type (Thrift only, as keep).
  ArrayView<const int64_t> type_fanouts;
  // LABOR-0 (sampler/labor.h): the reply carries edge weights.
  bool labor = false;
  // Non-empty: a random-walk step (sampler/walk.h), one key per node; fanout unused.
  ArrayView<const uint64_t> walk_keys;
  // Live partitions: the version to sample at (-1: the newest committed; 0: the base).
  int64_t version = -1;
};

// A PPR push round's reply (fanout.thrift's PprPushResponse), as received:
// one pushed flag (u8) and degree (i64) per processed entry, and
// out_queries (i32), out_nodes (i64) and out_mass (u64); CheckPprPushReply
// says what a client accepts.
struct PprPushReply {
  int64_t done = 0;
  std::string pushed, degrees, out_queries, out_nodes, out_mass;
  int64_t version = -1;  // live partitions: the version pushed at
  size_t num_out() const { return out_nodes.size() / 8; }
};

// What a ppr_push reply's values may be: nodes in [0, num_nodes), queries
// in [0, max_query), mass at most max_mass (sampler/ppr_push.h's bounds).
struct PprReplyBounds {
  int64_t num_nodes = 0;
  int32_t max_query = 0;
  uint64_t max_mass = 0;
};

// One-hop reply, as received: packed arrays (no copy after Thrift's).
struct SampleReply {
  std::string counts;        // int32 per node
  std::string neighbors;     // int64
  std::string edge_ids;      // int64, empty unless requested
  std::string edge_types;    // int32, heterogeneous requests only
  std::string edge_weights;  // float32, LABOR requests only
  int64_t version = -1;      // live partitions: the version sampled at (-1: a static one)
  ArrayView<const int32_t> Counts() const {
    return {reinterpret_cast<const int32_t*>(counts.data()), counts.size() / 4};
  }
  ArrayView<const int64_t> Neighbors() const {
    return {reinterpret_cast<const int64_t*>(neighbors.data()), neighbors.size() / 8};
  }
  ArrayView<const int64_t> EdgeIds() const {
    return {reinterpret_cast<const int64_t*>(edge_ids.data()), edge_ids.size() / 8};
  }
  ArrayView<const int32_t> EdgeTypes() const {
    return {reinterpret_cast<const int32_t*>(edge_types.data()), edge_types.size() / 4};
  }
  ArrayView<const float> EdgeWeights() const {
    return {reinterpret_cast<const float*>(edge_weights.data()), edge_weights.size() / 4};
  }
};

class RpcClient {
 public:
  // Connects to host:port; Unavailable names the address when it cannot.
  static Status Connect(const std::string& host, int port, const RpcOptions& options,
                        std::unique_ptr<RpcClient>* out);
  // "host:port" form.
  static Status Connect(const std::string& address, const RpcOptions& options,
                        std::unique_ptr<RpcClient>* out);
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  Status Info(RemotePartitionInfo* out);
  // Checks the reply's shape (counts per node, array lengths) before returning.
  Status Sample(ArrayView<const int64_t> nodes, const SampleCall& call, SampleReply* out);
  // `version`: a live partition's version to read at (-1: the newest; 0: the base).
  Status Features(ArrayView<const int64_t> nodes, std::string* rows, int64_t version = -1);
  Status Labels(ArrayView<const int64_t> nodes, std::string* labels, int64_t version = -1);
  // Live partitions: folds the delta into a new base now (compact).
  // *up_to_date (may be null): the base held the newest version already and
  // no compaction ran (*version: the base's); an older server's refusal of
  // that case is read the same way.
  Status Compact(int64_t* version, int64_t* edges, double* seconds, bool* up_to_date = nullptr);
  // Applies one update batch to a live partition (live/updates.h's byte
  // form, every operation of this partition); durable and readable at
  // *version when it returns OK. *retry: the server had applied this batch
  // already (the same writer and batch number) and did not again.
  Status ApplyUpdates(const std::string& batch, int64_t* version, int64_t* operations = nullptr,
                      bool* retry = nullptr);
  // Live partitions, replication (a follower replica asking its primary):
  // the durable update-log records after version `after` (UpdateFeed in
  // rpc/fanout.thrift), waiting up to wait_ms for one. The call's own
  // timeout must exceed wait_ms.
  struct UpdateFeed {
    std::string records;  // u64 version, u32 bytes, the batch; versions consecutive
    int64_t committed = 0, oldest = 0;
  };
  Status FetchUpdates(int64_t after, int wait_ms, const std::string& follower, int64_t max_bytes,
                      UpdateFeed* out);
  Status Degrees(ArrayView<const int64_t> nodes, std::string* degrees);
  Status Splits(ArrayView<const int64_t> nodes, std::string* splits);
  Status OriginalIds(ArrayView<const int64_t> nodes, std::string* ids);
  // One name per node (lookup_original_names); NotFound where the dataset
  // keeps none.
  Status OriginalNames(ArrayView<const int64_t> nodes, std::vector<std::string>* names);
  Status Ping(const std::string& text, std::string* reply);
  // exists[i] = 1 where the stored row of rows[i] (owned by this server)
  // holds neighbors[i]. NotSupported when the server predates has_edges.
  // edge_type >= 0: only edges of that type count (heterogeneous datasets).
  Status HasEdges(ArrayView<const int64_t> rows, ArrayView<const int64_t> neighbors,
                  std::string* exists, int edge_type = -1);
  // Tells this server that a session of partition `partition` moved to it
  // after replica `from` failed for `reason` (retry: it is that same replica,
  // asked again on a new connection). Servers count these for operators.
  Status NoteFailover(int partition, const std::string& from, const std::string& reason,
                      bool retry);
  // Tells the server what this client did on its exported partition itself.
  Status ReportLocal(int partition, const LocalWork& work);

  // Split calls, so one thread can have a request in flight on several
  // servers at once: Send*() writes the request, Receive*() waits for the
  // reply. REQUIRES: each Send is followed by its Receive before the next Send.
  Status SendSample(ArrayView<const int64_t> nodes, const SampleCall& call);
  // `call` as sent: a LABOR reply must carry its edge weights, a walk step's
  // must say it was one (Corruption naming the server otherwise: a server
  // before them).
  Status ReceiveSample(size_t num_nodes, const SampleCall& call, SampleReply* out);
  Status SendFeatures(ArrayView<const int64_t> nodes, int64_t version = -1);
  Status ReceiveFeatures(std::string* rows);
  // ReceiveFeatures with the rows received straight into `segments` (in
  // order; their lengths summing to the reply's size): *direct says they went
  // there. Otherwise (a reply of another size, a transport without the
  // framed protocol) *rows holds them, as ReceiveFeatures would leave them.
  // Either way a failed call may have written part of the segments.
  Status ReceiveFeaturesInto(const std::vector<iovec>& segments, std::string* rows, bool* direct);
  Status SendLabels(ArrayView<const int64_t> nodes, int64_t version = -1);
  Status ReceiveLabels(std::string* labels);
  Status SendHasEdges(ArrayView<const int64_t> rows, ArrayView<const int64_t> neighbors,
                      int edge_type = -1);
  Status ReceiveHasEdges(size_t num_pairs, std::string* exists);
  // One PPR push round (ppr_push) over entries (queries[i], nodes[i],
  // residuals[i]) owned by this server; version < 0: the newest.
  Status SendPprPush(ArrayView<const int32_t> queries, ArrayView<const int64_t> nodes,
                     ArrayView<const uint64_t> residuals, uint64_t alpha_fixed, uint64_t eps_fixed,
                     int64_t version = -1);
  // The reply to num_entries entries, checked (CheckPprPushReply) against
  // the bounds the caller knows.
  Status ReceivePprPush(size_t num_entries, const PprReplyBounds& bounds, PprPushReply* out);

  const std::string& address() const { return address_; }
  // The send/receive deadline of the calls from now on (a short one for a
  // probe, the normal one after), on this connection and the next.
  void SetCallTimeoutMs(int ms);

  // Drops the connection (a reply may still be in flight after a failed
  // split call); the next call reconnects.
  void Abandon();
  // A second descriptor of the connection's socket (-1 when not connected),
  // which another thread may shut down to end a call waiting on it at once
  // (the call then fails, the connection is dropped); the caller closes it.
  // Being a dup, it can never name a reused descriptor.
  int DupSocket() const;

 private:
  struct Impl;
  RpcClient() = default;
  template <typename Fn>
  Status Call(const char* method, Fn&& fn);
  template <typename Rpc>
  Status Lookup(const char* method, ArrayView<const int64_t> nodes, size_t bytes_per_node,
                std::string* out, Rpc&& rpc);
  std::unique_ptr<Impl> impl_;
  std::string address_;
};

// The checks a Thrift sample reply passes before a client uses it (its
// sizes against the request, counts none negative and summing to its
// neighbors, LABOR's weights, a walk step's flag); Corruption naming
// `server`. RpcClient::ReceiveSample runs it; fuzzed (fuzz_client_reply).
Status CheckSampleReply(const std::string& server, size_t num_nodes, const SampleCall& call,
                        bool answered_walk_step, bool has_edge_types, const SampleReply& r);

// The checks a ppr_push reply passes before a client uses it: done in
// [1, num_entries] (0 only where nothing was sent: a server must make
// progress), one pushed flag (0 or 1) and one degree (>= 0) per done entry,
// the pushed mass's three arrays of one length with every value within
// `bounds`; Corruption naming `server`. RpcClient::ReceivePprPush runs it;
// fuzzed (fuzz_client_reply).
Status CheckPprPushReply(const std::string& server, size_t num_entries,
                         const PprReplyBounds& bounds, const PprPushReply& r);

// Splits "host:port"; InvalidArgument names the text when malformed.
Status ParseAddress(const std::string& address, std::string* host, int* port);

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_RPC_CLIENT_H_
