// The UCX data plane's client side, shared by its two files (internal to
// rpc/ucx): ucx_client.cc (contexts and channels: their workers, endpoints,
// pooling and connecting) and ucx_client_io.cc (requests: posting, receiving
// replies into the caller's sink, waiting). ucx_client.cc's header says how.
#ifndef FANOUT_RPC_UCX_DETAIL_UCX_CLIENT_INTERNAL_H_
#define FANOUT_RPC_UCX_DETAIL_UCX_CLIENT_INTERNAL_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rpc/data_plane.h"
#include "rpc/ucx/ucx_common.h"
#include "rpc/ucx/wire.h"

namespace fanout::rpc {
namespace ucx_client_detail {

using Clock = std::chrono::steady_clock;

struct Peer {
  DataPlaneChannel::Impl* channel = nullptr;
  int index = 0;
  std::string host, name;
  std::string ticket;  // sent with every request (wire::kTicket) where not empty
  int port = 0;
  ucp_ep_h ep = nullptr;
  bool failed = false;
  std::string fail_reason;
  // The request in flight.
  bool busy = false;
  uint64_t request_id = 0;
  wire::RequestHeader hdr;
  std::vector<char> header;        // hdr, then the ticket where there is one
  std::vector<int64_t> walk_data;  // a walk step's data: the node ids, then the walk keys
  ReplySink sink;
  std::vector<ucp_dt_iov_t> iov;
  void* send_req = nullptr;
  bool sent = false;
  void* rndv_desc = nullptr;
  size_t rndv_len = 0;
  void* recv_req = nullptr;
  bool done = false;
  Status status;
  std::string transports;
  int64_t replies = 0;
  // The channel was reset while this peer's request was in flight: its Wait()
  // reports this instead of a reply.
  bool aborted = false;
  std::string abort_reason;
};
}  // namespace ucx_client_detail

// The context, and the channels' workers kept for reuse: a channel that goes
// idle and clean (no request in flight, no failed endpoint) leaves its worker
// and open endpoints here for the next channel, so sessions that come and go
// make and drop no UCX workers or endpoints (see ucx::LifecycleMutex for the
// UCX 1.13 abort that churn can trigger). Declared after `ctx`: destroyed
// before it.
struct DataPlaneContext::Impl {
  ucx::Context ctx;
  std::mutex mu;
  std::vector<std::unique_ptr<DataPlaneChannel::Impl>> idle;  // GUARDED_BY(mu)
  static constexpr size_t kMaxIdle = 64;
  std::unique_ptr<DataPlaneChannel::Impl> Take();
  void Give(std::unique_ptr<DataPlaneChannel::Impl> impl);
  ~Impl();
};

struct DataPlaneChannel::Impl {
  using Peer = ucx_client_detail::Peer;
  using Clock = ucx_client_detail::Clock;
  ~Impl();
  std::shared_ptr<DataPlaneContext> context;  // null while idle in the context's pool
  RpcOptions options;
  std::vector<std::unique_ptr<Peer>> peers;
  // Declared after `peers`, so destroyed before them: destroying the worker
  // purges requests still in flight through callbacks that reach their Peer.
  ucx::Worker worker;
  uint64_t next_seq = 1;
  // The owning channel's counters; while pooled or being torn down (no
  // channel), this Impl's own, so a callback run by a late progress never
  // writes through a null or dangling pointer.
  ChannelStats* stats = &detached_stats;
  ChannelStats detached_stats;

  Status Open(Peer* p);
  Status WaitFor(Peer* p, int timeout_ms, const std::function<bool()>& give_up = {});
  // Closes p's endpoint and waits until UCX has let go of its request and
  // sink, at most until `deadline` (5 s from now by default); where it has
  // not by then, the worker is reset (destroying it is the only way to make
  // UCX let go: ucp_request_cancel does nothing on AM sends and receives).
  void Close(Peer* p) { Close(p, Clock::now() + std::chrono::seconds(5)); }
  void Close(Peer* p, Clock::time_point deadline);
  // Close without the reset: true when UCX let go in time.
  bool Release(Peer* p, Clock::time_point deadline);
  Status RegisterHandler();
  void Reset(const std::string& why);
  void StartReceive(Peer* p);
  void Progress() {
    for (int i = 0; i < 256 && ucp_worker_progress(worker.get()) != 0; ++i) {
    }
    for (auto& p : peers)
      if (p->rndv_desc != nullptr) StartReceive(p.get());
  }

  static ucs_status_t OnReply(void* arg, const void* header, size_t header_length, void* data,
                              size_t length, const ucp_am_recv_param_t* param);
  static void OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status) {
    auto* p = static_cast<Peer*>(arg);
    p->failed = true;
    p->fail_reason = ucs_status_string(status);
  }
  static void OnSendDone(void* request, ucs_status_t status, void* user_data) {
    auto* p = static_cast<Peer*>(user_data);
    p->send_req = nullptr;
    p->sent = true;
    if (status != UCS_OK && status != UCS_ERR_CANCELED) {
      p->failed = true;
      p->fail_reason = std::string("sending the request: ") + ucs_status_string(status);
    }
    ucp_request_free(request);
  }
  static void OnReceiveDone(void* request, ucs_status_t status, size_t length, void* user_data) {
    auto* p = static_cast<Peer*>(user_data);
    p->recv_req = nullptr;
    p->done = true;
    if (status == UCS_OK) {
      ++p->channel->stats->rndv_replies;
    } else {
      p->status = Status::Unavailable("server " + p->name +
                                      ": receiving the reply failed: " + ucs_status_string(status));
    }
    ucp_request_free(request);
  }
};

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_UCX_DETAIL_UCX_CLIENT_INTERNAL_H_
