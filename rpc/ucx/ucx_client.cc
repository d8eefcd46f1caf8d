// DataPlaneContext and DataPlaneChannel over UCP: the client side. A channel
// owns one UCX worker (one thread's), with one endpoint per server; replies
// arrive as active messages, rendezvous ones received with
// ucp_am_recv_data_nbx straight into the caller's sink from the progress loop
// (never inside a callback).
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "rpc/data_plane.h"
#include "rpc/ucx/ucx_common.h"
#include "rpc/ucx/wire.h"

namespace fanout::rpc {

using Clock = std::chrono::steady_clock;

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

namespace {

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

}  // namespace

struct DataPlaneChannel::Impl {
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

ucs_status_t DataPlaneChannel::Impl::OnReply(void* arg, const void* header, size_t header_length,
                                             void* data, size_t length,
                                             const ucp_am_recv_param_t* param) {
  auto* c = static_cast<Impl*>(arg);
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  wire::ReplyHeader h;
  if (header_length != sizeof h) {
    ++c->stats->stray_replies;
    return UCS_OK;
  }
  std::memcpy(&h, header, sizeof h);
  const size_t index = static_cast<size_t>(h.request_id & 0xffff);
  Peer* p = index < c->peers.size() ? c->peers[index].get() : nullptr;
  if (h.magic != wire::kMagic || p == nullptr || !p->busy || p->done || p->rndv_desc != nullptr ||
      p->recv_req != nullptr || p->request_id != h.request_id) {
    ++c->stats->stray_replies;  // a reply for no request in flight: dropped
    return UCS_OK;
  }
  if (h.code != 0) {
    std::string msg =
        rndv ? "(error message not received)" : std::string(static_cast<const char*>(data), length);
    p->done = true;
    p->status = Status::FromCode(h.code, "server " + p->name + ": " + msg);
    return UCS_OK;
  }
  const ReplySink& s = p->sink;
  if (h.payload_bytes != length) {
    p->done = true;
    p->status = Status::Corruption("server " + p->name + ": data-plane reply says " +
                                   std::to_string(h.payload_bytes) + " bytes but carries " +
                                   std::to_string(length));
    return UCS_OK;
  }
  if (s.mode() == ReplySink::Mode::kGrow) {
    if (static_cast<int64_t>(length) > c->options.max_frame_bytes) {
      p->done = true;
      p->status = Status::ResourceExhausted(
          "server " + p->name + ": reply of " + std::to_string(length) +
          " bytes is over the limit of " + std::to_string(c->options.max_frame_bytes));
      return UCS_OK;
    }
    s.grow()->resize(length);
  } else if (length != s.bytes()) {
    p->done = true;
    p->status = Status::Corruption("server " + p->name + ": reply of " + std::to_string(length) +
                                   " bytes, expected " + std::to_string(s.bytes()));
    return UCS_OK;
  }
  c->stats->reply_bytes += static_cast<int64_t>(length);
  if (rndv ||
      (s.memory() == MemoryKind::kCuda && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA))) {
    p->rndv_desc = data;  // received from the progress loop
    p->rndv_len = length;
    return UCS_INPROGRESS;
  }
  if (s.memory() == MemoryKind::kCuda) {
    p->done = true;
    p->status = Status::Internal("server " + p->name +
                                 ": a small reply for CUDA memory arrived without rendezvous");
    return UCS_OK;
  }
  const char* src = static_cast<const char*>(data);
  switch (s.mode()) {
    case ReplySink::Mode::kGrow:
      if (length) std::memcpy(s.grow()->data(), src, length);
      break;
    case ReplySink::Mode::kScatter:
      for (const auto& g : s.segments()) {
        std::memcpy(g.data, src, g.bytes);
        src += g.bytes;
      }
      break;
    case ReplySink::Mode::kFixed:
      if (length) std::memcpy(s.data(), src, length);
      break;
  }
  p->done = true;
  return UCS_OK;
}

void DataPlaneChannel::Impl::StartReceive(Peer* p) {
  void* desc = p->rndv_desc;
  p->rndv_desc = nullptr;
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.recv_am = OnReceiveDone;
  prm.user_data = p;
  if (p->sink.memory() == MemoryKind::kCuda) {
    prm.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    prm.memory_type = UCS_MEMORY_TYPE_CUDA;
  }
  void* buffer;
  size_t count;
  const ReplySink& s = p->sink;
  switch (s.mode()) {
    case ReplySink::Mode::kGrow:
      buffer = s.grow()->data();
      count = p->rndv_len;
      break;
    case ReplySink::Mode::kScatter:
      p->iov.resize(s.segments().size());
      for (size_t i = 0; i < s.segments().size(); ++i)
        p->iov[i] = {s.segments()[i].data, s.segments()[i].bytes};
      prm.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
      prm.datatype = ucp_dt_make_iov();
      buffer = p->iov.data();
      count = p->iov.size();
      break;
    case ReplySink::Mode::kFixed:
    default:
      buffer = s.data();
      count = p->rndv_len;
      break;
  }
  ucs_status_ptr_t r = ucp_am_recv_data_nbx(worker.get(), desc, buffer, count, &prm);
  if (r == nullptr) {
    p->done = true;
    ++stats->rndv_replies;
  } else if (UCS_PTR_IS_ERR(r)) {
    p->done = true;
    p->status = Status::Unavailable("server " + p->name + ": receiving the reply failed: " +
                                    ucs_status_string(UCS_PTR_STATUS(r)));
  } else {
    p->recv_req = r;
  }
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

Status DataPlaneChannel::Post(int peer, const DataRequest& request, const ReplySink& sink) {
  Impl& i = *impl_;
  if (peer < 0 || peer >= static_cast<int>(i.peers.size()))
    return Status::InvalidArgument("data-plane peer " + std::to_string(peer) + " does not exist");
  Peer* p = i.peers[peer].get();
  // A second request on a peer still owed a reply would overwrite the
  // first's sink while UCX may write into it: refused, in every build.
  if (p->busy)
    return Status::Internal("data-plane peer " + p->name +
                            ": a request is still in flight on it (abandon it first)");
  p->aborted = false;  // an abandoned request's news is stale now
  if (sink.memory() == MemoryKind::kCuda && !i.context->info().cuda)
    return Status::NotSupported("this UCX (" + i.context->info().ucx_version +
                                ") does not handle CUDA memory: receive into host memory and copy");
  if (sink.memory() == MemoryKind::kCuda) {
    // Trust a CUDA destination only once UCX itself recognises it as CUDA
    // memory (as NIXL's UCX backend does): a host pointer sent down the CUDA
    // path would fault inside UCX.
    auto check = [&](void* addr, size_t bytes) {
      return ucx::CheckMemoryType(i.context->impl()->ctx.get(), addr, bytes, UCS_MEMORY_TYPE_CUDA);
    };
    if (sink.mode() == ReplySink::Mode::kGrow)
      return Status::InvalidArgument("a growing reply buffer is host memory, not CUDA memory");
    if (sink.mode() == ReplySink::Mode::kFixed) {
      FANOUT_RETURN_IF_ERROR(check(sink.data(), sink.bytes()));
    } else {
      for (const auto& g : sink.segments()) FANOUT_RETURN_IF_ERROR(check(g.data, g.bytes));
    }
  }
  if (!request.call.walk_keys.empty() && request.call.walk_keys.size() != request.ids.size())
    return Status::InvalidArgument("walk step: " + std::to_string(request.ids.size()) +
                                   " nodes but " + std::to_string(request.call.walk_keys.size()) +
                                   " walk keys");
  if (p->ep == nullptr || p->failed) {
    if (p->ep != nullptr) i.Close(p);
    FANOUT_RETURN_IF_ERROR(i.Open(p));
  }
  p->busy = true;
  p->done = false;
  p->sent = false;
  p->status = Status::OK();
  p->sink = sink;
  p->request_id = (i.next_seq++ << 16) | static_cast<uint64_t>(peer);
  p->hdr = wire::RequestHeader();
  p->hdr.method = static_cast<uint8_t>(request.method);
  p->hdr.request_id = p->request_id;
  p->hdr.fanout = request.call.fanout;
  p->hdr.seed = request.call.seed;
  p->hdr.hop = request.call.hop;
  p->hdr.deadline_ms = static_cast<uint32_t>(std::max(0, i.options.call_timeout_ms));
  p->hdr.flags =
      (request.call.replace ? wire::kReplace : 0) | (request.call.weighted ? wire::kWeighted : 0) |
      (request.call.with_edge_ids ? wire::kEdgeIds : 0) | (request.call.labor ? wire::kLabor : 0) |
      (request.call.walk_keys.empty() ? 0 : wire::kWalk) |
      (sink.memory() == MemoryKind::kCuda ? wire::kForceRndv : 0);
  ucp_request_param_t prm{};
  prm.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  prm.cb.send = Impl::OnSendDone;
  prm.user_data = p;
  prm.flags = UCP_AM_SEND_FLAG_REPLY;
  p->header.resize(sizeof p->hdr);
  if (!p->ticket.empty()) {  // last in the header
    p->hdr.flags |= wire::kTicket;
    p->header.insert(p->header.end(), p->ticket.begin(), p->ticket.end());
  }
  std::memcpy(p->header.data(), &p->hdr, sizeof p->hdr);
  const void* data = request.ids.data();
  size_t data_bytes = request.ids.size() * 8;
  if (!request.call.walk_keys.empty()) {  // the ids, then the keys: one message
    p->walk_data.assign(request.ids.begin(), request.ids.end());
    for (uint64_t k : request.call.walk_keys) p->walk_data.push_back(static_cast<int64_t>(k));
    data = p->walk_data.data();
    data_bytes = p->walk_data.size() * 8;
  }
  // Large id lists go by rendezvous: the server fetches them when its memory
  // budget has room for them (an eager one it would have to take, or refuse,
  // as it arrives).
  if (data_bytes >= wire::kEagerRequestMaxBytes) prm.flags |= UCP_AM_SEND_FLAG_RNDV;
  ucs_status_ptr_t r = ucp_am_send_nbx(p->ep, wire::kAmRequest, p->header.data(), p->header.size(),
                                       data, data_bytes, &prm);
  ++stats_.requests;
  if (r == nullptr) {
    p->sent = true;
  } else if (UCS_PTR_IS_ERR(r)) {
    Status st =
        ucx::Error("server " + p->name + ": sending a data-plane request", UCS_PTR_STATUS(r));
    i.Close(p);
    return st;
  } else {
    p->send_req = r;
  }
  return Status::OK();
}

namespace {
// Threads of this process busy-polling for a reply now. Polling saves a
// wakeup (tens of microseconds) but takes a core; with more pollers than
// cores less one, they starve the servers on this host (2 loader threads on
// 2 cores: 0.15x of the limit), so beyond that a waiter sleeps at once.
std::atomic<int> g_polling{0};
int MaxPolling() {
  static const int n = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1);
  return n;
}
}  // namespace

Status DataPlaneChannel::Impl::WaitFor(Peer* p, int timeout_ms,
                                       const std::function<bool()>& give_up) {
  if (p->aborted) {
    p->aborted = false;
    ++stats->aborted_by_reset;
    return Status::Unavailable("server " + p->name +
                               ": the data-plane request was abandoned: " + p->abort_reason);
  }
  if (!p->busy) return Status::OK();
  auto start = Clock::now();
  auto deadline = start + std::chrono::milliseconds(timeout_ms);
  auto last = start;
  const bool poll = g_polling.fetch_add(1) < MaxPolling();
  struct Unpoll {
    ~Unpoll() { --g_polling; }
  } unpoll;
  for (;;) {
    Progress();
    if (p->done && p->sent) break;
    if (p->failed) {
      Status st = Status::Unavailable("server " + p->name +
                                      ": data plane endpoint failed: " + p->fail_reason);
      Close(p);
      return st;
    }
    if (give_up && give_up()) {
      ++stats->given_up;
      Close(p);
      return Status::Unavailable("server " + p->name +
                                 ": the data-plane request was abandoned: its replica failed its "
                                 "health check");
    }
    auto now = Clock::now();
    if (now >= deadline) {
      const std::string why = "server " + p->name + " did not answer on the data plane within " +
                              std::to_string(timeout_ms) + " ms";
      Reset(why + " (the channel was reset)");
      p->aborted = false;  // this peer gets the timeout itself
      return Status::DeadlineExceeded(why);
    }
    if (poll && now - last < std::chrono::microseconds(50)) continue;
    int left = static_cast<int>(
                   std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) +
               1;
    worker.WaitForEvents(std::min(left, 100));
    last = Clock::now();
  }
  p->busy = false;
  // Lanes are wired up after the connection: look again now and then.
  ++p->replies;
  if ((p->replies & (p->replies - 1)) == 0 && p->replies <= 4096)
    p->transports = ucx::EndpointTransports(p->ep);
  Status st = std::move(p->status);
  p->status = Status::OK();
  // A transport failure while receiving leaves the endpoint suspect.
  if (st.code() == Status::Code::kUnavailable) Close(p);
  return st;
}

Status DataPlaneChannel::Wait(int peer, const std::function<bool()>& give_up) {
  Impl& i = *impl_;
  if (peer < 0 || peer >= static_cast<int>(i.peers.size()))
    return Status::InvalidArgument("data-plane peer " + std::to_string(peer) + " does not exist");
  return i.WaitFor(i.peers[peer].get(), i.options.call_timeout_ms, give_up);
}

Status DataPlaneChannel::Call(int peer, const DataRequest& request, const ReplySink& sink) {
  FANOUT_RETURN_IF_ERROR(Post(peer, request, sink));
  return Wait(peer);
}

void DataPlaneChannel::Abandon(int peer) {
  if (peer < 0 || peer >= static_cast<int>(impl_->peers.size())) return;
  Peer* p = impl_->peers[peer].get();
  if (p->busy) impl_->Close(p);
}

std::string DataPlaneChannel::Transports(int peer) const {
  if (peer < 0 || peer >= static_cast<int>(impl_->peers.size())) return "";
  return impl_->peers[peer]->transports;
}

}  // namespace fanout::rpc
