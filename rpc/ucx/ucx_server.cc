// DataPlaneServer over UCP: a listener on thread 0's worker hands each new
// connection to one of N progress threads (round robin); each thread owns a
// UCX worker, its endpoints, a handler and a pool of reply buffers, and serves
// its endpoints' requests in order, at most max_replies_per_endpoint in flight
// each. Nothing is shared between threads on the request path, unless
// requests are computed by executors (DataPlaneServerOptions::executors): the
// progress thread then hands a request to the executors' queue (per tenant,
// picked round robin) and sends the reply an executor hands back (its done
// list, then ucp_worker_signal).
#include <arpa/inet.h>
#include <dirent.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rpc/data_plane.h"
#include "rpc/ucx/ucx_common.h"
#include "rpc/ucx/wire.h"

namespace fanout::rpc {

namespace {

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

}  // namespace

struct DataPlaneServer::Impl {
  DataPlaneServerOptions options;
  HandlerFactory make_handler;
  ucx::Context ctx;
  std::vector<std::unique_ptr<Thread>> threads;
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
  std::map<int, std::deque<Task>> exec_queue;  // GUARDED_BY(exec_mu)
  int exec_last = -1;                          // GUARDED_BY(exec_mu): tenant served last
  bool exec_stop = false;                      // GUARDED_BY(exec_mu)
  void Execute();

  static void OnConnection(ucp_conn_request_h request, void* arg);
};

namespace {

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

ucs_status_t Thread::OnRequest(void* arg, const void* header, size_t header_length, void* data,
                               size_t length, const ucp_am_recv_param_t* param) {
  auto* t = static_cast<Thread*>(arg);
  DataPlaneServer::Impl* s = t->server;
  Endpoint* ep =
      (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? t->Find(param->reply_ep) : nullptr;
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (ep == nullptr || ep->failed) {
    // No way to answer (the sender did not ask for a reply endpoint): drop it.
    ++s->malformed;
    return UCS_OK;
  }
  if (static_cast<int>(ep->queue.size()) >= s->options.max_queued_per_endpoint) {
    // A peer that keeps sending without taking its answers: nothing more is
    // queued for it (its memory stays bounded), and its endpoint is closed.
    ++s->refused;
    ep->failed = true;
    return UCS_OK;
  }
  auto p = std::make_unique<Pending>();
  p->ep = ep;
  bool malformed = false;
  Status st = wire::DecodeRequest(header, header_length, length, s->options.max_request_bytes,
                                  s->options.ticket, &p->hdr, &malformed);
  if (st.ok() && s->options.ticket_tenant) {
    // Tenants: the ticket names whose request this is.
    if (p->hdr.flags & wire::kTicket) {
      const char* h = static_cast<const char*>(header);
      p->tenant = s->options.ticket_tenant(
          std::string(h + header_length - wire::kTicketBytes, wire::kTicketBytes));
    }
    if (p->tenant < 0)
      st = Status::Unauthenticated(
          "this data plane serves a tenant's requests with the ticket its authenticated RPC "
          "connection was handed (PartitionInfo.data_plane_ticket)");
  }
  if (!st.ok()) {
    ++(malformed ? s->malformed : s->unauthenticated);
    p->bad = std::move(st);
  }
  if (p->bad.ok()) {
    if (rndv) {
      // Fetched from the progress loop once the budget has room, never
      // inside a callback; until then the bytes stay with the sender.
      p->rndv_desc = data;
      p->rndv_bytes = static_cast<int64_t>(length);
    } else if (length > 0) {
      int64_t taken = 0;
      MemoryBudget* budget = t->budget();
      const int64_t n = static_cast<int64_t>(length);
      bool fits = budget == nullptr || budget->TryTake(n, &taken);
      if (!fits && length <= wire::kEagerRequestMaxBytes &&
          ep->forced_bytes + n <= kMaxForcedBytesPerEndpoint) {
        // Already here and small: taken over the limit, within the caps (one
        // endpoint's queue of small requests, and all endpoints' together).
        if (s->forced_bytes.fetch_add(n) + n <= kMaxForcedBytesTotal) {
          budget->Force(n);
          taken = n;
          ep->forced_bytes += n;
          p->forced = n;
          p->ep_forced = &ep->forced_bytes;
          p->server_forced = &s->forced_bytes;
          fits = true;
        } else {
          s->forced_bytes -= n;
        }
      }
      if (!fits) {
        ++s->budget_refused;
        p->bad = Status::ResourceExhausted(
            "server request memory budget full (--max-inflight-mib): request not taken");
      } else {
        p->hold = BudgetHold(t->budget(), taken);
        p->ids.resize(length / 8);
        ep->held_bytes += static_cast<int64_t>(length);
        std::memcpy(p->ids.data(), data, length);
      }
    }
  }
  const bool keep = p->bad.ok() && rndv;
  ep->queue.push_back(std::move(p));
  return keep ? UCS_INPROGRESS : UCS_OK;
}

std::unique_ptr<ReplyBuffer> Thread::TakeBuffer() {
  if (pool.empty()) return std::make_unique<ReplyBuffer>();
  auto b = std::move(pool.back());
  pool.pop_back();
  held_bytes -= static_cast<int64_t>(b->capacity());
  return b;
}

void Thread::GiveBuffer(std::unique_ptr<ReplyBuffer> b) {
  if (!b) return;
  constexpr size_t kPooled = 8;
  if (pool.size() >= kPooled) return;  // freed: the pool stays bounded
  b->clear();
  held_bytes += static_cast<int64_t>(b->capacity());
  pool.push_back(std::move(b));
}

// After a burst: the pooled buffers (up to 8 of the largest replies) go back,
// and so do the allocator's free pages (glibc keeps freed chunks below its
// adaptive mmap threshold, up to 32 MiB each, in its arenas otherwise). The
// PartitionServer's admin tick trims too (Thrift's arenas), but it runs only
// where the admin endpoint is on.
void Thread::ReleaseIdleMemory() {
  if (pool.empty()) return;
  pool.clear();
  held_bytes = 0;
  ++server->memory_releases;
  malloc_trim(0);
}

void Thread::Finish(SendCtx* ctx, ucs_status_t status) {
  Endpoint* ep = ctx->ep;
  --ep->in_flight;
  --sending;
  ep->held_bytes -= ctx->held;
  ctx->hold.Reset();
  if (status != UCS_OK) {
    ++server->errors;
    ep->failed = true;
  }
  GiveBuffer(std::move(ctx->buf));
  delete ctx;
}

void Thread::SendReply(Endpoint* ep, uint64_t request_id, const Status& st,
                       std::unique_ptr<ReplyBuffer> buf, bool force_rndv) {
  auto* ctx = new SendCtx{ep, {}, std::move(buf), {}, 0, {}};
  ctx->hdr.request_id = request_id;
  ctx->hdr.code = static_cast<int32_t>(st.code());
  const void* data;
  size_t size;
  if (st.ok()) {
    data = ctx->buf->data();
    size = ctx->buf->size();
    ctx->hdr.payload_bytes = size;
    ctx->held = static_cast<int64_t>(ctx->buf->capacity());
    if (budget() != nullptr) {
      budget()->Force(ctx->held);
      ctx->hold = BudgetHold(budget(), ctx->held);
    }
  } else {
    ++server->errors;
    ctx->message = st.message();
    data = ctx->message.data();
    size = ctx->message.size();
  }
  ep->held_bytes += ctx->held;
  ++ep->in_flight;
  ++sending;
  ucp_request_param_t p{};
  p.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  p.cb.send = OnSendDone;
  p.user_data = ctx;
  p.flags = (st.ok() &&
             (force_rndv || static_cast<int64_t>(size) >= server->options.rndv_threshold_bytes))
                ? UCP_AM_SEND_FLAG_RNDV
                : 0;
  ucs_status_ptr_t r =
      ucp_am_send_nbx(ep->ep, wire::kAmReply, &ctx->hdr, sizeof ctx->hdr, data, size, &p);
  if (r == nullptr) {
    Finish(ctx, UCS_OK);
  } else if (UCS_PTR_IS_ERR(r)) {
    Finish(ctx, UCS_PTR_STATUS(r));
  }
  if (st.ok()) {
    const auto bytes = static_cast<int64_t>(size);
    ++server->requests;
    server->reply_bytes += bytes;
    ++ep->requests;
    ep->reply_bytes += bytes;
  }
}

// Computes request p into buf with `handler` (on a progress thread, or an
// executor with its own handler).
Status Compute(DataPlaneHandler* handler, const Pending& pending, ReplyBuffer* buf) {
  const Pending* p = &pending;
  Status st;
  auto method = static_cast<DataMethod>(p->hdr.method);
  ReplyWriter writer(buf);
  if (method == DataMethod::kPing) {
    buf->clear();
  } else {
    DataRequest req;
    req.method = method;
    req.tenant = p->tenant;
    req.ids = ArrayView<const int64_t>(p->ids.data(), p->ids.size());
    req.call.fanout = p->hdr.fanout;
    req.call.seed = p->hdr.seed;
    req.call.hop = p->hdr.hop;
    req.call.replace = p->hdr.flags & wire::kReplace;
    req.call.weighted = p->hdr.flags & wire::kWeighted;
    req.call.with_edge_ids = p->hdr.flags & wire::kEdgeIds;
    req.call.labor = p->hdr.flags & wire::kLabor;
    if (method == DataMethod::kSample && (p->hdr.flags & wire::kWalk)) {
      // The data is the node ids, then one walk key per node.
      const size_t n = p->ids.size() / 2;
      req.ids = ArrayView<const int64_t>(p->ids.data(), n);
      req.call.walk_keys = ArrayView<const uint64_t>(
          reinterpret_cast<const uint64_t*>(p->ids.data() + n), p->ids.size() - n);
    }
    try {
      st = handler->Handle(req, &writer);
    } catch (const std::bad_alloc&) {
      st = Status::ResourceExhausted("out of memory serving a data-plane request");
    } catch (const std::exception& e) {
      st = Status::Internal(e.what());
    }
  }
  return st;
}

void Thread::Answer(Endpoint* ep, std::unique_ptr<Pending> p) {
  ep->held_bytes -= static_cast<int64_t>(p->ids.size() * 8);
  if (!p->bad.ok()) {
    SendReply(ep, p->hdr.request_id, p->bad, nullptr);
    return;
  }
  std::unique_ptr<ReplyBuffer> buf = TakeBuffer();
  Status st = Compute(handler.get(), *p, buf.get());
  if (!st.ok()) {
    GiveBuffer(std::move(buf));
    buf.reset();
  }
  SendReply(ep, p->hdr.request_id, st, std::move(buf), (p->hdr.flags & wire::kForceRndv) != 0);
  // Lanes are wired up after the connection: look again now and then.
  const int64_t n = ep->requests.load();
  if ((n & (n - 1)) == 0 && n <= 4096) {
    std::string tl = ucx::EndpointTransports(ep->ep);
    std::lock_guard<std::mutex> lock(mu);
    ep->transports = tl;
  }
}

void Thread::Offload(Endpoint* ep, std::unique_ptr<Pending> p) {
  if (!p->bad.ok()) {
    Answer(ep, std::move(p));  // an error reply: nothing to compute
    return;
  }
  Task task;
  task.ep = ep;
  task.buf = TakeBuffer();
  const int tenant = p->tenant;
  task.p = std::move(p);
  ++ep->offloaded;
  {
    std::lock_guard<std::mutex> lock(server->exec_mu);
    server->exec_queue[tenant].push_back(std::move(task));
  }
  server->exec_cv.notify_one();
}

// The executors' results for this thread's endpoints: sent (or dropped where
// the endpoint failed meanwhile).
bool Thread::Deliver() {
  std::vector<Task> tasks;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (done.empty()) return false;
    tasks.swap(done);
  }
  for (Task& task : tasks) {
    Endpoint* ep = task.ep;
    --ep->offloaded;
    ep->held_bytes -= static_cast<int64_t>(task.p->ids.size() * 8);
    if (!task.status.ok()) {
      GiveBuffer(std::move(task.buf));
      task.buf.reset();
    }
    if (ep->failed) {
      GiveBuffer(std::move(task.buf));
      continue;
    }
    SendReply(ep, task.p->hdr.request_id, task.status, std::move(task.buf),
              (task.p->hdr.flags & wire::kForceRndv) != 0);
  }
  return true;
}

bool Thread::Accept() {
  std::deque<ucp_conn_request_h> reqs;
  {
    std::lock_guard<std::mutex> lock(mu);
    reqs.swap(inbox);
  }
  for (ucp_conn_request_h r : reqs) {
    auto ep = std::make_unique<Endpoint>();
    ep->t = this;
    ucp_conn_request_attr_t a{};
    a.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
    if (ucp_conn_request_query(r, &a) == UCS_OK) ep->peer = ucx::SockaddrText(a.client_address);
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.conn_request = r;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = OnEndpointError;
    params.err_handler.arg = ep.get();
    ucs_status_t created;
    {
      std::lock_guard<std::mutex> lock(ucx::LifecycleMutex());
      created = ucp_ep_create(worker.get(), &params, &ep->ep);
    }
    if (created != UCS_OK) {
      --server->endpoints_open;
      continue;
    }
    by_ep[ep->ep] = ep.get();
    std::lock_guard<std::mutex> lock(mu);
    eps.push_back(std::move(ep));
  }
  return !reqs.empty();
}

bool Thread::StartReceives() {
  bool any = false;
  budget_waiting = false;
  const auto now = Clock::now();
  for (auto& e : eps) {
    for (auto& p : e->queue) {
      if (p->rndv_desc == nullptr) continue;
      int64_t taken = 0;
      if (budget() != nullptr && !budget()->TryTake(p->rndv_bytes, &taken, !p->waited)) {
        // In order per endpoint: its later requests wait behind this one.
        if (!p->waited) ++server->budget_waits;
        p->waited = true;
        // The wait ends well before the client's own deadline, so that the
        // refusal reaches a client still waiting for it.
        int64_t wait_ms = server->options.budget_wait_ms;
        if (p->hdr.deadline_ms > 0)
          wait_ms = std::min<int64_t>(wait_ms, static_cast<int64_t>(p->hdr.deadline_ms) * 3 / 4);
        if (now - p->arrived < std::chrono::milliseconds(wait_ms)) {
          budget_waiting = true;
          break;
        }
        ucp_am_data_release(worker.get(), p->rndv_desc);
        p->rndv_desc = nullptr;
        ++server->budget_refused;
        p->bad = Status::ResourceExhausted(
            "server request memory budget full (--max-inflight-mib) for " +
            std::to_string(wait_ms) + " ms: request not taken");
        any = true;
        continue;
      }
      p->hold = BudgetHold(budget(), taken);
      p->ids.resize(static_cast<size_t>(p->rndv_bytes) / 8);
      e->held_bytes += p->rndv_bytes;
      void* desc = p->rndv_desc;
      p->rndv_desc = nullptr;
      p->receiving = true;
      any = true;
      ucp_request_param_t prm{};
      prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
      prm.cb.recv_am = OnReceiveDone;
      prm.user_data = p.get();
      ucs_status_ptr_t r =
          ucp_am_recv_data_nbx(worker.get(), desc, p->ids.data(), p->ids.size() * 8, &prm);
      if (r == nullptr) {
        p->receiving = false;
      } else if (UCS_PTR_IS_ERR(r)) {
        p->receiving = false;
        p->bad = Status::Unavailable(std::string("receiving the request's ids: ") +
                                     ucs_status_string(UCS_PTR_STATUS(r)));
      }
    }
  }
  return any;
}

bool Thread::Serve() {
  bool any = false;
  const int max_in_flight = std::max(1, server->options.max_replies_per_endpoint);
  const bool offload = server->options.executors > 0;
  for (auto& e : eps) {
    while (!e->failed && !e->queue.empty() && e->in_flight + e->offloaded < max_in_flight) {
      Pending* front = e->queue.front().get();
      if (front->receiving || front->rndv_desc != nullptr) break;
      // A full budget: one reply of this thread's at a time (it always makes
      // progress; the budget is overdrawn by at most that reply).
      if (sending > 0 && budget() != nullptr && !budget()->HasRoom()) return any;
      std::unique_ptr<Pending> p = std::move(e->queue.front());
      e->queue.pop_front();
      if (offload)
        Offload(e.get(), std::move(p));
      else
        Answer(e.get(), std::move(p));
      any = true;
    }
  }
  return any;
}

// Closes failed endpoints and frees them once nothing of theirs is in flight.
bool Thread::Reap() {
  bool any = false;
  for (size_t i = 0; i < eps.size();) {
    Endpoint* e = eps[i].get();
    if (!e->failed) {
      ++i;
      continue;
    }
    if (!e->closing) {
      e->closing = true;
      any = true;
      ucp_request_param_t prm{};
      prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
      ucs_status_ptr_t r;
      {
        std::lock_guard<std::mutex> lock(ucx::LifecycleMutex());
        r = ucp_ep_close_nbx(e->ep, &prm);
        ucx::DrainMissedEvents(worker.get());
      }
      if (r != nullptr && !UCS_PTR_IS_ERR(r))
        e->close_req = r;
      else
        e->closed = true;
    }
    if (e->close_req != nullptr && ucp_request_check_status(e->close_req) != UCS_INPROGRESS) {
      ucp_request_free(e->close_req);
      e->close_req = nullptr;
      e->closed = true;
    }
    bool receiving = false;
    for (auto& p : e->queue) receiving |= p->receiving;
    if (e->closed && e->in_flight == 0 && e->offloaded == 0 && !receiving) {
      for (auto& p : e->queue)
        if (p->rndv_desc != nullptr) ucp_am_data_release(worker.get(), p->rndv_desc);
      by_ep.erase(e->ep);
      --server->endpoints_open;
      std::lock_guard<std::mutex> lock(mu);
      eps.erase(eps.begin() + static_cast<long>(i));
      any = true;
      continue;
    }
    ++i;
  }
  return any;
}

void Thread::Run() {
  auto last = Clock::now();
  const auto spin = std::chrono::microseconds(server->options.spin_us);
  while (!server->stop.load(std::memory_order_relaxed)) {
    bool busy = false;
    for (int i = 0; i < 256 && ucp_worker_progress(worker.get()) != 0; ++i) busy = true;
    busy |= Accept();
    busy |= StartReceives();
    busy |= Deliver();
    busy |= Serve();
    busy |= Reap();
    auto now = Clock::now();
    if (busy) {
      last = now;
      continue;
    }
    if (now - last < spin) continue;
    if (budget_waiting) {
      // Room in the budget is given back by other threads (and Thrift), with
      // no UCX event to announce it: look again shortly.
      worker.WaitForEvents(1);
      continue;
    }
    if (sending > 0) {
      // A reply still going out makes progress only when this thread
      // progresses, and no event announces that a shared-memory FIFO the
      // peer drains has room again: yield (the peer may need this core)
      // while there was progress lately; then back off to short sleeps (at
      // most 1 ms), so that a peer that stopped reading (SIGSTOP, a rogue)
      // does not pin a core.
      const auto idle = now - last;
      if (idle < std::chrono::milliseconds(2)) {
        sched_yield();
      } else {
        std::this_thread::sleep_for(
            std::min<Clock::duration>(idle / 8, std::chrono::milliseconds(1)));
      }
      continue;
    }
    if (now - last >= std::chrono::milliseconds(server->options.idle_release_ms))
      ReleaseIdleMemory();
    worker.WaitForEvents(100);
  }
  Shutdown();
}

// On this thread as it ends: closes its endpoints, progressing up to 2 s so
// that they close cleanly. What remains (a peer that never answers) goes in
// Teardown().
void Thread::Shutdown() {
  for (auto& e : eps) e->failed = true;
  auto deadline = Clock::now() + std::chrono::seconds(2);
  while (!eps.empty() && Clock::now() < deadline) {
    ucp_worker_progress(worker.get());
    Reap();
  }
}

// From the controlling thread once every progress thread has ended (nothing
// progresses this worker any more). The worker goes first: destroying it
// purges the sends and receives still in flight through their callbacks,
// which reach the endpoints and the buffer pool, so those go after it.
void Thread::Teardown() {
  worker.Destroy();
  std::lock_guard<std::mutex> lock(mu);
  done.clear();  // their Pendings reach the endpoints: before those go
  eps.clear();
  by_ep.clear();
  pool.clear();
}

// The process's listening TCP sockets bound to `port` (the UCX listener's:
// UCX does not hand out its descriptor), found by their local address.
std::vector<int> ListeningSocketsOn(int port) {
  std::vector<int> fds;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return fds;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(d)) continue;
    int listening = 0;
    socklen_t len = sizeof(listening);
    if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 ||
        listening == 0)
      continue;
    sockaddr_storage a{};
    socklen_t alen = sizeof(a);
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&a), &alen) != 0) continue;
    int p = -1;
    if (a.ss_family == AF_INET) p = ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
    if (a.ss_family == AF_INET6) p = ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
    if (p == port) fds.push_back(static_cast<int>(fd));
  }
  closedir(d);
  return fds;
}

}  // namespace

void DataPlaneServer::Impl::OnConnection(ucp_conn_request_h request, void* arg) {
  auto* s = static_cast<Impl*>(arg);
  if (s->stop || s->endpoints_open.load() >= s->options.max_endpoints) {
    ++s->endpoints_rejected;
    ucp_listener_reject(s->listener, request);
    return;
  }
  ++s->endpoints_open;
  ++s->endpoints_total;
  Thread* t = s->threads[s->next_thread++ % s->threads.size()].get();
  {
    std::lock_guard<std::mutex> lock(t->mu);
    t->inbox.push_back(request);
  }
  ucp_worker_signal(t->worker.get());
}

// An executor: the next task, round robin across the tenants with tasks
// queued, computed with this executor's handler; the result goes back to
// the endpoint's progress thread.
void DataPlaneServer::Impl::Execute() {
  std::unique_ptr<DataPlaneHandler> handler = make_handler();
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(exec_mu);
      exec_cv.wait(lock, [&] { return exec_stop || !exec_queue.empty(); });
      if (exec_stop) return;  // what is queued goes with the server (Stop)
      auto it = exec_queue.upper_bound(exec_last);
      if (it == exec_queue.end()) it = exec_queue.begin();
      exec_last = it->first;
      task = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) exec_queue.erase(it);
    }
    task.status = Compute(handler.get(), *task.p, task.buf.get());
    Thread* t = task.ep->t;
    {
      std::lock_guard<std::mutex> lock(t->mu);
      t->done.push_back(std::move(task));
    }
    ucp_worker_signal(t->worker.get());
  }
}

bool DataPlaneBuilt() { return true; }

DataPlaneServer::DataPlaneServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Status DataPlaneServer::Start(const DataPlaneServerOptions& options, HandlerFactory make_handler,
                              std::unique_ptr<DataPlaneServer>* out) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->make_handler = std::move(make_handler);
  FANOUT_RETURN_IF_ERROR(ucx::Context::Create(&impl->ctx));
  impl->memory_types = impl->ctx.MemoryTypes();
  const int n = std::max(1, options.threads);
  for (int i = 0; i < n; ++i) {
    auto t = std::make_unique<Thread>();
    t->server = impl.get();
    FANOUT_RETURN_IF_ERROR(ucx::Worker::Create(impl->ctx.get(), &t->worker));
    t->handler = impl->make_handler();
    ucp_am_handler_param_t hp{};
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    hp.id = wire::kAmRequest;
    hp.cb = Thread::OnRequest;
    hp.arg = t.get();
    hp.flags = UCP_AM_FLAG_WHOLE_MSG;
    ucs_status_t st = ucp_worker_set_am_recv_handler(t->worker.get(), &hp);
    if (st != UCS_OK) return ucx::Error("registering the data-plane request handler", st);
    impl->threads.push_back(std::move(t));
  }
  sockaddr_storage addr{};
  socklen_t addr_len;
  if (options.bind.find(':') != std::string::npos) {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<uint16_t>(options.port));
    if (inet_pton(AF_INET6, options.bind.c_str(), &a6->sin6_addr) != 1)
      return Status::InvalidArgument("data-plane bind address '" + options.bind +
                                     "' is not an IP address");
    addr_len = sizeof(sockaddr_in6);
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<uint16_t>(options.port));
    if (inet_pton(AF_INET, options.bind.c_str(), &a4->sin_addr) != 1)
      return Status::InvalidArgument("data-plane bind address '" + options.bind +
                                     "' is not an IPv4 address");
    addr_len = sizeof(sockaddr_in);
  }
  ucp_listener_params_t lp{};
  lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  lp.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  lp.sockaddr.addrlen = addr_len;
  lp.conn_handler.cb = Impl::OnConnection;
  lp.conn_handler.arg = impl.get();
  ucs_status_t st = ucp_listener_create(impl->threads[0]->worker.get(), &lp, &impl->listener);
  if (st != UCS_OK)
    return Status::IOError("cannot open the UCX data-plane listener on " + options.bind + ":" +
                           std::to_string(options.port) + ": " + ucs_status_string(st) +
                           " (UCX needs its tcp transport for connection setup: check UCX_TLS)");
  ucp_listener_attr_t la{};
  la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  st = ucp_listener_query(impl->listener, &la);
  if (st != UCS_OK) {
    ucp_listener_destroy(impl->listener);
    return ucx::Error("querying the data-plane listener", st);
  }
  impl->port = la.sockaddr.ss_family == AF_INET6
                   ? ntohs(reinterpret_cast<sockaddr_in6*>(&la.sockaddr)->sin6_port)
                   : ntohs(reinterpret_cast<sockaddr_in*>(&la.sockaddr)->sin_port);
  impl->listen_fds = ListeningSocketsOn(impl->port);
  for (auto& t : impl->threads) {
    Thread* raw = t.get();
    t->thread = std::thread([raw] { raw->Run(); });
  }
  Impl* raw = impl.get();
  for (int i = 0; i < options.executors; ++i)
    impl->executors.emplace_back([raw] { raw->Execute(); });
  out->reset(new DataPlaneServer(std::move(impl)));
  return Status::OK();
}

DataPlaneServer::~DataPlaneServer() { Stop(); }

int DataPlaneServer::port() const { return impl_->port; }

void DataPlaneServer::Stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  impl_->stop = true;
  for (auto& t : impl_->threads) ucp_worker_signal(t->worker.get());
  for (auto& t : impl_->threads)
    if (t->thread.joinable()) t->thread.join();
  // The executors finish what they compute (a handler waiting for its turn
  // ends once the server's scheduler stops) and take nothing more; the
  // tasks still queued go before the endpoints their Pendings reach.
  {
    std::lock_guard<std::mutex> lock(impl_->exec_mu);
    impl_->exec_stop = true;
  }
  impl_->exec_cv.notify_all();
  for (auto& e : impl_->executors) e.join();
  impl_->exec_queue.clear();
  // UCX 1.13's TCP connection manager frees its listener while connections
  // it accepted still point at it: one whose request arrives between the
  // listener's end and the worker's reaches freed memory (the async thread
  // crashes the process; fixed in UCX 1.14, openucx/ucx #8243). So: no new
  // connection is accepted (the listening socket shut down: connects are
  // refused), and those accepted before are given time to arrive and be
  // refused (progressing the listener's worker) before the listener goes.
  for (int fd : impl_->listen_fds) (void)shutdown(fd, SHUT_RDWR);
  if (!impl_->threads.empty()) {
    ucp_worker_h w0 = impl_->threads[0]->worker.get();
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    while (std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 256 && ucp_worker_progress(w0) != 0; ++i) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  // Every progress thread has ended: the listener (on thread 0's worker) and
  // the connection requests it handed out are this thread's alone now, so
  // they are rejected and destroyed here, not from each progress thread.
  for (auto& t : impl_->threads) {
    std::lock_guard<std::mutex> lock(t->mu);
    for (ucp_conn_request_h r : t->inbox) {
      if (impl_->listener) ucp_listener_reject(impl_->listener, r);
      --impl_->endpoints_open;
    }
    t->inbox.clear();
  }
  if (impl_->listener) ucp_listener_destroy(impl_->listener);
  impl_->listener = nullptr;
  for (auto& t : impl_->threads) t->Teardown();
  // The threads (and their workers) go with impl_, before the context; Stats()
  // may still read them from the admin thread.
}

DataPlaneServerStats DataPlaneServer::Stats() const {
  DataPlaneServerStats s;
  const Impl& i = *impl_;
  s.ucx_version = ucx::Version();
  s.memory_types = i.memory_types;
  s.requests = i.requests;
  s.reply_bytes = i.reply_bytes;
  s.errors = i.errors;
  s.malformed = i.malformed;
  s.refused = i.refused;
  s.budget_waits = i.budget_waits;
  s.budget_refused = i.budget_refused;
  s.memory_releases = i.memory_releases;
  s.unauthenticated = i.unauthenticated;
  s.endpoints_open = i.endpoints_open;
  s.endpoints_total = i.endpoints_total;
  s.endpoints_rejected = i.endpoints_rejected;
  for (const auto& t : i.threads) {
    std::lock_guard<std::mutex> lock(t->mu);
    s.held_bytes += t->held_bytes;
    s.pooled_bytes += t->held_bytes;
    for (const auto& e : t->eps) {
      DataPlaneEndpointInfo info;
      info.peer = e->peer;
      info.transports = e->transports;
      info.requests = e->requests;
      info.reply_bytes = e->reply_bytes;
      info.held_bytes = e->held_bytes;
      s.held_bytes += info.held_bytes;
      s.endpoints.push_back(std::move(info));
    }
  }
  return s;
}

}  // namespace fanout::rpc
