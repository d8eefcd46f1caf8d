// The UCX data-plane server's state, shared by its three files (internal to
// rpc/ucx): ucx_server.cc (the listener, Start, Stop, Stats),
// ucx_server_thread.cc (the progress threads: receive, serve, send, reap) and
// ucx_executors.cc (the executor pool that computes requests off the progress
// threads, per tenant round robin). rpc/ucx/ucx_server.cc's header says how
// they fit together.
#ifndef FANOUT_RPC_UCX_DETAIL_UCX_SERVER_INTERNAL_H_
#define FANOUT_RPC_UCX_DETAIL_UCX_SERVER_INTERNAL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rpc/data_plane.h"
#include "rpc/ucx/ucx_common.h"
#include "rpc/ucx/wire.h"

namespace fanout::rpc {
namespace ucx_detail {

using Clock = std::chrono::steady_clock;
struct Thread;
struct Endpoint;

// A request received (or being received) and not yet answered.
struct Pending {
  wire::RequestHeader hdr;
  int tenant = -1;  // the tenant its ticket names (servers with tenants)
  PodVector<int64_t> ids;
  void* rndv_desc = nullptr;  // data still to fetch with ucp_am_recv_data_nbx
  int64_t rndv_bytes = 0;     // its size
  bool receiving = false;     // the fetch is in progress
  bool waited = false;        // counted as waiting for the memory budget
  Status bad;                 // answered with this error instead of served
  Endpoint* ep = nullptr;
  Clock::time_point arrived = Clock::now();
  BudgetHold hold;  // the ids' bytes in the server's budget, given back with this
  // Of them, bytes taken over the budget's limit (a small eager request that
  // arrived while it was full), counted against the endpoint's and the
  // server's caps until this goes.
  int64_t forced = 0;
  int64_t* ep_forced = nullptr;
  std::atomic<int64_t>* server_forced = nullptr;
  ~Pending() {
    if (forced == 0) return;
    *ep_forced -= forced;
    *server_forced -= forced;
  }
};

struct Endpoint {
  Thread* t = nullptr;
  ucp_ep_h ep = nullptr;
  std::string peer;
  int64_t forced_bytes = 0;  // its requests' bytes over the budget (its thread only); before queue
  std::deque<std::unique_ptr<Pending>> queue;
  int in_flight = 0;    // replies being sent
  int offloaded = 0;    // requests with the executors (their results not yet delivered)
  bool failed = false;  // the error callback fired, or the server stops
  void* close_req = nullptr;
  bool closing = false, closed = false;
  std::atomic<int64_t> requests{0}, reply_bytes{0}, held_bytes{0};
  std::string transports;  // GUARDED_BY(t->mu)
};

// A request handed to the executors, and on its way back: the reply (or the
// error) for its progress thread to send. The Pending comes back too: it
// goes on the progress thread (its destructor reaches the endpoint).
struct Task {
  Endpoint* ep = nullptr;
  std::unique_ptr<Pending> p;
  std::unique_ptr<ReplyBuffer> buf;
  Status status;
};

struct SendCtx {
  Endpoint* ep;
  wire::ReplyHeader hdr;
  std::unique_ptr<ReplyBuffer> buf;
  std::string message;
  int64_t held = 0;
  BudgetHold hold;  // the reply buffer in the server's budget
};

}  // namespace ucx_detail

struct DataPlaneServer::Impl {
  DataPlaneServerOptions options;
  HandlerFactory make_handler;
  ucx::Context ctx;
  std::vector<std::unique_ptr<ucx_detail::Thread>> threads;
  ucp_listener_h listener = nullptr;
  std::vector<int> listen_fds;  // its TCP listening sockets (shut down first at Stop)
  int port = 0;
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> next_thread{0};
  std::atomic<int64_t> requests{0}, reply_bytes{0}, errors{0}, malformed{0}, refused{0},
      unauthenticated{0}, budget_waits{0}, budget_refused{0}, memory_releases{0};
  std::atomic<int64_t> forced_bytes{0};  // eager requests' bytes over the budget, all endpoints
  std::atomic<int64_t> endpoints_open{0}, endpoints_total{0}, endpoints_rejected{0};
  std::vector<std::string> memory_types;
  bool stopped = false;

  // Executors (options.executors > 0): queued tasks per tenant, served
  // round robin across tenants.
  std::vector<std::thread> executors;
  std::mutex exec_mu;
  std::condition_variable exec_cv;
  std::map<int, std::deque<ucx_detail::Task>> exec_queue;  // GUARDED_BY(exec_mu)
  int exec_last = -1;      // GUARDED_BY(exec_mu): tenant served last
  bool exec_stop = false;  // GUARDED_BY(exec_mu)
  void Execute();

  static void OnConnection(ucp_conn_request_h request, void* arg);
};

namespace ucx_detail {

// A progress thread's state. Its worker is destroyed first (Teardown), while
// the endpoints, pending requests and pooled buffers its callbacks reach are
// still alive.
struct Thread {
  DataPlaneServer::Impl* server = nullptr;
  ucx::Worker worker;
  std::unique_ptr<DataPlaneHandler> handler;
  std::thread thread;
  mutable std::mutex mu;
  std::deque<ucp_conn_request_h> inbox;  // GUARDED_BY(mu)
  std::vector<std::unique_ptr<Endpoint>>
      eps;  // GUARDED_BY(mu) for readers; only this thread changes it
  std::unordered_map<ucp_ep_h, Endpoint*> by_ep;
  std::vector<Task> done;  // GUARDED_BY(mu): computed by the executors, to send
  std::vector<std::unique_ptr<ReplyBuffer>> pool;
  std::atomic<int64_t> held_bytes{0};  // pooled buffers (endpoints count their own)
  int sending = 0;                     // replies of all endpoints not yet completed
  bool budget_waiting = false;         // a request's ids wait for the memory budget

  void Run();
  bool Accept();
  bool StartReceives();
  bool Serve();
  bool Deliver();
  bool Reap();
  void Shutdown();
  void Teardown();
  void Answer(Endpoint* ep, std::unique_ptr<Pending> p);
  void Offload(Endpoint* ep, std::unique_ptr<Pending> p);
  void SendReply(Endpoint* ep, uint64_t request_id, const Status& st,
                 std::unique_ptr<ReplyBuffer> buf, bool force_rndv = false);
  void Finish(SendCtx* ctx, ucs_status_t status);
  std::unique_ptr<ReplyBuffer> TakeBuffer();
  void GiveBuffer(std::unique_ptr<ReplyBuffer> b);
  void ReleaseIdleMemory();
  MemoryBudget* budget() const { return server->options.budget.get(); }
  Endpoint* Find(ucp_ep_h ep) {
    auto it = by_ep.find(ep);
    return it == by_ep.end() ? nullptr : it->second;
  }

  static ucs_status_t OnRequest(void* arg, const void* header, size_t header_length, void* data,
                                size_t length, const ucp_am_recv_param_t* param);
  static void OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status) {
    static_cast<Endpoint*>(arg)->failed = true;
  }
  static void OnSendDone(void* request, ucs_status_t status, void* user_data) {
    auto* ctx = static_cast<SendCtx*>(user_data);
    ctx->ep->t->Finish(ctx, status);
    ucp_request_free(request);
  }
  static void OnReceiveDone(void* request, ucs_status_t status, size_t length, void* user_data) {
    auto* p = static_cast<Pending*>(user_data);
    p->receiving = false;
    if (status != UCS_OK)
      p->bad = Status::Unavailable(std::string("receiving the request's ids: ") +
                                   ucs_status_string(status));
    ucp_request_free(request);
  }
};

// Computes request p into buf with `handler` (on a progress thread, or an
// executor with its own handler).
Status Compute(DataPlaneHandler* handler, const Pending& pending, ReplyBuffer* buf);

// The process's listening TCP sockets bound to `port` (the UCX listener's).
std::vector<int> ListeningSocketsOn(int port);

}  // namespace ucx_detail
}  // namespace fanout::rpc

#endif  // FANOUT_RPC_UCX_DETAIL_UCX_SERVER_INTERNAL_H_
