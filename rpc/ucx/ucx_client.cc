// DataPlaneContext and DataPlaneChannel over UCP: the client side. A channel
// owns one UCX worker (one thread's), with one endpoint per server; replies
// arrive as active messages, rendezvous ones received with
// ucp_am_recv_data_nbx straight into the caller's sink from the progress loop
// (never inside a callback).
//
// This file: contexts and channels (workers, endpoints, the idle pool,
// connecting); ucx_client_io.cc: requests and replies. Their shared state is
// rpc/ucx/detail/ucx_client_internal.h.
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "rpc/ucx/detail/ucx_client_internal.h"

namespace fanout::rpc {

using ucx_client_detail::Clock;
using ucx_client_detail::Peer;

Status DataPlaneContext::Create(std::shared_ptr<DataPlaneContext>* out) {
  std::shared_ptr<DataPlaneContext> c(new DataPlaneContext());
  c->impl_ = std::make_unique<Impl>();
  FANOUT_RETURN_IF_ERROR(ucx::Context::Create(&c->impl_->ctx));
  c->info_.available = true;
  c->info_.ucx_version = ucx::Version();
  c->info_.memory_types = c->impl_->ctx.MemoryTypes();
  c->info_.cuda = c->impl_->ctx.HandlesCuda();
  *out = std::move(c);
  return Status::OK();
}

DataPlaneInfo QueryDataPlane() {
  std::shared_ptr<DataPlaneContext> c;
  Status st = DataPlaneContext::Create(&c);
  if (!st.ok()) {
    DataPlaneInfo info;
    info.error = st.message();
    info.ucx_version = ucx::Version();
    return info;
  }
  return c->info();
}

Status DataPlaneChannel::Impl::RegisterHandler() {
  ucp_am_handler_param_t hp{};
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  hp.id = wire::kAmReply;
  hp.cb = OnReply;
  hp.arg = this;
  hp.flags = UCP_AM_FLAG_WHOLE_MSG;
  ucs_status_t st = ucp_worker_set_am_recv_handler(worker.get(), &hp);
  if (st != UCS_OK) return ucx::Error("registering the data-plane reply handler", st);
  return Status::OK();
}

// A reply that does not come in time may mean a wedged worker, not a slow
// server: UCX's shared-memory transports give every receiving worker one FIFO
// that all its peers write into, and a peer that dies while writing an entry
// blocks the FIFO for everyone behind it (UCX cannot recover one; seen when a
// server was killed mid-transfer and the other server's reply never came).
// So a timeout resets the whole channel: every endpoint closed, the requests
// still in flight reported as aborted, and a fresh worker (fresh FIFO).
void DataPlaneChannel::Impl::Reset(const std::string& why) {
  const auto deadline = Clock::now() + std::chrono::seconds(5);  // one for all peers
  for (auto& p : peers) {
    const bool owed = p->busy;
    Release(p.get(), deadline);
    p->failed = true;  // reopened on the next Post()
    p->fail_reason = why;
    if (owed) {
      p->aborted = true;
      p->abort_reason = why;
    }
  }
  ++stats->resets;
  // Destroying the worker completes (purges) every request still on it,
  // through callbacks that reach their Peer; none survives into the fresh one.
  Status st = worker.Recreate(context->impl()->ctx.get());
  for (auto& p : peers) {
    p->send_req = nullptr;
    p->recv_req = nullptr;
    p->rndv_desc = nullptr;
  }
  if (st.ok()) st = RegisterHandler();
  if (!st.ok())
    for (auto& p : peers)
      p->fail_reason = why + "; a fresh UCX worker could not start: " + st.message();
}

Status DataPlaneChannel::Create(std::shared_ptr<DataPlaneContext> context,
                                const RpcOptions& options, std::unique_ptr<DataPlaneChannel>* out) {
  if (!context) return Status::InvalidArgument("DataPlaneChannel: no context");
  std::unique_ptr<DataPlaneChannel> ch(new DataPlaneChannel());
  ch->impl_ = context->impl()->Take();  // a pooled worker, its endpoints still open
  const bool fresh = ch->impl_ == nullptr;
  if (fresh) ch->impl_ = std::make_unique<Impl>();
  Impl& i = *ch->impl_;
  i.context = std::move(context);
  i.options = options;
  i.stats = &ch->stats_;
  if (fresh) {
    FANOUT_RETURN_IF_ERROR(ucx::Worker::Create(i.context->impl()->ctx.get(), &i.worker));
    FANOUT_RETURN_IF_ERROR(i.RegisterHandler());
  }
  *out = std::move(ch);
  return Status::OK();
}

// What UCX still holds after the deadline is purged when the worker goes
// (before the peers, while the callers' sinks still live).
DataPlaneChannel::Impl::~Impl() {
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  for (auto& p : peers) Release(p.get(), deadline);
  worker.Destroy();
}

std::unique_ptr<DataPlaneChannel::Impl> DataPlaneContext::Impl::Take() {
  std::lock_guard<std::mutex> lock(mu);
  if (idle.empty()) return nullptr;
  auto i = std::move(idle.back());
  idle.pop_back();
  return i;
}

void DataPlaneContext::Impl::Give(std::unique_ptr<DataPlaneChannel::Impl> impl) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (idle.size() < kMaxIdle) {
      idle.push_back(std::move(impl));
      return;
    }
  }
  impl.reset();  // over the cap: its worker goes, outside the lock
}

DataPlaneContext::Impl::~Impl() { idle.clear(); }

DataPlaneContext::~DataPlaneContext() = default;

DataPlaneChannel::~DataPlaneChannel() {
  if (!impl_) return;
  Impl& i = *impl_;
  // Requests still in flight (a session dropped mid-exchange) and failed
  // endpoints are closed now, within one deadline for all; a channel whose
  // requests UCX let go of in time goes back to the context's pool.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  bool clean = i.worker.get() != nullptr;
  for (auto& p : i.peers)
    if (p->busy || p->failed || p->aborted) {
      clean &= i.Release(p.get(), deadline);
      p->aborted = false;
    }
  std::shared_ptr<DataPlaneContext> ctx = std::move(i.context);
  i.stats = &i.detached_stats;
  if (clean && ctx) {
    ctx->impl()->Give(std::move(impl_));
  } else {
    impl_.reset();  // its worker goes while the context still lives
  }
}

Status DataPlaneChannel::Impl::Open(Peer* p) {
  if (p->send_req != nullptr || p->recv_req != nullptr) {
    // Cannot happen (Close resets the worker when UCX does not let go), but a
    // stale request must never be taken for the new endpoint's.
    Reset("server " + p->name + ": a request of the previous endpoint was still in flight");
  }
  if (worker.get() == nullptr)  // a reset whose fresh worker could not start
    return Status::Unavailable(
        "data plane of server " + p->name + ": this channel has no UCX worker" +
        (p->fail_reason.empty() ? std::string() : " (" + p->fail_reason + ")"));
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string port = std::to_string(p->port);
  int rc = getaddrinfo(p->host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr)
    return Status::Unavailable("data plane of server " + p->name + ": cannot resolve '" + p->host +
                               "': " + gai_strerror(rc));
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  params.sockaddr.addr = res->ai_addr;
  params.sockaddr.addrlen = res->ai_addrlen;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = OnEndpointError;
  params.err_handler.arg = p;
  ucs_status_t st;
  {
    std::lock_guard<std::mutex> lock(ucx::LifecycleMutex());
    st = ucp_ep_create(worker.get(), &params, &p->ep);
  }
  freeaddrinfo(res);
  if (st != UCS_OK) {
    p->ep = nullptr;
    return ucx::Error("data plane of server " + p->name + " at " + p->host + ":" + port, st);
  }
  p->failed = false;
  p->fail_reason.clear();
  p->transports.clear();
  return Status::OK();
}

// Force-closes the endpoint (which fails what is in flight on it) and
// progresses (bounded) until UCX has let go of the request and the sink.
bool DataPlaneChannel::Impl::Release(Peer* p, Clock::time_point deadline) {
  if (p->rndv_desc != nullptr) {
    ucp_am_data_release(worker.get(), p->rndv_desc);
    p->rndv_desc = nullptr;
  }
  if (p->ep != nullptr) {
    ucs_status_ptr_t r;
    {
      std::lock_guard<std::mutex> lock(ucx::LifecycleMutex());
      ucp_request_param_t prm{};
      prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
      r = ucp_ep_close_nbx(p->ep, &prm);
      ucx::DrainMissedEvents(worker.get());
    }
    if (r != nullptr && !UCS_PTR_IS_ERR(r)) {
      while (ucp_request_check_status(r) == UCS_INPROGRESS && Clock::now() < deadline)
        ucp_worker_progress(worker.get());
      // Freed either way: UCX completes a freed request on its own.
      ucp_request_free(r);
    }
    p->ep = nullptr;
  }
  while ((p->recv_req != nullptr || p->send_req != nullptr) && Clock::now() < deadline)
    ucp_worker_progress(worker.get());
  p->busy = false;
  return p->recv_req == nullptr && p->send_req == nullptr;
}

void DataPlaneChannel::Impl::Close(Peer* p, Clock::time_point deadline) {
  if (Release(p, deadline)) return;
  ++stats->stuck_closes;
  Reset("server " + p->name + ": a closed request still held its buffer after the close deadline");
}

Status DataPlaneChannel::Connect(const std::string& host, int port, const std::string& name,
                                 int* peer, const std::string& ticket) {
  Impl& i = *impl_;
  // The same server again (a failover back, a re-probe after a fallback):
  // its idle peer slot is reused, so reconnecting does not grow the channel.
  Peer* raw = nullptr;
  for (auto& q : i.peers)
    if (!q->busy && q->host == host && q->port == port && q->name == name && q->ticket == ticket) {
      raw = q.get();
      raw->aborted = false;
      break;
    }
  if (raw != nullptr && raw->ep != nullptr && !raw->failed) {
    // Still open (a pooled channel's, or a re-probe's): proven by a ping, no
    // new endpoint; one that does not answer is reopened below.
    DataRequest ping;
    ping.method = DataMethod::kPing;
    ReplySink sink;
    Status st = Post(raw->index, ping, sink);
    if (st.ok()) st = i.WaitFor(raw, i.options.connect_timeout_ms);
    if (st.ok()) {
      *peer = raw->index;
      return Status::OK();
    }
    if (raw->ep != nullptr) i.Close(raw);
  } else if (raw != nullptr && raw->ep != nullptr) {
    i.Close(raw);
  }
  if (raw == nullptr) {
    if (i.peers.size() >= 0xffff)
      return Status::ResourceExhausted("too many data-plane peers on one channel");
    auto p = std::make_unique<Peer>();
    p->channel = &i;
    p->index = static_cast<int>(i.peers.size());
    p->host = host;
    p->port = port;
    p->name = name;
    p->ticket = ticket;
    raw = p.get();
    i.peers.push_back(std::move(p));
  }
  FANOUT_RETURN_IF_ERROR(i.Open(raw));
  DataRequest ping;
  ping.method = DataMethod::kPing;
  ReplySink sink;  // an empty reply
  Status st = Post(raw->index, ping, sink);
  if (st.ok()) st = i.WaitFor(raw, i.options.connect_timeout_ms);
  if (!st.ok()) {
    i.Close(raw);
    return Status::FromCode(static_cast<int>(st.code()),
                            "cannot reach the data plane of server " + name + " at " + host + ":" +
                                std::to_string(port) + ": " + st.message());
  }
  raw->transports = ucx::EndpointTransports(raw->ep);
  *peer = raw->index;
  return Status::OK();
}

}  // namespace fanout::rpc
