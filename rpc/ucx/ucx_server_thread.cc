// The UCX data-plane server's progress threads (rpc/ucx/ucx_server.cc's
// header): each owns a worker and its endpoints; receives requests (fetching
// rendezvous ids when the memory budget has room), computes them or hands
// them to the executors (ucx_executors.cc), sends the replies and reaps
// endpoints that failed or closed.
#include <malloc.h>
#include <sched.h>

#include <cstdio>
#include <cstring>

#include "rpc/ucx/detail/ucx_server_internal.h"

namespace fanout::rpc::ucx_detail {

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
                                  &p->hdr, &malformed);
  if (st.ok() && s->options.ticket_tenant) {
    // The ticket names whose request this is (the default tenant's on a
    // server with an auth token or TLS and no tenants file).
    if (p->hdr.flags & wire::kTicket) {
      const char* h = static_cast<const char*>(header);
      p->tenant = s->options.ticket_tenant(
          std::string(h + header_length - wire::kTicketBytes, wire::kTicketBytes));
    }
    if (p->tenant < 0)
      st = Status::Unauthenticated(
          "this data plane serves only requests with the ticket handed to a connection that "
          "authenticated on the server's RPC port (auth token, TLS or a tenant's credential: "
          "PartitionInfo.data_plane_ticket; a tenant removed from the tenants file, or whose "
          "token or TLS subject changed, has none)");
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
    req.call.version = p->hdr.at_version;
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

}  // namespace fanout::rpc::ucx_detail
