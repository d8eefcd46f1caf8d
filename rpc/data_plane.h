// The data plane: bulk replies (feature rows, labels, sampled neighbor arrays)
// over UCX (UCP active messages) beside the Thrift control plane.
//
// A request is an active message whose header names the method and its
// parameters and whose data is the packed id list. A reply is an active
// message sent with the rendezvous protocol above a small size, so the client
// receives it with ucp_am_recv_data_nbx straight into memory it supplies
// (ReplySink): RDMA (InfiniBand/RoCE through UCX's verbs transport) between
// hosts, shared memory or tcp elsewhere. The server never writes into memory
// a request names: it sends its reply, and the client receives it (on one
// host clients read the server's sealed export instead: rpc/local_export.h).
// No UCX header appears here: builds without UCX compile the same API and
// every factory returns NotSupported.
//
// Thread safety: DataPlaneServer's Stats() is safe from any thread, Start and
// Stop from one controlling thread. A DataPlaneChannel belongs to one thread
// (it owns a UCX worker). DataPlaneContext is shared by channels on any thread.
#ifndef FANOUT_RPC_DATA_PLANE_H_
#define FANOUT_RPC_DATA_PLANE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/array_view.h"
#include "common/pod_vector.h"
#include "common/status.h"
#include "rpc/memory_budget.h"
#include "rpc/rpc_client.h"

namespace fanout::rpc {

// True in builds with the UCX data plane (FANOUT_WITH_UCX).
bool DataPlaneBuilt();

enum class DataMethod : uint8_t { kPing = 0, kFeatures = 1, kLabels = 2, kSample = 3 };

// A kSample reply is one payload: rpc/codec.h's EncodeSampleReply layout
// (with edge weights for a LABOR hop, call.labor). A walk step (call.walk_keys
// non-empty) sends the node ids followed by the keys.

// One request as the server's handler sees it. `ids` points into the
// request's receive buffer and is valid during Handle() only.
struct DataRequest {
  DataMethod method = DataMethod::kPing;
  ArrayView<const int64_t> ids;
  SampleCall call;  // kSample only
};

// A server-side reply payload. Buffers are pooled per server thread and
// reused, so a handler that resizes to the same size again allocates nothing.
using ReplyBuffer = PodVector<char>;

// Where a handler writes its reply: Reserve(bytes) once, then fill the
// memory it returns (the server thread's pooled buffer, sent as an active
// message).
class ReplyWriter {
 public:
  explicit ReplyWriter(ReplyBuffer* buffer) : buffer_(buffer) {}
  char* Reserve(size_t bytes) {
    buffer_->resize(bytes);
    return buffer_->data();
  }
  size_t size() const { return buffer_->size(); }

 private:
  ReplyBuffer* buffer_;
};

class DataPlaneHandler {
 public:
  virtual ~DataPlaneHandler() = default;
  // Writes the reply payload through `reply` (one Reserve), or returns the
  // error to send instead. Called on one server thread only.
  virtual Status Handle(const DataRequest& request, ReplyWriter* reply) = 0;
};

// Bytes of a data-plane ticket (DataPlaneServerOptions::ticket).
constexpr size_t kDataPlaneTicketBytes = 32;

struct DataPlaneServerOptions {
  std::string bind = "127.0.0.1";  // address of the UCX listener (its connection manager is tcp)
  int port = 0;                    // 0 = any free port
  int threads = 1;  // progress threads; each owns a UCX worker and serves its endpoints
  int64_t max_request_bytes = int64_t{256} << 20;  // largest id list accepted, default 256 MiB
  int max_replies_per_endpoint =
      4;  // replies in flight per endpoint; more requests wait their turn
  // Requests waiting per endpoint; one more is not queued: the endpoint is
  // closed (a peer that sends without taking its answers), counted in refused.
  int max_queued_per_endpoint = 64;
  int max_endpoints = 4096;             // connections beyond this are rejected
  int64_t rndv_threshold_bytes = 8192;  // replies at least this big are forced to rendezvous
  int spin_us = 50;  // busy-poll this long after activity before sleeping on the event fd
  // When set (wire::kTicketBytes), only requests carrying it are served; the
  // others get Unauthenticated. See PartitionInfo.data_plane_ticket.
  std::string ticket;
  // The server's request-memory budget, shared with its Thrift connections
  // (null: none). A rendezvous request's ids are fetched only once its bytes
  // are taken from it (the rest wait, in order, at most budget_wait_ms, then
  // are answered ResourceExhausted); an eager one that does not fit is
  // answered ResourceExhausted at once. Reply buffers in flight are recorded
  // in it too; a thread starts a new reply while the budget is full only
  // when none of its own is in flight (the margin: one reply per thread).
  std::shared_ptr<MemoryBudget> budget;
  int64_t budget_wait_ms = 60000;
  // A thread idle this long gives its pooled reply buffers back (and the
  // allocator its free pages), so memory taken for a burst is returned.
  int64_t idle_release_ms = 1000;
};

struct DataPlaneEndpointInfo {
  std::string peer;        // the client's socket address
  std::string transports;  // the UCX transports its lanes use, e.g. "cma/memory, tcp/lo"
  int64_t requests = 0;
  int64_t reply_bytes = 0;
  int64_t held_bytes = 0;  // reply buffers and queued requests held for it now
};

struct DataPlaneServerStats {
  std::string ucx_version;
  std::vector<std::string> memory_types;  // what this UCX build handles: host, cuda, ...
  int64_t requests = 0, reply_bytes = 0, errors = 0;
  int64_t malformed = 0;  // requests that could not be parsed (or asked for the removed placement)
  int64_t refused =
      0;  // requests over a per-endpoint queue limit (never queued: each closes its endpoint)
  int64_t unauthenticated = 0;  // requests without the ticket (where one is required)
  int64_t endpoints_open = 0, endpoints_total = 0, endpoints_rejected = 0;
  int64_t held_bytes = 0;  // reply buffers (pooled and in flight) and queued requests, all threads
  int64_t pooled_bytes = 0;     // of which pooled reply buffers
  int64_t budget_waits = 0;     // requests whose ids waited for the memory budget
  int64_t budget_refused = 0;   // requests answered ResourceExhausted: the budget stayed full
  int64_t memory_releases = 0;  // idle threads that gave their pooled buffers back
  std::vector<DataPlaneEndpointInfo> endpoints;
};

class DataPlaneServer {
 public:
  using HandlerFactory = std::function<std::unique_ptr<DataPlaneHandler>()>;
  // Starts the listener and the progress threads (one handler each, from
  // `make_handler`); returns once listening. NotSupported without UCX.
  static Status Start(const DataPlaneServerOptions& options, HandlerFactory make_handler,
                      std::unique_ptr<DataPlaneServer>* out);
  ~DataPlaneServer();
  DataPlaneServer(const DataPlaneServer&) = delete;
  DataPlaneServer& operator=(const DataPlaneServer&) = delete;

  int port() const;
  // Idempotent: stops listening, closes every endpoint, joins the threads.
  void Stop();
  DataPlaneServerStats Stats() const;

  struct Impl;

 private:
  explicit DataPlaneServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// What this process's UCX offers; `available` false (with `error`) where the
// build has no UCX or UCX cannot start.
struct DataPlaneInfo {
  bool available = false;
  std::string error;
  std::string ucx_version;
  std::vector<std::string> memory_types;
  bool cuda = false;  // UCX can move CUDA memory itself (a UCX built with CUDA)
};
DataPlaneInfo QueryDataPlane();

// A UCX context shared by the channels of one client (e.g. a Cluster).
class DataPlaneContext : public std::enable_shared_from_this<DataPlaneContext> {
 public:
  static Status Create(std::shared_ptr<DataPlaneContext>* out);
  ~DataPlaneContext();
  const DataPlaneInfo& info() const { return info_; }
  struct Impl;
  Impl* impl() const { return impl_.get(); }

 private:
  DataPlaneContext() = default;
  std::unique_ptr<Impl> impl_;
  DataPlaneInfo info_;
};

enum class MemoryKind { kHost, kCuda };

// Where a reply lands (this process's own memory; the reply is received into
// it). Exactly one of: a fixed region of `bytes` bytes at `data` (the reply
// must be that size), a scatter list `segments` (the reply must fill them
// exactly, in order), or `grow`, resized to the reply's size.
struct ReplySink {
  void* data = nullptr;
  size_t bytes = 0;
  struct Segment {
    void* data;
    size_t bytes;
  };
  std::vector<Segment> segments;
  PodVector<char>* grow = nullptr;
  MemoryKind kind = MemoryKind::kHost;  // kCuda needs DataPlaneInfo::cuda
};

struct ChannelStats {
  int64_t requests = 0;
  int64_t reply_bytes = 0;   // payload bytes received
  int64_t rndv_replies = 0;  // replies received by rendezvous (straight into the sink)
  int64_t resets = 0;        // times a timeout reset the channel (fresh worker, endpoints reopened)
  int64_t stray_replies = 0;     // replies for no request in flight (dropped)
  int64_t given_up = 0;          // requests abandoned when Wait's give_up said so
  int64_t aborted_by_reset = 0;  // requests lost to a reset for another peer's timeout
  int64_t stuck_closes = 0;  // closes after which UCX still held a request: the worker was reset
};

// One thread's UCX worker with endpoints to several servers; one request in
// flight per endpoint, as RpcClient's split calls.
class DataPlaneChannel {
 public:
  static Status Create(std::shared_ptr<DataPlaneContext> context, const RpcOptions& options,
                       std::unique_ptr<DataPlaneChannel>* out);
  ~DataPlaneChannel();
  DataPlaneChannel(const DataPlaneChannel&) = delete;
  DataPlaneChannel& operator=(const DataPlaneChannel&) = delete;

  // Opens an endpoint to a data-plane listener and proves it with a ping
  // within options.connect_timeout_ms; `name` (the server's RPC address) is
  // used in errors. Returns the peer's index in *peer: the same index as
  // before for a server connected to before and idle now (no slot per
  // reconnect).
  // `ticket`: the server's data-plane ticket (PartitionInfo), sent with every
  // request; empty where the server requires none.
  Status Connect(const std::string& host, int port, const std::string& name, int* peer,
                 const std::string& ticket = "");
  // Sends a request; its reply will land in `sink`, which must stay valid
  // until Wait() returns (or Abandon()). REQUIRES: no request in flight on peer.
  Status Post(int peer, const DataRequest& request, const ReplySink& sink);
  // Waits for peer's reply within options.call_timeout_ms: the server's error
  // (its message, prefixed with its name), Unavailable when the endpoint
  // failed, DeadlineExceeded on timeout. `give_up` (optional) is asked while
  // waiting (every few ms): once it says true the request is abandoned at
  // once with Unavailable (e.g. the replica failed its health check). After
  // any failure the endpoint is closed (UCX receives nothing into the sink
  // afterwards); the next Post reconnects.
  Status Wait(int peer, const std::function<bool()>& give_up = {});
  // Post + Wait.
  Status Call(int peer, const DataRequest& request, const ReplySink& sink);
  // Drops a request in flight: cancels its receive and closes the endpoint.
  void Abandon(int peer);
  // The UCX transports of peer's endpoint lanes ("" when not connected).
  std::string Transports(int peer) const;
  const ChannelStats& stats() const { return stats_; }

  struct Impl;

 private:
  DataPlaneChannel() = default;
  std::unique_ptr<Impl> impl_;
  ChannelStats stats_;
};

// The RDMA devices of this host, read with libibverbs, for operators.
struct RdmaDevice {
  std::string name;
  std::string node_guid;
  struct Port {
    int port = 0;
    std::string state;       // "active", "down", ...
    std::string link_layer;  // "InfiniBand", "Ethernet"
    double rate_gbps = 0;    // from active width x speed
  };
  std::vector<Port> ports;
  bool dmabuf = false;  // dma-buf memory registration possible (GPUDirect RDMA without peermem)
};
// Devices found (empty where there are none); `error` set where libibverbs
// could not be used (e.g. a build without it).
std::vector<RdmaDevice> ListRdmaDevices(std::string* error);

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_DATA_PLANE_H_
