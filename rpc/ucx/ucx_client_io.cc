// The UCX data plane's client requests (rpc/ucx/ucx_client.cc's header):
// a request posted on a peer's endpoint, its reply received as an active
// message (rendezvous ones with ucp_am_recv_data_nbx straight into the
// caller's sink, from the progress loop, never inside a callback), and the
// waits for it.
#include <algorithm>
#include <cassert>
#include <cstring>
#include <thread>

#include "rpc/ucx/detail/ucx_client_internal.h"

namespace fanout::rpc {

using ucx_client_detail::Clock;
using ucx_client_detail::Peer;

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
  p->hdr.at_version = request.call.version;
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
