// The data plane's server side (rpc/data_plane.h): a UCX listener whose
// progress threads hand each request to a DataPlaneHandler and send the
// reply it writes. Stats() is safe from any thread, Start and Stop from one
// controlling thread.
#ifndef FANOUT_RPC_DATA_PLANE_SERVER_H_
#define FANOUT_RPC_DATA_PLANE_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/pod_vector.h"
#include "common/status.h"
#include "rpc/data_request.h"
#include "rpc/memory_budget.h"

namespace fanout::rpc {

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

struct DataPlaneServerOptions {
  std::string bind = "127.0.0.1";  // address of the UCX listener (its connection manager is tcp)
  int port = 0;                    // 0 = any free port
  int threads = 1;  // progress threads; each owns a UCX worker and serves its endpoints
  int64_t max_request_bytes = int64_t{256} << 20;  // largest id list accepted, default 256 MiB
  int max_replies_per_endpoint =
      4;  // replies in flight (or computing) per endpoint; more requests wait their turn
  // Requests computed off the progress threads, by this many executor
  // threads (each with a handler of its own), picked round robin by tenant
  // (DataRequest::tenant): for a handler that may wait before it computes (a
  // tenants scheduler's turn), so that a waiting request holds up no other
  // endpoint of its progress thread. 0 = computed inline on the progress
  // thread (no hand-off: the lowest latency).
  int executors = 0;
  // Requests waiting per endpoint; one more is not queued: the endpoint is
  // closed (a peer that sends without taking its answers), counted in refused.
  int max_queued_per_endpoint = 64;
  int max_endpoints = 4096;             // connections beyond this are rejected
  int64_t rndv_threshold_bytes = 8192;  // replies at least this big are forced to rendezvous
  int spin_us = 50;  // busy-poll this long after activity before sleeping on the event fd
  // Set (a server with credentials: tenants, an auth token or TLS): every
  // request must carry a ticket (PartitionInfo.data_plane_ticket) that this
  // maps to a tenant id (>= 0; server/tenancy.h, Tenancy::ByTicket), handed
  // to the handler as DataRequest::tenant; -1 (a ticket that names no current
  // tenant, or none) = Unauthenticated. Unset: every peer is served.
  std::function<int(const std::string& ticket)> ticket_tenant;
  // The server's request-memory budget, shared with its Thrift connections
  // (null: none). A rendezvous request's ids are fetched only once its bytes
  // are taken from it (the rest wait, in order, at most budget_wait_ms, then
  // are answered ResourceExhausted). An eager one that does not fit is taken
  // over the limit when it is small (wire::kEagerRequestMaxBytes, Fanout's
  // own requests) and within the caps on such bytes (kMaxForcedBytesPerEndpoint
  // for one endpoint, kMaxForcedBytesTotal for all), else answered
  // ResourceExhausted at once. Reply buffers in flight are recorded in it
  // too; a thread starts a new reply while the budget is full only when none
  // of its own is in flight (the margin: one reply per thread, plus the
  // forced-request cap).
  std::shared_ptr<MemoryBudget> budget;
  int64_t budget_wait_ms = 60000;
  // A thread idle this long gives its pooled reply buffers back (and the
  // allocator its free pages), so memory taken for a burst is returned.
  int64_t idle_release_ms = 1000;
};

// Caps on small eager request bytes taken while the budget is full.
inline constexpr int64_t kMaxForcedBytesPerEndpoint = int64_t{1} << 20;
inline constexpr int64_t kMaxForcedBytesTotal = int64_t{32} << 20;

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

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_DATA_PLANE_SERVER_H_
