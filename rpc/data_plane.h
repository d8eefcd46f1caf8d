// The data plane: bulk replies (feature rows, labels, sampled neighbor arrays)
// over UCX (UCP active messages) beside the Thrift control plane.
//
// A request is an active message whose header names the method and its
// parameters and whose data is the packed id list. A reply is an active
// message sent with the rendezvous protocol above a small size, so the client
// receives it with ucp_am_recv_data_nbx straight into memory it supplies
// (ReplySink): shared memory on one host, RDMA (InfiniBand/RoCE through UCX's
// verbs transport) between hosts, tcp elsewhere. Where the sink lies in a
// DataRegion and the server shares the host, the server writes the reply
// into it itself and sends only a header (placement). No UCX header appears here: builds without UCX compile the same
// API and every factory returns NotSupported.
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
#include "rpc/rpc_client.h"

namespace fanout::rpc {

// True in builds with the UCX data plane (FANOUT_WITH_UCX).
bool DataPlaneBuilt();

enum class DataMethod : uint8_t { kPing = 0, kFeatures = 1, kLabels = 2, kSample = 3 };
const char* DataMethodName(DataMethod m);

// A kSample reply is one payload: counts (int32 per node, padded to a
// multiple of 8 bytes), then neighbors (int64), then edge ids (int64, when
// requested).
inline size_t SampleCountsBytes(size_t nodes) { return (nodes * 4 + 7) & ~size_t{7}; }

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

// Where a handler writes its reply: Reserve(bytes) once, then fill the memory
// it returns. That is the client's own memory (a DataRegion it asked the reply
// to be placed in, mapped from shared memory) when the client asked for it and
// the size is the one it expects, else `buffer`, sent as an active message.
class ReplyWriter {
 public:
  // `place`: the client's memory for a reply of exactly place_bytes, or (with
  // `offsets`, checked against place_bytes) for offsets.size() rows of
  // `row_bytes`, row i at place + offsets[i].
  explicit ReplyWriter(ReplyBuffer* buffer, char* place = nullptr, size_t place_bytes = 0,
                       ArrayView<const int64_t> offsets = {}, size_t row_bytes = 0)
      : buffer_(buffer), place_(place), place_bytes_(place_bytes), offsets_(offsets), row_bytes_(row_bytes) {}
  char* Reserve(size_t bytes) {
    size_ = bytes;
    placed_ = place_ != nullptr && offsets_.empty() && bytes == place_bytes_ && bytes > 0;
    if (placed_) return place_;
    buffer_->resize(bytes);
    return buffer_->data();
  }
  // For a reply of `rows` rows of `row_bytes`: where row i goes is
  // base + (*offsets ? (*offsets)[i] : i * row_bytes).
  char* ReserveRows(size_t rows, size_t row_bytes, const int64_t** offsets) {
    *offsets = nullptr;
    if (place_ != nullptr && !offsets_.empty() && rows == offsets_.size() && row_bytes == row_bytes_ && rows > 0) {
      size_ = rows * row_bytes;
      placed_ = true;
      *offsets = offsets_.data();
      return place_;
    }
    return Reserve(rows * row_bytes);
  }
  // The reply went into the client's memory (nothing to send but a header).
  bool placed() const { return placed_; }
  size_t size() const { return size_; }

 private:
  ReplyBuffer* buffer_;
  char* place_;
  size_t place_bytes_;
  ArrayView<const int64_t> offsets_;
  size_t row_bytes_;
  size_t size_ = 0;
  bool placed_ = false;
};

class DataPlaneHandler {
 public:
  virtual ~DataPlaneHandler() = default;
  // Writes the reply payload through `reply` (one Reserve), or returns the
  // error to send instead (what it wrote is then undefined in the client's
  // memory). Called on one server thread only.
  virtual Status Handle(const DataRequest& request, ReplyWriter* reply) = 0;
};

// Bytes of a data-plane ticket (DataPlaneServerOptions::ticket).
constexpr size_t kDataPlaneTicketBytes = 32;

struct DataPlaneServerOptions {
  std::string bind = "127.0.0.1";  // address of the UCX listener (its connection manager is tcp)
  int port = 0;                    // 0 = any free port
  int threads = 1;                 // progress threads; each owns a UCX worker and serves its endpoints
  int64_t max_request_bytes = int64_t{256} << 20;  // largest id list accepted, default 256 MiB
  int max_replies_per_endpoint = 4;    // replies in flight per endpoint; more requests wait their turn
  int max_queued_per_endpoint = 64;    // requests waiting per endpoint; beyond that refused with an error
  int max_endpoints = 4096;            // connections beyond this are rejected
  int64_t rndv_threshold_bytes = 8192; // replies at least this big are forced to rendezvous
  int spin_us = 50;                    // busy-poll this long after activity before sleeping on the event fd
  // When set (wire::kTicketBytes), only requests carrying it are served; the
  // others get Unauthenticated. See PartitionInfo.data_plane_ticket.
  std::string ticket;
};

struct DataPlaneEndpointInfo {
  std::string peer;        // the client's socket address
  std::string transports;  // the UCX transports its lanes use, e.g. "cma/memory, tcp/lo"
  int64_t requests = 0;
  int64_t reply_bytes = 0;
  int64_t held_bytes = 0;  // reply buffers and queued requests held for it now
  int64_t mapped_regions = 0, mapped_bytes = 0;  // the client's regions mapped here (placement)
};

struct DataPlaneServerStats {
  std::string ucx_version;
  std::vector<std::string> memory_types;  // what this UCX build handles: host, cuda, ...
  int64_t requests = 0, reply_bytes = 0, errors = 0;
  int64_t placed = 0;            // replies written straight into a client's shared-memory region
  int64_t place_refused = 0;     // requests that asked for that and could not have it (answered the usual way)
  int64_t malformed = 0;         // requests that could not be parsed
  int64_t refused = 0;           // requests over a per-endpoint queue limit
  int64_t unauthenticated = 0;   // requests without the ticket (where one is required)
  int64_t endpoints_open = 0, endpoints_total = 0, endpoints_rejected = 0;
  int64_t held_bytes = 0;        // reply buffers (pooled and in flight) and queued requests, all threads
  int64_t mapped_regions = 0, mapped_bytes = 0;  // clients' regions mapped for placement, all endpoints
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

class DataRegion;

// A UCX context shared by the channels of one client (e.g. a Cluster).
class DataPlaneContext : public std::enable_shared_from_this<DataPlaneContext> {
 public:
  static Status Create(std::shared_ptr<DataPlaneContext>* out);
  ~DataPlaneContext();
  const DataPlaneInfo& info() const { return info_; }
  // Allocates `bytes` of host memory in shared memory (UCX allocates it,
  // ucp_mem_map) that servers on this host write replies into directly: see
  // DataRegion. Safe from any thread.
  Status AllocateRegion(size_t bytes, std::shared_ptr<DataRegion>* out);
  // True when [p, p + bytes) lies inside one live region of this context.
  bool InRegion(const void* p, size_t bytes) const;
  struct Impl;
  Impl* impl() const { return impl_.get(); }

 private:
  DataPlaneContext() = default;
  std::unique_ptr<Impl> impl_;
  DataPlaneInfo info_;
};

// Host memory that data-plane servers on this host can write replies into
// themselves: a reply whose sink is one contiguous range inside a region is
// gathered by the server straight into it (one copy in all, no shared-memory
// FIFO, no rendezvous). Elsewhere (a server on another host, a transport
// without shared memory, a scatter-list sink) replies come the usual way into
// the same sink. Keeps its context alive; freed when the last reference goes.
class DataRegion {
 public:
  ~DataRegion();
  DataRegion(const DataRegion&) = delete;
  DataRegion& operator=(const DataRegion&) = delete;
  char* data() const { return data_; }
  size_t size() const { return size_; }
  // A request placed into this region was abandoned (timeout, channel reset,
  // failed endpoint): its server may still write the bytes it owed there. No
  // request is placed into the region again; its owner should retire it once
  // what it holds is no longer needed (what such a late write brings is the
  // same reply, to the same place, so data already fetched again is intact).
  bool tainted() const;
  struct Impl;
  Impl* impl() const { return impl_.get(); }

 private:
  friend class DataPlaneContext;
  DataRegion() = default;
  std::unique_ptr<Impl> impl_;
  char* data_ = nullptr;
  size_t size_ = 0;
};

enum class MemoryKind { kHost, kCuda };

// Where a reply lands. Exactly one of: a fixed region of `bytes` bytes at
// `data` (the reply must be that size), the same with `row_offsets` (the reply
// is row_offsets.size() rows of row_bytes, row i at data + row_offsets[i],
// each inside `bytes`: feature rows straight to their places in the output),
// a scatter list `segments` (the reply must fill them exactly, in order), or
// `grow`, resized to the reply's size.
struct ReplySink {
  void* data = nullptr;
  size_t bytes = 0;
  ArrayView<const int64_t> row_offsets;
  size_t row_bytes = 0;
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
  int64_t reply_bytes = 0;     // payload bytes received
  int64_t rndv_replies = 0;    // replies received by rendezvous (straight into the sink)
  int64_t placed_replies = 0;  // replies the server wrote into a DataRegion itself
  int64_t placed_bytes = 0;    // ... their bytes (counted in reply_bytes too)
  int64_t resets = 0;          // times a timeout reset the channel (fresh worker, endpoints reopened)
  int64_t stray_replies = 0;   // replies for no request in flight (dropped)
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
  // used in errors. Returns the peer's index in *peer.
  // `ticket`: the server's data-plane ticket (PartitionInfo), sent with every
  // request; empty where the server requires none.
  Status Connect(const std::string& host, int port, const std::string& name, int* peer,
                 const std::string& ticket = "");
  // Sends a request; its reply will land in `sink`, which must stay valid
  // until Wait() returns (or Abandon()). REQUIRES: no request in flight on peer.
  Status Post(int peer, const DataRequest& request, const ReplySink& sink);
  // Waits for peer's reply within options.call_timeout_ms: the server's error
  // (its message, prefixed with its name), Unavailable when the endpoint
  // failed, DeadlineExceeded on timeout. After any failure the endpoint is
  // closed (nothing will write into the sink afterwards); the next Post
  // reconnects.
  Status Wait(int peer);
  // Post + Wait.
  Status Call(int peer, const DataRequest& request, const ReplySink& sink);
  // Drops a request in flight: cancels its receive and closes the endpoint.
  void Abandon(int peer);
  // False once peer's server said it cannot write into this process's memory
  // (another host, no shared memory): row sinks then cost a copy here.
  bool Placing(int peer) const;
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
    std::string state;        // "active", "down", ...
    std::string link_layer;   // "InfiniBand", "Ethernet"
    double rate_gbps = 0;     // from active width x speed
  };
  std::vector<Port> ports;
  bool dmabuf = false;  // dma-buf memory registration possible (GPUDirect RDMA without peermem)
};
// Devices found (empty where there are none); `error` set where libibverbs
// could not be used (e.g. a build without it).
std::vector<RdmaDevice> ListRdmaDevices(std::string* error);

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_DATA_PLANE_H_
