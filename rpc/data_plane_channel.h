// The data plane's client side (rpc/data_plane.h): what this process's UCX
// offers, the UCX context a client shares, and one thread's channel to
// several servers. A DataPlaneChannel belongs to one thread (it owns a UCX
// worker); a DataPlaneContext is shared by channels on any thread.
#ifndef FANOUT_RPC_DATA_PLANE_CHANNEL_H_
#define FANOUT_RPC_DATA_PLANE_CHANNEL_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "rpc/data_request.h"
#include "rpc/reply_sink.h"
#include "rpc/rpc_client.h"

namespace fanout::rpc {

// True in builds with the UCX data plane (FANOUT_WITH_UCX).
bool DataPlaneBuilt();

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

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_DATA_PLANE_CHANNEL_H_
